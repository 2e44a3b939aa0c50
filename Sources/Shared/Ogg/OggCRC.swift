/// The page checksum of Ogg (RFC 3533 §6): CRC-32 with polynomial 0x04C11DB7, MSB first,
/// initial value 0 and no final XOR, over the whole page with its CRC field set to zero.
public enum OggCRC {
    static let table: [UInt32] = (0..<256).map { byte in
        var crc = UInt32(byte) << 24
        for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        return crc
    }

    /// CRC-32 of `bytes`, continuing from `crc`.
    public static func crc32(_ bytes: ArraySlice<UInt8>, from crc: UInt32 = 0) -> UInt32 {
        var crc = crc
        for byte in bytes { crc = (crc << 8) ^ table[Int(UInt8(crc >> 24) ^ byte)] }
        return crc
    }
}
