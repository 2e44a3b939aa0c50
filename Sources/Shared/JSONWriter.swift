/// Writes JSON text with fields in the order they are added (the order the contracts list them).
/// Both the server's API and `streamplay --info`/`--stats` use it, so output is identical.
public struct JSONObjectWriter: Sendable {
    private var parts: [String] = []

    public init() {}

    public mutating func add(_ key: String, _ value: String?) {
        parts.append("\(JSONObjectWriter.quote(key)):\(value.map(JSONObjectWriter.quote) ?? "null")")
    }

    public mutating func add(_ key: String, _ value: Int?) {
        parts.append("\(JSONObjectWriter.quote(key)):\(value.map { String($0) } ?? "null")")
    }

    public mutating func add(_ key: String, _ value: Bool) {
        parts.append("\(JSONObjectWriter.quote(key)):\(value)")
    }

    /// Adds a number with at most `decimals` decimals (JSON has no NaN/Infinity: those become null).
    public mutating func add(_ key: String, _ value: Double?, decimals: Int = 6) {
        parts.append("\(JSONObjectWriter.quote(key)):\(value.map { JSONObjectWriter.number($0, decimals: decimals) } ?? "null")")
    }

    /// Adds already-encoded JSON (an array or object) under `key`.
    public mutating func addRaw(_ key: String, _ json: String) {
        parts.append("\(JSONObjectWriter.quote(key)):\(json)")
    }

    /// The finished object.
    public var text: String { "{" + parts.joined(separator: ",") + "}" }

    /// Formats a finite double without exponent noise: 12.5, 0.026122, 3.
    public static func number(_ value: Double, decimals: Int = 6) -> String {
        guard value.isFinite else { return "null" }
        var scale = 1.0
        for _ in 0..<max(0, min(decimals, 12)) { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
        var text = String(rounded)
        if text.contains("e") {
            // Very small values: fall back to fixed notation digit by digit.
            let negative = rounded < 0
            let whole = Int64(abs(rounded) * scale)
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
