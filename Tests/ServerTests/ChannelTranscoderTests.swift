import Foundation
import Testing
import TestSupport
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
import StreamAudio
import StreamShared

/// The transcoding path without the clock: each track's samples come out of the decoder
/// exactly as long as the audio the file was made from (gapless trims), and the MP3 stream
/// holds all of them at the channel's rate.
@Suite(.ownThreads) struct ChannelTranscoderTests {
    /// A channel track for `path`, from the same analysis the catalog makes.
    static func track(_ path: String) throws -> ChannelTrack {
        let file = try OpenFile(path: path)
        let analysis = try TrackAnalyzer.analyze(file)
        return ChannelTrack(track: Track(path: path, stamp: file.stamp, analysis: analysis), path: path)
    }

    @Test func everyTracksSamples_exactlyOnce_inOneStream() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("transcoder-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // name, seconds, rate, ffmpeg options: what the decoder must give back, sample for sample.
        let tracks: [(String, Double, Int, [String])] = [
            ("a.mp3", 2.5, 44_100, ["-ac", "2", "-c:a", "libmp3lame", "-b:a", "128k"]),
            ("b.mp3", 2.0, 22_050, ["-ac", "1", "-c:a", "libmp3lame", "-b:a", "64k"]),
            ("c.m4a", 2.0, 48_000, ["-ac", "2", "-c:a", "aac", "-b:a", "128k"]),
            ("d.wav", 2.0, 96_000, ["-ac", "2", "-c:a", "pcm_s16le"]),
        ]
        let transcoder = try ChannelTranscoder(format: ChannelFormat(codec: .mpeg, sampleRate: 44_100, channels: 2, kbps: 128),
                                                isolation: .inProcess)
        var frames = 0
        var expectedOut = 0.0
        for (name, seconds, rate, options) in tracks {
            let path = dir.appendingPathComponent(name).path
            let ffmpeg = Process()
            ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            ffmpeg.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=500:sample_rate=\(rate):duration=\(seconds)",
                                "-ar", "\(rate)"] + options + [path]
            try ffmpeg.run()
            ffmpeg.waitUntilExit()
            #expect(ffmpeg.terminationStatus == 0)
            try transcoder.begin(try Self.track(path))
            while let frame = try transcoder.next() {
                #expect(frame.frame.sampleRate == 44_100 && frame.frame.channels == 2 && frame.frame.bitrate == 128_000)
                frames += 1
            }
            // The gapless window: exactly the samples ffmpeg was given (LAME tag, edit list, WAV size).
            #expect(transcoder.trackSamples == Int(seconds * Double(rate)), "\(name): \(transcoder.trackSamples) samples decoded")
            expectedOut += seconds * 44_100
        }
        // Everything fed is in the stream after the encoder's delay (576), but for what is still
        // held at the end: libmp3lame's look-ahead, the frame the splitter has not seen the end of,
        // the resampler's filter (measured: 3.4 frames short of the input). Never more than fed.
        let out = Double(frames * 1152)
        #expect(out >= expectedOut - 4 * 1152 && out <= expectedOut + 576, "\(Int(out)) samples out for \(Int(expectedOut)) in")
    }

    /// A 16-bit stereo WAV of a 500 Hz tone with `rate` in its header (RIFF allows any rate).
    static func wav(rate: Int, frames: Int) -> [UInt8] {
        var data: [UInt8] = []
        for i in 0..<frames {
            let sample = Int(8000 * sin(2 * Double.pi * 500 * Double(i) / Double(max(rate, 1))))
            data += le16(sample) + le16(sample)
        }
        let fmt = le16(1) + le16(2) + le32(rate) + le32(rate * 4) + le16(4) + le16(16)
        return Array("RIFF".utf8) + le32(4 + 8 + fmt.count + 8 + data.count) + Array("WAVE".utf8)
            + Array("fmt ".utf8) + le32(fmt.count) + fmt + Array("data".utf8) + le32(data.count) + data
    }

    /// A track whose header says 1 Hz is refused by the resampler (one 4096-frame block would
    /// have become 180 million frames at 44.1 kHz, 1.4 GB), and the next track, at the rate of
    /// the one before it, is resampled again rather than fed to the encoder at its own rate.
    @Test func absurdRate_isRefused_andTheNextTrackIsStillResampled() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("transcoder-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = dir.appendingPathComponent("good.wav").path, bad = dir.appendingPathComponent("bad.wav").path
        try Data(Self.wav(rate: 48_000, frames: 96_000)).write(to: URL(fileURLWithPath: good))
        try Data(Self.wav(rate: 1, frames: 8_192)).write(to: URL(fileURLWithPath: bad))
        let transcoder = try ChannelTranscoder(format: ChannelFormat(codec: .mpeg, sampleRate: 44_100, channels: 2, kbps: 128),
                                                isolation: .inProcess)
        func frames(of path: String) throws -> Int {
            try transcoder.begin(try Self.track(path))
            var count = 0
            while try transcoder.next() != nil { count += 1 }
            return count
        }
        let first = try frames(of: good)
        #expect(throws: (any Error).self, "a 1 Hz track is refused") { _ = try frames(of: bad) }
        let again = try frames(of: good)
        // 2 s at 44.1 kHz is 76.6 frames of 1152; unresampled 48 kHz samples would make 83.3.
        #expect(first >= 70 && first <= 80, "\(first) frames for the first 2 s")
        #expect(again >= 73 && again <= 80, "\(again) frames for 2 s after the refused track (83 if not resampled)")
    }

    /// Every sample of `pcm` until its end: (rate of each unit, all samples).
    static func drain(_ pcm: any TrackPCM) throws -> (rates: Set<Int>, samples: [Float]) {
        var samples: [Float] = []
        var rates: Set<Int> = []
        while let rate = try pcm.next(into: &samples) { rates.insert(rate) }
        return (rates, samples)
    }

    static func workerSettings(_ streamd: String, faults: String? = nil, unitSeconds: Double = 10) -> DecodeWorker.Settings {
        var settings = DecodeWorker.Settings()
        settings.executable = streamd
        settings.unitSeconds = unitSeconds
        if let faults { settings.arguments += [DecodeWorker.faultOption, faults] }
        return settings
    }

    /// The real `streamd decode-worker` gives the very samples the decoder gives in process
    /// (MP3 with its gapless trim, M4A mixed down to mono, WAV), at the track's rate.
    @Test func worker_givesTheSameSamplesAsInProcess() throws {
        guard let streamd = IsolatedAnalyzerTests.streamd else { return }
        let media = IsolatedAnalyzerTests.media
        for (name, channels) in [("cbr-128k-44k.mp3", 2), ("track.m4a", 1), ("pcm16.wav", 2)] {
            let track = try Self.track(media.appendingPathComponent(name).path)
            let local = try Self.drain(LocalTrackPCM(path: track.path, hints: track.decoderHints, channels: channels))
            let isolated = try Self.drain(IsolatedTrackPCM(path: track.path, hints: track.decoderHints, channels: channels,
                                                           settings: Self.workerSettings(streamd)))
            #expect(local.samples.count > 10_000, "\(name): \(local.samples.count) samples in process")
            #expect(isolated.rates == local.rates, "\(name): rates \(isolated.rates) vs \(local.rates)")
            #expect(isolated.samples == local.samples, "\(name): \(isolated.samples.count) samples from the worker, \(local.samples.count) in process")
        }
    }

    /// A decoder that traps mid-track (the fault hook: as libmpg123 crashing on a crafted frame
    /// would) or loops is a typed error naming how the worker ended; this process goes on, and
    /// a file that is not audio is the decoder's own refusal, thrown when the track begins.
    @Test func worker_trapHangAndRefusal_areTypedErrors() throws {
        guard let streamd = IsolatedAnalyzerTests.streamd else { return }
        let track = try Self.track(IsolatedAnalyzerTests.media.appendingPathComponent("cbr-128k-44k.mp3").path)
        let trapping = try IsolatedTrackPCM(path: track.path, hints: track.decoderHints, channels: 2,
                                            settings: Self.workerSettings(streamd, faults: "trap:cbr-128k-44k.mp3"))
        var samples: [Float] = []
        #expect(try trapping.next(into: &samples) != nil, "the first unit comes before the trap")
        let trap = #expect(throws: DecodeWorkerError.self) { while try trapping.next(into: &samples) != nil {} }
        #expect(trap?.description.contains("decoder crashed (signal 4)") == true, "\(trap?.description ?? "")")
        #expect(trap?.description.contains("Fatal error") == true, "the worker's last words: \(trap?.description ?? "")")

        let hanging = try IsolatedTrackPCM(path: track.path, hints: track.decoderHints, channels: 2,
                                           settings: Self.workerSettings(streamd, faults: "hang:cbr-128k-44k.mp3", unitSeconds: 1))
        let hang = #expect(throws: DecodeWorkerError.self) { while try hanging.next(into: &samples) != nil {} }
        #expect(hang?.description.contains("timed out after 1 s") == true, "\(hang?.description ?? "")")

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("decoder-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = dir.appendingPathComponent("notes.mp3").path
        try Data("not audio at all, only words".utf8).write(to: URL(fileURLWithPath: text))
        let refusal = #expect(throws: DecodeWorkerError.self) {
            _ = try IsolatedTrackPCM(path: text, hints: TrackDecoder.Hints(), channels: 2, settings: Self.workerSettings(streamd))
        }
        #expect(refusal?.description.isEmpty == false, "the decoder's message comes through")
    }

    /// A 32-bit float WAV holds any bit pattern: NaN made libmp3lame abort the process
    /// (psymodel.c: `el >= 0`, found while adding the decode worker). The encoder's wrapper
    /// makes NaN silence and holds the rest to ±16 (what libsoxr makes of NaN is NaN again),
    /// in either isolation.
    @Test func nonFiniteAndHugeSamples_areMadeSane_beforeTheEncoder() throws {
        guard let streamd = IsolatedAnalyzerTests.streamd else { return }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("decoder-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
        let pattern: [Float] = [.nan, .infinity, -.infinity, 1e30, -1e30, 0.5, -0.25, .signalingNaN]
        let frames = 48_000
        var data: [UInt8] = []
        for i in 0..<(frames * 2) { data += le32(pattern[i % pattern.count].bitPattern) }
        let fmt = le16(3) + le16(2) + le32(48_000) + le32(48_000 * 8) + le16(8) + le16(32)
        let wav = Array("RIFF".utf8) + le32(UInt32(4 + 8 + fmt.count + 8 + data.count)) + Array("WAVE".utf8)
            + Array("fmt ".utf8) + le32(UInt32(fmt.count)) + fmt + Array("data".utf8) + le32(UInt32(data.count)) + data
        let path = dir.appendingPathComponent("wild.wav").path
        try Data(wav).write(to: URL(fileURLWithPath: path))
        let track = try Self.track(path)

        let samples = pattern.map(LAMEEncoder.sane)
        #expect(samples == [0, 16, -16, 16, -16, 0.5, -0.25, 0], "\(samples)")
        for isolation in [DecodeIsolation.inProcess, .worker(Self.workerSettings(streamd, unitSeconds: 30))] {
            let transcoder = try ChannelTranscoder(format: ChannelFormat(codec: .mpeg, sampleRate: 44_100, channels: 2, kbps: 128),
                                                   isolation: isolation)
            try transcoder.begin(track)
            var mp3Frames = 0
            while try transcoder.next() != nil { mp3Frames += 1 }
            #expect(mp3Frames >= 30, "\(isolation): \(mp3Frames) MP3 frames for 1 s")
            #expect(transcoder.trackSamples == frames)
        }
    }

    /// A worker whose memory a decoder bug corrupted may write anything before it dies: the
    /// server checks every frame (python3 plays that worker here: its hello, then it reads the
    /// request, then the bytes under test) and throws a typed error, quarantining the file
    /// unless the worker failed before it read the request.
    @Test(arguments: [
        ("streamd-decoder/2", "b''", "is not a streamd decoder", false),
        ("streamd-decoder/1", "frame(b'\\x00' + struct.pack('<I', 0) + b'\\x00' * 8)", "rate of 0 Hz", true),
        ("streamd-decoder/1", "frame(b'\\x00' + struct.pack('<I', 4000000000) + b'\\x00' * 8)", "rate of 4000000000 Hz", true),
        ("streamd-decoder/1", "frame(b'\\x00' + struct.pack('<I', 44100) + b'\\x00' * 12)", "malformed frame of 17 bytes", true),
        ("streamd-decoder/1", "frame(b'\\x00' + struct.pack('<I', 44100) + b'\\x00' * 7)", "malformed frame of 12 bytes", true),
        ("streamd-decoder/1", "frame(b'\\x09')", "frame of kind 9", true),
        ("streamd-decoder/1", "struct.pack('<I', 100 << 20)", "over the limit", true),
        ("streamd-decoder/1", "frame(b'\\x00' + struct.pack('<I', 44100) + b'\\x00' * 8)[:-3]", "decoder exited with status 0", true),
    ])
    func worker_whoseOutputIsWrong_isATypedError(hello: String, rest: String, message: String, quarantines: Bool) throws {
        var settings = DecodeWorker.Settings()
        settings.executable = "/usr/bin/python3"
        settings.arguments = ["-c", """
            import struct, sys
            def frame(p): return struct.pack('<I', len(p)) + p
            sys.stdout.buffer.write(frame(b'\(hello)'))
            sys.stdout.buffer.flush()
            sys.stdin.buffer.read()
            sys.stdout.buffer.write(\(rest))
            """]
        let error = #expect(throws: DecodeWorkerError.self) {
            let pcm = try IsolatedTrackPCM(path: "/nonexistent.wav", hints: TrackDecoder.Hints(), channels: 2, settings: settings)
            _ = try Self.drain(pcm)
        }
        #expect(error?.description.contains(message) == true, "\(error?.description ?? "no error"), wanted \(message)")
        #expect(error?.quarantines == quarantines, "\(error?.description ?? "")")
    }

    /// A file whose worker stalled is skipped at its next turn without a worker (a hang costs
    /// one stall, not one per pass), and played again once it changes.
    @Test func stalledFile_isQuarantined_untilItChanges() throws {
        guard let streamd = IsolatedAnalyzerTests.streamd else { return }
        let dir = try IsolatedAnalyzerTests.folder([("cbr-128k-44k.mp3", "stall.mp3")])
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("stall.mp3").path
        let track = try Self.track(path)
        let transcoder = try ChannelTranscoder(format: ChannelFormat(codec: .mpeg, sampleRate: 44_100, channels: 2, kbps: 128),
                                               isolation: .worker(Self.workerSettings(streamd, faults: "hang:stall.mp3", unitSeconds: 1)))
        try transcoder.begin(track)
        let stall = #expect(throws: DecodeWorkerError.self) { while try transcoder.next() != nil {} }
        #expect(stall?.description.contains("timed out") == true, "\(stall?.description ?? "")")
        let again = #expect(throws: DecodeWorkerError.self) { try transcoder.begin(track) }
        #expect(again?.description.contains("skipped: its decoder crashed or stalled on it before") == true,
                "\(again?.description ?? "")")
        // A new modification time is a new file: it gets a worker again (which gives its first
        // samples, then stalls again under the fault hook).
        var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        try transcoder.begin(track)
        let changed = #expect(throws: DecodeWorkerError.self) { while try transcoder.next() != nil {} }
        #expect(changed?.description.contains("timed out") == true, "\(changed?.description ?? "")")
        #expect(transcoder.trackSamples > 0, "the changed file was decoded again")
    }
}
