#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Mutual exclusion over a value (a pthread mutex): the one lock type of both programs, with the
/// shape of `Synchronization.Mutex` (`withLock`, `withLockIfAvailable`). Not `Mutex` itself: on
/// Linux its contended path (a futex wait and wake inside the standard library, which sanitizers
/// do not instrument) is invisible to ThreadSanitizer, which then reports every access that
/// followed a contended acquisition as a race (shown by a two-thread program in `make sanitize`'s
/// history, issue 22); ThreadSanitizer intercepts pthread mutexes whole. Waiting for a state
/// change is `ConditionLock`; the audio path takes no lock.
public final class Lock<Value>: @unchecked Sendable {
    // @unchecked: the value is touched only with `mutex` held. Both live on the heap (never
    // moved) for the object's whole life. The value sits behind a pointer rather than in a
    // stored property: ThreadSanitizer checks a class's stored property with Swift's dynamic
    // exclusivity tracking, which does not see the pthread mutex as ordering the accesses and
    // reported every `Lock(())` (state kept in the owner's own properties) as a "Swift access
    // race" in `make sanitize`; through the pointer it checks the real memory accesses, which the
    // mutex does order, and still reports a property touched outside the lock.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let storage = UnsafeMutablePointer<Value>.allocate(capacity: 1)

    public init(_ value: Value) {
        storage.initialize(to: value)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` on the value, holding the lock.
    @inline(__always)
    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }

    /// Runs `body` holding the lock when it is free now; nil (and `body` not run) when another
    /// thread holds it.
    @inline(__always)
    public func withLockIfAvailable<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }
}
