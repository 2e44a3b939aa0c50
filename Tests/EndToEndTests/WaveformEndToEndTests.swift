import Foundation
import Testing
import TestSupport
import StreamShared
#if canImport(Glibc)
import Glibc
#endif

/// `/api/waveform/<id>` on the real streamd (seed 001, issue 26): the pairs match a signal of
/// known envelope in every format the page plays, the first answer is incomplete and the
/// waveform grows as a prefix of its final self, one computation however many ask at once,
/// a decoder that crashes or hangs costs its track (422) and never the server, bad requests
/// are 404/400, and a second run answers from the disk cache without decoding.
@Suite(.ownThreads) struct WaveformEndToEndTests {
    static let rate = 44_100
    /// The burst: 1 s of silence, 1 s of a square wave at ±20000 (441 Hz, both channels), 1 s of silence.
    static let amplitude = 20_000

    static func burstWAV() -> [UInt8] {
        var data: [UInt8] = []
        data.reserveCapacity(3 * rate * 4)
        for frame in 0..<(3 * rate) {
            var value = 0
            if frame >= rate && frame < 2 * rate { value = (frame / 50) % 2 == 0 ? amplitude : -amplitude }
            let bits = UInt16(bitPattern: Int16(value))
            let right = UInt16(bitPattern: Int16(-value))
            data += [UInt8(bits & 0xFF), UInt8(bits >> 8), UInt8(right & 0xFF), UInt8(right >> 8)]
        }
        let fmt = le16(1) + le16(2) + le32(rate) + le32(rate * 4) + le16(4) + le16(16)
        return Array("RIFF".utf8) + le32(4 + 8 + fmt.count + 8 + data.count) + Array("WAVE".utf8)
            + Array("fmt ".utf8) + le32(fmt.count) + fmt + Array("data".utf8) + le32(data.count) + data
    }

    /// A folder with the burst as WAV and, through ffmpeg, FLAC, MP3, AAC (M4A) and Opus.
    static func makeLibrary() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-waveform-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let wav = dir.appendingPathComponent("burst.wav")
        try Data(burstWAV()).write(to: wav)
        let ffmpeg = try #require(which("ffmpeg"))
        for (name, codec) in [("burst.flac", ["-c:a", "flac"]), ("burst.mp3", ["-c:a", "libmp3lame", "-b:a", "192k"]),
                              ("burst.m4a", ["-c:a", "aac", "-b:a", "192k"]), ("burst.opus", ["-c:a", "libopus", "-b:a", "160k"])] {
            try ffmpegRun(ffmpeg, ["-i", wav.path] + codec + [dir.appendingPathComponent(name).path])
        }
        return dir
    }

    static func ffmpegRun(_ ffmpeg: String, _ arguments: [String]) throws {
        let result = try runCommand(ffmpeg, ["-v", "error", "-y"] + arguments)
        guard result.status == 0 else { throw TestFailure("ffmpeg \(arguments): \(String(decoding: result.stderr, as: UTF8.self))") }
    }

    /// Track ids by file name.
    static func trackIDs(_ server: StreamdProcess) throws -> [String: Int] {
        let response = try RawConnection(port: server.port).request("GET", "/api/tracks")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]])
        var ids: [String: Int] = [:]
        for track in list {
            if let path = track["path"] as? String, let id = track["id"] as? Int {
                ids[String(path.split(separator: "/").last ?? "")] = id
            }
        }
        return ids
    }

    /// One answer of the route.
    struct Answer {
        var status: Int
        var response: RawResponse
        var object: [String: Any]
        var complete: Bool { object["complete"] as? Bool == true }
        var data: [Int] { (object["data"] as? [Any] ?? []).compactMap { ($0 as? NSNumber)?.intValue } }
        func number(_ key: String) -> Double { (object[key] as? NSNumber)?.doubleValue ?? .nan }
    }

    static func get(_ server: StreamdProcess, _ target: String, headers: [String: String] = [:]) throws -> Answer {
        try get(port: server.port, target, headers: headers)
    }

    static func get(port: Int, _ target: String, headers: [String: String] = [:]) throws -> Answer {
        let response = try RawConnection(port: port).request("GET", target, headers: headers)
        let object = response.body.isEmpty ? [:] : (try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:])
        return Answer(status: response.status, response: response, object: object)
    }

    /// Polls until the answer is complete (or not 200); every answer seen is handed to `seen`.
    static func untilDone(_ server: StreamdProcess, _ target: String, timeout: Double = 60,
                          seen: (Answer) -> Void = { _ in }) throws -> Answer {
        var last: Answer?
        let done = try TestTiming.waitUntil(timeout: timeout, poll: 0.005) {
            let answer = try get(server, target)
            seen(answer)
            last = answer
            return answer.status != 200 || answer.complete
        }
        let answer = try #require(last)
        guard done else { throw TestFailure("\(target) not complete in \(timeout) s: \(answer.object)") }
        return answer
    }

    /// The spans of `answer` that lie wholly inside `seconds`.
    static func spans(_ answer: Answer, inside seconds: ClosedRange<Double>) -> [(low: Int, high: Int)] {
        let data = answer.data
        let count = data.count / 2
        guard count > 0 else { return [] }
        let from = answer.number("from"), to = answer.number("to")
        let width = (to - from) / Double(count)
        return (0..<count).compactMap { j in
            let start = from + Double(j) * width, end = start + width
            return seconds.contains(start) && seconds.contains(end) ? (data[2 * j], data[2 * j + 1]) : nil
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func pairs_matchTheSignal_inEveryFormat() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        defer { server.stop() }
        let ids = try Self.trackIDs(server)
        for (name, lossless, rate) in [("burst.wav", true, 44_100), ("burst.flac", true, 44_100), ("burst.mp3", false, 44_100),
                                       ("burst.m4a", false, 44_100), ("burst.opus", false, 48_000)] {
            let id = try #require(ids[name], "\(name) is in the catalog: \(ids)")
            let answer = try Self.untilDone(server, "/api/waveform/\(id)?width=8192")
            #expect(answer.status == 200, "\(name): \(answer.object)")
            #expect(answer.object["track"] as? String == String(id), "\(name): the track id as a string")
            #expect(Int(answer.number("sample_rate")) == rate && Int(answer.number("samples_per_pair")) == 256, "\(name): \(answer.object)")
            #expect(abs(answer.number("duration") - 3) < 0.002, "\(name): the gapless length, \(answer.number("duration")) s")
            #expect(answer.number("computed_to") == answer.number("duration") && answer.number("from") == 0
                    && answer.number("to") == answer.number("duration"), "\(name): the whole track")
            // Zoomed in past the base: one pair per 256 frames of the track.
            let frames = Int((answer.number("duration") * Double(rate)).rounded())
            #expect(answer.data.count == 2 * ((frames + 255) / 256), "\(name): \(answer.data.count / 2) pairs for \(frames) frames")
            let quiet = Self.spans(answer, inside: 0.1...0.9) + Self.spans(answer, inside: 2.1...2.9)
            let loud = Self.spans(answer, inside: 1.1...1.9)
            #expect(quiet.count > 250 && loud.count > 120, "\(name): \(quiet.count) quiet and \(loud.count) loud spans")
            for span in quiet {
                #expect(lossless ? (span.low == 0 && span.high == 0) : (abs(span.low) <= 64 && abs(span.high) <= 64), "\(name): silence gives \(span)")
            }
            for span in loud {
                if lossless {
                    #expect(span.low == -Self.amplitude && span.high == Self.amplitude, "\(name): the square gives \(span)")
                } else {
                    #expect(span.low <= -17_000 && span.high >= 17_000, "\(name): the square gives \(span)")
                }
            }
            // The whole track in 10 pairs: the coarsest level with at least 10 pairs over it.
            let overview = try Self.get(server, "/api/waveform/\(id)?width=10")
            #expect(overview.data.count == 20 && Int(overview.number("samples_per_pair")) == 8192, "\(name): \(overview.object)")
            let loudPairs = stride(from: 0, to: 20, by: 2).filter { overview.data[$0 + 1] > 10_000 }.count
            #expect(loudPairs >= 3 && loudPairs <= 5, "\(name): the burst is the middle third: \(overview.data)")
            // A part of it: from and to in seconds.
            let part = try Self.get(server, "/api/waveform/\(id)?from=1.25&to=1.75&width=50")
            #expect(part.data.count == 100 && part.number("from") == 1.25 && part.number("to") == 1.75
                    && Int(part.number("samples_per_pair")) == 256, "\(name): \(part.object)")
            #expect(stride(from: 0, to: 100, by: 2).allSatisfy { part.data[$0] < -10_000 && part.data[$0 + 1] > 10_000 },
                    "\(name): inside the burst")
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func waveform_growsWhileComputed_andOneComputationServesAll() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let ffmpeg = try #require(which("ffmpeg"))
        // 40 s: seven messages of pairs, each followed by the drill's 50 ms pause.
        try Self.ffmpegRun(ffmpeg, ["-f", "lavfi", "-i", "sine=frequency=330:sample_rate=44100:duration=40", "-af", "volume=0.5",
                                    "-c:a", "libmp3lame", "-b:a", "96k", library.appendingPathComponent("long.mp3").path])
        let server = try StreamdProcess(folder: library, decoderFault: "slow:long.mp3")
        defer { server.stop() }
        let ids = try Self.trackIDs(server)
        let id = try #require(ids["long.mp3"])
        let target = "/api/waveform/\(id)?width=500"

        let first = try Self.get(server, target)
        #expect(first.status == 200 && !first.complete, "the first answer starts the computation: \(first.object)")
        #expect(first.number("computed_to") < first.number("duration") && first.response.header("Cache-Control") == "no-store"
                && first.response.header("ETag") == nil, "\(first.object)")
        var partial: [Answer] = []
        var reached = 0.0
        let done = try Self.untilDone(server, target) { answer in
            guard answer.status == 200, !answer.complete else { return }
            #expect(answer.number("computed_to") >= reached, "computed_to never goes back")
            reached = answer.number("computed_to")
            if !answer.data.isEmpty { partial.append(answer) }
        }
        #expect(done.complete && done.data.count == 1000 && done.response.header("ETag") != nil
                && done.response.header("Cache-Control") == "no-cache", "\(done.object)")
        #expect(partial.count >= 2, "the waveform was seen growing: \(partial.count) partial answers")
        for answer in partial {
            let pairs = answer.data.count / 2
            #expect(pairs < 500, "a partial answer has fewer pairs")
            // Each span keeps its place: all but the last span given (whose level pair may still
            // grow) are the final answer's.
            #expect(Array(answer.data.prefix(2 * (pairs - 1))) == Array(done.data.prefix(2 * (pairs - 1))),
                    "a partial answer is a prefix of the final one")
            #expect(Double(pairs) * 40 / 500 <= answer.number("computed_to") + 0.01, "only decoded spans are given")
        }
        // A complete answer is revalidated, not recomputed.
        let tag = try #require(done.response.header("ETag"))
        let again = try Self.get(server, target, headers: ["If-None-Match": tag])
        #expect(again.status == 304)
        #expect(server.log.components(separatedBy: "waveform: computing long.mp3").count == 2, "one computation")

        // Eight first requests at once for a track nobody asked for yet: one computation.
        let burst = try #require(ids["burst.flac"])
        let statuses = Lock([Int]())
        let port = server.port
        let threads = try (0..<8).map { n in
            try NativeThread(name: "waveform-\(n)") {
                let status = (try? Self.get(port: port, "/api/waveform/\(burst)").status) ?? -1
                statuses.withLock { $0.append(status) }
            }
        }
        threads.forEach { $0.join() }
        #expect(statuses.withLock { $0 } == [Int](repeating: 200, count: 8))
        _ = try Self.untilDone(server, "/api/waveform/\(burst)")
        #expect(server.log.components(separatedBy: "waveform: computing burst.flac").count == 2,
                "eight requests, one computation: \(server.log)")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func badRequests_are404Or400() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        defer { server.stop() }
        let id = try #require(try Self.trackIDs(server)["burst.wav"])
        for target in ["/api/waveform/999999", "/api/waveform/abc", "/api/waveform/", "/api/waveform/-1"] {
            let answer = try Self.get(server, target)
            #expect(answer.status == 404 && answer.object["error"] is String, "\(target): \(answer.status) \(answer.object)")
        }
        for query in ["width=0", "width=8193", "width=x", "from=-1", "to=abc", "from=2&to=1", "from=1&to=1", "to=1e9"] {
            let answer = try Self.get(server, "/api/waveform/\(id)?\(query)")
            #expect(answer.status == 400 && answer.object["error"] is String, "\(query): \(answer.status) \(answer.object)")
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func crashingOrHangingDecoder_is422_andStreamdServesOn() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        for name in ["crash.mp3", "hang.mp3"] {
            try FileManager.default.copyItem(at: library.appendingPathComponent("burst.mp3"), to: library.appendingPathComponent(name))
        }
        let server = try StreamdProcess(folder: library, extraArguments: ["--waveform-timeout", "1"],
                                        decoderFault: "trap:crash.mp3,hang:hang.mp3")
        defer { server.stop() }
        let ids = try Self.trackIDs(server)
        for (name, why) in [("crash.mp3", "decoder crashed (signal 4): Fatal error"), ("hang.mp3", "decoding timed out after")] {
            let id = try #require(ids[name])
            let answer = try Self.untilDone(server, "/api/waveform/\(id)", timeout: 30)
            #expect(answer.status == 422, "\(name): \(answer.status) \(answer.object)")
            let error = answer.object["error"] as? String ?? ""
            #expect(error.contains(name) && error.contains(why), "\(name): \(error)")
            // Asked again: the same answer, not another worker.
            #expect(try Self.get(server, "/api/waveform/\(id)").status == 422)
            #expect(server.log.components(separatedBy: "waveform: computing \(name)").count == 2, "\(name): one worker")
        }
        #expect(try RawConnection(port: server.port).request("GET", "/api/status").status == 200, "streamd serves on")
        let good = try Self.untilDone(server, "/api/waveform/\(try #require(ids["burst.mp3"]))")
        #expect(good.status == 200 && good.complete, "the good copy still works: \(good.object)")
    }

    @Test(.timeLimit(.scaledMinutes(2))) func sigterm_whileAWaveformWorkerHangs_reapsIt_exits0Within5s() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        try FileManager.default.copyItem(at: library.appendingPathComponent("burst.mp3"), to: library.appendingPathComponent("hang.mp3"))
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"], decoderFault: "hang:hang.mp3")
        defer { _ = server.stop() }
        let id = try #require(try Self.trackIDs(server)["hang.mp3"])
        // Its first pairs have come (the worker spins after them), and its 10 s timeout is far off.
        let started = try TestTiming.waitUntil(timeout: 10, poll: 0.01) {
            try Self.get(server, "/api/waveform/\(id)").number("computed_to") > 0
        }
        #expect(started, "the worker sent its first pairs")
        let pid = server.process.processIdentifier
        let children = ShutdownTests.children(of: pid)
        #expect(!children.isEmpty, "a decode worker runs")

        ShutdownTests.expectCleanExit(server, childrenSeen: children)
        _ = server.stop()
        #expect(!server.log.contains("did not stop") && !server.log.contains("killing"), "the builder stopped its worker itself: \(server.log)")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func secondRun_answersFromTheDiskCache() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let database = TestPaths.temporaryDatabase()
        defer { try? FileManager.default.removeItem(atPath: (database as NSString).deletingLastPathComponent) }
        let first = try StreamdProcess(folder: library, extraArguments: ["--db", database])
        let id = try #require(try Self.trackIDs(first)["burst.flac"])
        let computed = try Self.untilDone(first, "/api/waveform/\(id)?width=300")
        #expect(computed.complete)
        #expect(first.stop() == 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: database + ".waveforms")
        #expect(files.count == 1 && files[0].hasPrefix("\(id)-") && files[0].hasSuffix(".wf"), "\(files)")

        let second = try StreamdProcess(folder: library, extraArguments: ["--db", database])
        defer { second.stop() }
        let cached = try Self.get(second, "/api/waveform/\(id)?width=300")
        #expect(cached.complete && cached.data == computed.data, "the first answer of the new run is the whole waveform")
        #expect(!second.log.contains("waveform: computing"), "nothing decoded: \(second.log)")
    }
}
