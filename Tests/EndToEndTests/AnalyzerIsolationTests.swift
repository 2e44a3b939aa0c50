import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 12 item 3: a file can never take streamd down. The analyzer runs in worker processes;
/// a file that traps or hangs it is skipped (quarantined) with one warning, listed in
/// /api/status, and the server serves everything else, across rescans.
@Suite(.ownThreads) struct AnalyzerIsolationTests {
    static func get(_ server: StreamdProcess, _ target: String) throws -> RawResponse {
        try RawConnection(port: server.port, timeout: 20).request("GET", target)
    }

    static func json(_ response: RawResponse) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(response.body))
    }

    /// `/api/status` as a dictionary.
    static func status(_ server: StreamdProcess) throws -> [String: Any] {
        try #require(try json(get(server, "/api/status")) as? [String: Any])
    }

    /// The skipped files of `/api/status` by path: (reason, quarantined).
    static func skipped(_ server: StreamdProcess) throws -> [String: (reason: String, quarantined: Bool)] {
        let list = try #require(try status(server)["skipped"] as? [[String: Any]])
        var result: [String: (reason: String, quarantined: Bool)] = [:]
        for item in list {
            guard let path = item["path"] as? String else { continue }
            result[path] = (item["reason"] as? String ?? "", item["quarantined"] as? Bool ?? false)
        }
        return result
    }

    static func trackPaths(_ server: StreamdProcess) throws -> Set<String> {
        let list = try #require(try json(get(server, "/api/tracks")) as? [[String: Any]])
        return Set(list.compactMap { $0["path"] as? String })
    }

    /// Sends SIGHUP and waits for the rescan to finish (the `scans` count grows).
    static func rescan(_ server: StreamdProcess) throws {
        let before = try status(server)["scans"] as? Int ?? 0
        kill(server.process.processIdentifier, SIGHUP)
        for _ in 0..<200 {
            if (try status(server)["scans"] as? Int ?? 0) > before { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestFailure("no rescan within 10 s of SIGHUP")
    }

    /// Child processes of `pid` (workers still alive or not reaped).
    static func children(of pid: pid_t) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task -> [String] in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            return text.split(separator: " ").map(String.init)
        }
    }

    static func lines(_ log: String, containing parts: [String]) -> [Substring] {
        log.split(separator: "\n").filter { line in parts.allSatisfy { line.contains($0) } }
    }

    /// Waits (up to 5 s) until the server's log holds `count` lines with all of `parts`: a warning
    /// reaches the log through a pipe a moment after the status page counts it.
    static func waitForLines(_ server: StreamdProcess, containing parts: [String], count: Int = 1) {
        _ = TestTiming.waitUntil(timeout: 5) { lines(server.log, containing: parts).count >= count }
    }

    @Test func trappingAndHangingFiles_areQuarantined_theRestIsServed_acrossRescans() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        for name in ["trap-me.mp3", "hang-me.mp3"] {
            try FileManager.default.copyItem(at: library.appendingPathComponent("vbr-v2.mp3"), to: library.appendingPathComponent(name))
        }
        // Named like audio, yet text: an ordinary skip (notes.txt is not even tried).
        try Data("not a sound\n".utf8).write(to: library.appendingPathComponent("text-named.mp3"))
        let started = Date()
        let server = try StreamdProcess(folder: library, extraArguments: ["--analyze-timeout", "1"],
                                        analyzerFault: "trap:trap-me.mp3,hang:hang-me.mp3")
        #expect(Date().timeIntervalSince(started) < 15, "the hang cost its 1 s bound, not the start")

        // Every other track is listed and served.
        let expected = Set(TestPaths.mediaFiles().map { String($0.path.dropFirst(TestPaths.media.path.count + 1)) })
        let listed = try Self.trackPaths(server)
        #expect(listed == expected, "listed: \(listed.sorted())")
        let media = try Self.get(server, "/media/cbr-128k-44k.mp3")
        let original = try ServerEndToEndTests.bytes(of: library.appendingPathComponent("cbr-128k-44k.mp3"))
        #expect(media.status == 200 && media.body == original)
        #expect(try Self.get(server, "/api/index/vbr-v2.mp3").status == 200)
        #expect(try Self.get(server, "/hls/vbr-v2.mp3/index.m3u8").status == 200)
        #expect(try Self.get(server, "/hls/vbr-v2.mp3/seg-0.mp3").status == 200)

        // The two bad files are skipped, quarantined, and say why.
        let skipped = try Self.skipped(server)
        let trap = try #require(skipped["trap-me.mp3"])
        #expect(trap.quarantined && trap.reason.hasPrefix("analyzer crashed (signal 4)"), "\(trap)")
        #expect(trap.reason == "analyzer crashed (signal 4)" || trap.reason.contains("Double value cannot be converted to Int"),
                "the runtime's message, when it gives one, is kept: \(trap.reason)")
        let hang = try #require(skipped["hang-me.mp3"])
        #expect(hang.quarantined && hang.reason == "analysis timed out after 1 s", "\(hang)")
        #expect(skipped["text-named.mp3"]?.quarantined == false, "not audio is an ordinary skip")
        #expect(skipped["notes.txt"] == nil, "a note is a companion file, not a skipped one")
        let status = try Self.status(server)
        #expect(status["quarantined_count"] as? Int == 2 && status["tracks"] as? Int == expected.count)
        #expect(status["skipped_count"] as? Int == 3 && status["ignored_count"] as? Int == 1, "\(status)")
        // One warning line per bad file, naming it and the cause.
        Self.waitForLines(server, containing: ["trap-me.mp3", "analyzer crashed (signal 4)", "quarantined"])
        Self.waitForLines(server, containing: ["hang-me.mp3", "analysis timed out after 1 s"])
        #expect(Self.lines(server.log, containing: ["trap-me.mp3", "analyzer crashed (signal 4)", "quarantined"]).count == 1, "\(server.log)")
        #expect(Self.lines(server.log, containing: ["hang-me.mp3", "analysis timed out after 1 s"]).count == 1)

        // Routes that need the analysis answer 422 from the quarantine, without trying again.
        let index = try Self.get(server, "/api/index/trap-me.mp3")
        #expect(index.status == 422 && String(decoding: index.body, as: UTF8.self).contains("analyzer crashed"))
        #expect(try Self.get(server, "/hls/hang-me.mp3/index.m3u8").status == 422)
        #expect(try Self.get(server, "/hls/trap-me.mp3/index.m3u8").status == 422)

        // SIGHUP: a full rescan; the server stays up and does not retry unchanged bad files.
        try Self.rescan(server)
        #expect(server.process.isRunning)
        #expect(try Self.trackPaths(server) == expected)
        #expect(Self.lines(server.log, containing: ["trap-me.mp3", "analyzer crashed"]).count == 1, "not retried")
        #expect(Self.lines(server.log, containing: ["hang-me.mp3", "timed out"]).count == 1, "not retried")

        // A changed file is tried again (and here fails again, with a new warning).
        let handle = try FileHandle(forWritingTo: library.appendingPathComponent("trap-me.mp3"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        try Self.rescan(server)
        #expect(server.process.isRunning)
        Self.waitForLines(server, containing: ["trap-me.mp3", "analyzer crashed"], count: 2)
        #expect(Self.lines(server.log, containing: ["trap-me.mp3", "analyzer crashed"]).count == 2, "retried once after the change")
        #expect(try Self.trackPaths(server) == expected)
        // Workers live for a scan: none is left behind.
        #expect(Self.children(of: server.process.processIdentifier).isEmpty,
                "leftover workers: \(Self.children(of: server.process.processIdentifier))")
    }

    /// The file issue 12 found: mvhd/mdhd timescale 1 and an edit list whose media time is
    /// 2^50 ticks, so the delay in samples is past Int.max (a trapping Double → Int conversion
    /// in the analyzer at the time). Built here byte by byte, 584 bytes.
    static func craftedTimescaleOneM4A() -> [UInt8] {
        func box(_ type: String, _ body: [UInt8]) -> [UInt8] { be32(8 + body.count) + Array(type.utf8) + body }
        func full(_ type: String, version: UInt8 = 0, flags: UInt8 = 0, _ body: [UInt8]) -> [UInt8] { box(type, [version, 0, 0, flags] + body) }
        func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] { [tag, UInt8(body.count)] + body }
        let config = descriptor(4, [0x40, 0x15, 0, 0x18, 0] + be32(128_000) + be32(128_000) + descriptor(5, [0x12, 0x10]))
        let esds = full("esds", descriptor(3, be16(1) + [0] + config + descriptor(6, [2])))
        let mp4a = box("mp4a", [UInt8](repeating: 0, count: 6) + be16(1) + [UInt8](repeating: 0, count: 8)
                       + be16(2) + be16(16) + be16(0) + be16(0) + be32(44_100 << 16) + esds)
        let frame: [UInt8] = [0x21, 0x00, 0x49, 0x90, 0x02, 0x19]
        func stbl(chunkOffset: Int) -> [UInt8] {
            box("stbl", full("stsd", be32(1) + mp4a) + full("stts", be32(1) + be32(2) + be32(1024))
                + full("stsc", be32(1) + be32(1) + be32(2) + be32(1)) + full("stsz", be32(0) + be32(2) + be32(6) + be32(6))
                + full("stco", be32(1) + be32(chunkOffset)))
        }
        func head(chunkOffset: Int) -> [UInt8] {
            let mdhd = full("mdhd", be32(0) + be32(0) + be32(1) + be32(2048) + [0x55, 0xC4, 0, 0])
            let hdlr = full("hdlr", be32(0) + Array("soun".utf8) + [UInt8](repeating: 0, count: 13))
            let elst = full("elst", version: 1, be32(1) + be64(1) + be64(1 << 50) + be32(0x0001_0000))
            let tkhd = full("tkhd", flags: 7, be32(0) + be32(0) + be32(1) + [UInt8](repeating: 0, count: 68))
            let trak = box("trak", tkhd + box("edts", elst) + box("mdia", mdhd + hdlr + box("minf", stbl(chunkOffset: chunkOffset))))
            let moov = box("moov", full("mvhd", be32(0) + be32(0) + be32(1) + be32(2048) + [UInt8](repeating: 0, count: 80)) + trak)
            return box("ftyp", Array("M4A ".utf8) + be32(0) + Array("M4A isom".utf8)) + moov
        }
        let size = head(chunkOffset: 0).count
        return head(chunkOffset: size + 8) + box("mdat", frame + frame)
    }

    @Test func craftedTimescaleOneM4A_costsOnlyThatFile() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let crafted = Self.craftedTimescaleOneM4A()
        #expect(crafted.count == 584)
        try Data(crafted).write(to: library.appendingPathComponent("crafted.m4a"))
        let server = try StreamdProcess(folder: library)
        let expected = Set(TestPaths.mediaFiles().map { String($0.path.dropFirst(TestPaths.media.path.count + 1)) })
        #expect(try Self.trackPaths(server) == expected)
        // Quarantined while the analyzer traps on it; an ordinary skip once it throws instead.
        let skip = try #require(try Self.skipped(server)["crafted.m4a"])
        #expect(!skip.quarantined || skip.reason.hasPrefix("analyzer crashed (signal 4)"), "\(skip)")
        #expect(try Self.get(server, "/hls/crafted.m4a/index.m3u8").status == 422)
        try Self.rescan(server)
        #expect(server.process.isRunning)
        #expect(try Self.trackPaths(server) == expected)

        // The same bytes written over a listed track in place (the folder's mtime does not
        // change, so no rescan): the HLS route analyzes the new bytes, in a worker too.
        try Data(crafted).write(to: library.appendingPathComponent("track.m4a"), options: [])
        #expect(try Self.get(server, "/hls/track.m4a/index.m3u8").status == 422)
        #expect(server.process.isRunning)
        #expect(try Self.get(server, "/api/tracks").status == 200, "still serving")
        if skip.quarantined {
            #expect(try Self.skipped(server)["track.m4a"]?.quarantined == true, "quarantined by the HLS route's analysis")
            #expect(try !Self.trackPaths(server).contains("track.m4a"), "and no longer listed")
        }
    }

    /// Requests that wait for another thread's walk of a file (the indexer's, another
    /// request's) take its failure from the quarantine, instead of walking the file again.
    @Test func requestsWaitingOnACrashingWalk_doNotWalkItAgain() throws {
        let library = FileManager.default.temporaryDirectory.appendingPathComponent("walktrap-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: library) }
        for name in ["vbr-v2.mp3", "walktrap-me.mp3"] {
            try FileManager.default.copyItem(at: TestPaths.media.appendingPathComponent("vbr-v2.mp3"), to: library.appendingPathComponent(name))
        }
        // Listed by the quick scan; the full walk traps, after 400 ms (every walk overlaps).
        let server = try StreamdProcess(folder: library, analyzerFault: "walktrap:walktrap-me.mp3,delay:400")
        #expect(try Self.trackPaths(server).contains("walktrap-me.mp3"))
        let port = server.port
        let statuses = LockedData()
        let group = DispatchGroup()
        for _ in 0..<3 {
            group.enter()
            Thread.detachNewThread {
                let status = (try? RawConnection(port: port, timeout: 20).request("GET", "/api/index/walktrap-me.mp3").status) ?? 0
                statuses.withLock { $0.append(UInt8(clamping: status / 2)) }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(statuses.withLock { $0 } == Data(repeating: 211, count: 3), "each request answers 422")
        #expect(try Self.get(server, "/api/index/vbr-v2.mp3").status == 200)
        Self.waitForLines(server, containing: ["walktrap-me.mp3", "analyzer crashed"])
        #expect(Self.lines(server.log, containing: ["walktrap-me.mp3", "analyzer crashed"]).count == 1,
                "one walk, one warning: \(server.log)")
        #expect(try Self.skipped(server)["walktrap-me.mp3"]?.quarantined == true)
    }

    @Test func package_skipsAFileThatTrapsTheAnalyzer() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("pkg-isolate-\(UUID().uuidString.prefix(8))")
        defer {
            try? FileManager.default.removeItem(at: library)
            try? FileManager.default.removeItem(at: out)
        }
        try FileManager.default.copyItem(at: library.appendingPathComponent("adts.aac"), to: library.appendingPathComponent("trap-me.aac"))
        let process = Process()
        process.executableURL = TestPaths.binDir.appendingPathComponent("streamd")
        let drill = FileManager.default.temporaryDirectory.appendingPathComponent("pkg-drill-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: drill) }
        let worker = try FaultDrillWorker.write(in: drill, streamd: TestPaths.streamd, fault: "trap:trap-me.aac")
        process.arguments = ["package", library.path, "--out", out.path, "--analyze-worker", worker]
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let printed = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let warned = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(warned)")
        #expect(Self.lines(warned, containing: ["trap-me.aac", "analyzer crashed (signal 4)"]).count == 1, "\(warned)")
        #expect(printed.contains("packaged"), "\(printed)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("hls/adts.aac/index.m3u8").path))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("hls/trap-me.aac").path))
    }
}
