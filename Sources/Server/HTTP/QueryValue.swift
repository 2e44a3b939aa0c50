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
