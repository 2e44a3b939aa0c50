import StreamHTTP
import StreamShared

/// Writes a scan's chunks to the catalog on a thread of its own, so that the workers read the
/// next chunk while this one is written (before, they waited for every write: at 100,000 tracks
/// the writes are about half of the scan's CPU). At most one chunk waits behind the one being
/// written: a scan that reads faster than it writes waits in `submit`, its memory bounded.
final class ScanWriter: @unchecked Sendable {
    // @unchecked: `waiting`, `writing` and `closed` are read and written under `condition`;
    // `write` is called on the writer thread only; `thread` is set in init, joined by `finish`.
    private let condition = ConditionLock()
    private var waiting: [LibraryChange]?
    private var writing = false
    private var closed = false
    private let write: ([LibraryChange]) -> Void
    private var thread: NativeThread?

    /// Starts the writer thread; `write` writes one chunk (and reports its own errors). When no
    /// thread can be started, `submit` writes each chunk itself.
    init(write: @escaping ([LibraryChange]) -> Void) {
        self.write = write
        thread = try? NativeThread(name: "streamd-writer") { [self] in run() }
    }

    /// Queues `changes` behind the chunk being written; waits while another chunk is queued.
    func submit(_ changes: [LibraryChange]) {
        guard !changes.isEmpty else { return }
        guard thread != nil else { return write(changes) }
        condition.lock()
        while waiting != nil { condition.wait() }
        waiting = changes
        condition.broadcast()
        condition.unlock()
    }

    /// Returns once every chunk submitted so far is written.
    func drain() {
        condition.lock()
        while waiting != nil || writing { condition.wait() }
        condition.unlock()
    }

    /// Returns once every submitted chunk is written, and ends the thread.
    func finish() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
        drain()
        thread?.join()
    }

    private func run() {
        while true {
            condition.lock()
            while waiting == nil && !closed { condition.wait() }
            guard let changes = waiting else {
                condition.unlock()
                return
            }
            waiting = nil
            writing = true
            condition.broadcast()
            condition.unlock()
            write(changes)
            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }
}
