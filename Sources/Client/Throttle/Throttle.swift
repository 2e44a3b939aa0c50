/// The bounded byte buffer between the network and the decoder.
///
/// The source writes, the parser reads. When the buffer holds `capacity` bytes the source
/// is told to pause (for HTTP: curl pause, so the socket is not read and TCP flow control
/// stops the sender); it resumes once the fill drops below the low watermark. Memory stays
/// flat however long the stream. Locks are fine here: this is not the audio path.
public final class Throttle: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.
    public let capacity: Int
    /// Fill level below which a paused source resumes.
    public let lowWatermark: Int
    private let condition = ConditionLock()
    private var ring: [UInt8]
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

    public init(capacity: Int, lowWatermark: Int? = nil) {
        self.capacity = max(4096, capacity)
        self.lowWatermark = lowWatermark ?? self.capacity / 2
        self.ring = [UInt8](repeating: 0, count: self.capacity)
    }

    /// Free space right now.
    public var freeSpace: Int { condition.withLock { capacity - count } }

    /// Current fill.
    public var fill: Int { condition.withLock { count } }

    /// Appends bytes from the source; returns how many fit (the rest must be offered again).
    /// `generation` must match the current one: bytes from a transfer that a seek replaced are dropped.
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer, generation: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        guard generation == self.generation else { return bytes.count }
        let n = min(bytes.count, capacity - count)
        guard n > 0, let source = bytes.baseAddress else { return 0 }
        var tail = (head + count) % capacity
        var copied = 0
        while copied < n {
            let run = min(n - copied, capacity - tail)
            ring.withUnsafeMutableBytes { dst in
                dst.baseAddress.map { $0.advanced(by: tail).copyMemory(from: source + copied, byteCount: run) }
            }
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
        ring.withUnsafeBufferPointer { source in
            while copied < n {
                let run = min(n - copied, capacity - head)
                buffer.append(contentsOf: source[head..<(head + run)])
                copied += run
                head = (head + run) % capacity
            }
        }
        count -= n
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
