/// Standard base64 (RFC 4648 section 4) decoding, padding optional: the one decoder for HTTP
/// Basic credentials and for pictures in Vorbis comments (METADATA_BLOCK_PICTURE).
public enum Base64 {
    /// The bytes `text` encodes, or nil when it is not base64: a byte outside the alphabet, data
    /// after padding, more than two padding characters, or a lone trailing 6-bit group. With
    /// `ignoringWhitespace`, line breaks and spaces are skipped (Vorbis comments may carry them).
    public static func decode(_ text: some Sequence<UInt8>, ignoringWhitespace: Bool = true) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.underestimatedCount / 4 * 3)
        var accumulator: UInt32 = 0, bits = 0, padding = 0
        for c in text {
            let value: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                guard padding <= 2 else { return nil }
                continue
            case 0x0A where ignoringWhitespace, 0x0D where ignoringWhitespace, 0x20 where ignoringWhitespace: continue
            default: return nil
            }
            guard padding == 0 else { return nil }   // data after padding
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard bits < 6 else { return nil }   // a lone 6-bit group is no byte
        return out
    }
}

extension Base64 {
    /// `bytes` in standard base64 with padding (RFC 4648 section 4).
    public static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = Int(bytes[i]), b1 = i + 1 < bytes.count ? Int(bytes[i + 1]) : 0, b2 = i + 2 < bytes.count ? Int(bytes[i + 2]) : 0
            out.append(alphabet[b0 >> 2])
            out.append(alphabet[((b0 & 3) << 4) | (b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[((b1 & 15) << 2) | (b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[b2 & 63] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
