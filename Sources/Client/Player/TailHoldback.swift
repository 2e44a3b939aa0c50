/// Holds back the newest `capacity` samples of a stream, so an encoder's padding can be cut from
/// the stream's real end however many frames its header promised (a Xing count may be wrong).
/// Samples leave in order once `capacity` newer ones have arrived; at the end the held ones are
/// either dropped (the padding) or released (a stream cut short has no padding at its end).
struct TailHoldback {
    /// Samples (interleaved values) held at most.
    let capacity: Int
    private var ring: [Float]
    private var head = 0          // index of the oldest held sample
    /// Samples held now.
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(0, capacity)
        ring = [Float](repeating: 0, count: self.capacity)
    }

    /// Forgets what is held (a seek).
    mutating func reset() {
        head = 0
        count = 0
    }

    /// Takes `samples` in; hands the samples that leave to `release`, oldest first, in at most
    /// three contiguous pieces.
    mutating func push(_ samples: UnsafeBufferPointer<Float>, release: (UnsafeBufferPointer<Float>) -> Void) {
        guard capacity > 0 else { release(samples); return }
        let overflow = count + samples.count - capacity
        if overflow > 0 {
            // The oldest held samples leave first, then (when more arrive than fit) new ones directly.
            let fromRing = min(overflow, count)
            releaseOldest(fromRing, release)
            let direct = overflow - fromRing
            if direct > 0, let base = samples.baseAddress { release(UnsafeBufferPointer(start: base, count: direct)) }
            store(UnsafeBufferPointer(rebasing: samples[direct...]))
        } else {
            store(samples)
        }
    }

    /// Hands every held sample to `release` (the stream ended early: nothing is padding).
    mutating func releaseAll(_ release: (UnsafeBufferPointer<Float>) -> Void) {
        releaseOldest(count, release)
    }

    private mutating func releaseOldest(_ n: Int, _ release: (UnsafeBufferPointer<Float>) -> Void) {
        guard n > 0 else { return }
        ring.withUnsafeBufferPointer { all in
            let first = min(n, capacity - head)
            release(UnsafeBufferPointer(rebasing: all[head..<(head + first)]))
            if n > first { release(UnsafeBufferPointer(rebasing: all[0..<(n - first)])) }
        }
        head = (head + n) % capacity
        count -= n
    }

    /// Appends samples that fit (the caller has made room).
    private mutating func store(_ samples: UnsafeBufferPointer<Float>) {
        let tail = (head + count) % capacity
        ring.withUnsafeMutableBufferPointer { all in
            guard let source = samples.baseAddress, let target = all.baseAddress else { return }
            let first = min(samples.count, capacity - tail)
            (target + tail).update(from: source, count: first)
            target.update(from: source + first, count: samples.count - first)
        }
        count += samples.count
    }
}
