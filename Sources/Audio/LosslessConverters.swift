import StreamShared

/// AIFF/AIFF-C samples through StreamShared's `AIFFSampleConverter` (no decoder): blocks of
/// 4096 frames, a partial frame kept for the next bytes.
public struct AIFFConverter: PacketConverter {
    public let format: AIFFFormat
    private let converter: AIFFSampleConverter
    let framesPerUnit = 4096
    private var pending = PendingBytes()
    private var scratch: [Float] = []

    public init(format: AIFFFormat) {
        self.format = format
        converter = AIFFSampleConverter(format: format)
    }

    public mutating func restart(at offset: Int) throws { pending.reset() }

    public mutating func append(_ bytes: [UInt8]) { pending.append(bytes) }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        let unread = pending.unread
        let blockAlign = max(1, format.blockAlign)
        let available = unread.count / blockAlign
        guard available >= framesPerUnit || (isComplete && available > 0) else { return false }
        let frames = min(framesPerUnit, available)
        scratch.removeAll(keepingCapacity: true)
        converter.convert(unread.prefix(frames * blockAlign), appendingTo: &scratch)
        pending.consume(frames * blockAlign)
        scratch.withUnsafeBufferPointer(body)
        return true
    }
}

/// Apple Lossless in MP4: the samples the track's tables locate, each decoded by StreamShared's
/// `ALACDecoder` (no C library; bit-exact against ffmpeg) and scaled by 2^-(depth-1), exact up
/// to 24 bits. Packets are independent, so any sample can follow a restart.
public struct MP4ALACConverter: PacketConverter {
    private var decoder: ALACDecoder
    private let track: MP4AudioTrack
    private var cursor: MP4SampleCursor
    private var buffer: [UInt8] = []
    /// Stream offset of `buffer[0]`.
    private var bufferOffset = 0
    private var integers: [Int32] = []
    private var scratch: [Float] = []
    private let scale: Float

    public init(track: MP4AudioTrack, config: ALACSpecificConfig) throws {
        decoder = try ALACDecoder(config: config)
        self.track = track
        cursor = MP4SampleCursor(track: track)
        scale = 1 / Float(1 << UInt64(max(1, min(32, config.bitDepth)) - 1))
    }

    public mutating func restart(at offset: Int) throws {
        buffer.removeAll(keepingCapacity: true)
        bufferOffset = offset
        cursor = MP4SampleCursor(track: track, atOrAfter: offset)
    }

    public mutating func append(_ bytes: [UInt8]) {
        // Drop what lies before the next sample (other tracks, box headers, consumed samples).
        if let next = cursor.peek() {
            let keepFrom = min(buffer.count, max(0, next.offset - bufferOffset))
            if keepFrom > 64 * 1024 {
                buffer.removeSubrange(0..<keepFrom)
                bufferOffset += keepFrom
            }
        }
        buffer += bytes
    }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        guard let sample = cursor.peek() else { return false }
        let start = sample.offset - bufferOffset
        guard start >= 0 else {
            _ = cursor.next()
            return true
        }
        guard start + sample.size <= buffer.count else { return false }
        _ = cursor.next()
        try decoder.decode(packet: buffer[start..<(start + sample.size)], into: &integers)
        scratch.removeAll(keepingCapacity: true)
        scratch.reserveCapacity(integers.count)
        for value in integers { scratch.append(Float(value) * scale) }
        if !scratch.isEmpty { scratch.withUnsafeBufferPointer(body) }
        return true
    }
}
