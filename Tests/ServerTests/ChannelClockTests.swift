import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
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

    /// A stall past the limit (an hour here) makes the schedule go on from now: one frame is due,
    /// not an hour of them; a late tick within the limit still catches up.
    @Test func resume_afterAStall_goesOnFromNow() throws {
        let start: UInt64 = 5_000_000_000
        var schedule = ChannelSchedule(origin: start)
        var now = start
        while schedule.isDue(now: now) { schedule.clock.advance(samples: 1152, rate: 44_100) }
        now += 1_000_000_000
        #expect(schedule.resume(now: now, ifBehindBy: 5_000_000_000) == nil, "a second late: catch up")
        now += 3_600_000_000_000
        let resumed = schedule.resume(now: now, ifBehindBy: 5_000_000_000)
        let skipped = try #require(resumed)
        #expect(skipped > 3_600_000_000_000 && skipped < 3_601_100_000_000, "\(skipped)")
        var frames = 0
        while schedule.isDue(now: now) {
            schedule.clock.advance(samples: 1152, rate: 44_100)
            frames += 1
        }
        #expect(frames == 1)
        #expect(schedule.resume(now: now, ifBehindBy: 5_000_000_000) == nil)
        now += 250_000_000
        while schedule.isDue(now: now) { schedule.clock.advance(samples: 1152, rate: 44_100) }
        #expect(abs(schedule.drift(now: now)) < 30_000_000, "on the wall clock again")
    }
}
