import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Subsonic `getCoverArt?size=` (resized by libvips in `streamd cover-worker`, cached in memory
/// and on disk) and embedded lyrics (`getLyricsBySongId`, `getLyrics`), run by
/// Tests/subsonic/check_covers_lyrics.py: the library is written by ffmpeg and mutagen, the
/// thumbnails measured by ffprobe, the lyrics validated against the OpenSubsonic schema and read
/// back typed by py-opensonic.
@Suite(.ownThreads) struct SubsonicCoverLyricsTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("Tests/subsonic/check_covers_lyrics.py").path

    static func run(_ arguments: [String], timeout: Double = 120) throws -> (status: Int32, output: String) {
        let python = try #require(which("python3"))
        let result = try runCommand(python, [script] + arguments, timeout: timeout)
        return (result.status, String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self))
    }

    static func scratch(_ name: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test(.timeLimit(.scaledMinutes(3))) func coversResizedCachedAndLyricsFromTags() throws {
        let scratch = try Self.scratch("covers-lyrics")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let library = scratch.appendingPathComponent("library")
        let made = try Self.run(["make", library.path])
        try #require(made.status == 0, "\(made.output)")
        let db = scratch.appendingPathComponent("catalog.db").path
        let digest = scratch.appendingPathComponent("thumbnail.sha256").path

        var server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db])
        let checked = try Self.run(["check", server.baseURL, "--digest-file", digest, "--library", library.path])
        print(checked.output)
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains(" passed, 0 failed"), "\(checked.output)")
        #expect(server.stop() == 0)
        // The thumbnail was kept beside the database: a restart serves it without resizing.
        let stored = try FileManager.default.contentsOfDirectory(atPath: db + ".covers").filter { $0.hasSuffix(".jpg") }
        #expect(stored.count >= 3, "\(stored)")
        server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db])
        defer { _ = server.stop() }
        let cached = try Self.run(["cached", server.baseURL, "--digest-file", digest])
        print(cached.output)
        #expect(cached.status == 0 && cached.output.contains(" passed, 0 failed"), "\(cached.output)")
    }

    /// A cover worker that traps, hangs (past `--cover-timeout`) or answers garbage costs that
    /// answer only: the original is sent, marked, and the server keeps serving.
    @Test(.timeLimit(.scaledMinutes(3)), arguments: ["trap", "hang", "garbage"])
    func brokenWorker_sendsTheOriginal(fault: String) throws {
        let scratch = try Self.scratch("covers-fault")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let album = scratch.appendingPathComponent("library/Artist/Album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: TestPaths.media.appendingPathComponent("cbr-no-tag.mp3"),
                                         to: album.appendingPathComponent("01 Tone.mp3"))
        let ffmpeg = try #require(which("ffmpeg"))
        let cover = album.appendingPathComponent("cover.png")
        let drawn = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240", "-frames:v", "1", cover.path], timeout: 30)
        try #require(drawn.status == 0)
        let worker = try FaultDrillWorker.write(in: scratch, streamd: TestPaths.streamd, fault: fault)
        let server = try StreamdProcess(folder: scratch.appendingPathComponent("library"),
                                        extraArguments: ["--quiet", "--cover-worker", worker, "--cover-timeout", "1"])
        defer { _ = server.stop() }
        let albums = try LibraryAPITests.list(LibraryAPITests.get(server, "/api/albums?limit=10"))
        let albumID = try #require(albums.first?["id"] as? Int)
        let list = try LibraryAPITests.get(server, "/rest/getAlbumList2?type=newest&f=json")
        let body = String(decoding: list.body, as: UTF8.self)
        let sid = try #require(body.range(of: "\"coverArt\":\"").map { body[$0.upperBound...].prefix { $0 != "\"" } }, "\(body) \(albumID)")
        let started = Date()
        let answer = try LibraryAPITests.get(server, "/rest/getCoverArt?id=\(sid)&size=100")
        #expect(answer.status == 200)
        #expect(answer.body == Array(try Data(contentsOf: cover)), "the original PNG")
        #expect(answer.header("X-Resize-Failed") == "1", "\(answer.headers)")
        #expect(Date().timeIntervalSince(started) < 8, "the timeout bounds the wait")
        let ping = try LibraryAPITests.get(server, "/rest/ping?f=json")
        #expect(String(decoding: ping.body, as: UTF8.self).contains("\"ok\""))
        #expect(server.process.isRunning)
    }
}
