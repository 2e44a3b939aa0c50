#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
internal import CLinux

/// A named POSIX thread running one closure: the one thread type of both programs (streamd's
/// event loops, pool, scanner, radio producers and relays; streamplay's network, output and
/// terminal threads). Its owner joins it (`join()`, or `join(until:)` with a deadline on the
/// monotonic clock); `detach` starts one nobody waits for.
public final class NativeThread: @unchecked Sendable {
    // @unchecked: `thread` is read and cleared only under `state`'s lock; `finished` likewise.
    private var thread: pthread_t?
    private let state: ThreadEnd

    /// Set by the thread as its last step, so a timed join can wait on the monotonic clock
    /// (pthread_timedjoin_np counts on the wall clock).
    private final class ThreadEnd: @unchecked Sendable {
        // @unchecked: `finished` is touched only holding `condition`.
        let condition = ConditionLock()
        var finished = false

        func markFinished() {
            condition.withLock {
                finished = true
                condition.broadcast()
            }
        }
    }

    /// What the new thread runs, passed to it through pthread_create's argument.
    private final class Start {
        let name: String
        let body: () -> Void
        let end: ThreadEnd
        init(name: String, body: @escaping () -> Void, end: ThreadEnd) { self.name = name; self.body = body; self.end = end }
    }

    /// Starts `body` on a new joinable thread named `name` (the first 15 bytes, as Linux keeps).
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(ThreadError) {
        let end = ThreadEnd()
        state = end
        thread = try Self.spawn(name: name, body, end: end)
    }

    /// Starts `body` on a thread that is never joined.
    public static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws(ThreadError) {
        let thread = try spawn(name: name, body, end: ThreadEnd())
        pthread_detach(thread)
    }

    /// Waits for the thread to end (once; later calls return at once).
    public func join() {
        guard let thread = take() else { return }
        pthread_join(thread, nil)
    }

    /// Waits until the thread has ended or `deadline` passed; true when it ended (and is joined).
    /// A thread still running at the deadline stays joinable (a later call can wait again).
    @discardableResult
    public func join(until deadline: Monotonic) -> Bool {
        let ended = state.condition.withLock { () -> Bool in
            while !state.finished {
                if !state.condition.wait(until: deadline) { return state.finished }
            }
            return true
        }
        guard ended else { return false }
        join()
        return true
    }

    /// Waits for the thread to end: until `deadline` (monotonic ns) when given, else for as long
    /// as it takes; true once it has ended (and is joined).
    @discardableResult
    public func join(deadline: UInt64?) -> Bool {
        guard let deadline else {
            join()
            return true
        }
        return join(until: Monotonic(nanoseconds: deadline))
    }

    /// Whether the thread has run its closure to the end.
    public var hasFinished: Bool { state.condition.withLock { state.finished } }

    private func take() -> pthread_t? {
        state.condition.withLock {
            let taken = thread
            thread = nil
            return taken
        }
    }

    deinit { if let thread { pthread_detach(thread) } }

    private static func spawn(name: String, _ body: @escaping () -> Void, end: ThreadEnd) throws(ThreadError) -> pthread_t {
        let start = Unmanaged.passRetained(Start(name: name, body: body, end: end)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
            pthread_setname_np(pthread_self(), String(decoding: start.name.utf8.prefix(15), as: UTF8.self))
            start.body()
            start.end.markFinished()
            return nil
        }, start)
        guard result == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw ThreadError(name: name, errno: result)
        }
        return thread
    }
}

/// A thread could not be started (pthread_create failed: out of memory or the thread limit).
public struct ThreadError: Error, CustomStringConvertible, Sendable {
    public var name: String
    public var errno: Int32
    public init(name: String, errno: Int32) { self.name = name; self.errno = errno }
    public var description: String { "cannot start thread \(name): \(String(cString: strerror(errno)))" }
}
