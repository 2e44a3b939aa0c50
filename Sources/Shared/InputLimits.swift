/// What a file or stream may claim before it is refused, whatever its fields say.
public enum InputLimits {
    /// Longest playing time accepted: one week of audio.
    public static let maxDurationSeconds: Double = 7 * 24 * 3600
    /// Largest byte count or offset accepted: 2^40 bytes (1 TiB).
    public static let maxBytes = 1 << 40
}

/// Checked arithmetic for values read from a file or a stream, and for what is computed from
/// them: every result is in range or a `FormatError.outOfRange` naming the field, never a trap.
///
/// `component` and `field` name the value in the error, as in
/// `try Checked.int(seconds * rate, "mp4", "elst.media_time")`.
public enum Checked {
    /// Largest magnitude a Double may have to become an Int here (below Int.max with room for sums).
    static let maxIntMagnitude = 0x1p62

    /// `value` rounded to an Int (to nearest unless `rule` says otherwise); throws when it is
    /// not finite or its magnitude reaches 2^62.
    public static func int(_ value: Double, _ component: String, _ field: String,
                           rounding rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) throws(FormatError) -> Int {
        let rounded = value.rounded(rule)
        guard rounded.isFinite, abs(rounded) < maxIntMagnitude else {
            throw FormatError.outOfRange(component: component, field: field, value: "\(value)")
        }
        return Int(rounded)
    }

    /// `a × b`, or an error when the product overflows.
    public static func multiply(_ a: Int, _ b: Int, _ component: String, _ field: String) throws(FormatError) -> Int {
        let (product, overflow) = a.multipliedReportingOverflow(by: b)
        guard !overflow else { throw FormatError.outOfRange(component: component, field: field, value: "\(a) × \(b)") }
        return product
    }

    /// `a + b`, or an error when the sum overflows.
    public static func add(_ a: Int, _ b: Int, _ component: String, _ field: String) throws(FormatError) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { throw FormatError.outOfRange(component: component, field: field, value: "\(a) + \(b)") }
        return sum
    }

    /// A playing time in seconds: finite, not negative, at most `InputLimits.maxDurationSeconds`.
    @discardableResult
    public static func duration(_ seconds: Double, _ component: String, _ field: String) throws(FormatError) -> Double {
        guard seconds.isFinite, seconds >= 0, seconds <= InputLimits.maxDurationSeconds else {
            throw FormatError.outOfRange(component: component, field: field, value: "\(seconds) s")
        }
        return seconds
    }

    /// `ticks` at `timescale` ticks a second, in seconds, within the duration limit.
    @discardableResult
    public static func seconds(ticks: Int, timescale: Int, _ component: String, _ field: String) throws(FormatError) -> Double {
        guard timescale > 0 else {
            throw FormatError.outOfRange(component: component, field: field, value: "timescale \(timescale)")
        }
        return try duration(Double(ticks) / Double(timescale), component, field)
    }

    /// `ticks` at `timescale` converted to samples at `rate` (rounded), for a span within the
    /// duration limit.
    public static func samples(ticks: Int, timescale: Int, rate: Int, _ component: String, _ field: String) throws(FormatError) -> Int {
        try seconds(ticks: ticks, timescale: timescale, component, field)
        // Within a week, ticks × rate / timescale is far below 2^53: exact enough in Double.
        return try int(Double(ticks) * Double(rate) / Double(timescale), component, field)
    }

    /// A byte count or offset: 0 through `InputLimits.maxBytes`.
    @discardableResult
    public static func bytes(_ value: Int, _ component: String, _ field: String) throws(FormatError) -> Int {
        guard value >= 0, value <= InputLimits.maxBytes else {
            throw FormatError.outOfRange(component: component, field: field, value: "\(value) bytes")
        }
        return value
    }

    /// Average bit rate of `bytes` over `seconds`; 0 when there is no time to divide by.
    public static func bitrate(bytes: Int, seconds: Double, _ component: String) throws(FormatError) -> Int {
        guard seconds > 0 else { return 0 }
        return try int(Double(bytes) * 8 / seconds, component, "bitrate")
    }
}
