import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// The wire form of an analysis (streamd's analyzer worker → server): equal after a round
/// trip, and bytes that are not an analysis are an error, never a trap.
@Suite struct TrackAnalysisCodingTests {
    static func sample() -> TrackAnalysis {
        var analysis = TrackAnalysis(
            container: .mp4, codec: "aac", sampleRate: 44_100, channels: 2, durationSeconds: 12.345_678_9,
            bitrate: 128_000, frames: 533, firstFrameOffset: 1_234, encoderDelay: 2_112, encoderPadding: 588,
            totalSamples: 545_792, tags: TrackTags(title: "Ça va — chanson", artist: "Ärtist", album: nil, track: "3/12",
                                                  coverArtBytes: 321),
            seekIndex: SeekIndex(points: [SeekPoint(t: 0, byte: 1_234), SeekPoint(t: 0.5, byte: 9_000),
                                          SeekPoint(t: 1.0000001, byte: 17_001)],
                                 firstFrameOffset: 1_234, audioEndOffset: 200_000, encoderDelay: 2_112,
                                 encoderPadding: 588, durationSeconds: 12.4))
        analysis.notes = ["encoder delay assumed: 1024 priming samples", ""]
        analysis.audioSpecificConfig = [0x12, 0x10]
        return analysis
    }

    @Test func roundTrip_keepsEveryField() throws {
        let analysis = Self.sample()
        #expect(try TrackAnalysis(encoded: analysis.encoded()[...]) == analysis)
    }

    @Test func roundTrip_emptyTagsAndExtremeNumbers() throws {
        var analysis = Self.sample()
        analysis.tags = TrackTags()
        analysis.durationSeconds = .infinity
        analysis.bitrate = Int.min
        analysis.frames = Int.max
        analysis.seekIndex.points = []
        analysis.notes = []
        analysis.audioSpecificConfig = nil
        let decoded = try TrackAnalysis(encoded: analysis.encoded()[...])
        #expect(decoded == analysis)
        var nan = analysis
        nan.seekIndex.durationSeconds = .nan
        #expect(try TrackAnalysis(encoded: nan.encoded()[...]).seekIndex.durationSeconds.isNaN, "NaN survives (as NaN)")
    }

    @Test func roundTrip_everyTrackOfTheLibrary() throws {
        let dir = TestPaths.media
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        var checked = 0
        for name in names.sorted() where !name.hasPrefix(".") {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path, isDirectory: &isFolder),
                  !isFolder.boolValue else { continue }
            guard let bytes = try GeneratedMedia.load(name) else { continue }
            guard let analysis = try? TrackAnalyzer.analyze(MemoryBytes(bytes)) else { continue }
            #expect(try TrackAnalysis(encoded: analysis.encoded()[...]) == analysis, "\(name)")
            checked += 1
        }
        if ProcessInfo.processInfo.environment[GeneratedMedia.variable] != nil {
            #expect(checked >= 10, "the library's tracks were all round-tripped (\(checked))")
        }
    }

    @Test func everyTruncation_throws() {
        let bytes = Self.sample().encoded()
        for length in 0..<bytes.count {
            #expect(throws: FormatError.self, "\(length) of \(bytes.count) bytes") {
                try TrackAnalysis(encoded: bytes[0..<length])
            }
        }
    }

    @Test func trailingBytes_throw() {
        #expect(throws: FormatError.self) { try TrackAnalysis(encoded: (Self.sample().encoded() + [0])[...]) }
    }

    @Test func otherVersion_throws() {
        var bytes = Self.sample().encoded()
        bytes[0] = 99
        #expect(throws: FormatError.unsupported(component: "analysis wire", reason: "version 99, expected 4")) {
            try TrackAnalysis(encoded: bytes[...])
        }
    }

    @Test func unknownContainer_throws() {
        var analysis = Self.sample().encoded()
        // The container name sits after the version byte and its 4-byte length: "mp4" → "mp5".
        analysis[7] = UInt8(ascii: "5")
        #expect(throws: FormatError.self) { try TrackAnalysis(encoded: analysis[...]) }
    }

    @Test func hugePointCount_isRefusedBeforeAllocating() {
        var analysis = Self.sample()
        analysis.tags = TrackTags()
        var bytes = analysis.encoded()
        // version 1 + "mp4" 7 + "aac" 7 + rate, channels 16 + duration 8 + six integers 48 + nine absent
        // tags 9 + four absent ReplayGain values 4.
        let countOffset = 100
        #expect(Array(bytes[countOffset..<(countOffset + 4)]) == [3, 0, 0, 0], "the point count is where the layout says")
        bytes.replaceSubrange(countOffset..<(countOffset + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: FormatError.self) { try TrackAnalysis(encoded: bytes[...]) }
    }

    @Test func flippedBytes_neverTrap() {
        let bytes = Self.sample().encoded()
        var generator = SplitMix64(seed: 12)
        for _ in 0..<2_000 {
            var mutated = bytes
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let i = Int.random(in: 0..<mutated.count, using: &generator)
                mutated[i] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? TrackAnalysis(encoded: mutated[...])
        }
    }
}
