#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import StreamClient
import StreamShared

/// The output stage without a thread: an output no clock paces (null, a file) is drained by the
/// thread that pushes, and a sound card keeps its own thread.
@Suite struct OutputLoopTests {
    /// An output that records what it is given and on which thread.
    final class RecordingOutput: AudioOutput {
        let isRealtime: Bool
        var written: [Float] = []
        var threads = Set<UInt>()
        var closes = 0
        init(isRealtime: Bool) { self.isRealtime = isRealtime }
        func open(_ format: AudioFormat) throws {}
        func write(_ samples: UnsafeBufferPointer<Float>) throws {
            written += samples
            threads.insert(UInt(pthread_self()))
        }
        func close() throws { closes += 1 }
    }

    private static let stereo = AudioFormat(sampleRate: 48_000, channels: 2)

    @Test func aNullOrFileOutput_isDrainedOnThePushingThread_everySampleInOrder() throws {
        let output = RecordingOutput(isRealtime: false)
        let loop = OutputLoop(output: output, ring: SPSCRing(capacity: 4_096), realtime: false, started: .now,
                              drainsInline: true, isPaused: { false })
        #expect(loop.drainsInline)
        try loop.beginTrack(serial: 0, format: Self.stereo)
        // Five rings' worth, pushed in uneven pieces: the pusher has to drain to make room.
        let samples = (0..<20_480).map { Float($0 % 30_000) / 32_768 }
        var offset = 0
        while offset < samples.count {
            let piece = min(1_234, samples.count - offset)
            samples.withUnsafeBufferPointer { loop.push(UnsafeBufferPointer(rebasing: $0[offset..<(offset + piece)])) }
            offset += piece
            loop.batchEnded()
        }
        loop.finish()
        #expect(output.written == samples, "every sample, in order, untouched (\(output.written.count) of \(samples.count))")
        #expect(output.threads == [UInt(pthread_self())], "written on the pushing thread only")
        #expect(output.closes == 1)
        #expect(loop.framesWritten == samples.count / 2)
        #expect(loop.firstAudioMs != nil)
        #expect(loop.hasStopped, "nothing drains the ring after finish")
    }

    @Test func aSeekFlush_dropsWhatWasQueued_whenDrainingInline() throws {
        let output = RecordingOutput(isRealtime: false)
        let loop = OutputLoop(output: output, ring: SPSCRing(capacity: 4_096), realtime: false, started: .now,
                              drainsInline: true, isPaused: { false })
        try loop.beginTrack(serial: 0, format: Self.stereo)
        let before = [Float](repeating: 0.5, count: 2_000)
        before.withUnsafeBufferPointer { loop.push($0) }
        loop.flush(resumingAt: 96_000)
        let after = [Float](repeating: 0.25, count: 4_000)
        after.withUnsafeBufferPointer { loop.push($0) }
        loop.finish()
        #expect(output.written.count == after.count, "only what came after the seek plays: \(output.written.count)")
        #expect(!output.written.contains(0.5))
        #expect(output.written.last == 0.25, "after its fade-in, the audio as it was")
        #expect(loop.timelineStart == 96_000)
        #expect(loop.playedSinceFlushFrames == after.count / 2)
    }

    @Test func anAbort_endsAnInlineLoopWithoutPlayingTheRest() throws {
        let output = RecordingOutput(isRealtime: false)
        let loop = OutputLoop(output: output, ring: SPSCRing(capacity: 4_096), realtime: false, started: .now,
                              drainsInline: true, isPaused: { false })
        try loop.beginTrack(serial: 0, format: Self.stereo)
        [Float](repeating: 0.5, count: 2_000).withUnsafeBufferPointer { loop.push($0) }
        loop.abort()
        loop.finish()
        #expect(output.written.isEmpty)
        #expect(loop.hasStopped)
    }

    @Test func aSoundCardOrRealtime_keepsTheOutputThread() throws {
        for (device, realtime) in [(true, true), (false, true)] {
            let output = RecordingOutput(isRealtime: device)
            let loop = OutputLoop(output: output, ring: SPSCRing(capacity: 4_096), realtime: realtime, started: .now,
                                  drainsInline: true, isPaused: { false })
            #expect(!loop.drainsInline, "paced output (device \(device)): a thread of its own")
            try loop.beginTrack(serial: 0, format: Self.stereo)
            let samples = [Float](repeating: 0.125, count: 960)
            samples.withUnsafeBufferPointer { loop.push($0) }
            loop.finish()
            #expect(output.written == samples)
            #expect(!output.threads.contains(UInt(pthread_self())), "written by the output thread, not the pusher")
        }
    }

    /// An output whose every write fails.
    final class FailingOutput: AudioOutput {
        struct Broken: Error {}
        let isRealtime = true
        func open(_ format: AudioFormat) throws {}
        func write(_ samples: UnsafeBufferPointer<Float>) throws { throw Broken() }
        func close() throws {}
    }

    /// Polls `done` for at most 60 s (a hang guard only: it holds after a few milliseconds).
    private static func wait(until done: () -> Bool) {
        let deadline = Monotonic.now.adding(seconds: 60)
        while !done() && Monotonic.now < deadline { Monotonic.sleep(seconds: 0.001) }
    }

    /// A queue's players read the first-audio time and the output's error while the shared loop's
    /// thread runs on into the next track, never joined between tracks (ThreadSanitizer reported
    /// these reads racing with the output thread's writes when they were plain properties).
    @Test func aThreadedQueueLoop_showsFirstAudioAndErrors_whileItsThreadRuns() throws {
        let output = RecordingOutput(isRealtime: true)
        let loop = OutputLoop(output: output, ring: SPSCRing(capacity: 4_096), realtime: true, started: .now,
                              holdsTrackEnds: true, isPaused: { false })
        try loop.beginTrack(serial: 0, format: Self.stereo)
        // 30 ms: more than the 10 ms a queue's loop holds back until the producer finishes.
        [Float](repeating: 0.125, count: 2_880).withUnsafeBufferPointer { loop.push($0) }
        loop.batchEnded()
        Self.wait { loop.firstAudioMs != nil }
        #expect(loop.firstAudioMs.map { $0 >= 0 } == true, "the first sample's time, seen before finish()")
        #expect(loop.error == nil)
        #expect(!loop.hasStopped, "the thread still runs (the producer has not finished)")
        loop.finish()
        #expect(output.written.count == 2_880)

        let failing = OutputLoop(output: FailingOutput(), ring: SPSCRing(capacity: 4_096), realtime: true, started: .now,
                                 holdsTrackEnds: true, isPaused: { false })
        try failing.beginTrack(serial: 0, format: Self.stereo)
        [Float](repeating: 0.125, count: 2_880).withUnsafeBufferPointer { failing.push($0) }
        failing.batchEnded()
        Self.wait { failing.error != nil }
        #expect(failing.error is FailingOutput.Broken, "the write's error, seen before finish()")
        #expect(failing.firstAudioMs == nil, "nothing was played")
        failing.finish()
    }
}

/// Float → 16-bit as the WAV and ALSA outputs write it.
@Suite struct Int16ConversionTests {
    /// The conversion as it was written before it was made branch-free: the reference.
    private static func reference(_ x: Float) -> Int16 {
        let scaled = (x * 32768).rounded(.toNearestOrEven)
        return Int16(max(-32768, min(32767, scaled)))
    }

    @Test func branchFree_equalsRoundHalfToEvenThenClip_onEveryKindOfValue() {
        var cases: [Float] = [0, -0, 1, -1, 2, -2, 0.999_99, -1.000_01, .infinity, -.infinity, .nan,
                              .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude]
        // Every tie between two 16-bit values, and the values just beside them.
        for k in stride(from: -65_538, through: 65_538, by: 1) {
            let tie = (Float(k) + 0.5) / 32768
            cases += [tie, tie.nextUp, tie.nextDown]
        }
        var generator = SplitMix64(seed: 13)
        for _ in 0..<200_000 { cases.append(Float(Double(generator.next() % 3_000_001) / 1_000_000 - 1.5)) }
        var mismatches: [String] = []
        for x in cases where int16Sample(x) != Self.reference(x) {
            if mismatches.count < 5 { mismatches.append("\(x): \(int16Sample(x)) vs \(Self.reference(x))") }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        #expect(int16Sample(0.5 / 32768) == 0 && int16Sample(1.5 / 32768) == 2 && int16Sample(-2.5 / 32768) == -2, "ties to even")
        #expect(int16Sample(1) == 32767 && int16Sample(-1) == -32768 && int16Sample(.nan) == 32767)
    }

    @Test func bulkConversion_isLittleEndian_andStopsAtTheShorterBuffer() {
        let samples: [Float] = [0.25, -0.5, 1, -1, 0]
        var out = [Int16](repeating: 7, count: 6)
        samples.withUnsafeBufferPointer { input in out.withUnsafeMutableBufferPointer { convertToInt16LE(input, into: $0) } }
        #expect(out.map { Int16(littleEndian: $0) } == [8192, -16384, 32767, -32768, 0, 7])
    }
}
