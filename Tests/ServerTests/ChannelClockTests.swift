import Testing
@testable import StreamServer
import StreamShared

@Suite struct ChannelClockTests {
    @Test func oneHourOfMP3Frames_isExact() {
        // 44.1 kHz MP3: 1152 samples a frame, 26.122... ms, which no whole number of ms or µs is.
        var clock = ChannelClock()
        let frames = 3600 * 44_100 / 1152 + 1
        for _ in 0..<frames { clock.advance(samples: 1152, rate: 44_100) }
        let exact = Double(frames) * 1152 / 44_100 * 1e9
        #expect(abs(Double(clock.nanos) - exact) < 1)
    }

    @Test func rateChanges_addTheirOwnTime() {
        var clock = ChannelClock()
        for _ in 0..<1000 { clock.advance(samples: 1152, rate: 44_100) }
        for _ in 0..<1000 { clock.advance(samples: 1024, rate: 48_000) }
        let exact = 1000.0 * 1152 / 44_100 + 1000.0 * 1024 / 48_000
        #expect(abs(Double(clock.nanos) / 1e9 - exact) < 1e-8)
    }

    @Test func zeroOrNegative_isIgnored() {
        var clock = ChannelClock()
        clock.advance(samples: 0, rate: 44_100)
        clock.advance(samples: 1152, rate: 0)
        clock.advance(samples: -5, rate: 44_100)
        #expect(clock.nanos == 0)
    }

    /// A producer ticking every 250 ms (with jitter) for an hour: after it, the stream it has
    /// published is within 50 ms of the wall clock.
    @Test func scheduleAfterOneHour_isWithin50msOfWallTime() {
        let start: UInt64 = 1_000_000_000
        var schedule = ChannelSchedule(origin: start)
        var now = start
        var generator = SplitMix64(seed: 7)
        var maxDrift: Int64 = 0
        let end = start + 3_600_000_000_000
        while now < end {
            while schedule.isDue(now: now) { schedule.clock.advance(samples: 1152, rate: 44_100) }
            // Right after a publish, the stream leads by less than one frame.
            let drift = schedule.drift(now: now)
            maxDrift = max(maxDrift, abs(drift))
            now += 250_000_000 + generator.next() % 40_000_000   // late wake-ups of up to 40 ms
        }
        #expect(maxDrift < 50_000_000)
        #expect(maxDrift >= 0)
    }

    @Test func lead_makesThePrerollDueAtOnce() {
        var schedule = ChannelSchedule(origin: 10_000_000_000)
        for _ in 0..<100 { schedule.clock.advance(samples: 1152, rate: 44_100) }
        #expect(!schedule.isDue(now: 10_000_000_000))
        schedule.lead(by: schedule.clock.nanos)
        #expect(schedule.isDue(now: 10_000_000_000))
    }
}
