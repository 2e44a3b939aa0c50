/// Writes JSON text with fields in the order they are added (the order the contracts list them).
/// Both the server's API and `streamplay --info`/`--stats` use it, so output is identical.
public struct JSONObjectWriter: Sendable {
    /// The members written so far, comma-separated, without the braces: one growing string
    /// (the API writes tens of thousands of fields a second; a string per field cost more).
    private var members = ""

    public init() {}

    private mutating func key(_ key: String) {
        if !members.isEmpty { members += "," }
        members += JSONObjectWriter.quote(key)
        members += ":"
    }

    public mutating func add(_ key: String, _ value: String?) {
        self.key(key)
        members += value.map(JSONObjectWriter.quote) ?? "null"
    }

    public mutating func add(_ key: String, _ value: Int?) {
        self.key(key)
        members += value.map { String($0) } ?? "null"
    }

    public mutating func add(_ key: String, _ value: Bool) {
        self.key(key)
        members += value ? "true" : "false"
    }

    /// Adds a number with at most `decimals` decimals (JSON has no NaN/Infinity: those become null).
    public mutating func add(_ key: String, _ value: Double?, decimals: Int = 6) {
        self.key(key)
        members += value.map { JSONObjectWriter.number($0, decimals: decimals) } ?? "null"
    }

    /// Adds already-encoded JSON (an array or object) under `key`.
    public mutating func addRaw(_ key: String, _ json: String) {
        self.key(key)
        members += json
    }

    /// The finished object.
    public var text: String { "{" + members + "}" }

    /// Formats a finite double without exponent noise: 12.5, 0.026122, 3.
    public static func number(_ value: Double, decimals: Int = 6) -> String {
        guard value.isFinite else { return "null" }
        var scale = 1.0
        for _ in 0..<max(0, min(decimals, 12)) { scale *= 10 }
        var rounded = (value * scale).rounded() / scale
        // Near Double's limit the scaling overflows; a number that large has no decimals to round.
        if !rounded.isFinite { rounded = value }
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
        var text = String(rounded)
        // Large values keep Swift's exponent form ("1e+16" is a JSON number); the fixed form
        // below is for small ones only (in Int64, a large one would overflow and trap).
        if text.contains("e"), abs(rounded) < 1 {
            // Very small values: fall back to fixed notation digit by digit.
            let negative = rounded < 0
            // Rounded, not truncated: 1.2e-05 * 1e6 may come out a hair under 12.
            let whole = Int64((abs(rounded) * scale).rounded())
            var digits = String(whole)
            while digits.count <= decimals { digits = "0" + digits }
            let cut = digits.index(digits.endIndex, offsetBy: -decimals)
            text = (negative ? "-" : "") + digits[..<cut] + "." + digits[cut...]
            while text.hasSuffix("0") { text.removeLast() }
        }
        return text
    }

    /// A JSON string literal for `text`, with control characters escaped.
    public static func quote(_ text: String) -> String {
        // Most text (keys, paths, tags) needs no escape: one pass over the bytes says so, and
        // the text is copied whole instead of scalar by scalar.
        var plain = true
        for byte in text.utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {   // control, ", \
            plain = false
            break
        }
        if plain { return "\"" + text + "\"" }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
