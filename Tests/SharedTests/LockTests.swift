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
