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
    /// Wake-ups instead of polling: a waiter re-checks the indices, so extra signals only cost
    /// a loop turn.
    private let written = DispatchSemaphore(value: 0)
    private let drained = DispatchSemaphore(value: 0)
    /// Set by a side about to wait: how many samples (consumer) or free slots (producer) it
    /// waits for, 0 when it does not wait. The other side signals only once that much is
    /// there, so a decoder writing frame by frame into a ring that a fast consumer keeps empty
    /// wakes it once per batch, not once per frame (each wake-up is a futex call and a switch).
    private let consumerWants = ManagedAtomic<Int>(0)
    private let producerWants = ManagedAtomic<Int>(0)

    /// Consumer: waits (up to `timeout` seconds) until `atLeast` samples are there (at most
    /// the capacity); the producer's `wakeConsumer` ends the wait early with fewer.
    func waitForData(atLeast: Int = 1, timeout: Double) {
        let wanted = min(max(1, atLeast), capacity)
        consumerWants.store(wanted, ordering: .sequentiallyConsistent)
        if availableToRead < wanted { _ = written.wait(timeout: .now() + timeout) }
        consumerWants.store(0, ordering: .relaxed)
    }

    /// Producer: waits (up to `timeout` seconds) until `atLeast` slots are free (at most the capacity).
    func waitForSpace(atLeast: Int = 1, timeout: Double) {
        let wanted = min(max(1, atLeast), capacity)
        producerWants.store(wanted, ordering: .sequentiallyConsistent)
        if availableToWrite < wanted { _ = drained.wait(timeout: .now() + timeout) }
        producerWants.store(0, ordering: .relaxed)
    }

    /// Producer: wakes a waiting consumer whatever it waits for (the end of a batch: no more
    /// samples are coming soon).
    func wakeConsumer() {
        if consumerWants.load(ordering: .sequentiallyConsistent) > 0 && availableToRead > 0 { written.signal() }
    }

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
        storage.initialize(repeating: 0)
    }

    deinit { storage.deallocate() }

    var availableToRead: Int { writeIndex.load(ordering: .acquiring) - readIndex.load(ordering: .relaxed) }
    var availableToWrite: Int { capacity - (writeIndex.load(ordering: .relaxed) - readIndex.load(ordering: .acquiring)) }

    /// Producer: the free slots that lie contiguously at the write position (up to the wrap or
    /// the read position). A decoder may write samples there and pass them to `write`, which then
    /// publishes them without copying.
    func freeSpan() -> UnsafeMutableBufferPointer<Float> {
        let w = writeIndex.load(ordering: .relaxed)
        let free = capacity - (w - readIndex.load(ordering: .acquiring))
        let start = w % capacity
        guard let base = storage.baseAddress else { return UnsafeMutableBufferPointer(start: nil, count: 0) }
        return UnsafeMutableBufferPointer(start: base + start, count: min(free, capacity - start))
    }

    /// Producer: copies as many samples as fit (in at most two spans); returns how many.
    /// Samples that already sit at the write position (decoded into `freeSpan()`) are not copied.
    func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        let w = writeIndex.load(ordering: .relaxed)
        let free = capacity - (w - readIndex.load(ordering: .acquiring))
        let n = min(free, samples.count)
        guard n > 0, let source = samples.baseAddress, let target = storage.baseAddress else { return 0 }
        let start = w % capacity
        let first = min(n, capacity - start)
        if source != UnsafePointer(target + start) {
            // update(from:) is memmove: a source inside the free span (part of a frame decoded
            // there) may overlap the target.
            (target + start).update(from: source, count: first)
            if first < n { target.update(from: source + first, count: n - first) }
        }
        writeIndex.store(w + n, ordering: .sequentiallyConsistent)
        let wanted = consumerWants.load(ordering: .sequentiallyConsistent)
        if wanted > 0 && w + n - readIndex.load(ordering: .acquiring) >= wanted { written.signal() }
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
        signalSpace(readTo: r + n)
        return n
    }

    private func signalSpace(readTo r: Int) {
        let wanted = producerWants.load(ordering: .sequentiallyConsistent)
        if wanted > 0 && capacity - (writeIndex.load(ordering: .acquiring) - r) >= wanted { drained.signal() }
    }

    /// Consumer: the filled samples that sit contiguously at the read position (up to `max`),
    /// to be used in place, then released with `consume`. Empty when nothing is filled.
    func readable(max: Int) -> UnsafeMutableBufferPointer<Float> {
        let r = readIndex.load(ordering: .relaxed)
        let filled = writeIndex.load(ordering: .acquiring) - r
        let start = r % capacity
        let n = min(filled, max, capacity - start)
        guard n > 0, let base = storage.baseAddress else { return UnsafeMutableBufferPointer(start: nil, count: 0) }
        return UnsafeMutableBufferPointer(start: base + start, count: n)
    }

    /// Consumer: gives `n` samples returned by `readable` back to the producer.
    func consume(_ n: Int) {
        let r = readIndex.load(ordering: .relaxed)
        readIndex.store(r + n, ordering: .sequentiallyConsistent)
        signalSpace(readTo: r + n)
    }

    /// Consumer side: how many samples were ever read (or discarded).
    var readPosition: Int { readIndex.load(ordering: .relaxed) }

    /// Producer side: how many samples were ever written (a seek's boundary).
    var writePosition: Int { writeIndex.load(ordering: .relaxed) }

    /// Consumer side, after a seek: drops what was written before `boundary`, keeping what
    /// the producer wrote after the seek.
    func discard(upTo boundary: Int) {
        let r = readIndex.load(ordering: .relaxed)
        if boundary > r { readIndex.store(boundary, ordering: .releasing) }
    }
}
