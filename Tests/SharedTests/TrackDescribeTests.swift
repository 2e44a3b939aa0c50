import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// `TrackAnalyzer.describe`, the catalog's quick read: the facts of the full analysis from a
/// small part of the file.
@Suite struct TrackDescribeTests {
    /// Counts the bytes read through it.
    final class CountingBytes: RandomAccessBytes {
        let bytes: MemoryBytes
        var read = 0
        init(_ bytes: [UInt8]) { self.bytes = MemoryBytes(bytes) }
        var size: Int { bytes.size }
        func read(at offset: Int, count: Int) throws -> [UInt8] {
            let result = try bytes.read(at: offset, count: count)
            read += result.count
            return result
        }
    }

    static let files = ["cbr-128k-44k.mp3", "cbr-no-tag.mp3", "vbr-v2.mp3", "mono-48k.mp3", "speech-22k.mp3",
                        "adts.aac", "adts-8k-mono.aac", "track.m4a", "moov-at-end.m4a", "fragmented.m4a",
                        "pcm16.wav", "pcm24-96k.wav", "float32.wav"]

    @Test(arguments: files)
    func describe_readsAFraction_andAgreesWithTheFullAnalysis(_ name: String) throws {
        guard let file = try GeneratedMedia.load(name) else { return }
        let quick = CountingBytes(file)
        let described = try TrackAnalyzer.describe(quick, adtsWindow: 64 * 1024)
        let full = try TrackAnalyzer.analyze(MemoryBytes(file))
        // The probe's 64 KiB prefix, the 64 KiB tail for trailing tags, the ADTS window: never the whole of a longer file.
        #expect(quick.read <= 3 * 64 * 1024, "\(name): read \(quick.read) of \(file.count) bytes")
        if file.count > 1 << 20 { #expect(quick.read < file.count / 4, "\(name): read \(quick.read) of \(file.count) bytes") }
        #expect(described.seekIndex.points.count <= 1, "\(name): no index")
        #expect(described.container == full.container && described.codec == full.codec && described.sampleRate == full.sampleRate
                && described.channels == full.channels && described.tags == full.tags, "\(name)")
        #expect(described.encoderDelay == full.encoderDelay && described.encoderPadding == full.encoderPadding, "\(name)")
        if full.container == .adts {
            // A VBR encoder's frames vary: 64 KiB of them predicts the rest within a few percent.
            #expect(abs(described.durationSeconds - full.durationSeconds) < full.durationSeconds * 0.05,
                    "\(name): estimated \(described.durationSeconds) s vs \(full.durationSeconds) s")
            #expect(described.notes.contains { $0.contains("estimated") }, "\(name): says it is an estimate")
        } else {
            #expect(abs(described.durationSeconds - full.durationSeconds) < 0.03,
                    "\(name): \(described.durationSeconds) s vs \(full.durationSeconds) s")
        }
    }

    @Test func smallADTS_isExact() throws {
        guard let file = try GeneratedMedia.load("adts-8k-mono.aac") else { return }
        let described = try TrackAnalyzer.describe(MemoryBytes(file))
        #expect(described.durationSeconds == (try TrackAnalyzer.analyze(MemoryBytes(file))).durationSeconds,
                "a file inside the window is walked whole")
        #expect(!described.notes.contains { $0.contains("estimated") })
    }
}
