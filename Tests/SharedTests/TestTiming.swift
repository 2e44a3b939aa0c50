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

    /// Minutes a test may wait for one of Swift Testing's threads before it starts: the budget
    /// of the whole `make test` run, since a synchronous test can wait behind all the others.
    static let queueAllowanceMinutes = 15
}

extension TimeLimitTrait.Duration {
    /// `.minutes(n)` stretched by `TestTiming.scale`.
    /// These limits are hang guards, not speed checks: a test's clock runs while it waits for one
    /// of Swift Testing's threads, which long real-time end-to-end tests (radio relays, 150 s)
    /// can hold in a full run on 2 cores (a fresh CI machine saw eleven radio tests "exceed" 2 minutes
    /// after waiting 6 for a thread). So each limit is the test's own allowance plus
    /// `TestTiming.queueAllowanceMinutes`, the whole suite's budget; the tests' own waits are bounded
    /// and are what catches a hang early.
    static func scaledMinutes(_ minutes: Int) -> Self {
        .minutes(Int((Double(minutes) * TestTiming.scale).rounded(.up)) + TestTiming.queueAllowanceMinutes)
    }
}
