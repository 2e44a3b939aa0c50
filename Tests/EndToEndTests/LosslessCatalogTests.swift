import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 23 item 3 on the real streamd: a folder of FLAC, Ogg Opus, Ogg Vorbis, AIFF and ALAC
/// files (tagged with covers and ReplayGain or R128 gains, and untagged) is listed with each
/// file's format, depth, rate, duration (against ffprobe within 1 ms), gains, covers and
/// Content-Type, found by search, and indexed exactly.
@Suite(.timeLimit(.scaledMinutes(3)), .ownThreads) struct LosslessCatalogTests {
    static let get = AnalyzerIsolationTests.get
    static let json = AnalyzerIsolationTests.json

    /// The library: tagged files in one album folder, untagged ones in Artist/Album folders.
    static func makeLibrary() throws -> (root: URL, media: URL, files: [String: String]) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-lossless-\(getpid())-\(UUID().uuidString.prefix(8))")
        let media = base.appendingPathComponent("made")
        try LosslessMedia.make(in: media)
        let root = base.appendingPathComponent("library")
        // Library path → generated file.
        let files = [
            "Lossless Album/01 flac.flac": "tagged.flac", "Lossless Album/02 opus.opus": "tagged.opus",
            "Lossless Album/03 vorbis.ogg": "tagged.ogg", "Lossless Album/04 aiff.aiff": "tagged.aiff",
            "Lossless Album/05 alac.m4a": "tagged.m4a",
            "Quiet Artist/Bare Album/01 Granite.flac": "untagged.flac", "Quiet Artist/Bare Album/02 Basalt.opus": "untagged.opus",
            "Quiet Artist/Bare Album/03 Marble.ogg": "untagged.ogg", "Quiet Artist/Bare Album/04 Slate.aiff": "untagged.aiff",
            "Quiet Artist/Bare Album/05 Shale.m4a": "untagged.m4a",
        ]
        for (path, made) in files {
            let target = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: media.appendingPathComponent(made), to: target)
        }
        return (root, media, files)
    }

    /// ffprobe's duration of the file's audio stream in seconds, less the Opus pre-skip it counts in.
    static func ffprobeSeconds(_ url: URL) throws -> Double {
        let result = try runCommand(try #require(which("ffprobe")), ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                                                     "stream=codec_name,duration", "-of", "csv=p=0", url.path])
        let fields = String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            .split(separator: ",")
        let seconds = try #require(fields.last.flatMap { Double($0) }, "\(url.lastPathComponent): \(fields)")
        return fields.first == "opus" ? seconds - 312.0 / 48_000 : seconds
    }

    static func list(_ server: StreamdProcess, _ target: String) throws -> [[String: Any]] {
        let response = try get(server, target)
        guard response.status == 200 else { throw TestFailure("\(target): status \(response.status)") }
        return try #require(try json(response) as? [[String: Any]], "\(target)")
    }

    @Test func everyFormat_isListedDescribedServedAndFound() throws {
        let (root, media, files) = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let server = try StreamdProcess(folder: root, extraArguments: ["--quiet"])
        let status = try AnalyzerIsolationTests.status(server)
        #expect(status["tracks"] as? Int == files.count, "every file listed: \(status)")
        #expect((status["skipped"] as? [Any])?.isEmpty == true, "none skipped: \(status)")

        let items = try Self.list(server, "/api/tracks?limit=1000")
        var byPath: [String: [String: Any]] = [:]
        for item in items { if let path = item["path"] as? String { byPath[path] = item } }
        let expected: [String: (codec: String, container: String, bits: Int?, rate: Int, type: String)] = [
            "flac": ("flac", "flac", 16, 44_100, "audio/flac"), "opus": ("opus", "ogg", nil, 48_000, "audio/ogg; codecs=opus"),
            "ogg": ("vorbis", "ogg", nil, 44_100, "audio/ogg; codecs=vorbis"), "aiff": ("pcm_s24be", "aiff", 24, 44_100, "audio/aiff"),
            "m4a": ("alac", "mp4", 16, 44_100, "audio/mp4"),
        ]
        for (path, made) in files {
            let item = try #require(byPath[path], "\(path) is listed")
            let ext = String(path.split(separator: ".").last ?? "")
            var want = try #require(expected[ext])
            if made == "untagged.aiff" { (want.codec, want.bits) = ("pcm_s16be", 16) }
            #expect(item["codec"] as? String == want.codec && item["container"] as? String == want.container, "\(path): \(item)")
            #expect(item["bits_per_sample"] as? Int == want.bits, "\(path): \(item)")
            #expect(item["sample_rate"] as? Int == want.rate && item["channels"] as? Int == 2, "\(path): \(item)")
            let seconds = try #require(item["duration_s"] as? Double)
            let reference = try Self.ffprobeSeconds(media.appendingPathComponent(made))
            #expect(abs(seconds - reference) < 0.001, "\(path): \(seconds) s, ffprobe \(reference) s")
            // Served with the Content-Type a browser picks its decoder by.
            let head = try RawConnection(port: server.port, timeout: 20).request("HEAD", (item["url"] as? String) ?? "")
            #expect(head.status == 200 && head.header("Content-Type") == want.type, "\(path): \(head.header("Content-Type") ?? "none")")
        }

        // Gains: ReplayGain as written, R128 moved to ReplayGain's reference (+5 dB).
        let flac = try #require(byPath["Lossless Album/01 flac.flac"])
        #expect(flac["rg_track_gain"] as? Double == -6.5 && flac["rg_track_peak"] as? Double == 0.5, "\(flac)")
        let opus = try #require(byPath["Lossless Album/02 opus.opus"])
        #expect(opus["rg_track_gain"] as? Double == 3 && opus["rg_album_gain"] as? Double == 4, "\(opus)")
        #expect(byPath["Lossless Album/03 vorbis.ogg"]?["rg_album_gain"] as? Double == -1.25)
        #expect(byPath["Quiet Artist/Bare Album/01 Granite.flac"]?["rg_track_gain"] is NSNull)

        // Tags, and the untagged files named by their paths.
        #expect(flac["title"] as? String == "Flac Title" && flac["album"] as? String == "Lossless Album")
        #expect(byPath["Quiet Artist/Bare Album/02 Basalt.opus"]?["title"] as? String == "Basalt")

        // The album's cover, embedded in its files.
        let albums = try Self.list(server, "/api/albums?limit=1000")
        let album = try #require(albums.first { $0["title"] as? String == "Lossless Album" })
        #expect(album["embedded_cover"] as? Bool == true, "\(album)")
        let cover = try Self.get(server, "/api/cover/\(try #require(album["id"] as? Int))")
        #expect(cover.status == 200 && cover.header("Content-Type") == "image/png" && cover.body.starts(with: [0x89, 0x50, 0x4E, 0x47]))

        // Search by tag and by path-derived name.
        for (query, path) in [("Vorbis Title", "Lossless Album/03 vorbis.ogg"), ("Alac Artist", "Lossless Album/05 alac.m4a"),
                              ("Aiff", "Lossless Album/04 aiff.aiff"), ("Slate", "Quiet Artist/Bare Album/04 Slate.aiff"),
                              ("Granite", "Quiet Artist/Bare Album/01 Granite.flac")] {
            let found = try Self.list(server, "/api/search?q=" + UntaggedLibraryTests.query(query)).compactMap { $0["path"] as? String }
            #expect(found.contains(path), "\(query): \(found)")
        }

        // The exact index: FLAC frames and Ogg pages with their samples.
        for path in ["Lossless Album/01 flac.flac", "Lossless Album/02 opus.opus"] {
            let url = try #require(byPath[path]?["url"] as? String)
            let index = try #require(try Self.json(Self.get(server, "/api/index/" + url.dropFirst("/media/".count))) as? [String: Any])
            let points = try #require(index["points"] as? [[String: Any]], "\(path): \(index)")
            // FLAC: one every 0.5 s; Opus: one a page (opusenc's pages hold about a second).
            #expect(points.count >= 3 && points.allSatisfy { $0["sample"] is Int }, "\(path): \(points.prefix(3))")
            #expect(points.first?["sample"] as? Int == 0)
        }
    }
}
