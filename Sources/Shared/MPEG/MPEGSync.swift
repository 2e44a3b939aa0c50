/// A located MPEG audio frame: where it starts, how long it is, and its header.
public struct MPEGFrame: Sendable, Equatable {
    /// Offset of the frame's first byte in the bytes that were searched.
    public var offset: Int
    /// Whole frame length in bytes, header included.
    public var length: Int
    public var header: MPEGFrameHeader
}

/// Finds MPEG audio frames in bytes and walks from one to the next.
///
/// A sync is accepted only when it is followed by `confirmations` more frames that agree
/// on version, layer and sample rate, so the 0xFFE patterns that occur by chance inside
/// ID3 pictures or junk are not taken for audio.
public struct MPEGFrameScanner: Sendable {
    /// The header every frame of the stream must agree with (set by the first confirmed sync).
    public private(set) var reference: MPEGFrameHeader?
    /// For free-format streams: frame length without the padding slot, found from the
    /// distance between the first two syncs.
    public private(set) var freeFormatBaseLength: Int?
    /// How many bytes a resynchronisation may skip before the stream is declared not audio.
    public var maxJunk: Int

    /// Largest free-format frame considered (layer III at 640 kbit/s, 32 kHz, with slack).
    static let maxFreeFormatLength = 8192
    static let component = "mpeg"

    public init(maxJunk: Int = 1 << 20) {
        self.maxJunk = maxJunk
    }

    /// The length of the frame with this header, using the free-format length once known.
    func length(of header: MPEGFrameHeader) -> Int? {
        if let fixed = header.frameLength { return fixed }
        guard let base = freeFormatBaseLength else { return nil }
        return base + (header.padding ? header.slotSize : 0)
    }

    /// Result of looking at a candidate sync position.
    private enum Candidate {
        case frame(MPEGFrame)
        case notAFrame
        case needMore
    }

    /// Finds the first confirmed frame in `bytes` and makes it the stream's reference.
    /// Returns nil when more bytes are needed to decide (`isComplete` false), or when a
    /// complete input holds no frame; throws `.notAudio` once `maxJunk` bytes held none.
    public mutating func findFirstFrame(in bytes: ArraySlice<UInt8>, confirmations: Int = 2,
                                        isComplete: Bool = false) throws -> MPEGFrame? {
        var index = bytes.startIndex
        let end = bytes.endIndex
        while index + 4 <= end {
            if index - bytes.startIndex > maxJunk {
                throw FormatError.notAudio(reason: "no MPEG audio frame in the first \(maxJunk) bytes")
            }
            guard bytes[index] == 0xFF, bytes[index + 1] & 0xE0 == 0xE0,
                  let header = MPEGFrameHeader(raw: MPEGFrameHeader.readRaw(bytes, at: index)) else {
                index += 1
                continue
            }
            switch confirm(header, at: index, in: bytes, confirmations: confirmations, isComplete: isComplete) {
            case .frame(let frame):
                return frame
            case .needMore:
                return nil
            case .notAFrame:
                index += 1
            }
        }
        if !isComplete { return nil }
        return nil
    }

    private mutating func confirm(_ header: MPEGFrameHeader, at index: Int, in bytes: ArraySlice<UInt8>,
                                  confirmations: Int, isComplete: Bool) -> Candidate {
        var base: Int? = nil
        if header.isFreeFormat {
            switch findFreeFormatLength(header, at: index, in: bytes, isComplete: isComplete) {
            case .needMore: return .needMore
            case .notFound: return .notAFrame
            case .found(let length): base = length - (header.padding ? header.slotSize : 0)
            }
        }
        var probe = MPEGFrameScanner(maxJunk: maxJunk)
        probe.reference = header
        probe.freeFormatBaseLength = base
        guard let firstLength = probe.length(of: header), firstLength > header.headerLength else { return .notAFrame }
        var next = index + firstLength
        for _ in 0..<confirmations {
            if next == bytes.endIndex && isComplete { break }   // a stream may be this short
            guard next + 4 <= bytes.endIndex else { return isComplete ? .notAFrame : .needMore }
            guard let following = MPEGFrameHeader(raw: MPEGFrameHeader.readRaw(bytes, at: next)),
                  following.isCompatible(with: header),
                  let length = probe.length(of: following), length > following.headerLength else {
                return .notAFrame
            }
            next += length
        }
        reference = header
        freeFormatBaseLength = base
        return .frame(MPEGFrame(offset: index - bytes.startIndex, length: firstLength, header: header))
    }

    private enum FreeFormatSearch { case found(Int), notFound, needMore }

    /// Free-format frames have no length field: the next header with the same fixed bits
    /// (sync, version, layer, protection, bitrate index 0, sample rate) marks the end.
    private func findFreeFormatLength(_ header: MPEGFrameHeader, at index: Int, in bytes: ArraySlice<UInt8>,
                                      isComplete: Bool) -> FreeFormatSearch {
        let mask: UInt32 = 0xFFFF_FC00
        var candidate = index + header.headerLength + header.sideInfoLength + 1
        let limit = index + Self.maxFreeFormatLength
        while candidate + 4 <= bytes.endIndex {
            if candidate > limit { return .notFound }
            if bytes[candidate] == 0xFF,
               MPEGFrameHeader.readRaw(bytes, at: candidate) & mask == header.raw & mask {
                return .found(candidate - index)
            }
            candidate += 1
        }
        return isComplete ? .notFound : .needMore
    }

    /// Result of one step of `next(in:isComplete:)`.
    public enum Step: Sendable, Equatable {
        /// A frame starts `skipped` bytes into the input (0 when the stream was in sync).
        case frame(MPEGFrame, skipped: Int)
        /// More bytes are needed to read or confirm the next frame.
        case needMore
        /// The input is complete and holds no further frame.
        case end
    }

    /// Reads the frame at the start of `bytes`, resynchronising past junk when the bytes
    /// there are not a frame of this stream. The whole frame must be present to be returned.
    public mutating func next(in bytes: ArraySlice<UInt8>, isComplete: Bool) throws -> Step {
        guard let reference else {
            guard let frame = try findFirstFrame(in: bytes, isComplete: isComplete) else {
                return isComplete ? .end : .needMore
            }
            guard frame.offset + frame.length <= bytes.count else { return isComplete ? .end : .needMore }
            return .frame(frame, skipped: frame.offset)
        }
        let start = bytes.startIndex
        if bytes.count < 4 { return isComplete ? .end : .needMore }
        if let header = MPEGFrameHeader(raw: MPEGFrameHeader.readRaw(bytes, at: start)),
           header.isCompatible(with: reference), let length = length(of: header), length > header.headerLength {
            if length > bytes.count { return isComplete ? .end : .needMore }
            return .frame(MPEGFrame(offset: 0, length: length, header: header), skipped: 0)
        }
        // Lost sync: look for the next frame of this stream, confirmed by the one after it.
        var index = start + 1
        while index + 4 <= bytes.endIndex {
            if index - start > maxJunk {
                throw FormatError.invalid(component: Self.component, reason: "lost sync for more than \(maxJunk) bytes", offset: 0)
            }
            if bytes[index] == 0xFF, bytes[index + 1] & 0xE0 == 0xE0,
               let header = MPEGFrameHeader(raw: MPEGFrameHeader.readRaw(bytes, at: index)),
               header.isCompatible(with: reference), let length = length(of: header), length > header.headerLength {
                let next = index + length
                if next + 4 <= bytes.endIndex {
                    if let following = MPEGFrameHeader(raw: MPEGFrameHeader.readRaw(bytes, at: next)),
                       following.isCompatible(with: reference) {
                        return .frame(MPEGFrame(offset: index - start, length: length, header: header), skipped: index - start)
                    }
                } else if next == bytes.endIndex && isComplete {
                    return .frame(MPEGFrame(offset: index - start, length: length, header: header), skipped: index - start)
                } else {
                    return isComplete ? .end : .needMore
                }
            }
            index += 1
        }
        return isComplete ? .end : .needMore
    }
}
