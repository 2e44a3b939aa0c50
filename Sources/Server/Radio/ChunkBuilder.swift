/// Gathers frames into the next chunk a producer publishes.
struct ChunkBuilder {
    private(set) var bytes: [UInt8] = []
    private(set) var frameStarts: [Int32] = []

    var isEmpty: Bool { bytes.isEmpty }

    mutating func append(frame: ArraySlice<UInt8>) {
        frameStarts.append(Int32(truncatingIfNeeded: bytes.count))
        bytes += frame
    }

    /// Publishes what was gathered (if anything) and starts over.
    mutating func flush(to channel: RadioChannel, now: UInt64) {
        guard !bytes.isEmpty else { return }
        channel.publish(bytes[...], frameStarts: frameStarts, now: now)
        bytes.removeAll(keepingCapacity: true)
        frameStarts.removeAll(keepingCapacity: true)
    }
}
