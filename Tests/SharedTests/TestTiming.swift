import Foundation
import Testing

/// Wall-clock allowances of these tests, multiplied by STREAM_TEST_TIME_SCALE when set:
/// `make sanitize` sets it, since sanitized code runs several times slower, which is not what
/// these tests measure. Unset, every bound is as written. (EndToEndTests has the same helper.)
enum TestTiming {
    static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["STREAM_TEST_TIME_SCALE"], let value = Double(text),
              value.isFinite else { return 1 }
        return min(100, max(1, value))
    }()
}

extension TimeLimitTrait.Duration {
    /// `.minutes(n)` stretched by `TestTiming.scale`.
    static func scaledMinutes(_ minutes: Int) -> Self { .minutes(Int((Double(minutes) * TestTiming.scale).rounded(.up))) }
}
