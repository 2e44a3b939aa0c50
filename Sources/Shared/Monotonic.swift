#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A point on the monotonic clock (`CLOCK_MONOTONIC`): deadlines, timeouts and elapsed times
/// that a change of the wall clock cannot move.
public struct Monotonic: Comparable, Sendable {
    /// Nanoseconds since an arbitrary start (the machine's boot on Linux).
    public let nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// Now. The corresponding C function is `clock_gettime(CLOCK_MONOTONIC)`.
    public static var now: Monotonic {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Monotonic(nanoseconds: UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec))
    }

    /// This point moved `seconds` later (negative and non-finite amounts count as 0; a week at most).
    public func adding(seconds: Double) -> Monotonic {
        let clamped = seconds.isFinite ? min(max(0, seconds), 604_800) : 0
        return Monotonic(nanoseconds: nanoseconds + UInt64(clamped * 1e9))
    }

    /// Seconds from `earlier` to this point (negative when `earlier` is later).
    public func seconds(since earlier: Monotonic) -> Double {
        nanoseconds >= earlier.nanoseconds ? Double(nanoseconds - earlier.nanoseconds) / 1e9
                                           : -Double(earlier.nanoseconds - nanoseconds) / 1e9
    }

    /// Milliseconds from `earlier` to this point.
    public func milliseconds(since earlier: Monotonic) -> Double { seconds(since: earlier) * 1000 }

    /// Seconds since this point.
    public var elapsed: Double { Monotonic.now.seconds(since: self) }

    public static func < (a: Monotonic, b: Monotonic) -> Bool { a.nanoseconds < b.nanoseconds }

    /// Sleeps the calling thread for `seconds` (nanosleep, resumed after signals).
    public static func sleep(seconds: Double) {
        guard seconds > 0, seconds.isFinite else { return }
        let whole = min(seconds, 604_800)
        var request = timespec(tv_sec: Int(whole), tv_nsec: Int((whole - whole.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
