import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
/// Gathers frames into the next chunk a producer publishes. A chunk holds frames of one format:
/// a frame of another format publishes what was gathered first.
struct ChunkBuilder {
    private(set) var bytes: [UInt8] = []
    private(set) var frameStarts: [Int32] = []
    private(set) var frameSamples: [UInt16] = []
    private(set) var format: FrameFormat?
    /// Ogg pass-through: where listeners may join the gathered pages.
    var oggJoin: OggJoin = .notOgg

    var isEmpty: Bool { bytes.isEmpty }

    /// Adds one frame of `samples` samples in `format`; a change of format flushes to `channel` first.
    package mutating func append(frame: ArraySlice<UInt8>, samples: Int, format: FrameFormat, flushingTo channel: RadioChannel, now: UInt64) {
        if let current = self.format, current != format { flush(to: channel, now: now) }
        self.format = format
        frameStarts.append(Int32(truncatingIfNeeded: bytes.count))
        frameSamples.append(UInt16(clamping: samples))
        bytes += frame
    }

    /// Publishes what was gathered (if anything) and starts over.
    mutating func flush(to channel: RadioChannel, now: UInt64) {
        guard !bytes.isEmpty else { return }
        channel.publish(bytes[...], frameStarts: frameStarts, frameSamples: frameSamples, format: format, now: now, oggJoin: oggJoin)
        bytes.removeAll(keepingCapacity: true)
        frameStarts.removeAll(keepingCapacity: true)
        frameSamples.removeAll(keepingCapacity: true)
    }
}
