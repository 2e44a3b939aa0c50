import Foundation
import Testing
@testable import StreamClient
import StreamShared

/// The pieces of a queue's joins: throttles sharing one budget, and the output loop that runs
/// from one track into the next (reopening a device for another format, with fades).
@Suite struct QueueJoinTests {
    @Test func throttlesSharingABudget_holdNoMoreThanItBetweenThem() {
        let budget = ThrottleBudget(limit: 10_000)
        let playing = Throttle(capacity: 8_192, budget: budget)
        let next = Throttle(capacity: 8_192, budget: budget)
        let bytes = [UInt8](repeating: 7, count: 8_192)
        let first = bytes.withUnsafeBytes { playing.write($0, generation: playing.currentGeneration) }
        #expect(first == 8_192)
        #expect(next.freeSpace == 10_000 - 8_192, "the next track gets what the playing one leaves")
        let second = bytes.withUnsafeBytes { next.write($0, generation: next.currentGeneration) }
        #expect(second == 10_000 - 8_192)
        #expect(budget.held == 10_000)
        // The playing track is read: its bytes go back to the budget, and the next one may take them.
        _ = playing.read(max: 4_000, timeout: 0)
        #expect(next.freeSpace == 4_000)
        _ = next.reset(to: 0)
        #expect(budget.held == 8_192 - 4_000, "a reset gives back what the throttle held")
    }

    @Test func aThrottleReleasedWhileHolding_returnsItsBytesToTheBudget() {
        let budget = ThrottleBudget(limit: 10_000)
        do {
            let throttle = Throttle(capacity: 8_192, budget: budget)
            let bytes = [UInt8](repeating: 1, count: 5_000)
            _ = bytes.withUnsafeBytes { throttle.write($0, generation: throttle.currentGeneration) }
            #expect(budget.held == 5_000)
        }
        #expect(budget.held == 0)
    }

    /// A device output that records what it is given.
    final class RecordingDevice: AudioOutput {
        var opens: [AudioFormat] = []
        var closes = 0
        var written: [[Float]] = [[]]
        var isRealtime: Bool { true }
        func open(_ format: AudioFormat) throws {
            opens.append(format)
            if !(written.last?.isEmpty ?? true) { written.append([]) }
        }
        func write(_ samples: UnsafeBufferPointer<Float>) throws { written[written.count - 1] += samples }
        func close() throws { closes += 1 }
    }

    @Test func aTrackInAnotherFormat_reopensTheDevice_withTenMillisecondFadesAroundTheChange() throws {
        let device = RecordingDevice()
        let output = QueueOutput(device, reopensOnFormatChange: true)
        let loop = OutputLoop(output: output, ring: SPSCRing(capacity: 8_192), realtime: false, started: .now, holdsTrackEnds: true, isPaused: { false })
        let first = AudioFormat(sampleRate: 44_100, channels: 2), second = AudioFormat(sampleRate: 48_000, channels: 1)
        try loop.beginTrack(serial: 0, format: first)
        let a = [Float](repeating: 0.5, count: 2 * 4_410)
        a.withUnsafeBufferPointer { loop.push($0) }
        Thread.sleep(forTimeInterval: 0.05)      // the next track comes late: the last 10 ms wait for it
        try loop.beginTrack(serial: 1, format: second)
        let b = [Float](repeating: 0.25, count: 4_800)
        b.withUnsafeBufferPointer { loop.push($0) }
        loop.finish()
        try output.finish()
        #expect(device.opens == [first, second])
        #expect(device.written.count == 2)
        let before = device.written[0], after = device.written[1]
        #expect(before.count == a.count && after.count == b.count, "every sample played: \(before.count), \(after.count)")
        guard before.count == a.count, after.count == b.count else { return }
        // 441 frames before the change fade out to silence, 480 after it fade in.
        #expect(before[..<(2 * (4_410 - 441))].allSatisfy { $0 == 0.5 })
        #expect(before[before.count - 1] == 0 && before[before.count - 2] == 0, "silent at the change")
        #expect(abs(before[2 * (4_410 - 441)] - 0.5 * 440 / 441) < 1e-6, "the fade-out starts at 10 ms before")
        #expect(abs(after[0] - 0.25 / 480) < 1e-6, "the fade-in starts from silence")
        #expect(abs(after[239] - 0.25 * 240 / 480) < 1e-6)
        #expect(after[480...].allSatisfy { $0 == 0.25 })
        #expect(loop.heardSerial == 1)
    }

    @Test func tracksInOneFormat_runOnWithoutReopening_andUntouched() throws {
        let device = RecordingDevice()
        let output = QueueOutput(device, reopensOnFormatChange: true)
        let loop = OutputLoop(output: output, ring: SPSCRing(capacity: 4_096), realtime: false, started: .now, holdsTrackEnds: true, isPaused: { false })
        let format = AudioFormat(sampleRate: 44_100, channels: 2)
        var expected: [Float] = []
        for serial in 0..<3 {
            try loop.beginTrack(serial: serial, format: format)
            let samples = (0..<3_000).map { Float(serial * 3_000 + $0) / 10_000 }
            expected += samples
            samples.withUnsafeBufferPointer { loop.push($0) }
        }
        loop.finish()
        try output.finish()
        #expect(device.opens == [format])
        #expect(device.written.flatMap { $0 } == expected)
    }

    @Test func aFileOutput_refusesAnotherChannelCount_beforeItsSamplesAreQueued() throws {
        let output = QueueOutput(NullOutput(), reopensOnFormatChange: false)
        let loop = OutputLoop(output: output, ring: SPSCRing(capacity: 4_096), realtime: false, started: .now, holdsTrackEnds: true, isPaused: { false })
        try loop.beginTrack(serial: 0, format: AudioFormat(sampleRate: 44_100, channels: 2))
        #expect(throws: PlaybackError.self) { try loop.beginTrack(serial: 1, format: AudioFormat(sampleRate: 44_100, channels: 1)) }
        #expect(output.sampleRate(for: AudioFormat(sampleRate: 48_000, channels: 2), following: AudioFormat(sampleRate: 44_100, channels: 2))
                == 44_100, "a file keeps its rate: the track is resampled to it")
        loop.finish()
        try output.finish()
    }
}
