import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

@Suite struct PacingTests {
    @Test func budget_isTheRateOverTimePlusTheBurst_minusWhatWasSent() {
        #expect(Pacing.budget(bytesPerSecond: 8000, elapsedNanos: 0, sent: 0) == Pacing.burst)
        #expect(Pacing.budget(bytesPerSecond: 8000, elapsedNanos: 2_000_000_000, sent: 0) == 16_000 + Pacing.burst)
        #expect(Pacing.budget(bytesPerSecond: 8000, elapsedNanos: 500_000_000, sent: 8096) == 0)
        #expect(Pacing.budget(bytesPerSecond: 8000, elapsedNanos: 500_000_000, sent: 10_000) == -1904)
    }

    @Test func budget_saturatesInsteadOfOverflowing() {
        // The products Int(Double(pace) * elapsed) once trapped on.
        let huge = Pacing.budget(bytesPerSecond: Int.max, elapsedNanos: UInt64.max, sent: 0)
        #expect(huge > 1 << 60)
        #expect(Pacing.budget(bytesPerSecond: Int.max, elapsedNanos: 1_000_000_000, sent: Int.max) < 0)
        #expect(Pacing.budget(bytesPerSecond: 1 << 62, elapsedNanos: 10_000_000_000_000, sent: 1 << 40) > 1 << 60)
        #expect(Pacing.budget(bytesPerSecond: 8000, elapsedNanos: 0, sent: Int.max) == Pacing.burst - Int.max)
    }

    @Test func budget_treatsANonPositiveRateAsOneBytePerSecond() {
        #expect(Pacing.budget(bytesPerSecond: 0, elapsedNanos: 3_000_000_000, sent: 0) == 3 + Pacing.burst)
        #expect(Pacing.budget(bytesPerSecond: Int.min, elapsedNanos: 3_000_000_000, sent: 0) == 3 + Pacing.burst)
    }

    @Test func wait_untilABurstIsEarned_boundedBothWays() {
        // 4096 + 3904 bytes behind at 8000 B/s: one second.
        #expect(Pacing.wait(bytesPerSecond: 8000, budget: -3904) == 1_000_000_000)
        #expect(Pacing.wait(bytesPerSecond: 16_000, budget: -3904) == 500_000_000)
        // A fast rate never spins; a slow or absurd one never sleeps past a second nor traps.
        #expect(Pacing.wait(bytesPerSecond: Int.max, budget: 0) == Pacing.minimumWait)
        #expect(Pacing.wait(bytesPerSecond: 1, budget: Int.min) == Pacing.maximumWait)
        #expect(Pacing.wait(bytesPerSecond: 0, budget: 0) == Pacing.maximumWait)
        #expect(Pacing.wait(bytesPerSecond: -5, budget: -1) == Pacing.maximumWait)
    }
}
