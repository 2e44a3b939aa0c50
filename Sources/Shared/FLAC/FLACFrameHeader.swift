/// A FLAC frame header (RFC 9639 §9.1), read only when its CRC-8 matches.
public struct FLACFrameHeader: Sendable, Equatable {
    /// How the channels are coded (§9.1.3).
    public enum ChannelAssignment: Sendable, Equatable {
        case independent, leftSide, rightSide, midSide
    }

    /// True for a variable-block-size stream: `codedNumber` is then the first sample's number, else the frame's.
    public var isVariableBlockSize: Bool
    /// Samples per channel in this frame: 1 through 65535.
    public var blockSize: Int
    /// Samples a second, nil when the header defers to STREAMINFO (code 0).
    public var sampleRate: Int?
    public var channels: Int
    public var channelAssignment: ChannelAssignment
    /// Bits per sample, nil when the header defers to STREAMINFO (code 0).
    public var bitsPerSample: Int?
    /// The frame number (fixed block size, < 2^31) or the first sample's number (variable, < 2^36).
    public var codedNumber: Int
    /// Bytes of the header including its CRC-8.
    public var length: Int

    static let component = "flac-frame"
    /// The longest header: 2 sync/strategy + 2 codes + 7 number + 2 block size + 2 rate + 1 CRC.
    public static let maxLength = 16

    /// True when `b0 b1` is a frame sync: 0b11111111_1111100x.
    @inline(__always)
    public static func isSync(_ b0: UInt8, _ b1: UInt8) -> Bool { b0 == 0xFF && b1 & 0xFE == 0xF8 }

    /// Parses the header at the start of `bytes`: nil when more bytes are needed, `.invalid` for
    /// a reserved code, a bad coded number or a CRC-8 mismatch.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(FormatError) -> FLACFrameHeader? {
        func invalid(_ reason: String, _ at: Int) -> FormatError {
            FormatError.invalid(component: component, reason: reason, offset: at)
        }
        let base = bytes.startIndex
        guard bytes.count >= 4 else {
            if bytes.count >= 2, !isSync(bytes[base], bytes[base + 1]) { throw invalid("no frame sync", 0) }
            if bytes.count == 1, bytes[base] != 0xFF { throw invalid("no frame sync", 0) }
            return nil
        }
        guard isSync(bytes[base], bytes[base + 1]) else { throw invalid("no frame sync", 0) }
        let variable = bytes[base + 1] & 1 == 1
        let blockCode = bytes[base + 2] >> 4, rateCode = bytes[base + 2] & 0x0F
        let channelCode = bytes[base + 3] >> 4, bitsCode = (bytes[base + 3] >> 1) & 0x07
        guard blockCode != 0 else { throw invalid("reserved block size code 0", 2) }
        guard rateCode != 15 else { throw invalid("forbidden sample rate code 15", 2) }
        guard channelCode <= 10 else { throw invalid("reserved channel assignment \(channelCode)", 3) }
        guard bitsCode != 3 else { throw invalid("reserved bit depth code 3", 3) }
        guard bytes[base + 3] & 1 == 0 else { throw invalid("reserved bit set", 3) }

        // The coded number: UTF-8's scheme extended to 7 bytes (36 bits).
        var position = 4
        guard position < bytes.count else { return nil }
        let lead = bytes[base + position]
        let extra: Int
        var number: Int
        switch lead {
        case 0x00...0x7F: extra = 0; number = Int(lead)
        case 0xC0...0xDF: extra = 1; number = Int(lead & 0x1F)
        case 0xE0...0xEF: extra = 2; number = Int(lead & 0x0F)
        case 0xF0...0xF7: extra = 3; number = Int(lead & 0x07)
        case 0xF8...0xFB: extra = 4; number = Int(lead & 0x03)
        case 0xFC...0xFD: extra = 5; number = Int(lead & 0x01)
        case 0xFE: extra = 6; number = 0
        default: throw invalid("bad coded number lead byte 0x\(String(lead, radix: 16))", position)
        }
        // A frame number has at most 31 bits (6 bytes); only sample numbers use the 7th.
        guard variable || extra <= 5 else { throw invalid("frame number longer than 31 bits", position) }
        position += 1
        guard bytes.count >= position + extra else { return nil }
        for _ in 0..<extra {
            let byte = bytes[base + position]
            guard byte & 0xC0 == 0x80 else { throw invalid("bad coded number continuation byte", position) }
            number = (number << 6) | Int(byte & 0x3F)
            position += 1
        }

        let blockSize: Int
        switch blockCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 144 << Int(blockCode)
        case 6:
            guard bytes.count > position else { return nil }
            blockSize = Int(bytes[base + position]) + 1
            position += 1
        case 7:
            guard bytes.count >= position + 2 else { return nil }
            blockSize = (Int(bytes[base + position]) << 8 | Int(bytes[base + position + 1])) + 1
            position += 2
        default: blockSize = 1 << Int(blockCode)   // 8...15: 256 × 2^(n-8)
        }
        // 65536 is codable (16-bit field + 1) but forbidden (§9.1.6).
        guard blockSize <= 65535 else { throw invalid("block size 65536", 2) }

        let rate: Int?
        switch rateCode {
        case 0: rate = nil
        case 12:
            guard bytes.count > position else { return nil }
            rate = Int(bytes[base + position]) * 1000
            position += 1
        case 13, 14:
            guard bytes.count >= position + 2 else { return nil }
            let value = Int(bytes[base + position]) << 8 | Int(bytes[base + position + 1])
            rate = rateCode == 13 ? value : value * 10
            position += 2
        default: rate = [88_200, 176_400, 192_000, 8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000, 96_000][Int(rateCode) - 1]
        }
        if let rate, rate == 0 { throw invalid("sample rate 0", 2) }

        guard bytes.count > position else { return nil }
        let crc = bytes[base + position]
        guard FLACCRC.crc8(bytes[base..<(base + position)]) == crc else { throw invalid("header CRC-8 mismatch", position) }

        let assignment: ChannelAssignment
        switch channelCode {
        case 8: assignment = .leftSide
        case 9: assignment = .rightSide
        case 10: assignment = .midSide
        default: assignment = .independent
        }
        let bits: Int? = [nil, 8, 12, nil, 16, 20, 24, 32][Int(bitsCode)]
        return FLACFrameHeader(isVariableBlockSize: variable, blockSize: blockSize, sampleRate: rate,
                               channels: channelCode <= 7 ? Int(channelCode) + 1 : 2, channelAssignment: assignment,
                               bitsPerSample: bits, codedNumber: number, length: position + 1)
    }

    /// The number of the frame's first sample; a fixed-block-size stream numbers frames, which
    /// all hold `nominalBlockSize` samples but the last.
    public func firstSample(nominalBlockSize: Int) -> Int {
        isVariableBlockSize ? codedNumber : codedNumber * nominalBlockSize
    }

    /// An upper bound on the bytes of a frame with this header: every subframe verbatim at the
    /// widest sample size (33 bits for a side channel), plus headers, padding and the CRC-16.
    public func maxFrameBytes(streamBits: Int? = nil) -> Int {
        let bits = (bitsPerSample ?? streamBits ?? 32) + 1
        return length + channels * (blockSize * bits + 7 + 8 * 8) / 8 + 8
    }
}
