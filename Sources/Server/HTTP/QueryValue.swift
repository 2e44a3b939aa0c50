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
        guard raw.utf8.count <= maxBytes * 3 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.utf8.count)
        var iterator = raw.utf8.makeIterator()
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
