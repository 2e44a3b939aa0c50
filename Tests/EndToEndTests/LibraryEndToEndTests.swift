import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The catalog database on the real streamd: restart from the database, a damaged database,
/// the background scan, inotify (add, change, remove, move), SIGHUP, the watch-limit fallback,
/// seek indexes built on first need, and files that go away while served.
@Suite(.timeLimit(.scaledMinutes(3)), .ownThreads) struct LibraryEndToEndTests {
    typealias Isolation = AnalyzerIsolationTests

    static func tracks(_ server: StreamdProcess) throws -> [String: [String: Any]] {
        let list = try #require(try Isolation.json(Isolation.get(server, "/api/tracks")) as? [[String: Any]])
        var result: [String: [String: Any]] = [:]
        for item in list { if let path = item["path"] as? String { result[path] = item } }
        return result
    }

    /// Polls /api/tracks until `condition` holds; returns the seconds it took, or throws after `limit`.
    @discardableResult
    static func waitUntil(_ server: StreamdProcess, within limit: Double, _ what: String,
                          _ condition: ([String: [String: Any]]) -> Bool) throws -> Double {
        let started = Date()
        let deadline = started.addingTimeInterval(TestTiming.seconds(limit))
        while Date() < deadline {
            if condition(try tracks(server)) { return Date().timeIntervalSince(started) }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw TestFailure("\(what): not seen in the catalog within \(limit) s")
    }

    static func copy(_ from: URL, _ to: URL) throws {
        try FileManager.default.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: from, to: to)
    }

    @Test func restart_servesFromTheDatabase_andReadsOnlyWhatChanged() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let db = TestPaths.temporaryDatabase()
        let first = try StreamdProcess(folder: library, extraArguments: ["--db", db])
        let listed = try Self.tracks(first)
        #expect(listed.count == TestPaths.mediaFiles().count)
        #expect(try first.status()["scan_to_read"] as? Int == listed.count, "every track read once (not notes.txt; escape.mp3 leads outside)")
        first.stop()

        // Offline: one file changed, one added, one removed.
        try FileManager.default.removeItem(at: library.appendingPathComponent("pcm16.wav"))
        try FileManager.default.removeItem(at: library.appendingPathComponent("cbr-no-tag.mp3"))
        try Self.copy(library.appendingPathComponent("vbr-v2.mp3"), library.appendingPathComponent("cbr-no-tag.mp3"))
        try Self.copy(library.appendingPathComponent("adts.aac"), library.appendingPathComponent("new/added.aac"))

        let second = try StreamdProcess(folder: library, extraArguments: ["--db", db], waitForScan: false)
        // The catalog is there before the scan is: it is served from the database.
        let atStart = try Self.tracks(second)
        #expect(atStart.count >= listed.count - 1, "listening with the stored catalog: \(atStart.count) tracks")
        try second.waitForScan(atLeast: 1)
        let status = try second.status()
        #expect(status["scan_to_read"] as? Int == 2, "only the changed and the added file are read: \(status)")
        let after = try Self.tracks(second)
        #expect(after["pcm16.wav"] == nil && after["new/added.aac"] != nil)
        #expect(after["cbr-no-tag.mp3"]?["etag"] as? String != listed["cbr-no-tag.mp3"]?["etag"] as? String)
        #expect(after["cbr-no-tag.mp3"]?["duration_s"] as? Double == listed["vbr-v2.mp3"]?["duration_s"] as? Double)
        #expect(after.count == listed.count)
    }

    @Test func damagedDatabase_isMovedAside_andRebuilt() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let db = TestPaths.temporaryDatabase()
        try Data(repeating: 0x5A, count: 10_000).write(to: URL(fileURLWithPath: db))
        let server = try StreamdProcess(folder: library, extraArguments: ["--db", db])
        #expect(try Self.tracks(server).count == TestPaths.mediaFiles().count)
        #expect(Isolation.lines(server.log, containing: ["not a usable streamd database", "moved to"]).count == 1, "\(server.log)")
        let folder = URL(fileURLWithPath: db).deletingLastPathComponent()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).contains { $0.hasPrefix("catalog.db.bad-") })
    }

    @Test func inotify_addChangeRemoveMove_showWithinTwoSeconds() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"])
        #expect(try server.status()["watch"] as? String == "inotify")
        let before = try Self.tracks(server)
        var times: [String: Double] = [:]

        try Self.copy(library.appendingPathComponent("vbr-v2.mp3"), library.appendingPathComponent("Added/new.mp3"))
        times["add"] = try Self.waitUntil(server, within: 2, "an added file") { $0["Added/new.mp3"] != nil }

        let oldETag = before["cbr-128k-44k.mp3"]?["etag"] as? String
        let replacement = try Data(contentsOf: library.appendingPathComponent("speech-22k.mp3"))
        try replacement.write(to: library.appendingPathComponent("cbr-128k-44k.mp3"))
        times["change"] = try Self.waitUntil(server, within: 2, "a changed file") {
            $0["cbr-128k-44k.mp3"]?["etag"] as? String != oldETag && $0["cbr-128k-44k.mp3"]?["sample_rate"] as? Int == 22_050
        }

        try FileManager.default.removeItem(at: library.appendingPathComponent("pcm16.wav"))
        times["remove"] = try Self.waitUntil(server, within: 2, "a removed file") { $0["pcm16.wav"] == nil }

        try FileManager.default.moveItem(at: library.appendingPathComponent("adts.aac"), to: library.appendingPathComponent("Added/moved.aac"))
        times["move"] = try Self.waitUntil(server, within: 2, "a moved file") { $0["adts.aac"] == nil && $0["Added/moved.aac"] != nil }

        try FileManager.default.moveItem(at: library.appendingPathComponent("Added"), to: library.appendingPathComponent("Renamed"))
        times["folder move"] = try Self.waitUntil(server, within: 2, "a moved folder") {
            $0["Added/new.mp3"] == nil && $0["Renamed/new.mp3"] != nil && $0["Renamed/moved.aac"] != nil
        }
        // The moved folder is still watched under its new name.
        try Self.copy(library.appendingPathComponent("vbr-v2.mp3"), library.appendingPathComponent("Renamed/later.mp3"))
        times["add in moved folder"] = try Self.waitUntil(server, within: 2, "a file added to the moved folder") { $0["Renamed/later.mp3"] != nil }
        #expect(try Self.tracks(server).count == before.count + 1, "two added, one removed")
        print("inotify pick-up (s): \(times.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.3f", $0.value))" }.joined(separator: ", "))")
    }

    @Test func sighup_forcesAFullRescan() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        // No inotify help: a folder beyond the (test) watch limit changes, SIGHUP finds it.
        let server = try StreamdProcess(folder: library, extraArguments: ["--rescan-interval", "3600", "--max-watches", "1"])
        try FileManager.default.createDirectory(at: library.appendingPathComponent("later"), withIntermediateDirectories: true)
        try Self.copy(library.appendingPathComponent("vbr-v2.mp3"), library.appendingPathComponent("later/deep/x.mp3"))
        Thread.sleep(forTimeInterval: 0.5)
        let scans = try server.status()["scans"] as? Int ?? 0
        try Isolation.rescan(server)
        #expect(try server.status()["scans"] as? Int == scans + 1)
        #expect(try Self.tracks(server)["later/deep/x.mp3"] != nil)
    }

    @Test func watchLimit_isReported_andPeriodicRescansTakeOver() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--rescan-interval", "1", "--max-watches", "1"])
        let status = try server.status()
        #expect(status["watch"] as? String == "polling" && status["watched_folders"] as? Int == 1, "\(status)")
        // The status can say so a moment before the warning reaches the log through its pipe.
        let deadline = Date().addingTimeInterval(TestTiming.seconds(3))
        while Isolation.lines(server.log, containing: ["inotify watch limit reached"]).isEmpty && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(Isolation.lines(server.log, containing: ["inotify watch limit reached", "full rescan every 1 s"]).count == 1, "\(server.log)")
        try Self.copy(library.appendingPathComponent("vbr-v2.mp3"), library.appendingPathComponent("Album Ünïcode/extra.mp3"))
        try Self.waitUntil(server, within: 4, "a file in an unwatched folder") { $0["Album Ünïcode/extra.mp3"] != nil }
    }

    @Test func seekIndex_builtOnFirstNeed_andKeptInTheDatabase() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let db = TestPaths.temporaryDatabase()
        let server = try StreamdProcess(folder: library, extraArguments: ["--db", db, "--quiet"])
        #expect(try server.status()["seek_indexes_cached"] as? Int == 0, "the scan builds no index")
        let first = try Isolation.get(server, "/api/index/vbr-v2.mp3")
        #expect(first.status == 200)
        let index = try #require(try JSONSerialization.jsonObject(with: Data(first.body)) as? [String: Any])
        #expect((index["points"] as? [Any])?.count ?? 0 > 10, "an exact index, a point every 0.5 s")
        #expect(try server.status()["seek_indexes_cached"] as? Int == 1)
        _ = try Isolation.get(server, "/hls/adts.aac/index.m3u8")
        #expect(try server.status()["seek_indexes_cached"] as? Int == 2, "the HLS route builds it too")
        server.stop()
        let again = try StreamdProcess(folder: library, extraArguments: ["--db", db, "--quiet"])
        #expect(try again.status()["seek_indexes_cached"] as? Int == 2)
        #expect(try Isolation.get(again, "/api/index/vbr-v2.mp3").body == first.body, "the stored index, unchanged")
        // A changed file's index is built again.
        try Data(contentsOf: library.appendingPathComponent("speech-22k.mp3")).write(to: library.appendingPathComponent("vbr-v2.mp3"))
        try Self.waitUntil(again, within: 2, "the changed file") { $0["vbr-v2.mp3"]?["sample_rate"] as? Int == 22_050 }
        let rebuilt = try Isolation.get(again, "/api/index/vbr-v2.mp3")
        #expect(rebuilt.status == 200 && rebuilt.body != first.body)
    }

    /// Polls /api/status until `condition` holds, or throws after `limit` seconds.
    static func waitForStatus(_ server: StreamdProcess, within limit: Double, _ what: String,
                              _ condition: ([String: Any]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(TestTiming.seconds(limit))
        var last: [String: Any] = [:]
        while Date() < deadline {
            last = try server.status()
            if condition(last) { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw TestFailure("\(what): not in /api/status within \(limit) s: \(last)")
    }

    @Test func seekIndexes_ofLongTracks_areBuiltAheadAfterTheScan_withoutARequest() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let db = TestPaths.temporaryDatabase()
        let minimum = 40.0
        let server = try StreamdProcess(folder: library, extraArguments: ["--db", db, "--index-ahead", "\(Int(minimum))"])
        let listed = try Self.tracks(server)
        let due = listed.filter { ($0.value["duration_s"] as? Double ?? 0) >= minimum && $0.value["container"] as? String != "wav" }
        let short = listed.filter { ($0.value["duration_s"] as? Double ?? 0) < minimum }
        #expect(!due.isEmpty && !short.isEmpty, "the test library has tracks on both sides of \(minimum) s")
        try Self.waitForStatus(server, within: 10, "\(due.count) indexes built ahead") {
            $0["seek_indexes_built_ahead"] as? Int == due.count && $0["seek_indexes_cached"] as? Int == due.count
        }
        #expect(Isolation.lines(server.log, containing: ["index: \(due.count) built ahead"]).count == 1, "\(server.log)")
        // The stored index is what a request gets, and it is not built again.
        let path = try #require(due.keys.sorted().first { $0.hasSuffix(".mp3") }, "a long MP3 in the test library")
        let answer = try Isolation.get(server, "/api/index/" + path.split(separator: "/").map {
            $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? String($0)
        }.joined(separator: "/"))
        #expect(answer.status == 200)
        let index = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        #expect((index["points"] as? [Any])?.count ?? 0 >= Int(minimum * 2) - 1, "an exact index, a point every 0.5 s")
        #expect(try server.status()["seek_indexes_cached"] as? Int == due.count, "served from the database")
        // A long track added later gets its index after the scan inotify starts.
        let ext = path.split(separator: ".").last.map(String.init) ?? "mp3"
        try Self.copy(library.appendingPathComponent(path), library.appendingPathComponent("later/long copy.\(ext)"))
        try Self.waitForStatus(server, within: 10, "the added track's index") {
            $0["seek_indexes_built_ahead"] as? Int == due.count + 1 && $0["seek_indexes_cached"] as? Int == due.count + 1
        }
        server.stop()
        // Off: only first need builds them.
        let off = try StreamdProcess(folder: library, extraArguments: ["--db", TestPaths.temporaryDatabase(), "--index-ahead", "0"])
        Thread.sleep(forTimeInterval: TestTiming.seconds(0.5))
        let status = try off.status()
        #expect(status["seek_indexes_cached"] as? Int == 0 && status["seek_indexes_built_ahead"] as? Int == 0, "\(status)")
    }

    @Test func seekIndex_ofATrackAClientStartsReading_isBuiltBeforeItsFirstSeek() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--index-ahead", "0"])
        #expect(try server.status()["seek_indexes_cached"] as? Int == 0)
        let connection = try RawConnection(port: server.port, timeout: 20)
        let head = try connection.request("GET", "/media/vbr-v2.mp3", headers: ["Range": "bytes=0-4095"])
        #expect(head.status == 206)
        try Self.waitForStatus(server, within: 5, "the played track's index") {
            $0["seek_indexes_cached"] as? Int == 1 && $0["seek_indexes_built_on_play"] as? Int == 1
        }
        // Read again, or a WAV (whose seek is arithmetic): nothing more is built.
        #expect(try connection.request("GET", "/media/vbr-v2.mp3", headers: ["Range": "bytes=4096-8191"]).status == 206)
        #expect(try Isolation.get(server, "/media/pcm16.wav").status == 200)
        Thread.sleep(forTimeInterval: TestTiming.seconds(0.5))
        let status = try server.status()
        #expect(status["seek_indexes_cached"] as? Int == 1 && status["seek_indexes_built_on_play"] as? Int == 1, "\(status)")
        // The seek finds it stored: the same index a first-need build gives.
        let index = try Isolation.get(server, "/api/index/vbr-v2.mp3")
        #expect(index.status == 200)
        #expect(try server.status()["seek_indexes_cached"] as? Int == 1)
        let fresh = try StreamdProcess(folder: library, extraArguments: ["--index-ahead", "0"])
        #expect(try Isolation.get(fresh, "/api/index/vbr-v2.mp3").body == index.body)
    }

    @Test func fileRemovedWhileServed_finishes_fileTruncated_failsThatResponseOnly() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--content-length"])
        let removed = library.appendingPathComponent("cbr-128k-44k.mp3")
        let original = try Data(contentsOf: removed)
        // Paced so the removal lands mid-response: 545 kB at 2 Mbit/s is about two seconds.
        let connection = try RawConnection(port: server.port, timeout: 20)
        try connection.sendAll("GET /media/cbr-128k-44k.mp3?kbps=2000 HTTP/1.1\r\nHost: x\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.5)
        try FileManager.default.removeItem(at: removed)
        let response = try connection.readResponse()
        #expect(response.status == 200 && response.body == Array(original), "the open file is sent whole")

        let truncated = library.appendingPathComponent("speech-22k.mp3")
        let size = try Data(contentsOf: truncated).count
        let second = try RawConnection(port: server.port, timeout: 20)
        try second.sendAll("GET /media/speech-22k.mp3?kbps=500 HTTP/1.1\r\nHost: x\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.5)
        truncate(truncated.path, off_t(size / 4))
        let cut = try? second.readResponse()
        #expect(cut == nil || cut?.body.count ?? 0 < size, "the response ends short, by closing")
        // The server goes on serving.
        #expect(try Isolation.get(server, "/media/vbr-v2.mp3").status == 200)
        try Self.waitUntil(server, within: 2, "the removed file") { $0["cbr-128k-44k.mp3"] == nil }
    }

    /// A first scan made slow (each analysis 300 ms more, the files written 4 at a time): the
    /// tracks already written are found by `/api/search` while `/api/status` still says scanning.
    @Test func search_duringASlowFirstScan_findsTheTracksAlreadyScanned() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        // More to read after the generated tracks (their paths sort last): the scan lasts seconds.
        for n in 0..<24 {
            try Self.copy(library.appendingPathComponent("vbr-v2.mp3"), library.appendingPathComponent("zz-later/\(n).mp3"))
        }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--scan-chunk", "4"], analyzerFault: "delay:300",
                                        waitForScan: false)
        try Self.waitForStatus(server, within: 30, "a first chunk written") { ($0["tracks"] as? Int ?? 0) >= 4 }
        // A word of the title of a track already listed (its own row, not the file name).
        let listed = try Self.tracks(server)
        let titled = listed.values.compactMap { item -> (path: String, word: String)? in
            guard let path = item["path"] as? String, let title = item["title"] as? String,
                  let word = title.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).first(where: { $0.count >= 3 }) else { return nil }
            return (path, String(word))
        }.sorted { $0.path < $1.path }
        let wanted = try #require(titled.first, "a listed track with a title: \(listed.keys.sorted())")
        let query = wanted.word.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? wanted.word
        let found = try #require(try Isolation.json(Isolation.get(server, "/api/search?q=\(query)")) as? [[String: Any]])
        let status = try server.status()
        #expect(status["scanning"] as? Bool == true && status["scans"] as? Int == 0,
                "the first scan is still running (else the test proves nothing): \(status)")
        #expect(found.contains { $0["path"] as? String == wanted.path }, "'\(wanted.word)' finds \(wanted.path): \(found.map { $0["path"] ?? "" })")
    }

    /// Cover pictures, booklets, notes, logs, cue sheets and the desktop's files beside the
    /// tracks are not "skipped" files: counted in `ignored_count`, never analyzed; a file named
    /// like audio that is not is still skipped. The folder's cover and playlist files are still found.
    @Test func companionFiles_areIgnoredAndCounted_notSkipped_coverAndPlaylistsStillFound() throws {
        let library = try LibraryAPITests.makeLibrary()   // has Ordered Artist/Ordered Album/Cover.JPG
        defer { try? FileManager.default.removeItem(at: library) }
        let album = library.appendingPathComponent("Ordered Artist/Ordered Album")
        for name in ["booklet.pdf", "rip.log", "album.cue", "info.nfo", "Thumbs.db", "desktop.ini", "back.png"] {
            try Data("companion \(name)\n".utf8).write(to: album.appendingPathComponent(name))
        }
        try Data("#EXTM3U\n#EXTINF:1,Ordered Artist - First Xenops\nc.mp3\nb.mp3\n".utf8)
            .write(to: album.appendingPathComponent("album.m3u8"))
        try Data("not a sound\n".utf8).write(to: album.appendingPathComponent("text-named.mp3"))
        let server = try StreamdProcess(folder: library)
        let status = try server.status()
        // notes.txt, Cover.JPG, the seven above and the playlist.
        #expect(status["ignored_count"] as? Int == 10, "\(status)")
        #expect(status["skipped_count"] as? Int == 1, "\(status)")
        let skipped = try #require(status["skipped"] as? [[String: Any]])
        #expect(skipped.map { $0["path"] as? String } == ["Ordered Artist/Ordered Album/text-named.mp3"], "\(skipped)")
        #expect(status["scan_to_read"] as? Int == TestPaths.mediaFiles().count + 5, "the tracks and the text-named file only")
        // The cover comes from the folder, the playlist file is listed and served.
        let ordered = try LibraryAPITests.album(server, titled: "Ordered Album")
        let cover = try Isolation.get(server, "/api/cover/\(try #require(ordered["id"] as? Int))")
        #expect(cover.status == 200 && cover.header("Content-Type") == "image/jpeg")
        let playlists = try #require(try Isolation.json(Isolation.get(server, "/api/playlists")) as? [[String: Any]])
        let listed = try #require(playlists.first { $0["path"] as? String == "Ordered Artist/Ordered Album/album.m3u8" }, "\(playlists)")
        #expect(listed["entries"] as? Int == 2)
        // A companion file asked for directly is not audio, without a worker and without a record.
        #expect(try Isolation.get(server, "/api/index/Ordered%20Artist/Ordered%20Album/booklet.pdf").status == 422)
        #expect(try server.status()["skipped_count"] as? Int == 1)
        // One added later (inotify) is passed by too.
        try Data([0xFF, 0xD8, 0xFF, 0xD9]).write(to: album.appendingPathComponent("folder.jpg"))
        try Self.copy(library.appendingPathComponent("vbr-v2.mp3"), album.appendingPathComponent("added.mp3"))
        try Self.waitUntil(server, within: 2, "a track added beside a new picture") { $0["Ordered Artist/Ordered Album/added.mp3"] != nil }
        #expect(try server.status()["skipped_count"] as? Int == 1)
    }
}
