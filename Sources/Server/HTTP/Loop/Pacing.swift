/// The arithmetic of paced (`?kbps=`) responses: how many body bytes may go out now and how
/// long to wait otherwise. Saturating throughout: the rate comes from a request and the elapsed
/// time from the clock, and their product can pass `Int.max`.
enum Pacing {
    /// Bytes allowed ahead of the rate, so a paced response starts at once.
    static let burst = 4096
    /// Shortest and longest sleep between paced writes: short enough for smooth delivery at
    /// low rates, long enough never to spin; a long wait is cut into 1 s steps.
    static let minimumWait: UInt64 = 5_000_000
    static let maximumWait: UInt64 = 1_000_000_000

    /// Body bytes that may be sent now: what `bytesPerSecond` earned over `elapsedNanos`, plus
    /// the burst, minus the `sent` bytes. Zero or less means wait.
    static func budget(bytesPerSecond: Int, elapsedNanos: UInt64, sent: Int) -> Int {
        let rate = Double(max(1, bytesPerSecond))
        let earned = rate * (Double(elapsedNanos) / 1e9)
        // Far beyond any file size: saturate rather than convert a Double past Int.max.
        let cap = Int.max / 4
        let whole = earned < Double(cap) ? Int(earned) : cap
        let withBurst = whole + burst                       // <= Int.max / 4 + 4096
        let (left, overflow) = withBurst.subtractingReportingOverflow(max(0, sent))
        return overflow ? Int.min : left
    }

    /// How long to wait before `budget` (zero or less) has grown back to a burst's worth.
    package static func wait(bytesPerSecond: Int, budget: Int) -> UInt64 {
        let deficit = Double(burst) - Double(min(budget, 0))   // exact enough; never negative
        let nanos = deficit / Double(max(1, bytesPerSecond)) * 1e9
        guard nanos < Double(maximumWait) else { return maximumWait }
        return max(minimumWait, UInt64(nanos))
    }
}
