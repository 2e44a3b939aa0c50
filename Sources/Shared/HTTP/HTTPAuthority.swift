/// The `host[:port]` of an http URL or a Host header, split by the syntax of RFC 3986 section
/// 3.2.2: an IP literal in brackets (`[::1]`) or a reg-name (IPv4 addresses are reg-names too,
/// with percent-encoded bytes allowed), then a colon and at most five digits. Syntax only: the
/// server checks Host headers with it, `HTTPURL` adds what connecting needs. No copies.
public struct HTTPAuthority: Sendable, Equatable {
    /// The host as written, without the brackets of an IP literal; may be empty.
    public var host: Substring
    /// Whether the host was written in brackets (an IPv6 or IPvFuture literal).
    public var isIPLiteral: Bool
    /// The port's digits, nil without a colon; empty after a bare colon (`host:`).
    public var port: Substring?

    /// Splits `text`; nil when it is not `host[:port]` (a bracket unclosed or followed by
    /// anything but a port, a byte a host may not hold, a port of other than 0...5 digits).
    public init?(parsing text: Substring) {
        let bytes = text.utf8
        var rest = bytes[...]
        if rest.first == UInt8(ascii: "[") {
            guard let close = rest.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            let literal = rest[rest.index(after: rest.startIndex)..<close]
            guard !literal.isEmpty, literal.allSatisfy({ HTTPSyntax.isHexDigit($0) || $0 == UInt8(ascii: ":")
                || $0 == UInt8(ascii: ".") || Self.isUnreservedOrSubDelim($0) }) else { return nil }
            host = text[literal.startIndex..<literal.endIndex]
            isIPLiteral = true
            rest = rest[rest.index(after: close)...]
        } else {
            let end = rest.firstIndex(of: UInt8(ascii: ":")) ?? rest.endIndex
            var name = rest[rest.startIndex..<end]
            while let byte = name.first {
                if byte == UInt8(ascii: "%") {
                    let hex = name.dropFirst().prefix(2)
                    guard hex.count == 2, hex.allSatisfy(HTTPSyntax.isHexDigit) else { return nil }
                    name = name.dropFirst(3)
                } else {
                    guard Self.isUnreservedOrSubDelim(byte) else { return nil }
                    name = name.dropFirst()
                }
            }
            host = text[rest.startIndex..<end]
            isIPLiteral = false
            rest = rest[end...]
        }
        guard let colon = rest.first else {
            port = nil
            return
        }
        let digits = rest.dropFirst()
        guard colon == UInt8(ascii: ":"), digits.count <= 5, digits.allSatisfy(HTTPSyntax.isDigit) else { return nil }
        port = text[digits.startIndex..<digits.endIndex]
    }

    /// RFC 3986 unreserved and sub-delims: the bytes a reg-name may hold besides pct-encoded ones.
    static func isUnreservedOrSubDelim(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
             UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }
}
