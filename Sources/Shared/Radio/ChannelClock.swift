/// A live stream's time (a radio channel's, a live HLS loop's), derived from the frames it has
/// published: samples counted exactly at their rate (no per-frame rounding, so no drift however
/// long the stream runs).
package struct ChannelClock: Sendable, Equatable {
    /// Time of the samples counted at earlier rates.
    private var baseNanos: UInt64 = 0
    private var rate = 0
    private var samples: UInt64 = 0

    package init() {}

    /// Counts one frame of `samples` samples at `rate` Hz.
    package mutating func advance(samples count: Int, rate newRate: Int) {
        guard count > 0, newRate > 0 else { return }
        if newRate != rate {
            baseNanos = nanos
            rate = newRate
            samples = 0
        }
        samples &+= UInt64(count)
    }

    /// Stream time in nanoseconds: the end of the last frame counted.
    package var nanos: UInt64 {
        guard rate > 0 else { return baseNanos }
        let r = UInt64(rate)
        return baseNanos &+ samples / r &* 1_000_000_000 &+ (samples % r) &* 1_000_000_000 / r
    }
}
