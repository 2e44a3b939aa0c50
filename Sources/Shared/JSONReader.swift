/// A JSON value (RFC 8259), read by `JSONValue.parse`: what streamplay reads from streamd's
/// API (the seek index), without Foundation.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// A member of an object (nil for a missing key or a value that is not an object).
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var double: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// A number that is a whole value within Int's range.
    public var int: Int? {
        guard case .number(let value) = self, value == value.rounded(), abs(value) < 9.2e18 else { return nil }
        return Int(value)
    }

    public var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// Nesting deeper than this is refused (a hostile body cannot exhaust the stack).
    public static let maxDepth = 64

    /// Parses one JSON text (whitespace around it allowed, nothing else after it). At most
    /// `maxValues` values (each array, object, member value and item counts) are read: a
    /// document of known shape bounds its memory that way, whatever the body's size.
    public static func parse(_ bytes: [UInt8], maxValues: Int = .max) throws(JSONError) -> JSONValue {
        var reader = JSONByteReader(bytes: bytes, valuesLeft: maxValues)
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw JSONError(offset: reader.index, reason: "text after the value") }
        return value
    }
}

/// Why a JSON text was refused, and where.
public struct JSONError: Error, Equatable, CustomStringConvertible, Sendable {
    public var offset: Int
    public var reason: String
    public var description: String { "JSON: \(reason) at byte \(offset)" }
}

/// The cursor `JSONValue.parse` walks the bytes with.
private struct JSONByteReader {
    let bytes: [UInt8]
    var index = 0
    /// Values still allowed (`JSONValue.parse`'s `maxValues`).
    var valuesLeft: Int

    init(bytes: [UInt8], valuesLeft: Int) {
        self.bytes = bytes
        self.valuesLeft = valuesLeft
    }

    mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    func fail(_ reason: String) -> JSONError { JSONError(offset: index, reason: reason) }

    mutating func value(depth: Int) throws(JSONError) -> JSONValue {
        guard depth < JSONValue.maxDepth else { throw fail("nested deeper than \(JSONValue.maxDepth)") }
        guard valuesLeft > 0 else { throw fail("more values than the document may hold") }
        valuesLeft -= 1
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return .number(try number())
        }
    }

    mutating func literal(_ word: String) throws(JSONError) {
        for byte in word.utf8 {
            guard index < bytes.count, bytes[index] == byte else { throw fail("expected \(word)") }
            index += 1
        }
    }

    mutating func object(depth: Int) throws(JSONError) -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            members[key] = try value(depth: depth + 1)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            guard bytes[index] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
            index += 1
            return .object(members)
        }
    }

    mutating func array(depth: Int) throws(JSONError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            items.append(try value(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end in an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            guard bytes[index] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
            index += 1
            return .array(items)
        }
    }

    /// A number as RFC 8259 spells it (no leading '+', no leading zeros, no bare '.').
    mutating func number() throws(JSONError) -> Double {
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - from
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let firstDigit = index
        let whole = digits()
        guard whole > 0, !(whole > 1 && bytes[firstDigit] == UInt8(ascii: "0")) else { throw fail("malformed number") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw fail("malformed number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw fail("malformed number") }
        }
        guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else {
            throw fail("number out of range")
        }
        return value
    }

    /// A string's characters, escapes decoded (a lone surrogate becomes U+FFFD).
    mutating func string() throws(JSONError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var run = index          // start of the bytes copied as they are
        var text = ""
        func flush(upTo end: Int) {
            text += String(decoding: bytes[run..<end], as: UTF8.self)
        }
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                flush(upTo: index)
                index += 1
                return text
            }
            guard byte >= 0x20 else { throw fail("control character in a string") }
            guard byte == UInt8(ascii: "\\") else { index += 1; continue }
            flush(upTo: index)
            index += 1
            guard index < bytes.count else { throw fail("unterminated escape") }
            let escape = bytes[index]
            index += 1
            scalars.removeAll()
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escape))
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count,
                   bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                    let saved = index
                    index += 2
                    let low = try hex4()
                    if (0xDC00..<0xE000).contains(low) { code = 0x10000 + (code - 0xD800) << 10 + (low - 0xDC00) } else { index = saved }
                }
                scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
            default: throw fail("unknown escape")
            }
            text.unicodeScalars.append(contentsOf: scalars)
            run = index
        }
    }

    mutating func hex4() throws(JSONError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("short \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: throw fail("bad \\u escape")
            }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }
}
