import Foundation
import Testing

/// Wall-clock allowances of the tests (timeouts, "finished within" bounds), multiplied by
/// STREAM_TEST_TIME_SCALE when set: `make sanitize` sets it, since sanitized code runs several
/// times slower, which is not what these tests measure. Unset, every bound is as written.
public enum TestTiming {
    /// The factor every allowance is multiplied by (1...100).
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["STREAM_TEST_TIME_SCALE"], let value = Double(text),
              value.isFinite else { return 1 }
        return min(100, max(1, value))
    }()

    /// `seconds` stretched by the scale.
    public static func seconds(_ seconds: Double) -> Double { seconds * scale }

    /// Minutes a test may wait for one of Swift Testing's threads before it starts: the budget
    /// of the whole `make test` run, since a synchronous test can wait behind all the others.
    public static let queueAllowanceMinutes = 15

    /// False under a sanitizer (`make sanitize` sets STREAM_TEST_SANITIZER): AddressSanitizer keeps
    /// up to 256 MiB of freed memory resident in its quarantine and adds shadow memory, so a
    /// process's peak RSS there says nothing about the program's own memory. Memory bounds are
    /// checked by the plain `make test` run.
    public static let memoryBoundsApply: Bool = ProcessInfo.processInfo.environment["STREAM_TEST_SANITIZER"] == nil
}

extension TimeLimitTrait.Duration {
    /// `.minutes(n)` stretched by `TestTiming.scale` (sanitizer runs).
    /// These limits are hang guards, not speed checks: a test's clock runs while it waits for one
    /// of Swift Testing's threads, which long real-time end-to-end tests (radio relays, 150 s)
    /// can hold in a full run on 2 cores (a fresh CI machine saw eleven radio tests "exceed" 2 minutes
    /// after waiting 6 for a thread). So each limit is the test's own allowance plus
    /// `TestTiming.queueAllowanceMinutes`, the whole suite's budget; the tests' own waits are bounded
    /// and are what catches a hang early.
    public static func scaledMinutes(_ minutes: Int) -> Self {
        .minutes(Int((Double(minutes) * TestTiming.scale).rounded(.up)) + TestTiming.queueAllowanceMinutes)
    }
}

extension TestTiming {
    /// Waits for `condition` to hold, checking every `poll` seconds, for at most `timeout`
    /// seconds (stretched by the scale); true when it held. For waiting on an event a test can only
    /// observe from outside (a process's state, a status page), instead of sleeping "long enough":
    /// the wait ends as soon as the event is there, and a missing event still ends it.
    public static func waitUntil(timeout: Double, poll: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds(timeout))
        while true {
            if try condition() { return true }
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: poll)
        }
    }
}
