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

    /// An embedded cover's thumbnail is looked for (memory, then disk) before the picture is read
    /// from the track's tag, keyed by the track file's version: with the tag's APIC frame made
    /// unreadable in place and the file's stamp (inode, size, mtime) kept, a cached size is still
    /// answered, while a size not made yet finds no picture; a changed file (a new stamp) misses
    /// and is resized from its new picture.
    @Test(.timeLimit(.scaledMinutes(3))) func embeddedCover_cachedThumbnail_isFoundBeforeTheTag() throws {
        let scratch = try Self.scratch("covers-embedded")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let album = scratch.appendingPathComponent("library/Artist/Album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        let ffmpeg = try #require(which("ffmpeg"))
        let track = album.appendingPathComponent("01 Tone.mp3")
        func make(picture size: String) throws {
            let picture = scratch.appendingPathComponent("picture.png")
            let drawn = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=\(size)", "-frames:v", "1", picture.path], timeout: 30)
            try #require(drawn.status == 0)
            let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-i", picture.path,
                                               "-map", "0", "-map", "1", "-c:a", "libmp3lame", "-c:v", "copy", "-id3v2_version", "3",
                                               "-metadata:s:v", "comment=Cover (front)", "-metadata", "album=Album", track.path], timeout: 30)
            try #require(made.status == 0, "\(String(decoding: made.stderr, as: UTF8.self))")
        }
        try make(picture: "320x240")
        let server = try StreamdProcess(folder: scratch.appendingPathComponent("library"), extraArguments: ["--quiet"])
        defer { _ = server.stop() }
        let list = try LibraryAPITests.get(server, "/rest/getAlbumList2?type=newest&f=json")
        let body = String(decoding: list.body, as: UTF8.self)
        let sid = try #require(body.range(of: "\"coverArt\":\"").map { body[$0.upperBound...].prefix { $0 != "\"" } }, "\(body)")
        let first = try LibraryAPITests.get(server, "/rest/getCoverArt?id=\(sid)&size=100")
        #expect(first.status == 200 && first.header("X-Cache") == "MISS" && first.header("Content-Type") == "image/jpeg", "\(first.headers)")

        // The APIC frame's id overwritten in place (same inode and size), the mtime put back.
        var info = stat()
        try #require(stat(track.path, &info) == 0)
        var bytes = try Data(contentsOf: track)
        let apic = try #require(bytes.firstRange(of: Data("APIC".utf8)))
        bytes.replaceSubrange(apic, with: Data("XXXX".utf8))
        let handle = try FileHandle(forWritingTo: track)
        try handle.write(contentsOf: bytes)
        try handle.close()
        var times = [timespec(tv_sec: info.st_atim.tv_sec, tv_nsec: info.st_atim.tv_nsec), info.st_mtim]
        try #require(utimensat(AT_FDCWD, track.path, &times, 0) == 0)
        let cached = try LibraryAPITests.get(server, "/rest/getCoverArt?id=\(sid)&size=100")
        #expect(cached.status == 200 && cached.header("X-Cache") == "HIT" && cached.body == first.body,
                "a cached thumbnail is answered without the tag: \(cached.status) \(cached.headers)")
        let uncached = try LibraryAPITests.get(server, "/rest/getCoverArt?id=\(sid)&size=90")
        #expect(uncached.header("X-Cache") != "HIT" && uncached.header("Content-Type") != "image/jpeg",
                "a size not made yet reads the tag, which has no picture now: \(uncached.status) \(uncached.headers)")

        // A new version of the file (a new picture, a new stamp): once the catalog has it, the
        // old thumbnail is not served; the new picture is resized (320x240 then, 200x200 now).
        try make(picture: "200x200")
        let deadline = Date().addingTimeInterval(TestTiming.seconds(30))
        var fresh = try LibraryAPITests.get(server, "/rest/getCoverArt?id=\(sid)&size=100")
        while fresh.header("X-Cache") != "MISS", Date() < deadline {
            #expect(fresh.body != first.body || fresh.header("X-Cache") != "HIT", "the old file's thumbnail was served for the new file")
            usleep(200_000)
            fresh = try LibraryAPITests.get(server, "/rest/getCoverArt?id=\(sid)&size=100")
        }
        #expect(fresh.status == 200 && fresh.header("X-Cache") == "MISS" && fresh.body != first.body, "\(fresh.status) \(fresh.headers)")
    }

    /// Cover workers are kept and reused: two cold resizes in a row are made by the same
    /// `streamd cover-worker` process; once that worker is killed while idle, the next resize
    /// starts a new one and still answers a thumbnail.
    @Test(.timeLimit(.scaledMinutes(3))) func coverWorker_isReused_andReplacedWhenItDies() throws {
        let scratch = try Self.scratch("covers-pool")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let ffmpeg = try #require(which("ffmpeg"))
        for index in 1...3 {
            let album = scratch.appendingPathComponent("library/Artist/Album \(index)")
            try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
            let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.5", "-c:a", "libmp3lame",
                                               "-metadata", "album=Album \(index)", "-metadata", "title=Song \(index)",
                                               album.appendingPathComponent("01 Song.mp3").path], timeout: 30)
            try #require(made.status == 0)
            let drawn = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=\(200 + 40 * index)x240",
                                                "-frames:v", "1", album.appendingPathComponent("cover.png").path], timeout: 30)
            try #require(drawn.status == 0)
        }
        let server = try StreamdProcess(folder: scratch.appendingPathComponent("library"), extraArguments: ["--quiet"])
        defer { _ = server.stop() }
        let list = try LibraryAPITests.get(server, "/rest/getAlbumList2?type=alphabeticalByName&f=json")
        let body = String(decoding: list.body, as: UTF8.self)
        let ids = body.components(separatedBy: "\"coverArt\":\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
        try #require(ids.count == 3, "\(body)")
        let pid = server.process.processIdentifier
        func resize(_ id: String) throws -> Set<String> {
            let answer = try LibraryAPITests.get(server, "/rest/getCoverArt?id=\(id)&size=100")
            #expect(answer.status == 200 && answer.header("X-Cache") == "MISS" && answer.header("Content-Type") == "image/jpeg"
                    && answer.header("X-Resize-Failed") == nil, "\(answer.headers)")
            return Set(AnalyzerIsolationTests.children(of: pid))
        }
        let first = try resize(ids[0])
        #expect(first.count == 1, "one worker kept after a resize: \(first)")
        let second = try resize(ids[1])
        #expect(second == first, "the second resize is made by the same worker: \(first) then \(second)")
        for worker in first { kill(pid_t(worker) ?? 0, SIGKILL) }
        let third = try resize(ids[2])
        #expect(third.count == 1 && third.isDisjoint(with: first), "a new worker after the old one died: \(first) then \(third)")
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
