#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with one condition variable (pthread), whose timed waits run on the monotonic clock:
/// the one type for a thread that waits for a state change (plain mutual exclusion is `Lock`). Not for the audio path: the ring there is lock-free.
public final class ConditionLock: @unchecked Sendable {
    // @unchecked: the pthread objects are made for sharing between threads; they live on the
    // heap (never moved) for the object's whole life.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock.
    @inline(__always)
    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// With the lock held: releases it, waits for a signal, and takes it again (callers re-check
    /// their condition: wake-ups may be spurious).
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// With the lock held: releases it, waits for a signal or `deadline`, and takes it again.
    /// Returns false when the deadline passed (callers re-check their condition either way).
    @discardableResult
    public func wait(until deadline: Monotonic) -> Bool {
        let time = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
                            tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        return withUnsafePointer(to: time) { pthread_cond_timedwait(condition, mutex, $0) } != ETIMEDOUT
    }

    /// With the lock held: waits up to `seconds` (see `wait(until:)`).
    @discardableResult
    public func wait(seconds: Double) -> Bool { wait(until: Monotonic.now.adding(seconds: seconds)) }

    /// Wakes one waiter.
    public func signal() { pthread_cond_signal(condition) }
    /// Wakes every waiter.
    public func broadcast() { pthread_cond_broadcast(condition) }
}
