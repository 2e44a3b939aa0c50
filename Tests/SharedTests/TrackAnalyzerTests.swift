import Foundation
import Testing
import TestSupport
@testable import StreamShared

@Suite struct TrackAnalyzerTests {
    @Test func mp3WithInfoFrameAndID3v1() throws {
        let raw = MPEGBuilder.header()
        let audio = MPEGBuilder.xingFrame(kind: "Info", frames: 20, bytes: 21 * 417, toc: false, lameDelay: 576, lamePadding: 600)
            + MPEGBuilder.frames(raw, count: 20)
        let file = ProbeTests.id3(title: "Analyzed") + audio + TrailingTagsTests.id3v1(title: "V1", track: 2)
        let a = try TrackAnalyzer.analyze(MemoryBytes(file))
        #expect(a.container == .mp3)
        #expect(a.frames == 20, "the Info frame is not audio")
        #expect(a.totalSamples == 20 * 1152)
        #expect(a.encoderDelay == 576)
        #expect(a.encoderPadding == 600)
        #expect(abs(a.durationSeconds - Double(20 * 1152 - 1176) / 44_100) < 1e-9)
        #expect(a.tags.title == "Analyzed", "ID3v2 wins over ID3v1")
        #expect(a.tags.track == "2", "ID3v1 fills what ID3v2 lacks")
        #expect(a.bitrate == 128_000)
        #expect(a.seekIndex.audioEndOffset == file.count - 128)
        #expect(a.seekIndex.points.first?.t == 0)
    }

    @Test func seekIndex_pointsAtMostHalfASecondApart() throws {
        let file = MPEGBuilder.frames(MPEGBuilder.header(), count: 200)     // 5.2 s
        let a = try TrackAnalyzer.analyze(MemoryBytes(file))
        let times = a.seekIndex.points.map(\.t)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 <= 0.5 + 0.027 })
        #expect(a.seekIndex.points.allSatisfy { $0.byte % 417 == 0 }, "every point is a frame start")
        let p = try #require(a.seekIndex.point(atOrBefore: 2.0))
        #expect(p.t <= 2.0 && p.t > 1.4)
    }

    @Test func wavArithmetic() throws {
        let file = WAVBuilder.file(WAVBuilder.fmt(), dataBytes: 44_100 * 4)
        let a = try TrackAnalyzer.analyze(MemoryBytes(file))
        #expect(a.container == .wav)
        #expect(a.durationSeconds == 1.0)
        #expect(a.frames == 44_100)
        #expect(a.bitrate == 1_411_200)
    }

    @Test func adtsFrameWalk() throws {
        let file = (0..<43).flatMap { _ in ADTSBuilder.frame(length: 300) }
        let a = try TrackAnalyzer.analyze(MemoryBytes(file))
        #expect(a.container == .adts)
        #expect(a.frames == 43)
        #expect(a.totalSamples == 43 * 1024)
        #expect(a.encoderDelay == 1024, "one frame of priming is assumed")
        #expect(a.notes.contains { $0.contains("assumed") })
        #expect(abs(a.durationSeconds - Double(42 * 1024) / 44_100) < 1e-9)
    }

    @Test func notAudio_throwsNotAudio() {
        #expect(throws: FormatError.self) { try TrackAnalyzer.analyze(MemoryBytes(Array("{\"tracks\": []}".utf8))) }
        #expect(throws: FormatError.self) { try TrackAnalyzer.analyze(MemoryBytes([])) }
    }

    /// The generated library, if present (the end-to-end suite checks that it is).
    static func mediaFiles() -> [String] {
        let dir = ProcessInfo.processInfo.environment["STREAM_MEDIA_DIR"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("media/out").path
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: dir)) ?? []
        return names.filter { !$0.hasPrefix(".") && $0.contains(".") }.map { dir + "/" + $0 }.sorted()
    }

    /// Real files cut at 150 places and mutated 300 times each: a value or a thrown error, never a trap.
    @Test(.timeLimit(.scaledMinutes(2)), arguments: mediaFiles())
    func realFile_truncationsAndMutations(path: String) throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        // Keep the mutated copies small enough to run fast: the first 64 KiB and the last 4 KiB.
        let sample = bytes.count > 70_000 ? Array(bytes.prefix(65_536)) + Array(bytes.suffix(4096)) : bytes
        var outcomes = 0
        for i in stride(from: 0, to: sample.count, by: max(1, sample.count / 150)) {
            _ = try? TrackAnalyzer.analyze(MemoryBytes(Array(sample[0..<i])))
            outcomes += 1
        }
        Fuzz.forEachMutation(of: sample, count: 300, seed: UInt64(bytes.count)) { mutated in
            _ = try? TrackAnalyzer.analyze(MemoryBytes(mutated))
            outcomes += 1
        }
        #expect(outcomes > 300)
    }
}
