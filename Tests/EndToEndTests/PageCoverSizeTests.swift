import Foundation
import Testing
import TestSupport

/// `/api/cover/<id>?size=N` on the real streamd: the page's thumbnails come from `getCoverArt`'s
/// resize path (cover worker, memory and disk cache), measured by ffprobe; a bad size is a 400;
/// no size is the original picture, as before.
@Suite(.ownThreads) struct PageCoverSizeTests {
    /// Codec, width and height of an image as ffprobe reads it.
    static func probe(_ bytes: [UInt8]) throws -> (codec: String, width: Int, height: Int) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cover-\(UUID().uuidString).img")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let ffprobe = try #require(which("ffprobe"))
        let result = try runCommand(ffprobe, ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height",
                                              "-of", "default=noprint_wrappers=1", file.path], timeout: 30)
        var fields: [String: String] = [:]
        for line in String(decoding: result.stdout, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return (fields["codec_name"] ?? "?", Int(fields["width"] ?? "") ?? 0, Int(fields["height"] ?? "") ?? 0)
    }

    @Test(.timeLimit(.scaledMinutes(2))) func sizedCoverIsAThumbnail_badSizeIs400_noSizeIsTheOriginal() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-page-cover-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let album = scratch.appendingPathComponent("library/Artist/Album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: TestPaths.media.appendingPathComponent("cbr-no-tag.mp3"), to: album.appendingPathComponent("01 Tone.mp3"))
        let cover = album.appendingPathComponent("cover.png")
        let ffmpeg = try #require(which("ffmpeg"))
        let drawn = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=640x480", "-frames:v", "1", cover.path], timeout: 30)
        try #require(drawn.status == 0)
        let server = try StreamdProcess(folder: scratch.appendingPathComponent("library"), extraArguments: ["--quiet"])
        defer { _ = server.stop() }
        let albumID = try #require(try LibraryAPITests.list(LibraryAPITests.get(server, "/api/albums?limit=10")).first?["id"] as? Int)

        let original = try LibraryAPITests.get(server, "/api/cover/\(albumID)")
        let png = Array(try Data(contentsOf: cover))
        #expect(original.status == 200 && original.body == png, "no size: the original PNG")

        let sized = try LibraryAPITests.get(server, "/api/cover/\(albumID)?size=300")
        #expect(sized.status == 200 && sized.header("Content-Type") == "image/jpeg", "\(sized.status) \(sized.headers)")
        let measured = try Self.probe(sized.body)
        #expect(measured.codec == "mjpeg" && max(measured.width, measured.height) == 300 && measured.height == 225, "\(measured)")
        let again = try LibraryAPITests.get(server, "/api/cover/\(albumID)?size=300")
        #expect(again.body == sized.body && again.header("X-Cache") == "HIT", "the thumbnail cache answers the second time")
        // The same thumbnail as Subsonic's getCoverArt: one path, one cache.
        let list = String(decoding: try LibraryAPITests.get(server, "/rest/getAlbumList2?type=newest&f=json").body, as: UTF8.self)
        let sid = try #require(list.range(of: "\"coverArt\":\"").map { list[$0.upperBound...].prefix { $0 != "\"" } }, "\(list)")
        let subsonic = try LibraryAPITests.get(server, "/rest/getCoverArt?id=\(sid)&size=300")
        #expect(subsonic.body == sized.body && subsonic.header("X-Cache") == "HIT")
        let small = try Self.probe(try LibraryAPITests.get(server, "/api/cover/\(albumID)?size=96").body)
        #expect(small.width == 96 && small.height == 72, "\(small)")

        for bad in ["0", "4097", "-1", "abc", "", "300px"] {
            let answer = try LibraryAPITests.get(server, "/api/cover/\(albumID)?size=\(bad)")
            #expect(answer.status == 400, "size=\(bad): \(answer.status)")
            #expect(String(decoding: answer.body, as: UTF8.self).contains("size must be a whole number of pixels in 1...4096"), "size=\(bad)")
        }
        #expect(try LibraryAPITests.get(server, "/api/cover/999999?size=300").status == 404)
    }
}
