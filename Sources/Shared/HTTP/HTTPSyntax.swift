/// The byte classes of HTTP/1 heads (RFC 9110 section 5.6), one definition for the server's
/// request parser, the response-head parser and the field-line reader. Inlinable: the server
/// runs them on every byte of every request head.
public enum HTTPSyntax {
    /// RFC 9110 tchar: a byte of a token (a method, a field name).
    @inlinable
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// SP or HTAB, the whitespace of OWS.
    @inlinable
    public static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// An ASCII digit.
    @inlinable
    public static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    /// An ASCII hex digit.
    @inlinable
    public static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte | 0x20) &- UInt8(ascii: "a") < 6
    }

    /// Field names compared ASCII case-insensitively, byte by byte (only letters fold: `-` is
    /// not `\r`), without lowercased copies.
    @inlinable
    public static func sameName<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ b: B) -> Bool {
        guard a.count == b.count else { return false }
        return a.elementsEqual(b) { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) &- UInt8(ascii: "a") < 26)
        }
    }
}
