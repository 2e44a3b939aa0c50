/// A bounds-checked big-endian bit cursor (MSB first), as MPEG and AAC headers are written.
public struct BitReader: Sendable {
    /// The bytes being read.
    public let bytes: ArraySlice<UInt8>
    /// Position of the next bit, from the first bit of `bytes`.
    public private(set) var bitOffset: Int
    /// Name used in errors so a user sees which parser failed.
    public var component: String

    public init(_ bytes: ArraySlice<UInt8>, component: String = "bits") {
        self.bytes = bytes
        self.bitOffset = 0
        self.component = component
    }

    public init(_ bytes: [UInt8], component: String = "bits") {
        self.init(bytes[...], component: component)
    }

    /// Bits left after the cursor.
    public var remainingBits: Int { bytes.count * 8 - bitOffset }

    /// Reads `n` bits (0...32) as an unsigned value.
    public mutating func read(_ n: Int) throws(FormatError) -> UInt32 {
        guard n >= 0, n <= 32 else {
            throw FormatError.invalid(component: component, reason: "bit read of \(n) bits", offset: bitOffset / 8)
        }
        guard n <= remainingBits else {
            throw FormatError.truncated(component: component, offset: bitOffset / 8, needed: (n + 7) / 8)
        }
        var value: UInt64 = 0
        var left = n
        while left > 0 {
            let byte = bytes[bytes.startIndex + bitOffset >> 3]
            let bitInByte = bitOffset & 7
            let take = min(8 - bitInByte, left)
            let shifted = (UInt32(byte) >> UInt32(8 - bitInByte - take)) & ((1 << UInt32(take)) - 1)
            value = (value << UInt64(take)) | UInt64(shifted)
            left -= take
            bitOffset += take
        }
        return UInt32(truncatingIfNeeded: value)
    }

    public mutating func readBool() throws(FormatError) -> Bool { try read(1) == 1 }

    /// Skips `n` bits; throws if that runs past the end.
    public mutating func skip(_ n: Int) throws(FormatError) {
        guard n >= 0, n <= remainingBits else {
            throw FormatError.truncated(component: component, offset: bitOffset / 8, needed: (max(n, 0) + 7) / 8)
        }
        bitOffset += n
    }
}
