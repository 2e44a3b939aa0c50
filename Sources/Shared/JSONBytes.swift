/// JSON written straight into a byte buffer: what the API's hot writers (`TrackItem.append`)
/// use instead of `JSONObjectWriter`'s Strings. The same text as `JSONObjectWriter` writes.
public enum JSONBytes {
    // Constants, not stored statics: a stored one read from another module costs a lazy-init check per use.
    @inlinable static var quote: UInt8 { 0x22 }
    @inlinable static var backslash: UInt8 { 0x5C }
    @usableFromInline static let lowerHex = Array("0123456789abcdef".utf8)

    /// `"key":`, after a comma unless `first`.
    @inlinable
    public static func key(_ name: StaticString, _ out: inout [UInt8], first: Bool = false) {
        if !first { out.append(UInt8(ascii: ",")) }
        out.append(quote)
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(quote)
        out.append(UInt8(ascii: ":"))
    }

    @inlinable
    public static func null(_ out: inout [UInt8]) {
        out.append(contentsOf: [UInt8(ascii: "n"), UInt8(ascii: "u"), UInt8(ascii: "l"), UInt8(ascii: "l")])
    }

    /// A JSON string of UTF-8 text: `"`, `\` and control characters escaped as
    /// `JSONObjectWriter.quote` does, runs of plain bytes copied whole.
    @inlinable
    public static func string(_ text: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8]) {
        out.append(quote)
        var start = 0
        for (i, byte) in text.enumerated() where byte < 0x20 || byte == quote || byte == backslash {
            if start < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: text[start..<i])) }
            start = i + 1
            switch byte {
            case quote: out.append(contentsOf: [backslash, quote])
            case backslash: out.append(contentsOf: [backslash, backslash])
            case 0x0A: out.append(contentsOf: [backslash, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [backslash, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [backslash, UInt8(ascii: "t")])
            default:
                out.append(contentsOf: [backslash, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        lowerHex[Int(byte >> 4)], lowerHex[Int(byte & 15)]])
            }
        }
        if start < text.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: text[start...])) }
        out.append(quote)
    }

    /// Decimal digits of `value` (with its sign), as `String(value)`.
    @inlinable
    public static func integer(_ value: Int, _ out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: a UInt64 has at most 20 digits
        withUnsafeMutableBytes(of: &buffer) { raw in
            var i = raw.count
            repeat {
                i -= 1
                raw[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[i...]))
        }
    }

    /// Lower-case hex digits of `value`, as `String(value, radix: 16)`.
    @inlinable
    public static func hex(_ value: UInt64, _ out: inout [UInt8]) {
        var rest = value
        var buffer: (UInt64, UInt64) = (0, 0)   // 16 digits at most
        withUnsafeMutableBytes(of: &buffer) { raw in
            var i = raw.count
            repeat {
                i -= 1
                raw[i] = lowerHex[Int(rest & 15)]
                rest >>= 4
            } while rest > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[i...]))
        }
    }
}
