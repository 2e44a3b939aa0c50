#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// A fixed set of threads for work that may wait (a worker process, a disk read, a slow query),
/// so that no event loop ever does: a loop hands such a request's work here and sends the
/// response when the work is done (`HTTPResponse.offLoop`). The queue is bounded: past it, work
/// is refused and the request answered 503, instead of piling up without end.
public final class BlockingPool: @unchecked Sendable {
    // @unchecked: `queue`, `running` and `stopping` are guarded by `condition`; `threads` is
    // written in init only (and read by `shutdown`).
    public typealias Job = @Sendable () -> Void

    private let condition = ConditionLock()
    private var queue: [(label: String, job: Job)] = []
    private var queueHead = 0
    /// The jobs running now, by a number given when each is taken: what it is and since when
    /// (monotonic ns), for the shutdown's report.
    private var running: [Int: (label: String, since: UInt64)] = [:]
    private var taken = 0
    private var stopping = false
    private var threads: [NativeThread] = []
    /// Jobs waiting at most; `submit` refuses beyond.
    public let capacity: Int
    public let threadCount: Int

    /// Starts `threads` threads named `<name>-<i>`; throws when none could be started (fewer
    /// than asked serve the same queue).
    public init(threads: Int, capacity: Int, name: String) throws(ThreadError) {
        self.threadCount = max(1, threads)
        self.capacity = max(1, capacity)
        for i in 0..<threadCount {
            do {
                self.threads.append(try NativeThread(name: "\(name)-\(i)") { [self] in runJobs() })
            } catch where !self.threads.isEmpty {
                break
            }
        }
    }

    /// Queues `job` (`label` names it in the shutdown's report: the request it answers); false
    /// when the queue is full or the pool is stopping (the job will not run).
    @discardableResult
    public func submit(label: String = "job", _ job: @escaping Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, queue.count - queueHead < capacity else { return false }
        queue.append((label, job))
        condition.signal()
        return true
    }

    /// Jobs queued and running now.
    public var load: (queued: Int, running: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (queue.count - queueHead, running.count)
    }

    /// What a shutdown left behind.
    public struct ShutdownReport: Sendable {
        /// Jobs queued and never started (their connections were closed with the loops).
        public var dropped: [String] = []
        /// Jobs still running at the deadline, with how long they had run ("GET /x (4.2 s)"):
        /// each keeps its thread, which exits when the job ends (a worker bounded by its timeout).
        public var abandoned: [String] = []
        /// Every thread of the pool has exited.
        public var joined: Bool { abandoned.isEmpty }
    }

    /// Stops taking work, drops what is queued, and waits until `deadline` (monotonic ns) for the
    /// running jobs; reports the jobs dropped and those still running then.
    @discardableResult
    public func shutdown(deadline: UInt64) -> ShutdownReport {
        var report = ShutdownReport()
        condition.lock()
        stopping = true
        report.dropped = queue[queueHead...].map(\.label)
        queue.removeAll()
        queueHead = 0
        condition.broadcast()
        condition.unlock()
        for thread in threads {
            // A thread joined by an earlier shutdown is found ended at once.
            if thread.join(until: Monotonic(nanoseconds: deadline)) { continue }
            let now = monotonicNanos()
            condition.withLock {
                report.abandoned = running.sorted { $0.key < $1.key }.map { _, job in
                    "\(job.label) (\(Self.tenths(of: now &- job.since)) s)"
                }
            }
            // A job may have ended between the wait and the look: then nothing is left.
            if report.abandoned.isEmpty { continue }
            return report
        }
        return report
    }

    /// Nanoseconds as seconds with one decimal ("4.2"), rounded to the nearest tenth.
    static func tenths(of nanoseconds: UInt64) -> String {
        let tenths = (nanoseconds / 2 + 25_000_000) / 50_000_000
        return "\(tenths / 10).\(tenths % 10)"
    }

    private func runJobs() {
        while let (number, job) = next() {
            job()
            condition.lock()
            running[number] = nil
            condition.unlock()
        }
    }

    /// The next job and its number, waiting for one; nil once stopping.
    private func next() -> (Int, Job)? {
        condition.lock()
        defer { condition.unlock() }
        while !stopping && queueHead == queue.count { condition.wait() }
        guard !stopping else { return nil }
        let (label, job) = queue[queueHead]
        queueHead += 1
        // Compacted when drained (the usual case) or when the dead prefix dominates.
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead > 1024 && queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        taken += 1
        running[taken] = (label, monotonicNanos())
        return (taken, job)
    }
}
