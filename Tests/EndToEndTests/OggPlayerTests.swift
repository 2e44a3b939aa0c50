import Foundation
import Testing
import TestSupport
import StreamShared

/// Ogg Opus and Vorbis through streamplay's pipeline against their reference decoders: every
/// file `make media` generates in media/ogg (Opus against `opusdec --rate 48000 --float`, Vorbis
/// against `oggdec`: same rate, channels and length, no offset, SNR >= 60 dB), a seek over HTTP
/// from a real streamd landing on the exact sample with a bounded count of Range requests, and
/// the real-world corpus's Ogg files, each played like its reference or refused in one line.
@Suite(.ownThreads) struct OggPlayerTests {
    static var streamplay: String { TestPaths.binDir.appendingPathComponent("streamplay").path }
    static let generated = ["opus-stereo-48k.opus", "opus-from-44k.opus", "opus-mono.opus", "opus-5.1.opus",
                            "vorbis-stereo-44k.ogg", "vorbis-mono-22k.ogg", "chained-opus.opus", "opus-20s.opus", "vorbis-5.1.ogg"]

    static func scratch() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ogg-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// The reference decoder's output for `file`: opusdec at 48 kHz in float, or oggdec; for
    /// Vorbis of more than two channels ffmpeg, as oggdec 1.4.2 writes 5.1 in neither Vorbis nor
    /// WAV order (L R C Rs LFE Ls: measured on the six tones of vorbis-5.1.ogg; ffmpeg and
    /// streamplay give back the encoder's input order, L R C LFE Ls Rs).
    static func reference(_ file: String, into path: String) throws -> PCMFile {
        let head = (try? Data(contentsOf: URL(fileURLWithPath: file)).prefix(64)) ?? Data()
        let isOpus = file.hasSuffix(".opus") || head.range(of: Data("OpusHead".utf8)) != nil
        let vorbisChannels = head.range(of: Data("\u{01}vorbis".utf8)).map { Int(head[$0.upperBound + 4]) } ?? 0
        let run = isOpus ? try runCommand(try #require(which("opusdec")), ["--quiet", "--rate", "48000", "--float", file, path])
            : vorbisChannels > 2 ? try runCommand(try #require(which("ffmpeg")), ["-nostdin", "-loglevel", "error", "-y", "-i", file,
                                                                                 "-c:a", "pcm_s16le", path])
            : try runCommand(try #require(which("oggdec")), ["--quiet", "-o", path, file])
        guard run.status == 0 else { throw TestFailure("reference decoder failed on \(file): \(String(decoding: run.stderr, as: UTF8.self))") }
        return try PCMFile(path: path)
    }

    /// The speaker mask of a WAV file's WAVE_FORMAT_EXTENSIBLE fmt chunk; nil for a plain one.
    static func channelMask(_ path: String) throws -> UInt32? {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(64))
        guard bytes.count >= 44, bytes[12..<16].elementsEqual("fmt ".utf8), bytes[20] == 0xFE, bytes[21] == 0xFF else { return nil }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[40 + $1]) << (8 * UInt32($1)) }
    }

    /// A file make-media.sh adds to media/ogg without a name above would go untested: the folder
    /// must hold exactly the listed files.
    @Test func everyGeneratedFileIsListed() throws {
        let present = try FileManager.default.contentsOfDirectory(atPath: TestPaths.oggMedia.path).filter { !$0.hasPrefix(".") }
        #expect(Set(present) == Set(Self.generated), "media/ogg holds \(present.sorted())")
    }

    @Test(arguments: generated)
    func generatedFileDecodesLikeItsReference(name: String) throws {
        let file = TestPaths.oggMedia.appendingPathComponent(name).path
        #expect(FileManager.default.fileExists(atPath: file), "run `make media` first (\(file))")
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let oursPath = dir.appendingPathComponent("ours.wav").path
        let run = try runCommand(Self.streamplay, [file, "--output", "wav:\(oursPath)", "--stats"])
        #expect(run.status == 0, "\(name): \(String(decoding: run.stderr, as: UTF8.self))")
        guard run.status == 0 else { return }
        let ours = try PCMFile(path: oursPath)
        let reference = try Self.reference(file, into: dir.appendingPathComponent("reference.wav").path)
        #expect(ours.sampleRate == reference.sampleRate && ours.channels == reference.channels,
                "\(name): \(ours.sampleRate) Hz \(ours.channels) ch, reference \(reference.sampleRate) Hz \(reference.channels) ch")
        #expect(ours.frames == reference.frames, "\(name): \(ours.frames) frames, reference \(reference.frames)")
        let snr = snrDecibels(reference: reference.samples(), test: ours.samples(), offset: 0, channels: ours.channels)
        #expect(snr >= 60, "\(name): SNR \(snr) dB against the reference")
        let stats = try AACFormatMatrixTests.json(run.stdout)
        #expect(stats["frames_out"] as? Int == ours.frames, "\(name): --stats frames_out vs the WAV")
        // 5.1 is written as WAVE_FORMAT_EXTENSIBLE with the 5.1 speaker mask; mono and stereo plainly.
        #expect(try Self.channelMask(oursPath) == (ours.channels == 6 ? 0x3F : nil), "\(name): channel mask")
        print("ogg | \(name) | ours \(ours.frames) | reference \(reference.frames) | \(ours.sampleRate) Hz \(ours.channels) ch | SNR \(String(format: "%.1f", snr)) dB")
    }

    /// Seeks over HTTP from streamd: the samples after `--start` are the reference's from that
    /// exact sample on, and the plan plus the seek cost a handful of Range requests.
    @Test(arguments: [("opus-stereo-48k.opus", 2.5, 1), ("vorbis-stereo-44k.ogg", 2.5, 1), ("opus-20s.opus", 13.3, 4)])
    func seekOverHTTPLandsOnTheExactSample(name: String, start: Double, seekRequests: Int) throws {
        let server = try StreamdProcess(folder: TestPaths.oggMedia, waitForScan: false)
        defer { _ = server.stop() }
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let oursPath = dir.appendingPathComponent("seek.wav").path
        let run = try runCommand(Self.streamplay, ["\(server.baseURL)/media/\(name)", "--start", "\(start)", "--output", "wav:\(oursPath)",
                                                   "--verbose"])
        let log = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 0, "\(name): \(log)")
        guard run.status == 0 else { return }
        let ours = try PCMFile(path: oursPath)
        let reference = try Self.reference(TestPaths.oggMedia.appendingPathComponent(name).path,
                                           into: dir.appendingPathComponent("reference.wav").path)
        let offset = Int(start * Double(reference.sampleRate))
        #expect(ours.frames == reference.frames - offset, "\(name): \(ours.frames) frames after the seek, reference \(reference.frames - offset)")
        let samples = ours.samples(), wanted = reference.samples()
        let snr = snrDecibels(reference: wanted, test: samples, offset: offset, channels: ours.channels)
        let early = snrDecibels(reference: wanted, test: samples, offset: offset - 1, channels: ours.channels)
        let late = snrDecibels(reference: wanted, test: samples, offset: offset + 1, channels: ours.channels)
        #expect(snr >= 50 && snr > early + 10 && snr > late + 10,
                "\(name): SNR \(snr) dB at the target, \(early) one sample early, \(late) one late")
        // The plan reads the last page (1 request; the headers come from the probe's bytes), the
        // seek bisects (a 100 kB file: one read of the span; 490 kB: two windows, then the span).
        let requests = log.split(separator: "\n").compactMap { line -> Int? in
            guard let range = line.range(of: " range requests") else { return nil }
            return Int(line[..<range.lowerBound].split(whereSeparator: { !$0.isNumber }).last ?? "")
        }
        #expect(requests.count == 2 && requests.first.map { $0 <= 2 } == true && requests.last.map { $0 <= seekRequests } == true,
                "\(name): range requests \(requests) (plan, seek)\n\(log)")
        // streamd's access log agrees: the first GET, then the plan's and the seek's ranges, then the resumed stream.
        let served = server.log.split(separator: "\n").filter { $0.contains("/media/\(name)") }.count
        #expect(served <= 2 + requests.reduce(0, +), "\(name): streamd served \(served) requests\n\(server.log)")
        print("ogg seek | \(name) | \(start) s | SNR \(String(format: "%.1f", snr)) dB (±1 sample: \(String(format: "%.1f", early)), \(String(format: "%.1f", late))) | range requests \(requests)")
    }

    /// The OpusHead output gain is applied as opusdec applies it: the mono file with its gain
    /// set to -6 dB (the page's CRC recomputed) equals opusdec's decode and is half as loud.
    @Test func opusOutputGainIsApplied() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        var bytes = [UInt8](try Data(contentsOf: TestPaths.oggMedia.appendingPathComponent("opus-mono.opus")))
        // The first page holds OpusHead alone: 27 header bytes, 1 lacing value, then the packet.
        #expect(bytes[28..<36].elementsEqual("OpusHead".utf8) && bytes[44] == 0 && bytes[45] == 0)
        let gain = Int16(-6 * 256)
        bytes[44] = UInt8(truncatingIfNeeded: gain)
        bytes[45] = UInt8(truncatingIfNeeded: gain >> 8)
        let length = 27 + 1 + Int(bytes[27])
        bytes.replaceSubrange(22..<26, with: [0, 0, 0, 0])
        let crc = OggCRC.crc32(bytes[0..<length])
        bytes.replaceSubrange(22..<26, with: (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * UInt32($0))) })
        let quiet = dir.appendingPathComponent("quiet.opus").path
        try Data(bytes).write(to: URL(fileURLWithPath: quiet))
        let oursPath = dir.appendingPathComponent("ours.wav").path, loudPath = dir.appendingPathComponent("loud.wav").path
        #expect(try runCommand(Self.streamplay, [quiet, "--output", "wav:\(oursPath)"]).status == 0)
        #expect(try runCommand(Self.streamplay, [TestPaths.oggMedia.appendingPathComponent("opus-mono.opus").path,
                                                 "--output", "wav:\(loudPath)"]).status == 0)
        let ours = try PCMFile(path: oursPath), loud = try PCMFile(path: loudPath)
        let reference = try Self.reference(quiet, into: dir.appendingPathComponent("reference.wav").path)
        #expect(ours.frames == reference.frames)
        let snr = snrDecibels(reference: reference.samples(), test: ours.samples(), offset: 0, channels: 1)
        #expect(snr >= 60, "SNR \(snr) dB against opusdec with the gain")
        func rms(_ x: [Float]) -> Double { (x.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))).squareRoot() }
        let ratio = rms(ours.samples()) / rms(loud.samples())
        #expect(abs(ratio - 0.501) < 0.01, "-6 dB output gain: level ratio \(ratio)")
        print("ogg gain | -6 dB OpusHead gain | SNR \(String(format: "%.1f", snr)) dB vs opusdec | level ratio \(String(format: "%.3f", ratio))")
    }

    /// A chained file seeks into either link (the second one's headers read first), from a file
    /// and over HTTP, landing on the exact sample of opusdec's decode of the whole chain.
    @Test(arguments: [(1.0, false), (3.5, false), (4.2, true)])
    func chainedFileSeeksIntoEitherLink(start: Double, overHTTP: Bool) throws {
        let name = "chained-opus.opus"
        let server = overHTTP ? try StreamdProcess(folder: TestPaths.oggMedia, waitForScan: false) : nil
        defer { _ = server?.stop() }
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = TestPaths.oggMedia.appendingPathComponent(name).path
        let url = server.map { "\($0.baseURL)/media/\(name)" } ?? file
        let oursPath = dir.appendingPathComponent("seek.wav").path
        let run = try runCommand(Self.streamplay, [url, "--start", "\(start)", "--output", "wav:\(oursPath)", "--verbose"])
        let log = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 0, "\(log)")
        guard run.status == 0 else { return }
        let ours = try PCMFile(path: oursPath)
        let reference = try Self.reference(file, into: dir.appendingPathComponent("reference.wav").path)
        let offset = Int(start * 48_000)
        #expect(ours.frames == reference.frames - offset, "\(ours.frames) frames after the seek, reference \(reference.frames - offset)")
        let snr = snrDecibels(reference: reference.samples(), test: ours.samples(), offset: offset, channels: ours.channels)
        #expect(snr >= 50, "seek to \(start) s in the chain: SNR \(snr) dB")
        print("ogg chain seek | \(start) s\(overHTTP ? " over HTTP" : "") | SNR \(String(format: "%.1f", snr)) dB | "
              + (log.split(separator: "\n").first { $0.contains("ogg seek") }.map(String.init) ?? ""))
    }

    /// A queue of Ogg files into a WAV file is the concatenation of each one's reference decode
    /// (pre-skip and end trimmed per track: no gap, no overlap), and the OpusTags title is read.
    @Test func queueOfOpusFilesJoinsWithoutAGap() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let names = ["opus-stereo-48k.opus", "chained-opus.opus", "opus-from-44k.opus"]
        let files = names.map { TestPaths.oggMedia.appendingPathComponent($0).path }
        let queuePath = dir.appendingPathComponent("queue.wav").path
        let run = try runCommand(Self.streamplay, files + ["--output", "wav:\(queuePath)", "--verbose"])
        let log = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 0, "\(log)")
        guard run.status == 0 else { return }
        var expected: [Float] = []
        for (index, file) in files.enumerated() {
            expected += try Self.reference(file, into: dir.appendingPathComponent("ref\(index).wav").path).samples()
        }
        let queue = try PCMFile(path: queuePath)
        let got = queue.samples()
        #expect(got.count == expected.count, "\(got.count / 2) frames, the references together \(expected.count / 2)")
        let snr = snrDecibels(reference: expected, test: got, offset: 0, channels: 2)
        #expect(snr >= 60, "queue vs the references joined: SNR \(snr) dB")
        print("ogg queue | \(names.joined(separator: " + ")) | \(got.count / 2) frames | SNR \(String(format: "%.1f", snr)) dB")
    }

    /// Damage: bytes flipped in mid-file (the damaged pages skipped, the rest played), a file cut
    /// inside a page (what is whole plays, like oggdec), and a chain whose second link changes the
    /// channel count (the first link plays, then one line and exit 1).
    @Test func damagedCutAndFormatChangingFilesPlayOrStopInOneLine() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stereo = [UInt8](try Data(contentsOf: TestPaths.oggMedia.appendingPathComponent("opus-stereo-48k.opus")))
        let mono = [UInt8](try Data(contentsOf: TestPaths.oggMedia.appendingPathComponent("opus-mono.opus")))
        let vorbis = [UInt8](try Data(contentsOf: TestPaths.oggMedia.appendingPathComponent("vorbis-stereo-44k.ogg")))
        var damaged = stereo
        for i in 30_000..<31_000 { damaged[i] ^= 0x5A }
        let cases: [(String, [UInt8], Int32)] = [("damaged.opus", damaged, 0), ("cut.ogg", Array(vorbis.prefix(60_000)), 0),
                                                ("format-change.opus", mono + stereo, 1)]
        for (name, bytes, status) in cases {
            let path = dir.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let out = dir.appendingPathComponent("\(name).wav").path
            let run = try runCommand(Self.streamplay, [path, "--output", "wav:\(out)"])
            let stderr = String(decoding: run.stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(run.status == status && !stderr.contains("\n"), "\(name): exit \(run.status), '\(stderr)'")
            let played = try PCMFile(path: out).frames
            switch name {
            case "damaged.opus": #expect(played > 200_000 && played <= 288_000, "\(name): \(played) frames")
            case "cut.ogg":
                let reference = try Self.reference(path, into: dir.appendingPathComponent("cut-ref.wav").path)
                #expect(played == reference.frames, "\(name): \(played) frames, oggdec \(reference.frames)")
            default:
                // The first link (4 s) plays but for the last partial block the error cuts off.
                #expect((192_000 - 4096..<192_000).contains(played) && stderr.contains("changes the format"),
                        "\(name): \(played) frames, '\(stderr)'")
            }
            print("ogg damage | \(name) | exit \(run.status) | \(played) frames | \(stderr)")
        }
    }

    /// The corpus's Ogg files (refs.tsv): Opus and Vorbis play like their reference decoder
    /// (length, format, SNR), the others (Ogg FLAC, Speex, damaged) play or are refused with one line.
    @Test func corpusOggFilesPlayOrAreRefusedInOneLine() throws {
        let root = TestPaths.packageRoot.appendingPathComponent("../shared/corpus/realworld-xiph").standardized
        let text = try String(contentsOf: root.appendingPathComponent("refs.tsv"), encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = try #require(lines.first)
        let rows = lines.dropFirst().filter { $0.count == header.count }.map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
        let ogg = rows.filter { row in
            let name = row["filename"] ?? ""
            return [".ogg", ".oga", ".opus", ".spx"].contains { name.lowercased().hasSuffix($0) }
        }
        #expect(ogg.count >= 25, "refs.tsv lists \(ogg.count) Ogg files")
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        var tally: [String: Int] = [:]
        for row in ogg {
            let name = row["filename"] ?? "", format = row["format"] ?? ""
            let file = root.appendingPathComponent("corpus/\(name)").path
            let oursPath = dir.appendingPathComponent("ours.wav").path
            try? FileManager.default.removeItem(atPath: oursPath)
            let run = try runCommand(Self.streamplay, [file, "--output", "wav:\(oursPath)"], timeout: 60)
            let stderr = String(decoding: run.stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard run.status == 0 else {
                #expect(!stderr.isEmpty && !stderr.contains("\n") && run.status > 0 && run.status < 128,
                        "\(name): exit \(run.status), stderr '\(stderr)'")
                #expect(format != "opus" && format != "vorbis" || row["ref_status"] != "clean",
                        "\(name): a clean \(format) file refused: \(stderr)")
                tally["refused", default: 0] += 1
                print("ogg corpus | \(name) | \(format) | refused: \(stderr)")
                continue
            }
            guard ["opus", "vorbis"].contains(format), row["ref_status"] == "clean",
                  let reference = try? Self.reference(file, into: dir.appendingPathComponent("reference.wav").path) else {
                tally["played, no reference", default: 0] += 1
                print("ogg corpus | \(name) | \(format) | played (no clean reference)")
                continue
            }
            let ours = try PCMFile(path: oursPath)
            let snr = snrDecibels(reference: reference.samples(), test: ours.samples(), offset: 0, channels: ours.channels)
            let sameShape = ours.sampleRate == reference.sampleRate && ours.channels == reference.channels && ours.frames == reference.frames
            // refs.tsv: "agreed" files are the ones where ffmpeg and the reference agree; a few
            // differ between decoders by nature (SILK), so the bar is the reference's own.
            let bar = row["class"] == "agreed" ? 50.0 : 10.0
            #expect(sameShape, "\(name): \(ours.sampleRate) Hz \(ours.channels) ch \(ours.frames) frames, reference \(reference.sampleRate) Hz \(reference.channels) ch \(reference.frames)")
            #expect(snr >= bar, "\(name): SNR \(snr) dB against \(format == "opus" ? "opusdec" : "oggdec")")
            tally[sameShape && snr >= bar ? "like the reference" : "DIFFERENT", default: 0] += 1
            print("ogg corpus | \(name) | \(format) | \(ours.frames) frames (reference \(reference.frames)) | SNR \(String(format: "%.1f", snr)) dB")
        }
        print("ogg corpus tally: \(tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
    }
}
