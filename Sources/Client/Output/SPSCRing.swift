import Atomics

/// A lock-free single-producer/single-consumer ring of Float samples between the decode
/// thread (producer) and the output thread (consumer). No locks on the audio path.
final class SPSCRing: @unchecked Sendable {
    // @unchecked: `storage` is written only by the producer in the free region and read only
    // by the consumer in the filled region; the atomics publish those regions.
    private let storage: UnsafeMutableBufferPointer<Float>
    let capacity: Int
    private let writeIndex = ManagedAtomic<Int>(0)   // total samples ever written
    private let readIndex = ManagedAtomic<Int>(0)    // total samples ever read

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
        storage.initialize(repeating: 0)
    }

    deinit { storage.deallocate() }

    var availableToRead: Int { writeIndex.load(ordering: .acquiring) - readIndex.load(ordering: .relaxed) }
    var availableToWrite: Int { capacity - (writeIndex.load(ordering: .relaxed) - readIndex.load(ordering: .acquiring)) }

    /// Producer: copies as many samples as fit; returns how many.
    func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        let w = writeIndex.load(ordering: .relaxed)
        let free = capacity - (w - readIndex.load(ordering: .acquiring))
        let n = min(free, samples.count)
        for i in 0..<n { storage[(w + i) % capacity] = samples[i] }
        writeIndex.store(w + n, ordering: .releasing)
        return n
    }

    /// Consumer: copies up to `into.count` samples out; returns how many.
    func read(into: UnsafeMutableBufferPointer<Float>) -> Int {
        let r = readIndex.load(ordering: .relaxed)
        let filled = writeIndex.load(ordering: .acquiring) - r
        let n = min(filled, into.count)
        for i in 0..<n { into[i] = storage[(r + i) % capacity] }
        readIndex.store(r + n, ordering: .releasing)
        return n
    }

    /// Consumer side, after a seek: drops everything buffered.
    func discardAll() {
        readIndex.store(writeIndex.load(ordering: .acquiring), ordering: .releasing)
    }
}
