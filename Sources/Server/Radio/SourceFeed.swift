import Foundation
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamShared

/// The bytes of a live source on their way from its connection (an event-loop thread) to its
/// channel's producer thread. Bounded: when it is full the connection stops reading, so TCP
/// holds the source back, and the producer wakes the loop once there is room again.
final class SourceFeed: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    let capacity: Int
    private let lock = Lock(())
    private var bytes: [UInt8] = []
    private var head = 0
    private var closed = false
    private var waiting: LoopWaker?

    init(capacity: Int = 256 * 1024) {
        self.capacity = capacity
    }

    /// Room left for the source's bytes.
    var room: Int {
        return lock.withLock { _ in max(0, capacity - (bytes.count - head)) }
    }

    /// Adds source bytes (the caller read at most `room`).
    package func append(_ data: ArraySlice<UInt8>) {
        lock.withLock { _ in
            bytes += data
        }
    }

    /// Adds bytes from a thread that may wait (a relay's or a pass-through channel's feeder, never an
    /// event loop), waiting while the feed is full: the producer drains it in real time.
    func appendWaiting(_ data: ArraySlice<UInt8>, stopped: () -> Bool) {
        var rest = data
        while !rest.isEmpty, !stopped() {
            let room = self.room
            if room == 0 {
                sleepNanos(50_000_000)
                continue
            }
            append(rest.prefix(room))
            rest = rest.dropFirst(room)
        }
    }

    /// Asks for `waker` to be woken when the producer has made room.
    func wakeWhenRoom(_ waker: LoopWaker) {
        lock.withLock { _ in
            waiting = waker
        }
    }

    /// The source is gone (its connection closed or was dropped).
    func close() {
        lock.withLock { _ in
            closed = true
        }
    }

    var isClosed: Bool {
        return lock.withLock { _ in closed }
    }

    /// Takes up to `limit` bytes for the producer; wakes the source's loop when half the feed is free.
    func take(upTo limit: Int) -> (bytes: [UInt8], closed: Bool) {
        let (out, isClosed, toWake) = lock.withLock { _ in
            let n = min(limit, bytes.count - head)
            let out = Array(bytes[head..<(head + n)])
            head += n
            if head > capacity / 2 || head == bytes.count {
                bytes.removeFirst(head)
                head = 0
            }
            var toWake: LoopWaker?
            if let waiting, capacity - bytes.count >= capacity / 2 {
                toWake = waiting
                self.waiting = nil
            }
            return (out, closed && bytes.isEmpty, toWake)
        }
        toWake?.wake()
        return (out, isClosed)
    }
}
