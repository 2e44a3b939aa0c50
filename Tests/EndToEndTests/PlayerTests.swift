import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Reads the samples of a 16-bit PCM WAV file (the kind streamplay and mpg123 write).
func wavSamples(_ path: String) throws -> [Int16] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    let bytes = [UInt8](data)
    var i = 12
    while i + 8 <= bytes.count {
        let id = String(decoding: bytes[i..<(i + 4)], as: UTF8.self)
        let size = Int(bytes[i + 4]) | Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]) << 16 | Int(bytes[i + 7]) << 24
        if id == "data" {
            let end = (size == 0 || size == 0xFFFF_FFFF) ? bytes.count : min(bytes.count, i + 8 + size)
            return stride(from: i + 8, to: end - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
        }
        i += 8 + size + (size & 1)
    }
    throw TestFailure("\(path): no data chunk")
}

/// Where two sample arrays first differ, or nil when they are identical. Tests compare with
/// this rather than `==` inside `#expect`, whose failure message would print millions of samples.
func sampleDifference(_ a: [Int16], _ b: [Int16]) -> String? {
    if let i = (0..<min(a.count, b.count)).first(where: { a[$0] != b[$0] }) {
        return "first difference at sample \(i): \(a[i]) vs \(b[i])"
    }
    return a.count == b.count ? nil : "lengths \(a.count) vs \(b.count)"
}

/// streamplay against the real streamd on loopback.
@Suite(.serialized, .ownThreads) struct PlayerTests {
    static var streamplay: String { TestPaths.binDir.appendingPathComponent("streamplay").path }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamplay-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func stats(_ stdout: Data) throws -> [String: Any] {
        let last = String(decoding: stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], "stats line: \(last)")
    }

    static let mp3s = TestPaths.mediaFiles().filter { $0.pathExtension == "mp3" }

    @Test(arguments: mp3s)
    func bitExactWithMpg123(file: URL) throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let relative = String(file.path.dropFirst(TestPaths.media.path.count + 1))
        let url = "\(server.baseURL)/media/" + (relative.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? relative)
        let ours = dir.appendingPathComponent("ours.wav").path
        let reference = dir.appendingPathComponent("ref.wav").path
        let run = try runCommand(Self.streamplay, [url, "--output", "wav:\(ours)", "--stats"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        try runCommand(try #require(which("mpg123")), ["-q", "-w", reference, url])
        #expect(sampleDifference(try wavSamples(ours), try wavSamples(reference)) == nil, "\(relative): samples differ from mpg123's")
        // The shared comparison tool, when the checkout has ../shared beside it (as CI does).
        if let tool = TestPaths.pcmCompare {
            let verdict = String(decoding: try runCommand("/usr/bin/env", ["python3", tool, reference, ours]).stdout, as: UTF8.self)
            #expect(verdict.contains("exact=yes"), "\(relative): \(verdict)")
        }
        let stats = try Self.stats(run.stdout)
        #expect(stats["codec"] as? String == "mp3")
        #expect((stats["ttfa_ms"] as? Double ?? 1e9) < 1000)
    }

    @Test func seek_startAndDuration_matchTheFullDecode() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = "\(server.baseURL)/media/mono-48k.mp3"
        let full = dir.appendingPathComponent("full.wav").path
        let part = dir.appendingPathComponent("part.wav").path
        #expect(try runCommand(Self.streamplay, [url, "--output", "wav:\(full)"]).status == 0)
        let run = try runCommand(Self.streamplay, [url, "--output", "wav:\(part)", "--start", "30", "--duration", "5", "--stats"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let all = try wavSamples(full)
        let span = try wavSamples(part)
        #expect(span.count == 5 * 48_000)
        #expect(Array(all[(30 * 48_000)..<(35 * 48_000)]) == span, "the seek lands on the exact sample")
        let stats = try Self.stats(run.stdout)
        #expect(stats["seek_ms"] is Double)
    }

    @Test func boundedBuffer_neverExceedsItsLimit() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        // The network delivers faster (1 Mbit/s) than real-time playback drains (128 kbit/s):
        // the throttle fills up and must pause the transfer at its limit.
        let run = try runCommand(Self.streamplay, ["\(server.baseURL)/media/cbr-128k-44k.mp3?kbps=1000", "--output", "null",
                                                   "--realtime", "--duration", "4", "--buffer-bytes", "262144", "--stats"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let stats = try Self.stats(run.stdout)
        let peak = try #require(stats["peak_buffer_bytes"] as? Int)
        #expect(peak <= 262_144 + 16_384, "peak \(peak)")
        #expect(peak > 200_000, "the buffer did fill (peak \(peak))")
    }

    @Test func localFile_playsThroughTheSamePipeline() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = TestPaths.media.appendingPathComponent("vbr-v2.mp3").path
        let ours = dir.appendingPathComponent("ours.wav").path
        let reference = dir.appendingPathComponent("ref.wav").path
        #expect(try runCommand(Self.streamplay, [file, "--output", "wav:\(ours)"]).status == 0)
        try runCommand(try #require(which("mpg123")), ["-q", "-w", reference, file])
        #expect(sampleDifference(try wavSamples(ours), try wavSamples(reference)) == nil)
    }

    /// An M4A whose moov is looked for after a large mdat, behind a box claiming Int.max bytes:
    /// walking the top-level boxes must refuse it (exit 1), not overflow the offset.
    @Test func mp4BoxOverrunningTheFile_afterMdat_isAnError() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let mdat = 4 << 20
        let file = be32(16) + Array("ftypM4A ".utf8) + be32(0) + be32(8 + mdat) + Array("mdat".utf8)
            + [UInt8](repeating: 0, count: mdat) + be32(1) + Array("free".utf8) + be32(0x7FFF_FFFF) + be32(0xFFFF_FFFF)   // Int.max
        let path = dir.appendingPathComponent("huge-box.m4a").path
        try Data(file).write(to: URL(fileURLWithPath: path))
        let run = try runCommand(Self.streamplay, [path, "--output", "null"])
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 1, "exit \(run.status): \(stderr)")
        #expect(stderr.contains("overruns the"), "says why: \(stderr)")
    }

    /// Times that would overflow a sample count (or are not numbers) are usage errors, not traps.
    @Test func outOfRangeTimes_areUsageErrors() throws {
        let file = TestPaths.media.appendingPathComponent("pcm16.wav").path
        for arguments in [["--start", "1e300"], ["--start", "inf"], ["--start", "nan"], ["--duration", "1e300"],
                          ["--stall-timeout", "inf"], ["--retry-for", "nan"]] {
            let run = try runCommand(Self.streamplay, [file, "--output", "null"] + arguments)
            #expect(run.status == 2, "\(arguments): exit \(run.status) (usage errors exit 2)")
            let stderr = String(decoding: run.stderr, as: UTF8.self)
            #expect(stderr.contains("must be"), "\(arguments): says why: \(stderr)")
        }
    }
}

/// WAV, AAC in ADTS and AAC in MP4 through the same pipeline.
@Suite(.serialized, .ownThreads) struct PlayerFormatTests {
    @Test func wav_isBitExact_andSeeksToTheSample() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = "\(server.baseURL)/media/pcm16.wav"
        let full = dir.appendingPathComponent("full.wav").path
        let part = dir.appendingPathComponent("part.wav").path
        #expect(try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(full)"]).status == 0)
        let original = try wavSamples(TestPaths.media.appendingPathComponent("pcm16.wav").path)
        #expect(sampleDifference(try wavSamples(full), original) == nil, "WAV in, the same samples out")
        #expect(try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(part)", "--start", "12.5", "--duration", "2"]).status == 0)
        let start = Int(12.5 * 44_100) * 2
        #expect(sampleDifference(try wavSamples(part), Array(original[start..<(start + 2 * 44_100 * 2)])) == nil,
                "seek by arithmetic lands on the sample")
    }

    /// The bytes of a WAV file's data chunk.
    static func dataChunk(_ path: String) throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var i = 12
        while i + 8 <= bytes.count {
            let size = Int(bytes[i + 4]) | Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]) << 16 | Int(bytes[i + 7]) << 24
            if bytes[i..<(i + 4)].elementsEqual("data".utf8) { return Array(bytes[(i + 8)..<min(bytes.count, i + 8 + size)]) }
            i += 8 + size + (size & 1)
        }
        throw TestFailure("\(path): no data chunk")
    }

    @Test func wav24BitAndFloat_comeOutBitExact() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sox = try #require(which("sox"))
        try runCommand(sox, ["-n", "-R", "-r", "96000", "-c", "2", "-b", "24", dir.appendingPathComponent("deep.wav").path,
                             "synth", "3", "pluck", "C3", "pluck", "G3", "gain", "-3"])
        try runCommand(sox, ["-n", "-R", "-r", "48000", "-c", "2", "-e", "floating-point", "-b", "32",
                             dir.appendingPathComponent("float.wav").path, "synth", "3", "sine", "500", "gain", "-3"])
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for name in ["deep.wav", "float.wav"] {
            let out = dir.appendingPathComponent("out-\(name)").path
            let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/\(name)", "--output", "wav:\(out)"])
            #expect(run.status == 0, "\(name): \(String(decoding: run.stderr, as: UTF8.self))")
            #expect(try Self.dataChunk(out) == Self.dataChunk(dir.appendingPathComponent(name).path), "\(name) is bit-exact")
        }
    }

    @Test func m4a_faststartAndMoovAtEnd_matchFFmpeg_andSeekExactly() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let faststart = TestPaths.media.appendingPathComponent("track.m4a").path
        try FileManager.default.copyItem(atPath: faststart, toPath: dir.appendingPathComponent("front.m4a").path)
        // The same audio with the moov box after mdat (ffmpeg's default layout).
        let ffmpeg = try #require(which("ffmpeg"))
        try runCommand(ffmpeg, ["-v", "error", "-y", "-i", faststart, "-c", "copy", dir.appendingPathComponent("end.m4a").path])
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let reference = dir.appendingPathComponent("ref.wav").path
        try runCommand(ffmpeg, ["-v", "error", "-y", "-i", faststart, "-f", "wav", reference])
        let a = try wavSamples(reference)
        var full: [Int16] = []
        for name in ["front.m4a", "end.m4a"] {
            let ours = dir.appendingPathComponent("\(name).wav").path
            let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/\(name)", "--output", "wav:\(ours)"])
            #expect(run.status == 0, "\(name): \(String(decoding: run.stderr, as: UTF8.self))")
            let b = try wavSamples(ours)
            #expect(Self.snr(a, b, offset: 0, channels: 2) >= 60, "\(name): SNR against ffmpeg")
            #expect(abs(a.count - b.count) <= 1024 * 2, "\(name): length within one frame (edit list applied)")
            full = b
        }
        let part = dir.appendingPathComponent("part.wav").path
        #expect(try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/end.m4a", "--output", "wav:\(part)",
                                                       "--start", "12.5", "--duration", "2"]).status == 0)
        let start = Int(12.5 * 44_100) * 2
        #expect(sampleDifference(try wavSamples(part), Array(full[start..<(start + 2 * 44_100 * 2)])) == nil, "M4A seek is sample-exact")
    }

    /// A moov larger than the first reads (an hour of AAC has a 660 KB moov): the probe stops at
    /// the moov's end, short of the first sample behind the mdat header; the samples must still
    /// be cut at their offsets.
    @Test func m4a_largeMoov_readExactlyToItsEnd_decodesLikeTheSmallOne() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let original = [UInt8](try Data(contentsOf: TestPaths.media.appendingPathComponent("track.m4a")))
        func u32(_ at: Int) -> Int { original[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        let moovAt = try #require(original.firstRange(of: Array("moov".utf8))).lowerBound - 4
        let moovEnd = moovAt + u32(moovAt)
        let filler = 300_000
        var moov = Array(original[moovAt..<moovEnd]) + be32(filler) + Array("free".utf8) + [UInt8](repeating: 0, count: filler - 8)
        moov.replaceSubrange(0..<4, with: be32(moovEnd - moovAt + filler))
        // Every chunk offset moves by the filler.
        let stco = try #require(moov.firstRange(of: Array("stco".utf8))).upperBound + 4
        let count = moov[stco..<(stco + 4)].reduce(0) { $0 << 8 | Int($1) }
        for i in 0..<count {
            let at = stco + 4 + 4 * i
            let offset = moov[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
            moov.replaceSubrange(at..<(at + 4), with: be32(offset + filler))
        }
        let big = Array(original[..<moovAt]) + moov + Array(original[moovEnd...])
        try Data(big).write(to: dir.appendingPathComponent("big-moov.m4a"))
        try FileManager.default.copyItem(at: TestPaths.media.appendingPathComponent("track.m4a"),
                                         to: dir.appendingPathComponent("track.m4a"))
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        var decoded: [[Int16]] = []
        for name in ["track.m4a", "big-moov.m4a"] {
            let out = dir.appendingPathComponent("\(name).wav").path
            let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/\(name)", "--output", "wav:\(out)"])
            #expect(run.status == 0, "\(name): \(String(decoding: run.stderr, as: UTF8.self))")
            decoded.append(try wavSamples(out))
        }
        #expect(decoded[0].count > 44_100 * 2 * 50)
        #expect(sampleDifference(decoded[0], decoded[1]) == nil, "the same samples whatever the moov's size")
    }

    /// HE-AAC without an HE-AAC encoder (Debian has none): track.m4a's AudioSpecificConfig gets
    /// explicit backward-compatible SBR signalling (sync extension 0x2B7, AOT 5, sbrPresent, 88.2 kHz).
    /// libfaad2 and ffmpeg then both run the SBR tool over the LC core and output twice the rate.
    @Test func heAACSignalling_outputsTwiceTheRate_matchesFFmpeg_trimsAndSeeksExactly() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var bytes = [UInt8](try Data(contentsOf: TestPaths.media.appendingPathComponent("track.m4a")))
        let lcConfig: [UInt8] = [0x12, 0x10, 0x56, 0xE5, 0x00]      // LC 44.1 kHz stereo, sbrPresent = 0
        let at = try #require(bytes.firstRange(of: lcConfig)).lowerBound
        bytes[at + 4] = 0x88                                         // sbrPresent = 1, extension rate index 1 (88.2 kHz)
        try Data(bytes).write(to: dir.appendingPathComponent("he.m4a"))
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let url = "\(server.baseURL)/media/he.m4a"
        let ours = dir.appendingPathComponent("ours.wav").path
        let run = try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(ours)", "--stats"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let stats = try PlayerTests.stats(run.stdout)
        #expect(stats["sample_rate"] as? Int == 88_200, "the format reports the SBR output rate")
        // The edit list (1024 ticks of priming at the 44.1 kHz core rate) is 2048 output samples.
        #expect(stats["frames_out"] as? Int == 52 * 88_200, "\(stats)")
        let info = try runCommand(PlayerTests.streamplay, ["--info", url])
        let facts = try PlayerTests.stats(info.stdout)
        #expect(facts["sample_rate"] as? Int == 88_200 && facts["encoder_delay"] as? Int == 2048, "\(facts)")
        let reference = dir.appendingPathComponent("ref.wav").path
        try runCommand(try #require(which("ffmpeg")), ["-v", "error", "-y", "-i", dir.appendingPathComponent("he.m4a").path,
                                                      "-f", "wav", reference])
        let a = try wavSamples(reference), b = try wavSamples(ours)
        #expect(Self.snr(a, b, offset: 0, channels: 2) >= 60, "SNR against ffmpeg's SBR decode")
        #expect(abs(a.count - b.count) <= 2048 * 2, "lengths \(a.count) vs \(b.count)")
        let part = dir.appendingPathComponent("part.wav").path
        #expect(try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(part)", "--start", "12.5", "--duration", "2"]).status == 0)
        let start = Int(12.5 * 88_200) * 2
        #expect(sampleDifference(try wavSamples(part), Array(b[start..<(start + 2 * 88_200 * 2)])) == nil, "SBR seek is sample-exact")
    }

    @Test func fragmentedM4A_matchesFFmpeg_andSeeksByIndexAndByMfra() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = try #require(which("ffmpeg"))
        let local = TestPaths.media.appendingPathComponent("fragmented.m4a").path
        let reference = dir.appendingPathComponent("ref.wav").path
        try runCommand(ffmpeg, ["-v", "error", "-y", "-i", local, "-f", "wav", reference])
        func play(_ source: String, _ name: String, _ extra: [String] = []) throws -> [Int16] {
            let out = dir.appendingPathComponent(name).path
            let run = try runCommand(PlayerTests.streamplay, [source, "--output", "wav:\(out)"] + extra)
            #expect(run.status == 0, "\(name): \(String(decoding: run.stderr, as: UTF8.self))")
            return try wavSamples(out)
        }
        let full = try play("\(server.baseURL)/media/fragmented.m4a", "full.wav")
        let a = try wavSamples(reference)
        // The file has no edit list: ffmpeg keeps the 1024 priming samples, streamplay drops them
        // (and, from the last sample's shorter duration, the padding).
        #expect(Self.snr(a, full, offset: 1024, channels: 2) >= 60, "SNR against ffmpeg's decode")
        #expect(abs((a.count - 1024 * 2) - full.count) <= 1024 * 2, "lengths \(a.count) vs \(full.count)")
        // The same access units as track.m4a, whose edit list says the same trim: identical samples.
        let faststart = try play("\(server.baseURL)/media/track.m4a", "track.wav")
        #expect(sampleDifference(full, faststart) == nil, "fragmented and faststart forms of one track decode identically")

        let start = Int(12.5 * 44_100) * 2
        let expected = Array(full[start..<(start + 2 * 44_100 * 2)])
        let span = ["--start", "12.5", "--duration", "2"]
        #expect(sampleDifference(try play("\(server.baseURL)/media/fragmented.m4a", "index.wav", span), expected) == nil,
                "seek through streamd's index")
        #expect(sampleDifference(try play(local, "local.wav", span), expected) == nil, "seek through a local scan")
        // A server without /api/index: the seek table comes from the file's mfra box (Range requests).
        let proxy = try FaultProxy(upstreamPort: server.port, faults: [], refusingPathsStartingWith: "/api/")
        defer { proxy.stop() }
        let out = dir.appendingPathComponent("mfra.wav").path
        let run = try runCommand(PlayerTests.streamplay, ["http://127.0.0.1:\(proxy.port)/media/fragmented.m4a",
                                                         "--output", "wav:\(out)", "--verbose"] + span)
        let log = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 0, "\(log)")
        #expect(log.contains("seek table from mfra"), "\(log)")
        #expect(sampleDifference(try wavSamples(out), expected) == nil, "seek through the mfra table")
        // No mehd: the length comes from the mfra table and the last fragment, before playing.
        let counted = try runCommand(PlayerTests.streamplay, ["http://127.0.0.1:\(proxy.port)/media/fragmented.m4a",
                                                             "--output", "null", "--stats"])
        let stats = try PlayerTests.stats(counted.stdout)
        #expect(stats["duration_s"] as? Double == 52 && stats["frames_out"] as? Int == 52 * 44_100, "\(stats)")
    }

    /// Signal-to-noise ratio of `test` against `reference` shifted by `offset` frames.
    static func snr(_ reference: [Int16], _ test: [Int16], offset: Int, channels: Int) -> Double {
        let n = min(reference.count - offset * channels, test.count)
        guard n > 0 else { return -.infinity }
        var signal = 0.0, noise = 0.0
        for i in 0..<n {
            let r = Double(reference[offset * channels + i]), d = r - Double(test[i])
            signal += r * r
            noise += d * d
        }
        return 10 * log10(signal / max(noise, 1))
    }

    @Test func adts_matchesFFmpegsDecode() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = "\(server.baseURL)/media/adts.aac"
        let ours = dir.appendingPathComponent("ours.wav").path
        let reference = dir.appendingPathComponent("ref.wav").path
        let run = try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(ours)", "--stats"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        try runCommand(try #require(which("ffmpeg")), ["-v", "error", "-y", "-i", url, "-f", "wav", reference])
        let a = try wavSamples(reference), b = try wavSamples(ours)
        // libfaad2 does not output the first frame (the encoder's 1024 priming samples); ffmpeg does.
        let best = [0, 1024, 2048].map { Self.snr(a, b, offset: $0, channels: 2) }.max() ?? -.infinity
        #expect(best >= 60, "SNR \(best) dB against ffmpeg's decode")
        #expect(abs(a.count - b.count) <= 2048 * 2, "lengths \(a.count) vs \(b.count)")
        // A seek lands on the same samples as the full decode (seek index + 2 warm-up frames).
        let part = dir.appendingPathComponent("part.wav").path
        #expect(try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(part)", "--start", "10", "--duration", "2"]).status == 0)
        let span = try wavSamples(part)
        #expect(span.count == 2 * 44_100 * 2)
        #expect(Array(b[(10 * 44_100 * 2)..<(12 * 44_100 * 2)]) == span, "ADTS seek is sample-exact")
    }
}
