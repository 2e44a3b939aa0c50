import StreamShared

/// The bounded byte buffer between the network and the decoder.
///
/// The source writes, the parser reads. When the buffer holds `capacity` bytes the source
/// is told to pause (for HTTP: curl pause, so the socket is not read and TCP flow control
/// stops the sender); it resumes once the fill drops below the low watermark. Memory stays
/// flat however long the stream. Locks are fine here: this is not the audio path.
///
/// Throttles that share a `ThrottleBudget` (a queue's playing track and the next one, fetched
/// ahead) hold at most the budget's bytes between them, whatever each one's capacity.
public final class Throttle: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.
    public let capacity: Int
    /// Fill level below which a paused source resumes.
    public let lowWatermark: Int
    private let condition = ConditionLock()
    /// The bytes, allocated once and touched only as they are written: a throttle fetched
    /// ahead under a shared budget costs memory for what it holds, not for its capacity.
    private let ring: UnsafeMutableRawBufferPointer
    private let budget: ThrottleBudget?
    private var head = 0              // index of the next byte to read
    private var count = 0
    /// Stream offset of the byte at `head`.
    private var readOffset = 0
    private var ended = false
    private var failure: Error?
    private var generation = 0
    private var peak = 0
    private var spaceAvailable: (@Sendable () -> Void)?

    /// Highest fill seen, for `--stats`. Read under the lock: the network thread may still be writing.
    public var peakFill: Int { condition.withLock { peak } }

    /// Called (from the reading thread, under the throttle's lock, so it must be quick and must not
    /// call back into the throttle) when the fill falls below the low watermark. The source sets
    /// and clears it on the network thread while the reader runs, hence the lock.
    public var onSpaceAvailable: (@Sendable () -> Void)? {
        get { condition.withLock { spaceAvailable } }
        set { condition.withLock { spaceAvailable = newValue } }
    }

    public init(capacity: Int, lowWatermark: Int? = nil, budget: ThrottleBudget? = nil) {
        self.capacity = max(4096, capacity)
        self.lowWatermark = lowWatermark ?? self.capacity / 2
        self.ring = budget?.buffer(byteCount: self.capacity) ?? .allocate(byteCount: self.capacity, alignment: 16)
        self.budget = budget
    }

    deinit {
        // What this throttle still held goes back to the budget the others share, and its memory
        // to the next track's throttle.
        if let budget {
            budget.release(count)
            budget.recycle(ring)
        } else {
            ring.deallocate()
        }
    }

    /// Free space right now (within the shared budget, when there is one).
    public var freeSpace: Int { condition.withLock { room } }

    /// Under the lock: what a write may add.
    private var room: Int { min(capacity - count, budget?.available ?? Int.max) }

    /// True once the source has delivered the stream's last byte into the throttle (cleanly).
    public var sourceEnded: Bool { condition.withLock { ended && failure == nil } }

    /// Current fill.
    public var fill: Int { condition.withLock { count } }

    /// Appends bytes from the source; returns how many fit (the rest must be offered again).
    /// `generation` must match the current one: bytes from a transfer that a seek replaced are dropped.
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer, generation: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        guard generation == self.generation else { return bytes.count }
        var n = min(bytes.count, capacity - count)
        if let budget { n = budget.take(upTo: n) }
        guard n > 0, let source = bytes.baseAddress, let base = ring.baseAddress else { return 0 }
        var tail = (head + count) % capacity
        var copied = 0
        while copied < n {
            let run = min(n - copied, capacity - tail)
            base.advanced(by: tail).copyMemory(from: source + copied, byteCount: run)
            copied += run
            tail = (tail + run) % capacity
        }
        count += n
        peak = max(peak, count)
        condition.broadcast()
        return n
    }

    /// Marks the end of the stream (or a failure) for the current generation.
    public func finish(error: Error? = nil, generation: Int) {
        condition.withLock {
            guard generation == self.generation else { return }
            ended = true
            failure = error
            condition.broadcast()
        }
    }

    /// Result of a read.
    public enum ReadResult {
        /// Bytes starting at stream offset `offset`.
        case bytes([UInt8], offset: Int)
        /// The stream ended cleanly.
        case end
        /// The source failed.
        case failed(Error)
        /// Nothing arrived within the timeout.
        case timedOut
    }

    /// Takes up to `max` bytes, waiting up to `timeout` seconds for some to arrive.
    public func read(max: Int, timeout: Double = 0.1) -> ReadResult {
        var bytes: [UInt8] = []
        switch read(into: &bytes, max: max, timeout: timeout) {
        case .filled(let offset): return .bytes(bytes, offset: offset)
        case .end: return .end
        case .failed(let error): return .failed(error)
        case .timedOut: return .timedOut
        }
    }

    /// Result of `read(into:)`: like `ReadResult`, with the bytes left in the caller's buffer.
    public enum FillResult {
        /// The buffer holds bytes starting at stream offset `offset`.
        case filled(offset: Int)
        case end
        case failed(Error)
        case timedOut
    }

    /// Replaces `buffer`'s contents with up to `max` bytes, waiting up to `timeout` seconds for
    /// some to arrive. The decode loop passes the same buffer every time, so reading allocates
    /// nothing once its capacity is reached.
    public func read(into buffer: inout [UInt8], max: Int, timeout: Double = 0.1) -> FillResult {
        buffer.removeAll(keepingCapacity: true)
        condition.lock()
        let deadline = Monotonic.now.adding(seconds: timeout)
        while count == 0 && !ended {
            if !condition.wait(until: deadline) { break }
        }
        if count == 0 {
            defer { condition.unlock() }
            if ended { return failure.map { .failed($0) } ?? .end }
            return .timedOut
        }
        let n = min(max, count)
        var copied = 0
        let source = UnsafeRawBufferPointer(ring)
        while copied < n {
            let run = min(n - copied, capacity - head)
            buffer.append(contentsOf: source[head..<(head + run)])
            copied += run
            head = (head + run) % capacity
        }
        count -= n
        budget?.release(n)
        let offset = readOffset
        readOffset += n
        // Called under the lock: the source clears it and then frees what it wakes (the curl
        // multi handle), so a copy called after unlocking could touch freed memory.
        if count < lowWatermark { spaceAvailable?() }
        condition.unlock()
        return .filled(offset: offset)
    }

    /// Drops everything buffered and starts a new generation at `offset` (a seek).
    /// Returns the new generation, which the source must tag its writes with.
    @discardableResult
    public func reset(to offset: Int) -> Int {
        condition.withLock {
            generation += 1
            budget?.release(count)
            head = 0
            count = 0
            readOffset = offset
            ended = false
            failure = nil
            condition.broadcast()
            return generation
        }
    }

    /// The generation current writes must carry.
    public var currentGeneration: Int { condition.withLock { generation } }

    /// The stream byte range available to read without waiting.
    public var availableRange: Range<Int> { condition.withLock { readOffset..<(readOffset + count) } }
}

/// Bytes that several throttles may hold between them (a queue's playing track and the one
/// fetched ahead share the player's `--buffer-bytes`). Sources that find no room wait as for a
/// full throttle (they poll), so no wake-up crosses from one throttle to another.
public final class ThrottleBudget: @unchecked Sendable {
    // @unchecked: `used` is guarded by `lock`.
    public let limit: Int
    private let lock = Lock(())
    private var used = 0

    /// A finished track's throttle memory, kept for the next track's (its pages are already
    /// mapped: a queue does not fault in a new megabyte per track).
    private var spare: UnsafeMutableRawBufferPointer?

    public init(limit: Int) { self.limit = max(4096, limit) }

    deinit { spare?.deallocate() }

    /// Memory for a throttle of `byteCount` bytes: the spare one when it fits, else new.
    func buffer(byteCount: Int) -> UnsafeMutableRawBufferPointer {
        let reused: UnsafeMutableRawBufferPointer? = lock.withLock { _ in
            guard let kept = spare, kept.count == byteCount else { return nil }
            spare = nil
            return kept
        }
        return reused ?? .allocate(byteCount: byteCount, alignment: 16)
    }

    /// Takes back a throttle's memory: kept as the spare when there is none, else freed.
    func recycle(_ buffer: UnsafeMutableRawBufferPointer) {
        let kept = lock.withLock { (_) -> Bool in
            guard spare == nil else { return false }
            spare = buffer
            return true
        }
        if !kept { buffer.deallocate() }
    }

    /// Bytes the throttles may still take.
    public var available: Int { lock.withLock { _ in limit - used } }
    /// Bytes the throttles hold now.
    public var held: Int { lock.withLock { _ in used } }

    /// Takes up to `wanted` bytes of the budget; returns how many were granted.
    func take(upTo wanted: Int) -> Int {
        lock.withLock { _ in
            let n = max(0, min(wanted, limit - used))
            used += n
            return n
        }
    }

    /// Gives back bytes a throttle no longer holds.
    func release(_ n: Int) {
        guard n > 0 else { return }
        lock.withLock { _ in used = max(0, used - n) }
    }
}
