/// A URI split into the five parts of RFC 3986 (appendix B), and resolution of a reference
/// against a base URI (section 5.2): what a playlist's relative segment and variant URIs and a
/// redirect's Location need.
public struct URIReference: Equatable, Sendable {
    public var scheme: Substring?
    public var authority: Substring?
    public var path: Substring
    public var query: Substring?
    public var fragment: Substring?

    /// Splits `text` the way RFC 3986's appendix B regular expression does (any text splits).
    public init(_ text: Substring) {
        // Split on Unicode scalars, not Characters: a delimiter followed by a combining mark
        // (`#` + U+07F2) is one Character, and would hide the delimiter (libFuzzer found a
        // fragment kept in the request target that way).
        var rest = text.unicodeScalars
        let schemeEnd: (Unicode.Scalar) -> Bool = { $0 == ":" || $0 == "/" || $0 == "?" || $0 == "#" }
        if let colon = rest.firstIndex(where: schemeEnd), rest[colon] == ":", colon > rest.startIndex {
            scheme = Substring(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
        }
        if rest.starts(with: "//".unicodeScalars) {
            let start = rest.index(rest.startIndex, offsetBy: 2)
            let end = rest[start...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            authority = Substring(rest[start..<end])
            rest = rest[end...]
        }
        if let hash = rest.firstIndex(of: "#") {
            fragment = Substring(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            query = Substring(rest[rest.index(after: question)...])
            rest = rest[..<question]
        }
        path = Substring(rest)
    }

    private init(scheme: Substring?, authority: Substring?, path: Substring, query: Substring?, fragment: Substring?) {
        (self.scheme, self.authority, self.path, self.query, self.fragment) = (scheme, authority, path, query, fragment)
    }

    /// The URI as text (RFC 3986 section 5.3).
    public var text: String {
        var out = ""
        if let scheme { out += scheme + ":" }
        if let authority { out += "//" + authority }
        out += path
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    /// `reference` resolved against this base URI (RFC 3986 section 5.2.2, strict).
    public func resolving(_ reference: URIReference) -> URIReference {
        if reference.scheme != nil {
            return URIReference(scheme: reference.scheme, authority: reference.authority,
                                path: Self.removingDotSegments(reference.path), query: reference.query,
                                fragment: reference.fragment)
        }
        var target = URIReference(scheme: scheme, authority: authority, path: path, query: query,
                                  fragment: reference.fragment)
        if reference.authority != nil {
            target.authority = reference.authority
            target.path = Self.removingDotSegments(reference.path)
            target.query = reference.query
        } else if reference.path.isEmpty {
            target.query = reference.query ?? query
        } else {
            target.path = Self.removingDotSegments(reference.path.hasPrefix("/") ? reference.path : merged(reference.path))
            target.query = reference.query
        }
        return target
    }

    /// A relative path appended to this base's directory (section 5.2.3).
    private func merged(_ relative: Substring) -> Substring {
        if authority != nil && path.isEmpty { return "/" + relative }
        guard let slash = path.lastIndex(of: "/") else { return relative }
        return path[...slash] + relative
    }

    /// Section 5.2.4: "." and ".." segments interpreted and removed.
    static func removingDotSegments(_ path: Substring) -> Substring {
        var input = path
        var output: [Substring] = []       // each piece starts with "/" (or is a relative first segment)
        while !input.isEmpty {
            if input.hasPrefix("../") { input = input.dropFirst(3) }
            else if input.hasPrefix("./") { input = input.dropFirst(2) }
            else if input.hasPrefix("/./") { input = input.dropFirst(2) }
            else if input == "/." { input = "/" }
            else if input.hasPrefix("/../") { input = input.dropFirst(3); _ = output.popLast() }
            else if input == "/.." { input = "/"; _ = output.popLast() }
            else if input == "." || input == ".." { input = "" }
            else {
                let searchFrom = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[searchFrom...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return Substring(output.joined())
    }

    /// `text` with every byte a URI reference may not hold percent-encoded (space, quotes,
    /// brackets, non-ASCII as UTF-8); what it may hold, '%' included, is left as it is.
    public static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isAllowed(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Unreserved and sub-delimiter characters, ":@/?", and "%" and "#" (already a reference's syntax).
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:@/?%#".utf8.contains(byte)
        }
    }
}
