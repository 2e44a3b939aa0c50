/// Reads cookies from `Cookie` request fields (RFC 6265 section 5.4: `name=value` pairs joined
/// by `;`). The session cookie is the only one streamd reads; the parser is fuzzed (`credentials`).
public enum HTTPCookies {
    /// The value of the first cookie called `name` in `fields` (each a `Cookie` field's value),
    /// with surrounding blanks and double quotes taken off; nil when there is none.
    public static func value(named name: String, in fields: [String]) -> String? {
        for field in fields {
            for pair in field.utf8.split(separator: UInt8(ascii: ";")) {
                guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else { continue }
                guard trimmed(pair[..<equals], dropping: blanks).elementsEqual(name.utf8) else { continue }
                let value = trimmed(pair[pair.index(after: equals)...], dropping: blanksAndQuotes)
                return String(decoding: value, as: UTF8.self)
            }
        }
        return nil
    }

    static let blanks: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t")]
    static let blanksAndQuotes: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\"")]

    static func trimmed(_ bytes: Substring.UTF8View.SubSequence, dropping: Set<UInt8>) -> Substring.UTF8View.SubSequence {
        var part = bytes
        while let first = part.first, dropping.contains(first) { part = part.dropFirst() }
        while let last = part.last, dropping.contains(last) { part = part.dropLast() }
        return part
    }
}
