import StreamShared

/// The threads that compute waveforms (`streamd-waveform-N`), at most `maxThreads`, started
/// as work comes, each taking the next build from a queue of at most `maxQueued` and driving
/// its decode worker to the end. A build never runs on an event loop or the blocking pool,
/// which it would hold for as long as the track takes to decode.
final class WaveformBuilder: @unchecked Sendable {
    // @unchecked: `pending`, `threads`, `idle` and `stopping` are used only under `condition`.
    private let condition = ConditionLock()
    private var pending: [@Sendable () -> Void] = []
    private var threads: [NativeThread] = []
    private var idle = 0
    private var stopping = false
    let maxThreads: Int
    let maxQueued: Int

    init(maxThreads: Int, maxQueued: Int) {
        self.maxThreads = max(1, maxThreads)
        self.maxQueued = max(1, maxQueued)
    }

    /// True once `stop` was called: a build under way gives up (its worker is killed).
    var isStopping: Bool { condition.withLock { stopping } }

    /// Queues `build`; false when the queue is full, the builder stopped, or no thread can run it.
    func enqueue(_ build: @escaping @Sendable () -> Void) -> Bool {
        condition.withLock {
            guard !stopping, pending.count < maxQueued else { return false }
            if idle == 0 && threads.count < maxThreads {
                if let thread = try? NativeThread(name: "streamd-waveform-\(threads.count)", { [self] in run() }) {
                    threads.append(thread)
                } else if threads.isEmpty {
                    return false
                }
            }
            pending.append(build)
            condition.signal()
            return true
        }
    }

    private func run() {
        while let build = next() { build() }
    }

    private func next() -> (@Sendable () -> Void)? {
        condition.withLock {
            idle += 1
            defer { idle -= 1 }
            while pending.isEmpty && !stopping { condition.wait() }
            guard !stopping else { return nil }
            return pending.removeFirst()
        }
    }

    /// Drops the queue, makes the builds under way give up, and joins the threads until
    /// `deadline`; false when one is still running then.
    func stop(deadline: Monotonic) -> Bool {
        let joining = condition.withLock {
            stopping = true
            pending.removeAll()
            condition.broadcast()
            return threads
        }
        return joining.map { $0.join(until: deadline) }.allSatisfy { $0 }
    }
}
