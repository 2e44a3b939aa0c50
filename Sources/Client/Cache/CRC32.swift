/// CRC-32 as in zlib, PNG and Ethernet (IEEE 802.3: reflected polynomial 0xEDB88320, initial and
/// final value 0xFFFFFFFF), one table lookup per byte. Guards each cached block and index record.
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The checksum of `bytes`, continuing from `crc` (the checksum of what came before).
    public static func checksum(_ bytes: some Sequence<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        table.withUnsafeBufferPointer { t in
            for byte in bytes { c = t[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        }
        return ~c
    }

    /// The checksum of raw memory (a block read into a buffer).
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        checksum(bytes.bindMemory(to: UInt8.self))
    }
}
