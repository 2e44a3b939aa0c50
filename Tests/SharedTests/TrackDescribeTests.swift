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

/// `ReadAheadBytes`, through which the analyzer worker's quick look reads a file.
@Suite struct ReadAheadBytesTests {
    /// Counts the reads that reach the source.
    final class CountingReads: RandomAccessBytes {
        let bytes: MemoryBytes
        var reads = 0
        init(_ bytes: [UInt8]) { self.bytes = MemoryBytes(bytes) }
        var size: Int { bytes.size }
        func read(at offset: Int, count: Int) throws -> [UInt8] {
            reads += 1
            return try bytes.read(at: offset, count: count)
        }
    }

    static let bytes = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }

    @Test func answersEveryReadAsTheSourceDoes() throws {
        let source = MemoryBytes(Self.bytes)
        let cached = ReadAheadBytes(CountingReads(Self.bytes), headBytes: 4096, tailBytes: 8192)
        let size = Self.bytes.count
        // Inside the head, across its end, in the middle, inside the tail, across and past the end, nonsense.
        let reads = [(0, 10), (4000, 96), (4000, 200), (500_000, 3000), (size - 8192, 100), (size - 100, 500),
                     (size - 8193, 10), (size, 10), (size + 5, 1), (-1, 10), (10, 0), (0, 4096), (0, 4097)]
        for (offset, count) in reads {
            #expect(try cached.read(at: offset, count: count) == (try source.read(at: offset, count: count)), "read(at: \(offset), count: \(count))")
        }
    }

    @Test func readsHeadAndTailOnce_andASmallFileWhole() throws {
        let large = CountingReads(Self.bytes)
        let cached = ReadAheadBytes(large, headBytes: 64 << 10, tailBytes: 64 << 10)
        for offset in stride(from: 0, to: 60_000, by: 1000) { _ = try cached.read(at: offset, count: 2000) }
        for offset in stride(from: Self.bytes.count - 60_000, to: Self.bytes.count, by: 1000) { _ = try cached.read(at: offset, count: 2000) }
        #expect(large.reads == 2, "one read for the head, one for the tail: \(large.reads)")
        _ = try cached.read(at: 500_000, count: 10)
        #expect(large.reads == 3, "the middle goes to the source")

        let small = CountingReads(Array(Self.bytes.prefix(11_000)))
        let whole = ReadAheadBytes(small)
        for offset in [0, 4, 42, 10_000, 10_900, 0] { _ = try whole.read(at: offset, count: 64 << 10) }
        #expect(small.reads == 1, "a small file is read whole, once: \(small.reads)")
    }
}
