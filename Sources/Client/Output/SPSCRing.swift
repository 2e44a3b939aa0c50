import Atomics
import Dispatch

/// A lock-free single-producer/single-consumer ring of Float samples between the decode
/// thread (producer) and the output thread (consumer). No locks on the audio path.
final class SPSCRing: @unchecked Sendable {
    // @unchecked: `storage` is written only by the producer in the free region and read only
    // by the consumer in the filled region; the atomics publish those regions.
    private let storage: UnsafeMutableBufferPointer<Float>
    let capacity: Int
    private let writeIndex = ManagedAtomic<Int>(0)   // total samples ever written
    private let readIndex = ManagedAtomic<Int>(0)    // total samples ever read
    /// Wake-ups instead of polling: signalled after every write / read. A waiter re-checks
    /// the indices, so extra signals only cost a loop turn.
    private let written = DispatchSemaphore(value: 0)
    private let drained = DispatchSemaphore(value: 0)
    /// Set by a side about to wait, so the other side signals only when someone listens
    /// (a signal per block would otherwise cost a futex call each).
    private let consumerWaiting = ManagedAtomic<Bool>(false)
    private let producerWaiting = ManagedAtomic<Bool>(false)

    /// Consumer: waits (up to `timeout` seconds) for the producer to write something.
    func waitForData(timeout: Double) {
        consumerWaiting.store(true, ordering: .sequentiallyConsistent)
        if availableToRead == 0 { _ = written.wait(timeout: .now() + timeout) }
        consumerWaiting.store(false, ordering: .relaxed)
    }

    /// Producer: waits (up to `timeout` seconds) for the consumer to free space.
    func waitForSpace(timeout: Double) {
        producerWaiting.store(true, ordering: .sequentiallyConsistent)
        if availableToWrite == 0 { _ = drained.wait(timeout: .now() + timeout) }
        producerWaiting.store(false, ordering: .relaxed)
    }

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
        storage.initialize(repeating: 0)
    }

    deinit { storage.deallocate() }

    var availableToRead: Int { writeIndex.load(ordering: .acquiring) - readIndex.load(ordering: .relaxed) }
    var availableToWrite: Int { capacity - (writeIndex.load(ordering: .relaxed) - readIndex.load(ordering: .acquiring)) }

    /// Producer: copies as many samples as fit (in at most two spans); returns how many.
    func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        let w = writeIndex.load(ordering: .relaxed)
        let free = capacity - (w - readIndex.load(ordering: .acquiring))
        let n = min(free, samples.count)
        guard n > 0, let source = samples.baseAddress, let target = storage.baseAddress else { return 0 }
        let start = w % capacity
        let first = min(n, capacity - start)
        (target + start).update(from: source, count: first)
        if first < n { target.update(from: source + first, count: n - first) }
        writeIndex.store(w + n, ordering: .sequentiallyConsistent)
        if consumerWaiting.load(ordering: .sequentiallyConsistent) { written.signal() }
        return n
    }

    /// Consumer: copies up to `into.count` samples out; returns how many.
    func read(into: UnsafeMutableBufferPointer<Float>) -> Int {
        let r = readIndex.load(ordering: .relaxed)
        let filled = writeIndex.load(ordering: .acquiring) - r
        let n = min(filled, into.count)
        guard n > 0, let target = into.baseAddress, let source = storage.baseAddress else { return 0 }
        let start = r % capacity
        let first = min(n, capacity - start)
        target.update(from: source + start, count: first)
        if first < n { (target + first).update(from: source, count: n - first) }
        readIndex.store(r + n, ordering: .sequentiallyConsistent)
        if producerWaiting.load(ordering: .sequentiallyConsistent) { drained.signal() }
        return n
    }

    /// Producer side: how many samples were ever written (a seek's boundary).
    var writePosition: Int { writeIndex.load(ordering: .relaxed) }

    /// Consumer side, after a seek: drops what was written before `boundary`, keeping what
    /// the producer wrote after the seek.
    func discard(upTo boundary: Int) {
        let r = readIndex.load(ordering: .relaxed)
        if boundary > r { readIndex.store(boundary, ordering: .releasing) }
    }
}
