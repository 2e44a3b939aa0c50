#if canImport(Glibc)
import Glibc
#endif

/// Wakes one event loop from any thread (its eventfd): a radio channel that has published new
/// bytes, a source feed that has room again.
public struct LoopWaker: Sendable, Hashable {
    let fd: Int32

    public func wake() { Epoll.signal(eventFD: fd) }
}

/// What a live exchange waits for next.
public enum LiveStep: Sendable, Equatable {
    /// Sleep until one of these: input (`readable`), room in the socket (`writable`), the time
    /// `wakeAt`, or any wake of the loop (a `LoopWaker`), which always calls `pump` again unless
    /// `writable` is set.
    case wait(readable: Bool, writable: Bool, wakeAt: UInt64?)
    /// The exchange is over: close the connection (lingering, so the last bytes arrive).
    case finished
    /// The connection is broken or must be dropped at once (a reset).
    case failed
}

/// A long-lived exchange that takes a connection over once its response head is sent: a radio
/// listener writing from a channel's ring, or a source whose request body streams in. Only the
/// connection's event-loop thread calls it.
public protocol LiveExchange: AnyObject, Sendable {
    /// Offered the response head before `start`; true when the exchange sends it itself, with its
    /// first bytes (one write and one TCP segment instead of two, and one wake of the client).
    func takeHead(_ head: [UInt8]) -> Bool
    /// Called once, after the head went out. `leftover` holds the bytes read past the request
    /// head (the start of a request body).
    func start(waker: LoopWaker, leftover: [UInt8], now: UInt64)
    /// Moves what can be moved now on `fd`; adds the bytes written to `written`.
    /// `readable`: the loop saw input on `fd` (reading is skipped otherwise: a syscall saved).
    func pump(fd: Int32, now: UInt64, readable: Bool, written: inout Int) -> LiveStep
    /// Called once when the connection closes, for whatever reason.
    func stop()
    /// Until this time (monotonic ns) a mere wake of the loop finds nothing to do here (a radio
    /// listener between writes), so the loop skips the pump; input, EPOLLOUT and the exchange's
    /// own `wakeAt` still pump it. Asked at every such wake, so it must be cheap.
    var quietUntil: UInt64 { get }
}

extension LiveExchange {
    /// By default the connection sends the head, and the exchange starts once it is out.
    public func takeHead(_ head: [UInt8]) -> Bool { false }
    /// By default every wake of the loop pumps the exchange.
    public var quietUntil: UInt64 { 0 }
}
