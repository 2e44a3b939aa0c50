import Foundation
import Testing
import TestSupport
@testable import StreamRadio
import StreamHTTP
import StreamAudio
import StreamShared

/// A transcoding channel's decoder on the lossless formats: FLAC, AIFF and ALAC tracks come out
/// of `TrackDecoder` sample for sample as their reference decoders give them (`flac -d`, ffmpeg),
/// 24-bit samples exact in the floats; a 5.1 FLAC is mixed down by its speakers.
@Suite struct TrackDecoderLosslessTests {
    /// A new temporary folder.
    static func folder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("trackdecoder-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func ffmpeg(_ arguments: [String]) throws -> Data {
        let tool = try #require(which("ffmpeg"))
        let result = try runCommand(tool, ["-v", "error", "-y"] + arguments)
        guard result.status == 0 else { throw TestFailure("ffmpeg \(arguments): \(String(decoding: result.stderr, as: UTF8.self))") }
        return result.stdout
    }

    /// Every sample `TrackDecoder` gives for the file at `path`, and its format.
    static func decode(_ path: String) throws -> (samples: [Float], format: AudioFormat, decoder: TrackDecoder) {
        var decoder = try TrackDecoder(source: try OpenFile(path: path), hints: TrackDecoder.Hints())
        var samples: [Float] = []
        while try decoder.decode(into: &samples) {}
        return (samples, decoder.format, decoder)
    }

    /// Signed little-endian integers of `width` bytes.
    static func integers(_ data: Data, width: Int) -> [Int32] {
        let bytes = [UInt8](data)
        return stride(from: 0, to: bytes.count - width + 1, by: width).map { at in
            var value: UInt32 = 0
            for k in 0..<width { value |= UInt32(bytes[at + k]) << (8 * UInt32(k) + UInt32(8 * (4 - width))) }
            return Int32(bitPattern: value) >> Int32(8 * (4 - width))
        }
    }

    /// FLAC (flac's own encoder), AIFF-C and ALAC, 24-bit 96 kHz stereo: the decoded floats times
    /// 2^23 are the reference decoder's integers, all of them and no more.
    @Test func lossless24Bit_decodesBitExact_againstTheReferences() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        // Generated in doubles, so the 24-bit file's low bits are not all 0.
        let source = ["-f", "lavfi", "-i", "aevalsrc=0.5*sin(2*PI*997*t)|0.4*sin(2*PI*3000*t):s=96000:d=0.6"]
        _ = try Self.ffmpeg(source + ["-c:a", "pcm_s24le", path("source.wav")])
        let flac = try #require(which("flac"))
        let encoded = try runCommand(flac, ["--silent", "--force", "-5", "-o", path("t.flac"), path("source.wav")])
        #expect(encoded.status == 0, "\(String(decoding: encoded.stderr, as: UTF8.self))")
        _ = try Self.ffmpeg(["-i", path("source.wav"), "-c:a", "pcm_s24be", "-f", "aiff", path("t.aiff")])
        _ = try Self.ffmpeg(["-i", path("source.wav"), "-c:a", "alac", "-sample_fmt", "s32p", path("t.m4a")])

        let flacReference = try runCommand(flac, ["-d", "-s", "-c", "--force-raw-format", "--endian=little", "--sign=signed", path("t.flac")])
        #expect(flacReference.status == 0)
        let references: [(String, [Int32])] = [
            ("t.flac", Self.integers(flacReference.stdout, width: 3)),
            ("t.aiff", Self.integers(try Self.ffmpeg(["-i", path("t.aiff"), "-f", "s24le", "-"]), width: 3)),
            ("t.m4a", Self.integers(try Self.ffmpeg(["-i", path("t.m4a"), "-f", "s24le", "-"]), width: 3)),
        ]
        for (name, reference) in references {
            let (samples, format, _) = try Self.decode(path(name))
            #expect(format.sampleRate == 96_000 && format.channels == 2, "\(name): \(format)")
            #expect(reference.count == 2 * 57_600, "\(name): the reference has \(reference.count) samples")
            #expect(samples.count == reference.count, "\(name): \(samples.count) samples, the reference \(reference.count)")
            let mismatches = zip(samples, reference).filter { Int32(exactly: $0.0 * 8_388_608) != $0.1 }.count
            #expect(mismatches == 0, "\(name): \(mismatches) samples differ from the reference")
            // The low bits are there: a 16-bit path would leave them 0.
            #expect(reference.contains { $0 & 0xFF != 0 }, "\(name): the reference is not 24-bit")
        }
    }

    /// A 5.1 FLAC (FL FR FC LFE BL BR, FLAC's order): 880 Hz front left, 440 Hz centre; the
    /// channel's decoder mixes it to stereo by speaker: the centre on both sides, the left on the left.
    @Test func surroundFLAC_isMixedDownBySpeaker() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("surround.flac").path
        _ = try Self.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=880:duration=0.5:sample_rate=48000",
                             "-f", "lavfi", "-i", "sine=frequency=440:duration=0.5:sample_rate=48000",
                             "-filter_complex", "[0:a][1:a]amerge=inputs=2,pan=5.1|FL=c0|FC=c1[a]",
                             "-map", "[a]", "-c:a", "flac", file])
        let pcm = try LocalTrackPCM(path: file, hints: TrackDecoder.Hints(), channels: 2)
        var stereo: [Float] = []
        while let rate = try pcm.next(into: &stereo) { #expect(rate == 48_000) }
        #expect(stereo.count == 2 * 24_000, "\(stereo.count) samples")
        let window = 4800
        try #require(stereo.count >= 2 * (4800 + window))
        let left = (4800..<(4800 + window)).map { stereo[2 * $0] }, right = (4800..<(4800 + window)).map { stereo[2 * $0 + 1] }
        func amplitude(_ x: [Float], hz: Double) -> Double {
            var c = 0.0, s = 0.0
            for (k, v) in x.enumerated() {
                c += Double(v) * cos(2 * Double.pi * hz * Double(k) / 48_000)
                s += Double(v) * sin(2 * Double.pi * hz * Double(k) / 48_000)
            }
            return 2 * (c * c + s * s).squareRoot() / Double(x.count)
        }
        let leftCentre = amplitude(left, hz: 440), rightCentre = amplitude(right, hz: 440)
        let leftFront = amplitude(left, hz: 880), rightFront = amplitude(right, hz: 880)
        #expect(leftCentre > 0.02 && abs(leftCentre - rightCentre) < 0.02 * leftCentre, "centre: L \(leftCentre) R \(rightCentre)")
        #expect(leftFront > 0.03 && rightFront < 0.01 * leftFront, "front left: L \(leftFront) R \(rightFront)")
    }

    /// ../shared/corpus/realworld-xiph (read in place): every file either decodes to as many
    /// samples as its reference decoder gives (where that one ran: `ref_frames` of refs.tsv) or
    /// is refused with a typed error; never a trap or a hang. The tally goes to the test's output.
    @Test func realWorldCorpus_decodesAsTheReferenceOrIsRefused() throws {
        let root = TestPaths.packageRoot.appendingPathComponent("../shared/corpus/realworld-xiph").standardized
        let table = try String(contentsOf: root.appendingPathComponent("refs.tsv"), encoding: .utf8)
        let lines = table.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = try #require(lines.first)
        let name = try #require(header.firstIndex(of: "filename")), frames = try #require(header.firstIndex(of: "ref_frames"))
        var same = 0, refused = 0, noReference = 0
        for row in lines.dropFirst() where row.count > max(name, frames) {
            let reference = Int(row[frames]).flatMap { $0 > 0 ? $0 : nil }
            var decoded = 0
            do {
                let (samples, format, _) = try Self.decode(root.appendingPathComponent("corpus/" + row[name]).path)
                decoded = samples.count / max(1, format.channels)
            } catch {
                refused += 1
                continue
            }
            guard let reference else {
                noReference += 1
                continue
            }
            #expect(decoded == reference, "\(row[name]): \(decoded) samples, the reference \(reference)")
            if decoded == reference { same += 1 }
        }
        print("TrackDecoder on realworld-xiph: \(same) as the reference, \(refused) refused, \(noReference) decoded without a reference to compare")
        #expect(same >= 90, "\(same) files as their reference")
    }
}
