/// Integers as the bytes of binary formats, for building test files (WAV, MP4, ID3, ADTS...):
/// `le` little-endian, `be` big-endian, the number the width in bits; higher bits are dropped.

/// `value`'s low 16 bits, little-endian.
public func le16(_ value: Int) -> [UInt8] { littleEndian(value, bytes: 2) }
/// `value`'s low 32 bits, little-endian.
public func le32(_ value: Int) -> [UInt8] { littleEndian(value, bytes: 4) }
/// `value`'s 64 bits, little-endian.
public func le64(_ value: Int) -> [UInt8] { littleEndian(value, bytes: 8) }
/// `value`'s low 16 bits, big-endian.
public func be16(_ value: Int) -> [UInt8] { littleEndian(value, bytes: 2).reversed() }
/// `value`'s low 24 bits, big-endian.
public func be24(_ value: Int) -> [UInt8] { littleEndian(value, bytes: 3).reversed() }
/// `value`'s low 32 bits, big-endian.
public func be32(_ value: Int) -> [UInt8] { littleEndian(value, bytes: 4).reversed() }
/// `value`'s 64 bits, big-endian.
public func be64(_ value: Int) -> [UInt8] { littleEndian(value, bytes: 8).reversed() }

private func littleEndian(_ value: Int, bytes: Int) -> [UInt8] {
    (0..<bytes).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
}

/// `value`'s low 28 bits as ID3v2's synchsafe integer: four bytes of 7 bits, big-endian.
public func synchsafe(_ value: Int) -> [UInt8] {
    [21, 14, 7, 0].map { UInt8(truncatingIfNeeded: value >> $0 & 0x7F) }
}
