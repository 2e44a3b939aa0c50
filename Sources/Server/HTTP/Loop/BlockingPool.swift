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
    private var queue: [Job] = []
    private var queueHead = 0
    private var running = 0
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

    /// Queues `job`; false when the queue is full or the pool is stopping (the job will not run).
    @discardableResult
    public func submit(_ job: @escaping Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, queue.count - queueHead < capacity else { return false }
        queue.append(job)
        condition.signal()
        return true
    }

    /// Jobs queued and running now.
    public var load: (queued: Int, running: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (queue.count - queueHead, running)
    }

    /// Stops taking work, drops what is queued, and waits until `deadline` (monotonic ns) for the
    /// running jobs; true when every thread has exited. A job past the deadline (a worker that
    /// hangs until its own timeout) keeps its thread, which exits when the job ends.
    @discardableResult
    public func shutdown(deadline: UInt64) -> Bool {
        condition.lock()
        stopping = true
        queue.removeAll()
        queueHead = 0
        condition.broadcast()
        condition.unlock()
        for thread in threads {
            if !thread.join(until: Monotonic(nanoseconds: deadline)) { return false }
        }
        return true
    }

    private func runJobs() {
        while let job = next() {
            job()
            condition.lock()
            running -= 1
            condition.unlock()
        }
    }

    /// The next job, waiting for one; nil once stopping.
    private func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while !stopping && queueHead == queue.count { condition.wait() }
        guard !stopping else { return nil }
        let job = queue[queueHead]
        queueHead += 1
        // Compacted when drained (the usual case) or when the dead prefix dominates.
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead > 1024 && queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        running += 1
        return job
    }
}
