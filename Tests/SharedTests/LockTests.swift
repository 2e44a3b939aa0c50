import Testing
import StreamShared

/// The one lock type: exclusion under contention, and `withLockIfAvailable` refusing while held.
@Suite struct LockTests {
    @Test func contendedIncrements_areNeitherLostNorDoubled() throws {
        let counter = Lock(0)
        let threads = try (0..<4).map { n in
            try NativeThread(name: "lock-test-\(n)") {
                for _ in 0..<20_000 { counter.withLock { $0 += 1 } }
            }
        }
        for thread in threads { thread.join() }
        #expect(counter.withLock { $0 } == 80_000)
    }

    /// State kept in the owner's own properties behind a `Lock(())`, the shape most of the code
    /// uses. Under `make sanitize` ThreadSanitizer reported every such access as a Swift access
    /// race while the value was a stored property of the lock; this is that program.
    final class Tally: @unchecked Sendable {
        let lock = Lock(())
        var counts = [Int](repeating: 0, count: 64)
        func add(_ i: Int) { lock.withLock { _ in counts[i % 64] += 1 } }
    }

    @Test func voidLock_guardsItsOwnersProperties() throws {
        let tally = Tally()
        let threads = try (0..<4).map { n in
            try NativeThread(name: "lock-tally-\(n)") { for i in 0..<20_000 { tally.add(i) } }
        }
        for thread in threads { thread.join() }
        #expect(tally.lock.withLock { _ in tally.counts.reduce(0, +) } == 80_000)
    }

    /// The value lives outside the object: it must still be released with the lock.
    @Test func theValue_isReleasedWithTheLock() {
        final class Payload {}
        weak var watched: Payload?
        do {
            let payload = Payload()
            watched = payload
            let lock = Lock(payload)
            #expect(lock.withLock { $0 === payload })
        }
        #expect(watched == nil)
    }

    @Test func withLockIfAvailable_isNilWhileAnotherThreadHoldsIt() throws {
        let lock = Lock([Int]())
        let held = NativeThreadTests.Gate(), release = NativeThreadTests.Gate()
        let holder = try NativeThread(name: "lock-holder") {
            lock.withLock { values in
                values.append(1)
                held.release()
                release.pass()
            }
        }
        held.pass()
        #expect(lock.withLockIfAvailable { $0.append(2) } == nil, "held by the other thread: not run")
        release.release()
        holder.join()
        #expect(lock.withLockIfAvailable { values -> Int in values.append(3); return values.count } == 2)
        #expect(lock.withLock { $0 } == [1, 3])
    }
}
