/// A bounds-checked cursor over bytes; every read past the end throws `FormatError.truncated`.
///
/// Offsets (`offset`, `seek(to:)`) are relative to the first byte of the reader's input,
/// whatever the slice's own indices are.
public struct ByteReader: Sendable {
    /// The bytes being read.
    public let bytes: ArraySlice<UInt8>
    /// Position of the next byte to read, from the start of `bytes`.
    public private(set) var offset: Int
    /// Name used in errors so a user sees which parser failed.
    public var component: String

    public init(_ bytes: ArraySlice<UInt8>, component: String = "bytes") {
        self.bytes = bytes
        self.offset = 0
        self.component = component
    }

    public init(_ bytes: [UInt8], component: String = "bytes") {
        self.init(bytes[...], component: component)
    }

    /// Total number of bytes in the input.
    public var count: Int { bytes.count }
    /// Number of bytes left after the cursor.
    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset >= bytes.count }


    func need(_ n: Int) throws(FormatError) {
        if n < 0 || n > remaining {
            throw FormatError.truncated(component: component, offset: offset, needed: n)
        }
    }

    /// Moves the cursor to an absolute offset in `0...count`.
    public mutating func seek(to newOffset: Int) throws(FormatError) {
        guard newOffset >= 0, newOffset <= bytes.count else {
            throw FormatError.truncated(component: component, offset: newOffset, needed: 0)
        }
        offset = newOffset
    }

    /// Skips `n` bytes; a lying size field throws instead of allocating or trapping.
    public mutating func skip(_ n: Int) throws(FormatError) {
        try need(n)
        offset += n
    }

    public mutating func readU8() throws(FormatError) -> UInt8 {
        try need(1)
        let b = bytes[bytes.startIndex + offset]
        offset += 1
        return b
    }

    /// Returns the byte `ahead` positions after the cursor without moving it.
    public func peekU8(ahead: Int = 0) throws(FormatError) -> UInt8 {
        guard ahead >= 0, ahead < remaining else {
            throw FormatError.truncated(component: component, offset: offset + ahead, needed: 1)
        }
        return bytes[bytes.startIndex + offset + ahead]
    }


    mutating func readBE(_ n: Int) throws(FormatError) -> UInt64 {
        try need(n)
        var v: UInt64 = 0
        let base = bytes.startIndex + offset
        for i in 0..<n { v = (v << 8) | UInt64(bytes[base + i]) }
        offset += n
        return v
    }


    mutating func readLE(_ n: Int) throws(FormatError) -> UInt64 {
        try need(n)
        var v: UInt64 = 0
        let base = bytes.startIndex + offset
        for i in stride(from: n - 1, through: 0, by: -1) { v = (v << 8) | UInt64(bytes[base + i]) }
        offset += n
        return v
    }

    public mutating func readU16BE() throws(FormatError) -> UInt16 { UInt16(try readBE(2)) }
    public mutating func readU24BE() throws(FormatError) -> UInt32 { UInt32(try readBE(3)) }
    public mutating func readU32BE() throws(FormatError) -> UInt32 { UInt32(try readBE(4)) }
    public mutating func readU64BE() throws(FormatError) -> UInt64 { try readBE(8) }
    public mutating func readU16LE() throws(FormatError) -> UInt16 { UInt16(try readLE(2)) }
    public mutating func readU32LE() throws(FormatError) -> UInt32 { UInt32(try readLE(4)) }
    public mutating func readU64LE() throws(FormatError) -> UInt64 { try readLE(8) }

    /// Reads `n` bytes as a slice of the input (no copy).
    public mutating func readBytes(_ n: Int) throws(FormatError) -> ArraySlice<UInt8> {
        try need(n)
        let start = bytes.startIndex + offset
        offset += n
        return bytes[start..<(start + n)]
    }

    /// Reads a four-character code (RIFF chunk id, MP4 box type) as ASCII/Latin-1 text.
    public mutating func readFourCC() throws(FormatError) -> String {
        let raw = try readBytes(4)
        return String(decoding: raw.map { $0 < 0x80 ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// A reader over the next `n` bytes; the cursor moves past them.
    public mutating func subReader(_ n: Int) throws(FormatError) -> ByteReader {
        ByteReader(try readBytes(n), component: component)
    }

    /// The bytes after the cursor, without moving it.
    public var rest: ArraySlice<UInt8> {
        let start = bytes.startIndex + min(offset, bytes.count)
        return bytes[start..<bytes.endIndex]
    }
}
