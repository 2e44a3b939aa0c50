/// Numbers from query parameters, checked against the range the caller can handle: a value
/// outside it, a sign, or junk is nil (the route answers 400), never a trap or an overflow.
public enum QueryValue {
    /// Decimal digits only, within `range`.
    public static func integer(_ text: String, in range: ClosedRange<Int>) -> Int? {
        // 18 digits always fit in an Int; more can only be out of any sane range.
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(text), range.contains(value) else { return nil }
        return value
    }

    /// A decimal number as clients print doubles (`12.5`, `-3`, `1e-05`: no `inf`, `nan` or hex),
    /// within `range`.
    public static func decimal(_ text: String, in range: ClosedRange<Double>) -> Double? {
        guard !text.isEmpty, text.utf8.count <= 32,
              text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || "+-.eE".utf8.contains($0) }),
              let value = Double(text), value.isFinite, range.contains(value) else { return nil }
        return value
    }
}

extension QueryValue {
    /// A form-encoded text value (`+` for space, `%XX` escapes of UTF-8), at most `maxBytes`
    /// bytes once decoded; nil for a bad escape, invalid UTF-8, a control character or a value too long.
    public static func text(_ raw: String, maxBytes: Int) -> String? {
        var raw = raw
        return raw.withUTF8 { decode($0[...], maxBytes: maxBytes) }
    }

    /// `text` of the bytes of a raw (still encoded) value.
    static func decode(_ raw: Slice<UnsafeBufferPointer<UInt8>>, maxBytes: Int) -> String? {
        guard raw.count <= maxBytes * 3 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.count)
        var iterator = raw.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexDigit), let low = iterator.next().flatMap(hexDigit) else { return nil }
                bytes.append(high << 4 | low)
            default:
                bytes.append(byte)
            }
        }
        guard bytes.count <= maxBytes, !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }),
              let text = String(validating: bytes, as: UTF8.self) else { return nil }
        return text
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension QueryValue {
    /// The `name=value` pairs of a query string or a form body (`a=1&b=two+words&a=3`), each
    /// decoded as `text` decodes (names to `maxNameBytes`, values to `maxValueBytes`), in order,
    /// repeats kept; empty pieces skipped, a piece without `=` a pair with an empty value. nil
    /// for a name or value that does not decode, names it; at most `maxPairs` pairs, else nil.
    public static func pairs(_ text: Substring, maxNameBytes: Int = 64, maxValueBytes: Int,
                             maxPairs: Int = 10_000) -> Result<[(String, String)], FormPairError> {
        // Split on the bytes `&` and `=`, as the form encoding is defined (a byte sequence), not
        // on Characters: the walk by Character was most of the cost of reading a ping's parameters.
        var text = text
        return text.withUTF8 { bytes -> Result<[(String, String)], FormPairError> in
            var pairs: [(String, String)] = []
            var pieceStart = 0
            while pieceStart <= bytes.count {
                var pieceEnd = pieceStart
                while pieceEnd < bytes.count, bytes[pieceEnd] != UInt8(ascii: "&") { pieceEnd += 1 }
                defer { pieceStart = pieceEnd + 1 }
                guard pieceEnd > pieceStart else { continue }
                guard pairs.count < maxPairs else { return .failure(FormPairError(name: "", why: "more than \(maxPairs) parameters")) }
                let piece = bytes[pieceStart..<pieceEnd]
                let equals = piece.firstIndex(of: UInt8(ascii: "="))
                let rawName = piece[..<(equals ?? pieceEnd)]
                let rawValue = equals.map { piece[($0 + 1)...] } ?? piece[pieceEnd...]
                guard let name = decode(rawName, maxBytes: maxNameBytes) else {
                    return .failure(FormPairError(name: String(decoding: rawName.prefix(64), as: UTF8.self), why: "bad encoding or too long a name"))
                }
                guard let value = decode(rawValue, maxBytes: maxValueBytes) else {
                    return .failure(FormPairError(name: name, why: "bad encoding or too long"))
                }
                pairs.append((name, value))
            }
            return .success(pairs)
        }
    }
}

/// A query or form pair that does not decode: its name (as sent, cut to 64 bytes) and why.
public struct FormPairError: Error, Sendable, Equatable {
    public var name: String
    public var why: String
}

