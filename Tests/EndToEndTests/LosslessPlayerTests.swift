import Foundation
import Testing
import TestSupport

/// streamplay on FLAC, AIFF/AIFF-C and ALAC: every file `make-media.sh --lossless` generates
/// against its reference decoder (flac -d, ffmpeg) bit for bit, exact seeks over HTTP from a real
/// streamd (one Range request with a SEEKTABLE), and the real-world corpus played right or refused.
@Suite(.serialized, .ownThreads) struct LosslessPlayerTests {
    static var streamplay: String { PlayerTests.streamplay }

    /// The generated files: name, rate, channels, bits of the samples.
    static let generated: [(name: String, rate: Int, channels: Int, bits: Int)] = [
        ("flac16-44k.flac", 44_100, 2, 16), ("flac24-96k.flac", 96_000, 2, 24), ("flac-mono.flac", 22_050, 1, 16),
        ("flac-5.1.flac", 48_000, 6, 16), ("flac-id3.flac", 22_050, 1, 16), ("aiff16.aiff", 44_100, 2, 16),
        ("aifc-sowt.aifc", 44_100, 2, 16), ("alac16.m4a", 44_100, 2, 16), ("alac24.m4a", 96_000, 2, 24),
        ("alac-5.1.m4a", 48_000, 6, 16),
    ]

    static func path(_ name: String) -> String { TestPaths.losslessMedia.appendingPathComponent(name).path }

    /// The reference decode of `file` as a WAV of `bits`-bit samples: `flac -d` for FLAC, ffmpeg otherwise.
    static func reference(_ file: String, bits: Int, float: Bool = false, into wav: String, tolerant: Bool = false) throws
        -> (status: Int32, stderr: String) {
        let run: (status: Int32, stdout: Data, stderr: Data)
        if file.hasSuffix(".flac") {
            run = try runCommand(try #require(which("flac")), ["-d", "-s", "-f"] + (tolerant ? ["-F"] : []) + ["-o", wav, file])
        } else {
            let codec = float ? "pcm_f32le" : bits > 16 ? "pcm_s24le" : "pcm_s16le"
            run = try runCommand(try #require(which("ffmpeg")), ["-nostdin", "-v", "error", "-y", "-i", file, "-c:a", codec, wav])
        }
        return (run.status, String(decoding: run.stderr, as: UTF8.self))
    }

    /// WAVE_FORMAT_EXTENSIBLE's channel mask of a WAV file, nil for a plain PCM header.
    static func channelMask(_ path: String) throws -> UInt32? {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(80))
        guard let fmt = bytes.firstRange(of: Array("fmt ".utf8))?.lowerBound, bytes[fmt + 8] == 0xFE, bytes[fmt + 9] == 0xFF else { return nil }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[fmt + 28 + $1]) << (8 * $1) }
    }

    /// A file make-media.sh adds to media/lossless without a row above would go untested: the
    /// folder must hold exactly the listed files.
    @Test func everyGeneratedFileHasARow() throws {
        let present = try FileManager.default.contentsOfDirectory(atPath: TestPaths.losslessMedia.path).filter { !$0.hasPrefix(".") }
        #expect(Set(present) == Set(Self.generated.map(\.name)), "media/lossless holds \(present.sorted())")
    }

    @Test(arguments: generated.map(\.name))
    func generatedFile_isBitExactWithItsReference(_ name: String) throws {
        let expected = try #require(Self.generated.first { $0.name == name })
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ours = dir.appendingPathComponent("ours.wav").path, ref = dir.appendingPathComponent("ref.wav").path
        let run = try runCommand(Self.streamplay, [Self.path(name), "--output", "wav:\(ours)", "--stats"])
        #expect(run.status == 0, "\(name): \(String(decoding: run.stderr, as: UTF8.self))")
        guard run.status == 0 else { return }
        let stats = try PlayerTests.stats(run.stdout)
        let codec = name.hasSuffix(".flac") ? "flac" : name.hasPrefix("alac") ? "alac" : name.hasPrefix("aifc") ? "pcm_s16le" : "pcm_s16be"
        #expect(stats["codec"] as? String == codec, "\(name): --stats \(stats)")
        let reference = try Self.reference(Self.path(name), bits: expected.bits, into: ref)
        #expect(reference.status == 0, "\(name): reference decoder: \(reference.stderr)")
        let a = try PCMFile(path: ref), b = try PCMFile(path: ours)
        #expect(b.sampleRate == expected.rate && b.channels == expected.channels && b.bitsPerSample == expected.bits,
                "\(name): plays \(b.sampleRate) Hz \(b.channels) ch \(b.bitsPerSample) bits")
        #expect(a.sampleRate == b.sampleRate && a.channels == b.channels && a.bitsPerSample == b.bitsPerSample)
        #expect(a.frames == b.frames, "\(name): \(b.frames) frames, the reference \(a.frames)")
        #expect(a.data == b.data, "\(name): samples differ from the reference decoder's")
        // --info states what plays (the catalog's analyzer does not read these formats yet).
        let info = try AACFormatMatrixTests.json(try runCommand(Self.streamplay, ["--info", Self.path(name)]).stdout)
        #expect(info["codec"] as? String == codec && info["sample_rate"] as? Int == expected.rate
                && info["channels"] as? Int == expected.channels && info["total_samples"] as? Int == b.frames, "\(name): --info \(info)")
        if name.hasSuffix(".flac"), let metaflac = which("metaflac") {
            // STREAMINFO's MD5 is of the samples as little-endian integers of their width: our WAV's data chunk.
            let data = dir.appendingPathComponent("data.raw").path
            try Data(b.data).write(to: URL(fileURLWithPath: data))
            let md5 = String(decoding: try runCommand(try #require(which("md5sum")), [data]).stdout, as: UTF8.self).prefix(32)
            let stated = String(decoding: try runCommand(metaflac, ["--show-md5sum", Self.path(name)]).stdout, as: UTF8.self).prefix(32)
            #expect(md5 == stated, "\(name): MD5 of the samples played vs STREAMINFO's")
        }
        if expected.channels == 6 {
            #expect(try Self.channelMask(ours) == 0x3F, "5.1 in WAV order: FL FR FC LFE BL BR")
        }
    }

    /// Two FLAC tracks of one format as a queue: the output is each track's own decode, end to
    /// end (FLAC has no priming or padding to trim, so nothing may be lost or added at the join).
    @Test func queueOfTwoFLACTracks_isTheirConcatenation() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let one = dir.appendingPathComponent("one.wav").path, queue = dir.appendingPathComponent("queue.wav").path
        #expect(try runCommand(Self.streamplay, [Self.path("flac-mono.flac"), "--output", "wav:\(one)"]).status == 0)
        let run = try runCommand(Self.streamplay, [Self.path("flac-mono.flac"), Self.path("flac-id3.flac"), "--output", "wav:\(queue)"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let track = try PCMFile(path: one), both = try PCMFile(path: queue)
        #expect(both.data == track.data + track.data, "\(both.frames) frames for 2 × \(track.frames)")
    }

    @Test func seekOverHTTP_isOneRangeRequest_andSampleExact() throws {
        // Not --quiet: the access log counts the Range requests.
        let server = try StreamdProcess(folder: TestPaths.losslessMedia, waitForScan: false)
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let start = 1.2345
        // FLAC with a SEEKTABLE, FLAC without (streamd's index), AIFF (arithmetic), ALAC (sample tables).
        for name in ["flac16-44k.flac", "flac24-96k.flac", "aiff16.aiff", "alac24.m4a"] {
            let url = "\(server.baseURL)/media/\(name)"
            let full = dir.appendingPathComponent("full-\(name).wav").path, part = dir.appendingPathComponent("part-\(name).wav").path
            let whole = try runCommand(Self.streamplay, [url, "--output", "wav:\(full)"])
            #expect(whole.status == 0, "\(name): \(String(decoding: whole.stderr, as: UTF8.self))")
            func ranged() -> Int { server.log.components(separatedBy: "GET /media/\(name) 206").count - 1 }
            let before = ranged()
            let run = try runCommand(Self.streamplay, [url, "--output", "wav:\(part)", "--start", "\(start)", "--stats"])
            #expect(run.status == 0, "\(name): \(String(decoding: run.stderr, as: UTF8.self))")
            guard whole.status == 0, run.status == 0 else { continue }
            #expect(try PlayerTests.stats(run.stdout)["seek_ms"] is Double)
            let a = try PCMFile(path: full), b = try PCMFile(path: part)
            let skip = Int((start * Double(a.sampleRate)).rounded()) * a.bytesPerFrame
            #expect(b.frames == a.frames - skip / a.bytesPerFrame, "\(name): \(b.frames) frames after the seek")
            #expect(Array(a.data.dropFirst(skip)) == b.data, "\(name): the seek lands on the exact sample")
            if name.hasSuffix(".flac") {
                // With a SEEKTABLE from its point; without one from streamd's exact index (/api/index).
                #expect(TestTiming.waitUntil(timeout: 5) { ranged() > before }, "the seek went out as a Range request")
                #expect(ranged() - before == 1, "\(name): one Range request from the seek point (\(ranged() - before))")
            }
            if name == "flac24-96k.flac" {
                #expect(server.log.contains("GET /api/index/\(name)"), "\(name): the seek asked streamd's index")
            }
        }
    }

    /// Every FLAC, AIFF and ALAC file of ../shared/corpus/realworld-xiph, decoded (not played in
    /// real time): files the references agree on play bit-exact (or >= 120 dB for 32-bit and
    /// float samples, which a Float carries to 24 bits); a file a reference calls damaged plays as
    /// `flac -F` does or with a warning; anything else plays or is refused with one line; nothing crashes.
    @Test func corpus_playsRightOrIsRefusedWithOneLine() throws {
        let root = URL(fileURLWithPath: ProcessInfo.processInfo.environment["STREAM_XIPH_CORPUS"]
                       ?? TestPaths.packageRoot.appendingPathComponent("../shared/corpus/realworld-xiph/corpus").standardized.path)
        let table = try String(contentsOf: root.appendingPathComponent("../refs.tsv").standardized, encoding: .utf8)
        let lines = table.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = try #require(lines.first)
        let column = Dictionary(uniqueKeysWithValues: header.enumerated().map { ($1, $0) })
        let (file, format, verdict) = (try #require(column["filename"]), try #require(column["format"]), try #require(column["class"]))
        let rows = lines.dropFirst().filter { ["flac", "aiff", "alac"].contains($0[format]) }
        try #require(rows.count > 50, "the corpus lists \(rows.count) FLAC/AIFF/ALAC files")
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }

        let tally = LockedBox([String: Int]()), failures = LockedBox([String]())
        DispatchQueue.concurrentPerform(iterations: rows.count) { n in
            let row = rows[n], name = row[file], source = root.appendingPathComponent(name).path
            let ours = dir.appendingPathComponent("\(n).wav").path, ref = dir.appendingPathComponent("\(n)-ref.wav").path
            func fail(_ why: String) { failures.withLock { $0.append("\(name): \(why)") } }
            func count(_ outcome: String) { tally.withLock { $0[outcome, default: 0] += 1 } }
            do {
                let run = try runCommand(Self.streamplay, [source, "--output", "wav:\(ours)"], timeout: 60)
                let stderr = String(decoding: run.stderr, as: UTF8.self).split(separator: "\n")
                guard run.status <= 3, !stderr.contains(where: { $0.contains("Fatal error") || $0.contains("Crash") }) else {
                    return fail("crashed (status \(run.status)): \(stderr.suffix(3))")
                }
                if run.status != 0 {
                    count("refused")
                    if stderr.count != 1 { fail("refused with \(stderr.count) lines: \(stderr.prefix(3))") }
                    if row[verdict] == "agreed" { fail("refused a file the references agree on: \(stderr.first ?? "")") }
                    return
                }
                let warned = stderr.contains { $0.contains("warning") }
                guard FileManager.default.fileExists(atPath: ours) else { return count("played, no samples") }
                let played = try PCMFile(path: ours)
                let damaged = row[verdict] == "damaged"
                guard row[verdict] == "agreed" || damaged else { return count(warned ? "played with a warning" : "played (no agreed reference)") }
                let reference = try Self.reference(source, bits: played.bitsPerSample, float: played.isFloat, into: ref, tolerant: damaged)
                guard reference.status == 0 || damaged, FileManager.default.fileExists(atPath: ref) else {
                    return fail("reference decoder failed: \(reference.stderr.prefix(200))")
                }
                let expected = try PCMFile(path: ref)
                let (a, b) = (expected.samples(), played.samples())
                let exact = expected.sampleRate == played.sampleRate && expected.channels == played.channels && a == b
                let close = a.count == b.count && snrDecibels(reference: a, test: b, offset: 0, channels: max(1, played.channels)) >= 120
                if exact || close {
                    count(exact ? "played bit-exact" : "played >= 120 dB (32-bit or float)")
                } else if damaged && warned {
                    count("damaged: played with a warning")
                } else {
                    fail("\(played.frames) frames at \(played.sampleRate) Hz \(played.channels) ch differ from the reference's "
                         + "\(expected.frames) at \(expected.sampleRate) Hz \(expected.channels) ch" + (warned ? "" : " without a warning"))
                }
            } catch {
                fail("\(error)")
            }
        }
        let summary = tally.withLock { $0.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
        print("lossless corpus (\(rows.count) files): \(summary)")
        for failure in failures.withLock({ $0 }) { Issue.record(Comment(rawValue: failure)) }
    }
}

/// A value shared by the corpus test's worker threads.
final class LockedBox<Value>: @unchecked Sendable {
    // @unchecked: every access goes through the lock.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
