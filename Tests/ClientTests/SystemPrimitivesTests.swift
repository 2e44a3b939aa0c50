import Testing
@testable import StreamClient
import StreamShared

/// The Glibc primitives that replaced Foundation in the client: threads that run and join, timed
/// waits on the monotonic clock, and printf-style number formatting.
@Suite struct SystemPrimitivesTests {
    /// A value shared between the test and its thread under a ConditionLock.
    final class Box: @unchecked Sendable {
        // @unchecked: `value` is touched only while holding `lock`.
        let lock = ConditionLock()
        var value = 0
    }

    @Test func thread_runsItsClosure_andJoinWaitsForIt() throws {
        let box = Box()
        let thread = try NativeThread(name: "test-thread-with-a-long-name") {
            Monotonic.sleep(seconds: 0.02)
            box.lock.withLock { box.value = 42 }
        }
        thread.join()
        #expect(box.lock.withLock { box.value } == 42)
        thread.join()          // a second join returns at once
    }

    @Test func timedWait_timesOutAfterItsDeadline() {
        let box = Box()
        let start = Monotonic.now
        let signalled = box.lock.withLock { box.lock.wait(seconds: 0.05) }
        let elapsed = start.elapsed
        #expect(!signalled, "nobody signalled")
        #expect(elapsed >= 0.049 && elapsed < 2, "waited \(elapsed) s for a 0.05 s deadline")
    }

    @Test func broadcast_wakesAWaiterBeforeItsDeadline() throws {
        let box = Box()
        try NativeThread.detach(name: "test-signaller") {
            Monotonic.sleep(seconds: 0.02)
            box.lock.withLock {
                box.value = 1
                box.lock.broadcast()
            }
        }
        let start = Monotonic.now
        box.lock.withLock {
            while box.value == 0 { if !box.lock.wait(seconds: 10) { break } }
        }
        #expect(box.lock.withLock { box.value } == 1)
        #expect(start.elapsed < 5, "woken by the broadcast, not the 10 s deadline")
    }

    @Test func monotonic_arithmetic() {
        let t = Monotonic(nanoseconds: 5_000_000_000)
        #expect(t.adding(seconds: 1.5).seconds(since: t) == 1.5)
        #expect(t.seconds(since: t.adding(seconds: 2)) == -2)
        #expect(t.adding(seconds: -3) == t && t.adding(seconds: .nan) == t, "negative and NaN amounts add nothing")
        #expect(t.adding(seconds: 2).milliseconds(since: t) == 2000)
    }

    @Test func printfFormat_followsCRules() {
        #expect(printfFormat("%g", 1.25) == "1.25")
        #expect(printfFormat("%g", 0.1) == "0.1")
        #expect(printfFormat("%.2g", 12.5) == "12")
        #expect(printfFormat("%.2g", 0.125) == "0.12")
        #expect(printfFormat("%.2g", 1234.0) == "1.2e+03")
    }
}
