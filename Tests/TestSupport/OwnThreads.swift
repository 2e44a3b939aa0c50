import Foundation
import Testing

/// Runs each test of a suite on a thread of its own instead of one of Swift Testing's
/// cooperative threads, at most `OwnThreads.width` at a time.
///
/// Why: the tests are synchronous, and a synchronous test holds its cooperative thread for as
/// long as it waits (for a process, a socket, real-time playback). The pool has one thread per
/// core, so on 2 cores two waiting end-to-end tests kept every other test waiting too, with the
/// CPU mostly idle. A test under this trait waits on its own thread; the cooperative threads stay
/// free for the in-process tests. The test's task (and with it Swift Testing's record of which
/// test an `#expect` belongs to) is the same one: only the executor it runs on changes.
public struct OwnThreads: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil else { return try await function() }
        let queued = Date()
        try await OwnThreads.slots.withSlot {
            let started = Date()
            defer { Self.report(test, waited: started.timeIntervalSince(queued), ran: Date().timeIntervalSince(started)) }
            try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) { try await function() }
        }
    }

    /// With STREAM_TEST_TIMES set, one line per test case: how long it ran on its thread and how
    /// long it waited for a slot. Swift Testing's own "passed after" includes every wait, so on a
    /// loaded run it says little about which tests are slow; these lines rank them.
    public static let reportsTimes = ProcessInfo.processInfo.environment["STREAM_TEST_TIMES"] != nil

    static func report(_ test: Test, waited: Double, ran: Double) {
        guard reportsTimes else { return }
        let suite = test.id.nameComponents.dropLast().last ?? test.id.moduleName
        print(String(format: "test-time %8.3f s ran, %7.3f s waited: %@.%@", ran, waited, suite, test.name))
    }

    /// How many such tests run at once: STREAM_TEST_WIDTH (1...32), else 6; 2 when timing is
    /// stretched for a sanitizer (`make sanitize`), whose processes take several times the CPU.
    public static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["STREAM_TEST_WIDTH"], let value = Int(text) {
            return min(32, max(1, value))
        }
        return TestTiming.scale > 1 ? 2 : 6
    }()

    static let slots = Slots(count: width)

    /// A counting semaphore tests await without holding a thread.
    actor Slots {
        private var free: Int
        private var waiting: [CheckedContinuation<Void, Never>] = []

        init(count: Int) { free = count }

        func withSlot(_ body: @Sendable () async throws -> Void) async throws {
            await acquire()
            do {
                try await body()
            } catch {
                release()
                throw error
            }
            release()
        }

        private func acquire() async {
            if free > 0 {
                free -= 1
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        private func release() {
            if waiting.isEmpty {
                free += 1
            } else {
                waiting.removeFirst().resume()
            }
        }
    }
}

extension Trait where Self == OwnThreads {
    /// Each test on a thread of its own (`OwnThreads`): for suites whose tests wait on processes,
    /// sockets or real time.
    public static var ownThreads: Self { OwnThreads() }
}

/// Runs every job on a new thread: a test body is one long synchronous job, so a thread per job
/// is a thread per test, and nothing queues behind it.
final class ThreadPerJobExecutor: TaskExecutor {
    static let shared = ThreadPerJobExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let thread = Thread { job.runSynchronously(on: executor) }
        thread.name = "test body"
        thread.start()
    }
}
