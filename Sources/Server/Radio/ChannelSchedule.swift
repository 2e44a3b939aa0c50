import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// Which frames are due: a real-time schedule over a `ChannelClock`. Frames are published once
/// their start time has come (on the monotonic clock, from `origin`), so the stream never runs
/// ahead of the wall clock by more than a frame, nor behind it by more than a tick.
struct ChannelSchedule: Sendable {
    /// Monotonic time at stream time 0.
    var origin: UInt64
    var clock = ChannelClock()

    init(origin: UInt64) { self.origin = origin }

    /// Whether the next frame (starting at the clock's current time) is due at `now`.
    func isDue(now: UInt64) -> Bool {
        origin &+ clock.nanos <= now
    }

    /// Moves the origin back so that `lead` nanoseconds of stream are due at once (the pre-roll
    /// that gives the first listeners their burst).
    mutating func lead(by nanos: UInt64) {
        origin = origin >= nanos ? origin - nanos : 0
    }

    /// After a stall longer than `limit` (the process was stopped, or starved of CPU), the
    /// schedule goes on from `now` instead of publishing all the missed time at once: a catch-up
    /// of minutes would flood every listener past its lag limit and, on a transcoding channel,
    /// encode them in one go. Returns the time skipped, or nil when the stream was not that late.
    mutating func resume(now: UInt64, ifBehindBy limit: UInt64) -> UInt64? {
        let behind = -drift(now: now)
        guard behind > Int64(clamping: limit) else { return nil }
        origin = now &- clock.nanos
        return UInt64(behind)
    }

    /// How far the stream is ahead (+) or behind (-) the wall clock at `now`, in nanoseconds.
    func drift(now: UInt64) -> Int64 {
        Int64(bitPattern: (origin &+ clock.nanos) &- now)
    }
}
