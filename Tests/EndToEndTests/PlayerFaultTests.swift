import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// streamplay when the network or the server misbehaves.
@Suite(.serialized, .ownThreads) struct PlayerFaultTests {
    static var streamplay: String { PlayerTests.streamplay }

    @Test(.timeLimit(.scaledMinutes(5))) func cutsAndStalls_areResumedBitExact() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let proxy = try FaultProxy(upstreamPort: server.port, faults: [
            .init(cutAfter: 100_000),                                 // drop mid-body
            .init(cutAfter: 150_000),                                 // the resumed transfer drops too
            .init(stallAt: 50_000, stallSeconds: 1.5),                 // then a stall shorter than the timeout
        ])
        defer { proxy.stop() }
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ours = dir.appendingPathComponent("ours.wav").path
        let reference = dir.appendingPathComponent("ref.wav").path
        let run = try runCommand(Self.streamplay, ["http://127.0.0.1:\(proxy.port)/media/vbr-v2.mp3", "--output", "wav:\(ours)",
                                                   "--stats", "--buffer-bytes", "65536"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        try runCommand(try #require(which("mpg123")), ["-q", "-w", reference, TestPaths.media.appendingPathComponent("vbr-v2.mp3").path])
        #expect(try wavSamples(ours) == wavSamples(reference), "resumed playback is bit-exact")
        let stats = try PlayerTests.stats(run.stdout)
        #expect(stats["reconnects"] as? Int == 2, "two cuts, two reconnects: \(stats)")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func serverIgnoringRange_isSkippedBitExact() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        // The transfer drops; the resumed request reaches the server without its Range header,
        // so the answer is a 200 with the whole file, and the client skips what it already has.
        let proxy = try FaultProxy(upstreamPort: server.port, faults: [.init(cutAfter: 120_000), .init(stripRange: true)])
        defer { proxy.stop() }
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ours = dir.appendingPathComponent("ours.wav").path
        let reference = dir.appendingPathComponent("ref.wav").path
        let run = try runCommand(Self.streamplay, ["http://127.0.0.1:\(proxy.port)/media/vbr-v2.mp3", "--output", "wav:\(ours)",
                                                   "--stats", "--buffer-bytes", "65536"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        try runCommand(try #require(which("mpg123")), ["-q", "-w", reference, TestPaths.media.appendingPathComponent("vbr-v2.mp3").path])
        #expect(try wavSamples(ours) == wavSamples(reference))
        #expect(try PlayerTests.stats(run.stdout)["reconnects"] as? Int == 1)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func fileChangedWhilePlaying_isAnError() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("song.mp3")
        try FileManager.default.copyItem(at: TestPaths.media.appendingPathComponent("vbr-v2.mp3"), to: file)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        // The first transfer stalls, then drops; meanwhile the file is replaced.
        let proxy = try FaultProxy(upstreamPort: server.port, faults: [.init(cutAfter: 100_001, stallAt: 100_000, stallSeconds: 2)])
        defer { proxy.stop() }
        let changer = Thread {
            // Replace the file while the first transfer is stalled: 0.8 s after the proxy took the
            // connection (not after the test began: a slow start, as under sanitizers, would
            // replace it before the first request).
            for _ in 0..<600 where proxy.accepted == 0 { Thread.sleep(forTimeInterval: 0.05) }
            Thread.sleep(forTimeInterval: 0.8)
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.copyItem(at: TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), to: file)
        }
        changer.start()
        let run = try runCommand(Self.streamplay, ["http://127.0.0.1:\(proxy.port)/media/song.mp3", "--output", "null",
                                                   "--buffer-bytes", "65536"], timeout: 50)
        let line = String(decoding: run.stderr, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        #expect(run.status == 3, "\(line)")
        #expect(line.contains("changed on the server"), "\(line)")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func moovAtEnd_withoutRangeSupport_isAClearError() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        // Every request after the first loses its Range header: the index at the end cannot be fetched.
        let proxy = try FaultProxy(upstreamPort: server.port, faults: [.init(), .init(stripRange: true), .init(stripRange: true)])
        defer { proxy.stop() }
        let (status, line, seconds) = try Self.failing(["http://127.0.0.1:\(proxy.port)/media/moov-at-end.m4a", "--output", "null"])
        #expect(status == 3, "\(line)")
        #expect(line.contains("server ignores Range requests") && line.contains("MP4 index at the end"), "\(line)")
        #expect(seconds < 10)
    }

    /// Runs streamplay and returns (status, the one stderr line, seconds taken).
    static func failing(_ arguments: [String]) throws -> (Int32, String, Double) {
        let started = Date()
        let run = try runCommand(Self.streamplay, arguments, timeout: 60)
        let lines = String(decoding: run.stderr, as: UTF8.self).split(separator: "\n")
        return (run.status, lines.last.map(String.init) ?? "", Date().timeIntervalSince(started))
    }

    @Test func notFound_isANetworkError() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let (status, line, _) = try Self.failing(["\(server.baseURL)/media/missing.mp3", "--output", "null"])
        #expect(status == 3)
        #expect(line.hasPrefix("streamplay: source: HTTP 404"), "\(line)")
    }

    @Test func htmlPage_isNotAudio() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        // The page as /index.html: the bare root is the library, which plays (LibraryQueueTests).
        let (status, line, _) = try Self.failing(["\(server.baseURL)/index.html", "--output", "null"])
        #expect(status == 1)
        #expect(line == "streamplay: parser: not an audio stream (starts with '<!DOCTYPE html>')", "\(line)")
    }

    @Test func jsonInsteadOfAudio() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let (status, line, _) = try Self.failing(["\(server.baseURL)/api/tracks", "--output", "null"])
        #expect(status == 1)
        #expect(line.hasPrefix("streamplay: parser: not an audio stream (starts with '["), "\(line)")
    }

    /// A stream shorter than its Xing header promises (a cut file, or a header that claims too
    /// much) plays all its audio, as mpg123 does, and exits 0 with one warning line.
    @Test func truncatedFile_andLyingXingHeader_playWhatIsThere() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var bytes = [UInt8](try Data(contentsOf: TestPaths.media.appendingPathComponent("vbr-v2.mp3")))
        try Data(bytes.prefix(bytes.count / 2)).write(to: dir.appendingPathComponent("truncated.mp3"))
        // The Xing frame count (after "Xing" and the flags) claims twice the frames.
        let xing = try #require(bytes.firstRange(of: Array("Xing".utf8)))
        let at = xing.upperBound + 4
        let frames = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        let lie = frames * 2
        bytes[at] = UInt8(lie >> 24 & 0xFF); bytes[at + 1] = UInt8(lie >> 16 & 0xFF)
        bytes[at + 2] = UInt8(lie >> 8 & 0xFF); bytes[at + 3] = UInt8(lie & 0xFF)
        try Data(bytes).write(to: dir.appendingPathComponent("lying.mp3"))
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let mpg123 = try #require(which("mpg123"))
        for name in ["truncated.mp3", "lying.mp3"] {
            let url = "\(server.baseURL)/media/\(name)"
            let ours = dir.appendingPathComponent("ours-\(name).wav").path, reference = dir.appendingPathComponent("ref-\(name).wav").path
            let run = try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(ours)"])
            let stderr = String(decoding: run.stderr, as: UTF8.self)
            #expect(run.status == 0, "\(name): \(stderr)")
            #expect(stderr.hasPrefix("streamplay: warning: parser: stream ended after"), "\(name): \(stderr)")
            try runCommand(mpg123, ["-q", "-w", reference, url])
            #expect(sampleDifference(try wavSamples(ours), try wavSamples(reference)) == nil, "\(name): as mpg123 plays it")
        }
    }

    @Test func silentServer_givesUpWithinTheRetryTime() throws {
        // Accepts connections and never answers (each is held until the client closes it).
        let silent = try LoopbackListener { client in
            var byte: UInt8 = 0
            while recv(client, &byte, 1, 0) > 0 {}
            close(client)
        }
        defer { silent.stop() }
        let port = silent.port
        let (status, line, seconds) = try Self.failing(["http://127.0.0.1:\(port)/media/x.mp3", "--output", "null",
                                                        "--retry-for", "2", "--stall-timeout", "1"])
        #expect(status == 3)
        #expect(line.contains("gave up after 2 s without progress"), "\(line)")
        #expect(seconds < 10, "took \(seconds) s")
    }

    @Test func connectionRefused_isANetworkError() throws {
        let port = try { () throws -> Int in
            // A port that was free a moment ago: nothing listens there.
            let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
            let p = server.port
            server.stop()
            return p
        }()
        let (status, line, seconds) = try Self.failing(["http://127.0.0.1:\(port)/media/x.mp3", "--output", "null", "--retry-for", "1"])
        #expect(status == 3)
        #expect(line.hasPrefix("streamplay: source: "), "\(line)")
        #expect(seconds < 10)
    }
}

/// `streamplay --info URL`: the same facts as from the file, through Range requests.
@Suite(.ownThreads) struct InfoOverHTTPTests {
    @Test(arguments: TestPaths.mediaFiles().filter { ["mp3", "m4a", "wav"].contains($0.pathExtension) })
    func infoOverHTTP_matchesTheLocalFile(file: URL) throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let relative = String(file.path.dropFirst(TestPaths.media.path.count + 1))
        let url = "\(server.baseURL)/media/" + (relative.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? relative)
        let remote = try runCommand(PlayerTests.streamplay, ["--info", url, "--verbose"])
        let local = try runCommand(PlayerTests.streamplay, ["--info", file.path])
        #expect(remote.status == 0, "\(String(decoding: remote.stderr, as: UTF8.self))")
        let a = try #require(try JSONSerialization.jsonObject(with: remote.stdout) as? [String: Any])
        let b = try #require(try JSONSerialization.jsonObject(with: local.stdout) as? [String: Any])
        for key in ["container", "codec", "sample_rate", "channels", "encoder_delay", "encoder_padding", "title"] {
            #expect("\(a[key] ?? "nil")" == "\(b[key] ?? "nil")", "\(relative): \(key)")
        }
        let rate = Double(b["sample_rate"] as? Int ?? 1)
        #expect(abs((a["duration_s"] as? Double ?? 0) - (b["duration_s"] as? Double ?? -1)) <= 1152 / rate, "\(relative): duration")
        let note = String(decoding: remote.stderr, as: UTF8.self)
        let read = Int(note.split(separator: " ").first { Int($0) != nil } ?? "") ?? Int.max
        let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        if file.pathExtension != "wav" || size > 300_000 {
            #expect(read < max(size / 2, 300_000), "\(relative): read \(read) of \(size) bytes")
        }
    }
}
