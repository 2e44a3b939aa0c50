/// The two checksums of a FLAC frame (RFC 9639 §9.1.8, §9.3): CRC-8 (polynomial x^8+x^2+x+1)
/// over the frame header and CRC-16 (x^16+x^15+x^2+1) over the whole frame, both MSB first,
/// starting from 0 with no final XOR, so the CRC of a message followed by its CRC is 0.
public enum FLACCRC {
    static let table8: [UInt8] = (0..<256).map { byte in
        var crc = UInt8(byte)
        for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        return crc
    }

    static let table16: [UInt16] = (0..<256).map { byte in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x8005 : crc << 1 }
        return crc
    }

    /// CRC-8 of `bytes`.
    public static func crc8(_ bytes: ArraySlice<UInt8>) -> UInt8 {
        var crc: UInt8 = 0
        for byte in bytes { crc = table8[Int(crc ^ byte)] }
        return crc
    }

    /// CRC-16 of `bytes`, continuing from `crc`.
    public static func crc16(_ bytes: ArraySlice<UInt8>, from crc: UInt16 = 0) -> UInt16 {
        var crc = crc
        for byte in bytes { crc = (crc << 8) ^ table16[Int(UInt8(crc >> 8) ^ byte)] }
        return crc
    }

    /// The CRC-16 after one more byte.
    @inline(__always)
    static func crc16(_ crc: UInt16, _ byte: UInt8) -> UInt16 {
        (crc << 8) ^ table16[Int(UInt8(crc >> 8) ^ byte)]
    }
}
