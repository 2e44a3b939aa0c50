import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// The catalog's analyzer over every FLAC, Opus, Vorbis, AIFF and ALAC file of the real-world
/// corpus: the quick read and the full one agree with ffprobe's duration within 1 ms (Opus:
/// less the pre-skip, as opusdec plays it), rate, channels and bit depth, or the file is refused
/// with a typed `FormatError`; the tally is printed.
@Suite(.timeLimit(.scaledMinutes(3))) struct LosslessAnalyzerCorpusTests {
    static let formats: Set<String> = ["flac", "opus", "vorbis", "aiff", "alac"]

    /// Files the reference decoders play but the analyzer refuses, and why.
    static let refused: [String: String] = [:]

    /// The samples `flac -d -F` decoded, as refs.tsv notes them for a file flac stops on ("(flac -F: N)").
    static func forcedFLACFrames(_ file: String) -> Int? {
        let url = FLACOggCorpus.directory.appendingPathComponent("../refs.tsv").standardized
        guard let text = try? String(contentsOf: url, encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(file + "\t") }),
              let marker = line.range(of: "(flac -F: ") else { return nil }
        return Int(line[marker.upperBound...].prefix { $0.isNumber })
    }

    @Test func everyFileAgreesWithTheReferencesOrIsRefusedByName() throws {
        let references = FLACOggCorpus.references(["flac", "ogg", "oga", "opus", "aif", "aiff", "aifc", "m4a", "mp4"])
            .filter { Self.formats.contains($0.format) }
        try #require(!references.isEmpty, "no corpus at \(FLACOggCorpus.directory.path) (set STREAM_XIPH_CORPUS)")
        var agreed = 0
        var refusals: [String] = []
        var misses: [String] = []
        for ref in references {
            let source = try FLACOggCorpus.bytes(ref.file)
            let quick: TrackAnalysis, full: TrackAnalysis
            do {
                quick = try TrackAnalyzer.describe(source)
                full = try TrackAnalyzer.analyze(source)
            } catch let error as FormatError {
                refusals.append("\(ref.file): \(error)")
                continue
            } catch {
                Issue.record("\(ref.file): not a FormatError: \(error)")
                continue
            }
            guard let ffprobe = ref.duration else {
                // ffprobe gives no length without a sample count: flac's decode (forced past
                // errors where it stops) does.
                let frames = ref.referenceFrames ?? Self.forcedFLACFrames(ref.file)
                if let frames, abs(Double(frames) / Double(full.sampleRate) - full.durationSeconds) < 0.001,
                   abs(quick.durationSeconds - full.durationSeconds) < 0.001 {
                    agreed += 1
                } else {
                    misses.append("\(ref.file): \(quick.durationSeconds)/\(full.durationSeconds) s, flac \(frames ?? -1) samples")
                }
                continue
            }
            let expected = full.codec == "opus" ? ffprobe - Double(full.encoderDelay) / 48_000 : ffprobe
            let byDecoder = ref.referenceFrames.map { abs(Double($0) / Double(full.sampleRate) - full.durationSeconds) < 0.001 } ?? false
            let same = abs(quick.durationSeconds - full.durationSeconds) < 0.001
            let format = full.sampleRate == ref.rate && full.channels == ref.channels
                && (ref.bits == nil || full.bitsPerSample == nil || full.bitsPerSample == ref.bits)
            if (abs(full.durationSeconds - expected) < 0.001 || byDecoder) && same && format {
                agreed += 1
            } else {
                misses.append("\(ref.file): \(quick.durationSeconds)/\(full.durationSeconds) s, ffprobe \(ffprobe), "
                              + "\(full.sampleRate) Hz \(full.channels) ch \(full.bitsPerSample ?? 0) bits; "
                              + "ref \(ref.rate ?? 0) Hz \(ref.channels ?? 0) ch \(ref.bits ?? 0) bits")
            }
        }
        print("lossless analyzer corpus: \(references.count) files, \(agreed) agree, \(refusals.count) refused, \(misses.count) differ")
        for line in refusals { print("  refused \(line)") }
        #expect(misses.isEmpty, "\(misses.joined(separator: "\n"))")
        #expect(agreed >= 100, "\(agreed) of \(references.count)")
    }
}
