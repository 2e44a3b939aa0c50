import StreamShared

/// The parser stage for MPEG audio: turns the bytes coming out of the throttle into whole
/// frames with StreamShared's confirmed-sync scanner, and knows each frame's stream offset.
struct MP3FrameReader {
    private var scanner = MPEGFrameScanner(maxJunk: 1 << 20)
    private var buffer: [UInt8] = []
    /// Stream offset of `buffer[0]`.
    private var bufferOffset = 0
    /// Bytes of `buffer` already handed out as frames.
    private var consumed = 0

    /// Forgets buffered bytes; the next bytes start at `offset` (after a seek). The scanner
    /// keeps its reference header: frames after the seek must belong to the same stream.
    mutating func restart(at offset: Int) {
        buffer.removeAll(keepingCapacity: true)
        bufferOffset = offset
        consumed = 0
    }

    mutating func append(_ bytes: [UInt8]) {
        if consumed == buffer.count {
            bufferOffset += consumed
            buffer.removeAll(keepingCapacity: true)
            consumed = 0
        } else if consumed > 256 * 1024 {
            buffer.removeFirst(consumed)
            bufferOffset += consumed
            consumed = 0
        }
        buffer += bytes
    }

    /// Bytes buffered but not yet returned as frames.
    var pendingBytes: Int { buffer.count - consumed }

    /// The next whole frame and its stream offset; nil when more bytes are needed (or, with
    /// `isComplete`, when the stream holds no further frame).
    mutating func next(isComplete: Bool) throws -> (bytes: ArraySlice<UInt8>, offset: Int, header: MPEGFrameHeader)? {
        switch try scanner.next(in: buffer[consumed...], isComplete: isComplete) {
        case .frame(let frame, _):
            let start = consumed + frame.offset
            consumed = start + frame.length
            return (buffer[start..<(start + frame.length)], bufferOffset + start, frame.header)
        case .needMore, .end:
            return nil
        }
    }
}
