import Foundation
import Testing
@testable import StreamHTTP
import StreamShared

/// The blocking pool's part of a shutdown: no new job, the running ones waited for until the
/// deadline, and an account of what was dropped and what was left running.
@Suite struct BlockingPoolShutdownTests {
    @Test func shutdown_dropsTheQueue_waitsForRunningJobs_andNamesThoseLeftRunning() throws {
        let pool = try BlockingPool(threads: 2, capacity: 16, name: "test-pool")
        let release = DispatchSemaphore(value: 0)
        let running = DispatchSemaphore(value: 0)
        // One job that ends soon, one that outlives the deadline; both threads busy, so the
        // third waits in the queue.
        #expect(pool.submit(label: "GET /quick") {
            running.signal()
            Monotonic.sleep(seconds: 0.1)
        })
        #expect(pool.submit(label: "GET /stuck") {
            running.signal()
            release.wait()
        })
        running.wait()
        running.wait()
        #expect(pool.submit(label: "GET /queued") {})
        let started = Monotonic.now
        let report = pool.shutdown(deadline: started.adding(seconds: 0.5).nanoseconds)
        let took = started.elapsed
        #expect(report.dropped == ["GET /queued"], "the queued job never runs")
        #expect(report.abandoned.count == 1 && report.abandoned[0].hasPrefix("GET /stuck ("), "\(report.abandoned)")
        #expect(!report.joined)
        #expect(took >= 0.45 && took < 2, "waited for the running jobs until the deadline: \(took) s")
        #expect(!pool.submit(label: "GET /late") {}, "a stopping pool takes no new job")
        release.signal()
        // The job left behind ends on its own; its thread then exits.
        let joinStarted = Monotonic.now
        let again = pool.shutdown(deadline: joinStarted.adding(seconds: 2).nanoseconds)
        #expect(again.joined && again.dropped.isEmpty)
        #expect(joinStarted.elapsed < 1, "threads found gone before are not waited for again")
    }

    @Test func shutdown_ofAnIdlePool_isImmediateAndClean() throws {
        let pool = try BlockingPool(threads: 3, capacity: 4, name: "idle-pool")
        let started = Monotonic.now
        let report = pool.shutdown(deadline: started.adding(seconds: 2).nanoseconds)
        #expect(report.joined && report.dropped.isEmpty && report.abandoned.isEmpty)
        #expect(started.elapsed < 0.5)
    }
}
