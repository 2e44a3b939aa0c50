#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call, and errno.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    /// The C function that failed (e.g. `bind`).
    public var call: String
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// Result of a call on a non-blocking descriptor.
enum IOResult<T: Sendable>: Sendable {
    case done(T)
    /// EAGAIN/EWOULDBLOCK: try again when epoll says the descriptor is ready.
    case wouldBlock
}

/// Runs a system call, retrying on EINTR, turning EAGAIN into `.wouldBlock` and any other
/// failure into a `SystemError` carrying the call's name.
@inline(__always)
func syscall<T: FixedWidthInteger & Sendable>(_ name: String, _ body: () -> T) throws(SystemError) -> IOResult<T> {
    while true {
        let result = body()
        if result >= 0 { return .done(result) }
        let code = errno
        switch code {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        default: throw SystemError(call: name, errno: code)
        }
    }
}

/// Runs a system call that must not block; EAGAIN is reported as an error too.
@inline(__always)
@discardableResult
package func syscallChecked<T: FixedWidthInteger & Sendable>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
    switch try syscall(name, body) {
    case .done(let value): return value
    case .wouldBlock: throw SystemError(call: name, errno: EAGAIN)
    }
}

/// Monotonic clock in nanoseconds, for timeouts and pacing.
package func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
