import Foundation
import Testing
import TestSupport

/// AAC-LC at every common rate, mono and stereo, in every container streamplay reads: the
/// output keeps the stream's own rate and channels (libfaad2 would make 8 kHz mono into 16 kHz
/// stereo), is exactly as long as the file says, and matches ffmpeg's decode to >= 60 dB.
/// `--info`, streamd's catalog and `--stats` state the format that is played.
enum AACMatrix {
    static let rates = [8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000]
    static let seconds = 4

    struct Case: CustomStringConvertible, Sendable {
        var rate: Int
        var channels: Int
        var name: String { "aac-\(rate)-\(channels == 1 ? "mono" : "stereo")" }
        var description: String { name }
    }

    static let cases = rates.flatMap { rate in [1, 2].map { Case(rate: rate, channels: $0) } }

    /// The forms of one case: file name (or HLS playlist path) and the file whose ffmpeg decode is the reference.
    static func forms(_ c: Case) -> [(label: String, path: String, reference: String)] {
        let n = c.name
        return [("ADTS", "media/\(n).aac", "\(n).aac"),
                ("M4A moov first", "media/\(n).m4a", "\(n).m4a"),
                ("M4A moov at end", "media/\(n)-end.m4a", "\(n)-end.m4a"),
                ("M4A fragmented", "media/\(n)-frag.m4a", "\(n)-frag.m4a"),
                ("HLS packed ADTS", "hls/\(n).aac/index.m3u8", "\(n).aac"),
                ("HLS fMP4", "hls/\(n).m4a/index.m3u8", "\(n).m4a")]
    }

    /// The generated files, made once for the whole suite (about 70 ffmpeg/sox runs, two at a time).
    static let folder: Result<URL, TestFailure> = {
        do { return .success(try make()) } catch { return .failure(TestFailure("AAC matrix media: \(error)")) }
    }()

    static var directory: URL { FileManager.default.temporaryDirectory.appendingPathComponent("aac-matrix-\(getpid())") }

    static func make() throws -> URL {
        let dir = directory
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        // Shared by every case of the suite, so it goes when the test process ends; the test
        // runner does not always run exit handlers, so earlier runs' folders go here too.
        atexit { try? FileManager.default.removeItem(at: AACMatrix.directory) }
        let temporary = FileManager.default.temporaryDirectory
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? [] where name.hasPrefix("aac-matrix-") {
            if let pid = Int32(name.dropFirst("aac-matrix-".count)), pid != getpid(), kill(pid, 0) != 0 {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
        let sox = try #require(which("sox")), ffmpeg = try #require(which("ffmpeg")), espeak = try #require(which("espeak-ng"))
        @Sendable func run(_ tool: String, _ arguments: [String]) throws {
            let result = try runCommand(tool, arguments)
            guard result.status == 0 else {
                throw TestFailure("\(tool) \(arguments.joined(separator: " ")): \(String(decoding: result.stderr, as: UTF8.self))")
            }
        }
        @Sendable func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        // The source: speech over two different plucked notes, left and right, 4 s at 48 kHz.
        try run(espeak, ["-v", "en", "-s", "170", "-w", path("speech.wav"), "Seven, eight, nine. Mono stays mono, stereo stays stereo."])
        try run(sox, ["-R", path("speech.wav"), "-r", "48000", "-c", "2", path("speech48.wav")])
        try run(sox, ["-R", "-n", "-r", "48000", "-c", "2", path("notes.wav"), "synth", "\(seconds)", "pluck", "C3", "pluck", "E4",
                      "gain", "-12"])
        try run(sox, ["-R", "-m", path("speech48.wav"), path("notes.wav"), path("source.wav"), "trim", "0", "\(seconds)", "gain", "-n", "-1"])
        let ff = [ffmpeg, "-nostdin", "-v", "error", "-y"]
        let bitexact = ["-fflags", "+bitexact", "-flags:a", "+bitexact", "-map_metadata", "-1"]
        let failures = LockedData()
        DispatchQueue.concurrentPerform(iterations: cases.count) { i in
            let c = cases[i], n = c.name
            // PNS off: its noise is random per decoder, which would make decoders disagree by design.
            let perChannel = c.rate <= 16000 ? 24 : c.rate <= 24000 ? 48 : 64
            let encode = ["-c:a", "aac", "-aac_pns", "0", "-b:a", "\(perChannel * c.channels)k"] + bitexact
            do {
                // Resampled by sox first, so each file holds exactly 4 s of samples at its rate.
                try run(sox, ["-R", path("source.wav"), "-r", "\(c.rate)", "-c", "\(c.channels)", path("\(n).wav")])
                try run(ff[0], Array(ff.dropFirst()) + ["-i", path("\(n).wav")] + encode + ["-f", "adts", path("\(n).aac")])
                try run(ff[0], Array(ff.dropFirst()) + ["-i", path("\(n).wav")] + encode + ["-movflags", "+faststart", path("\(n).m4a")])
                try run(ff[0], Array(ff.dropFirst()) + ["-i", path("\(n).m4a"), "-c", "copy"] + bitexact + [path("\(n)-end.m4a")])
                try run(ff[0], Array(ff.dropFirst()) + ["-i", path("\(n).m4a"), "-c", "copy"] + bitexact
                    + ["-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-frag_duration", "1000000", path("\(n)-frag.m4a")])
                try FileManager.default.removeItem(atPath: path("\(n).wav"))
            } catch {
                failures.withLock { $0.append(contentsOf: Array("\(n): \(error)\n".utf8)) }
            }
        }
        for scratch in ["speech.wav", "speech48.wav", "notes.wav", "source.wav"] { try? FileManager.default.removeItem(atPath: path(scratch)) }
        let failed = failures.withLock { String(decoding: $0, as: UTF8.self) }
        if !failed.isEmpty { throw TestFailure(failed) }
        return dir
    }
}

@Suite(.ownThreads) struct AACFormatMatrixTests {
    static var streamplay: String { TestPaths.binDir.appendingPathComponent("streamplay").path }

    static func json(_ data: Data) throws -> [String: Any] {
        let last = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], "JSON line: \(last)")
    }

    @Test(arguments: AACMatrix.cases)
    func outputKeepsTheStreamsFormat_lengthExact_matchesFFmpeg(_ c: AACMatrix.Case) throws {
        let folder = try AACMatrix.folder.get()
        let server = try StreamdProcess(folder: folder, extraArguments: ["--quiet"])
        let out = folder.appendingPathComponent("out-\(c.name)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: out) }

        // The catalog states the format of each file.
        let catalog = try RawConnection(port: server.port).request("GET", "/api/tracks")
        let tracks = try #require(try JSONSerialization.jsonObject(with: Data(catalog.body)) as? [[String: Any]])

        var references: [String: FFmpegAACReference] = [:]
        for form in AACMatrix.forms(c) {
            let url = "\(server.baseURL)/\(form.path)"
            let label = "\(c.name) \(form.label)"
            let wav = out.appendingPathComponent("\(form.label.replacingOccurrences(of: " ", with: "-")).wav").path
            let run = try runCommand(Self.streamplay, [url, "--output", "wav:\(wav)", "--stats"])
            #expect(run.status == 0, "\(label): \(String(decoding: run.stderr, as: UTF8.self))")
            guard run.status == 0 else { continue }
            let stats = try Self.json(run.stdout)
            let ours = try PCMFile(path: wav)
            #expect(ours.sampleRate == c.rate && ours.channels == c.channels,
                    "\(label): plays \(ours.sampleRate) Hz \(ours.channels) ch")
            #expect(stats["sample_rate"] as? Int == c.rate && stats["channels"] as? Int == c.channels, "\(label): --stats \(stats)")
            #expect(stats["frames_out"] as? Int == ours.frames, "\(label): --stats frames_out vs the WAV")

            let info = try Self.json(try runCommand(Self.streamplay, ["--info", url]).stdout)
            #expect(info["sample_rate"] as? Int == c.rate && info["channels"] as? Int == c.channels, "\(label): --info \(info)")
            if form.path.hasPrefix("media/") {
                let duration = try #require(info["duration_s"] as? Double)
                #expect(Int((duration * Double(c.rate)).rounded()) == ours.frames, "\(label): --info duration \(duration) s vs \(ours.frames) frames played")
                let entry = tracks.first { $0["path"] as? String == form.reference }
                #expect(entry?["sample_rate"] as? Int == c.rate && entry?["channels"] as? Int == c.channels,
                        "\(label): catalog \(String(describing: entry))")
            }

            if references[form.reference] == nil {
                references[form.reference] = try FFmpegAACReference(file: folder.appendingPathComponent(form.reference).path,
                                                                    wav: out.appendingPathComponent("ref-\(form.reference).wav").path)
            }
            let reference = try #require(references[form.reference])
            let snr = snrDecibels(reference: reference.samples, test: ours.samples(), offset: reference.offset, channels: c.channels)
            print("aac-matrix | \(c.rate) | \(c.channels == 1 ? "mono" : "stereo") | \(form.label) | ours \(ours.frames) | ffmpeg \(reference.expectedFrames) (+\(reference.offset) priming, +\(reference.untrimmedTail) padding) | SNR \(String(format: "%.1f", snr)) dB")
            #expect(ours.frames == reference.expectedFrames, "\(label): \(ours.frames) frames, ffmpeg's decode \(reference.expectedFrames)")
            #expect(snr >= 60, "\(label): SNR \(snr) dB against ffmpeg's decode")
            if form.label.hasPrefix("M4A") {
                #expect(ours.frames == c.rate * AACMatrix.seconds, "\(label): the source's exact length")
            }
        }
    }
}
