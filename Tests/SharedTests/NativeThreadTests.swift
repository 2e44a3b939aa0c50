import Testing
import StreamShared

/// The one thread type's timed join (on the monotonic clock) and the condition's untimed wait.
@Suite struct NativeThreadTests {
    /// A flag shared between the test and its thread under a ConditionLock.
    final class Gate: @unchecked Sendable {
        // @unchecked: `open` is touched only holding `condition`.
        let condition = ConditionLock()
        var open = false

        func release() { condition.withLock { open = true; condition.broadcast() } }
        func pass() { condition.withLock { while !open { condition.wait() } } }
    }

    @Test func timedJoin_returnsFalseWhileRunning_thenTrueOnceEnded() throws {
        let gate = Gate()
        let thread = try NativeThread(name: "test-timed-join") { gate.pass() }
        let started = Monotonic.now
        #expect(!thread.join(until: Monotonic.now.adding(seconds: 0.05)), "the thread waits at the gate")
        #expect(started.elapsed >= 0.04, "the join waited for its deadline, not less")
        #expect(!thread.hasFinished, "still at the gate")
        gate.release()
        #expect(thread.join(until: Monotonic.now.adding(seconds: 10)), "released, it ends and is joined")
        #expect(thread.hasFinished, "it ran to the end")
        #expect(thread.join(until: Monotonic.now), "a second join returns at once")
    }

    @Test func untimedWait_returnsOnceSignalled() throws {
        let gate = Gate()
        let waiter = try NativeThread(name: "test-waiter") { gate.pass() }
        Monotonic.sleep(seconds: 0.02)
        gate.release()
        waiter.join()
        #expect(waiter.hasFinished, "the waiter passed the gate after the broadcast")
    }
}
