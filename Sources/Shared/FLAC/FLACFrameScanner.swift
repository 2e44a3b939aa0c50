/// A FLAC frame found in a run of bytes: its header and, once confirmed, its length.
public struct FLACFrame: Sendable, Equatable {
    /// Offset of the frame's first byte in the scanned bytes (from their start).
    public var offset: Int
    /// Bytes of the whole frame, header through CRC-16.
    public var length: Int
    public var header: FLACFrameHeader
}

/// Finds FLAC frames in a run of bytes. A sync code is believed only when the header's CRC-8
/// matches and the frame's CRC-16 matches up to where the frame ends: the next believable
/// header, or the end of the bytes when they end the audio. A false sync inside audio data
/// (1 in 32768 byte pairs) fails one of the two.
public struct FLACFrameScanner: Sendable {
    public let bytes: ArraySlice<UInt8>
    /// True when `bytes` end where the audio ends, so a frame may end there too.
    public let endsAudio: Int?
    /// Bits per sample from STREAMINFO, for headers that defer to it (bounds frame sizes).
    public var streamBits: Int?

    /// `bytes` holds frames; when `isComplete`, the last frame ends at its end.
    public init(_ bytes: ArraySlice<UInt8>, isComplete: Bool, streamBits: Int? = nil) {
        self.bytes = bytes
        self.endsAudio = isComplete ? bytes.count : nil
        self.streamBits = streamBits
    }

    /// The header at `offset` when its sync and CRC-8 hold, else nil.
    public func header(at offset: Int) -> FLACFrameHeader? {
        guard offset >= 0, offset + 2 <= bytes.count else { return nil }
        let start = bytes.startIndex + offset
        return try? FLACFrameHeader.parse(bytes[start..<min(bytes.endIndex, start + FLACFrameHeader.maxLength)])
    }

    /// The frame that starts at `offset`, confirmed by its CRC-16, or nil when there is none
    /// there (or it runs past the bytes).
    public func frame(at offset: Int) -> FLACFrame? {
        guard let header = header(at: offset) else { return nil }
        let limit = min(bytes.count, offset + header.maxFrameBytes(streamBits: streamBits))
        let base = bytes.startIndex
        var crc = FLACCRC.crc16(bytes[(base + offset)..<(base + offset + header.length)])
        var position = offset + header.length
        // The CRC over a frame with its CRC-16 appended is 0: check at every believable header.
        // Raw pointers in the byte loop: it is most of a quick scan's look at a FLAC file.
        let found = bytes.withUnsafeBufferPointer { raw -> Bool in
            FLACCRC.table16.withUnsafeBufferPointer { table -> Bool in
                guard let data = raw.baseAddress, let t = table.baseAddress else { return false }
                let count = raw.count
                while position < limit {
                    crc = (crc << 8) ^ t[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ data[position])]
                    position += 1
                    if crc == 0, position + 1 < count, FLACFrameHeader.isSync(data[position], data[position + 1]),
                       let next = self.header(at: position), next.isVariableBlockSize == header.isVariableBlockSize {
                        return true
                    }
                }
                return false
            }
        }
        if found { return FLACFrame(offset: offset, length: position - offset, header: header) }
        if crc == 0, position == endsAudio {
            return FLACFrame(offset: offset, length: position - offset, header: header)
        }
        return nil
    }

    /// Headers with a valid CRC-8 tried by one search before it gives up: each costs a CRC-16
    /// over up to a frame's bytes, so crafted input full of them must not cost quadratic time.
    public static let defaultMaxTries = 64

    /// The first confirmed frame starting at or after `offset` and at or before `last`.
    public func nextFrame(from offset: Int, through last: Int = .max, maxTries: Int = defaultMaxTries) -> FLACFrame? {
        var position = max(0, offset)
        let base = bytes.startIndex
        var tries = 0
        while position + 1 < bytes.count, position <= last, tries < maxTries {
            if FLACFrameHeader.isSync(bytes[base + position], bytes[base + position + 1]), header(at: position) != nil {
                if let frame = frame(at: position) { return frame }
                tries += 1
            }
            position += 1
        }
        return nil
    }

    /// The frame that ends exactly at the end of the bytes (which must end the audio),
    /// searched backwards within `window` bytes of the end.
    public func lastFrame(window: Int, maxTries: Int = defaultMaxTries) -> FLACFrame? {
        guard let end = endsAudio else { return nil }
        let base = bytes.startIndex
        var position = end - 2
        let lowest = max(0, end - window)
        var tries = 0
        while position >= lowest, tries < maxTries {
            if FLACFrameHeader.isSync(bytes[base + position], bytes[base + position + 1]), let header = header(at: position),
               end - position <= header.maxFrameBytes(streamBits: streamBits) {
                if FLACCRC.crc16(bytes[(base + position)..<(base + end)]) == 0 {
                    return FLACFrame(offset: position, length: end - position, header: header)
                }
                tries += 1
            }
            position -= 1
        }
        return nil
    }
}
