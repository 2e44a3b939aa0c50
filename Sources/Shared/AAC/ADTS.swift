/// Sample rates by MPEG-4 sampling-frequency index (ISO 14496-3 table 1.18).
let aacSampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

/// One ADTS frame header (ISO 13818-7 / 14496-3 1.A.2).
public struct ADTSHeader: Sendable, Equatable {
    /// The ID bit: MPEG-2 (true) or MPEG-4 (false) AAC; the payload is the same.
    public var isMPEG2: Bool
    /// True when a CRC follows the fixed header (protection_absent is 0).
    public var hasCRC: Bool
    /// Audio object type: profile + 1 (1 Main, 2 LC, 3 SSR, 4 LTP).
    public var objectType: Int
    /// Index into the MPEG-4 sample-rate table (0...12).
    public var sampleRateIndex: Int
    public var sampleRate: Int
    /// 1...6 channels as numbered, 7 is 7.1 (8 channels), 0 means a PCE in the raw data.
    public var channelConfiguration: Int
    /// Whole frame length, header included.
    public var frameLength: Int
    /// 7, or 9 with a CRC. With several raw data blocks and a CRC the frame also carries
    /// per-block CRC words after the header; those belong to the payload here.
    public var headerLength: Int
    /// 0x7FF means variable bit rate.
    public var bufferFullness: Int
    /// Raw data blocks in the frame (number_of_raw_data_blocks_in_frame + 1).
    public var rawDataBlocks: Int
    /// PCM samples per channel the frame decodes to.
    public var samplesPerFrame: Int { 1024 * rawDataBlocks }

    static let component = "adts"

    /// Reads a header from the start of `bytes`: nil when fewer than 7 bytes (9 with CRC) are
    /// there and the ones present could still start a header; throws on a bad sync, layer,
    /// reserved sample rate or impossible frame length.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> ADTSHeader? {
        let s = bytes.startIndex
        // Judge the bytes that are here before asking for more: junk is an error, not "need more".
        guard let b0 = bytes.first else { return nil }
        guard b0 == 0xFF else { throw FormatError.invalid(component: component, reason: "no ADTS sync word", offset: 0) }
        guard bytes.count >= 2 else { return nil }
        let b1 = bytes[s + 1]
        guard b1 & 0xF0 == 0xF0 else {
            throw FormatError.invalid(component: component, reason: "no ADTS sync word", offset: 0)
        }
        guard b1 & 0x06 == 0 else {
            // Layer bits set: this is an MPEG audio (MP3) sync, not ADTS.
            throw FormatError.invalid(component: component, reason: "layer is not 0", offset: 1)
        }
        guard bytes.count >= 3 else { return nil }
        let b2 = bytes[s + 2]
        let rateIndex = Int(b2 >> 2 & 0x0F)
        guard rateIndex < aacSampleRates.count else {
            throw FormatError.invalid(component: component, reason: "reserved sample-rate index \(rateIndex)", offset: 2)
        }
        let hasCRC = b1 & 0x01 == 0
        let headerLength = hasCRC ? 9 : 7
        guard bytes.count >= headerLength else { return nil }
        let b3 = bytes[s + 3], b4 = bytes[s + 4], b5 = bytes[s + 5], b6 = bytes[s + 6]
        let profile = Int(b2 >> 6)
        let channels = Int(b2 & 0x01) << 2 | Int(b3 >> 6)
        let frameLength = Int(b3 & 0x03) << 11 | Int(b4) << 3 | Int(b5 >> 5)
        guard frameLength >= headerLength else {
            throw FormatError.invalid(component: component, reason: "frame length \(frameLength) shorter than its header", offset: 3)
        }
        let fullness = Int(b5 & 0x1F) << 6 | Int(b6 >> 2)
        return ADTSHeader(isMPEG2: b1 & 0x08 != 0, hasCRC: hasCRC, objectType: profile + 1, sampleRateIndex: rateIndex,
                          sampleRate: aacSampleRates[rateIndex], channelConfiguration: channels, frameLength: frameLength,
                          headerLength: headerLength, bufferFullness: fullness, rawDataBlocks: Int(b6 & 0x03) + 1)
    }

    /// True when `other` can belong to the same stream (the rule used to confirm a sync).
    public func isCompatible(with other: ADTSHeader) -> Bool {
        objectType == other.objectType && sampleRateIndex == other.sampleRateIndex
            && channelConfiguration == other.channelConfiguration
    }

    /// The AudioSpecificConfig this header implies (what an MP4-style decoder init wants).
    public var audioSpecificConfig: AudioSpecificConfig {
        AudioSpecificConfig(objectType: objectType, sampleRate: sampleRate, sampleRateIndex: sampleRateIndex,
                            channelConfiguration: channelConfiguration, frameLengthFlag: false)
    }

    /// The same config as the 2 bytes a decoder's init call takes: object type (5 bits),
    /// sample-rate index (4), channel configuration (4), then three zero GASpecificConfig flags.
    public var audioSpecificConfigBytes: [UInt8] {
        let bits = (objectType & 0x1F) << 11 | (sampleRateIndex & 0x0F) << 7 | (channelConfiguration & 0x0F) << 3
        return [UInt8(bits >> 8), UInt8(bits & 0xFF)]
    }
}

/// Finds the first real ADTS frame in bytes that may start with junk.
public enum ADTSSync {
    /// Offset (from the start of `bytes`) of the first frame followed by `confirmations` more
    /// frames of the same stream, so a stray 0xFFF in junk is not taken for audio. nil when the
    /// bytes end before a frame can be confirmed; throws `.notAudio` when the first `limit`
    /// offsets hold none. With `isComplete` the bytes are the whole stream: a frame that runs
    /// to the very end needs no further confirmation, and nothing is "need more".
    public static func findFirstFrame(in bytes: ArraySlice<UInt8>, confirmations: Int = 2, limit: Int? = nil,
                                      isComplete: Bool = false) throws -> Int? {
        // Clamp so a huge or negative limit/confirmation count cannot overflow or form a bad range.
        let searchCount = limit.map { max(0, min($0, bytes.count)) } ?? bytes.count
        let confirmations = max(0, confirmations)
        var offset = 0
        while offset < searchCount {
            switch candidate(at: offset, in: bytes, confirmations: confirmations, isComplete: isComplete) {
            case .confirmed: return offset
            case .needMore: return nil
            case .rejected: offset += 1
            }
        }
        if let limit, bytes.count >= limit {
            throw FormatError.notAudio(reason: "no ADTS frame in the first \(max(0, limit)) bytes")
        }
        return nil
    }

    enum Candidate { case confirmed, rejected, needMore }

    /// Whether a frame starts at `offset` and the next `confirmations` frames line up behind it.
    static func candidate(at offset: Int, in bytes: ArraySlice<UInt8>, confirmations: Int, isComplete: Bool) -> Candidate {
        let s = bytes.startIndex
        // Cheap test first: most offsets in junk fail here without building a header.
        guard bytes[s + offset] == 0xFF else { return .rejected }
        guard offset + 1 < bytes.count else { return isComplete ? .rejected : .needMore }
        guard bytes[s + offset + 1] & 0xF6 == 0xF0 else { return .rejected }
        let first: ADTSHeader
        switch header(at: offset, in: bytes) {
        case .header(let h): first = h
        case .needMore: return isComplete ? .rejected : .needMore
        case .invalid: return .rejected
        }
        var next = offset + first.frameLength
        for _ in 0..<confirmations {
            if isComplete && next == bytes.count { break }   // the last frame of a short stream
            guard next < bytes.count else { return isComplete ? .rejected : .needMore }
            switch header(at: next, in: bytes) {
            case .header(let following) where following.isCompatible(with: first):
                next += following.frameLength
            case .needMore:
                return isComplete ? .rejected : .needMore
            case .header, .invalid:
                return .rejected
            }
        }
        return .confirmed
    }

    enum HeaderResult { case header(ADTSHeader), needMore, invalid }

    /// A thrown error here only means "no frame at this offset", so it is folded into `.invalid`.
    static func header(at offset: Int, in bytes: ArraySlice<UInt8>) -> HeaderResult {
        do {
            guard let h = try ADTSHeader.parse(bytes.dropFirst(offset)) else { return .needMore }
            return .header(h)
        } catch {
            return .invalid
        }
    }
}
