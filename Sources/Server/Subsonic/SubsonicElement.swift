/// A scalar of a Subsonic answer: an XML attribute's value, a JSON member's.
public enum SubsonicValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
}

/// One element of a Subsonic answer, the one model both wire forms are written from: XML
/// (attributes and child elements) and JSON (members; a list child is always an array, even of
/// one element, which clients rely on).
public struct SubsonicElement: Sendable, Equatable {
    /// A child: one element (a JSON object), a list of elements (a JSON array, repeated XML
    /// elements), or a list of scalars (a JSON array, repeated `<name>value</name>`).
    public enum Child: Sendable, Equatable {
        case one(SubsonicElement)
        case many([SubsonicElement])
        case values([SubsonicValue])
    }

    public var attributes: [(String, SubsonicValue)] = []
    public var children: [(String, Child)] = []
    /// Text content (XML) or the `value` member (JSON): lyrics, a lyric line.
    public var text: String?

    public init(_ attributes: [(String, SubsonicValue?)] = [], text: String? = nil) {
        self.attributes = attributes.compactMap { name, value in value.map { (name, $0) } }
        self.text = text
    }

    public mutating func set(_ name: String, _ value: SubsonicValue?) {
        guard let value else { return }
        attributes.append((name, value))
    }

    public mutating func add(_ name: String, _ element: SubsonicElement) { children.append((name, .one(element))) }
    public mutating func add(_ name: String, list: [SubsonicElement]) { children.append((name, .many(list))) }
    public mutating func add(_ name: String, values: [SubsonicValue]) { children.append((name, .values(values))) }

    public static func == (lhs: SubsonicElement, rhs: SubsonicElement) -> Bool {
        lhs.text == rhs.text && lhs.attributes.elementsEqual(rhs.attributes) { $0.0 == $1.0 && $0.1 == $1.1 }
            && lhs.children.elementsEqual(rhs.children) { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}

extension SubsonicValue {
    static func optional(_ text: String?) -> SubsonicValue? { text.map { .string($0) } }
    static func optional(_ number: Int?) -> SubsonicValue? { number.map { .int($0) } }
}

/// Writes the `subsonic-response` envelope around an answer as XML or JSON.
public enum SubsonicWriter {
    /// The Subsonic API version streamd speaks.
    public static let apiVersion = "1.16.1"
    public static let serverType = "streamd"
    public static let serverVersion = "0.25"
    static let xmlNamespace = "http://subsonic.org/restapi"

    /// The envelope's attributes, ok or failed.
    static func envelope(ok: Bool) -> [(String, SubsonicValue)] {
        [("status", .string(ok ? "ok" : "failed")), ("version", .string(apiVersion)), ("type", .string(serverType)),
         ("serverVersion", .string(serverVersion)), ("openSubsonic", .bool(true))]
    }

    /// The whole document: `body` is the response element's content (its children), or the error.
    public static func xml(ok: Bool, body: SubsonicElement) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<subsonic-response xmlns=\"\(xmlNamespace)\""
        for (name, value) in envelope(ok: ok) + body.attributes { writeAttribute(name, value, to: &out) }
        if body.children.isEmpty && body.text == nil {
            out += "/>\n"
            return out
        }
        out += ">"
        writeContent(body, to: &out)
        out += "</subsonic-response>\n"
        return out
    }

    public static func json(ok: Bool, body: SubsonicElement) -> String {
        var root = body
        root.attributes = envelope(ok: ok) + body.attributes
        var out = "{\"subsonic-response\":"
        writeJSON(root, to: &out)
        out += "}"
        return out
    }

    // MARK: XML

    static func writeElement(_ name: String, _ element: SubsonicElement, to out: inout String) {
        out += "<" + name
        for (key, value) in element.attributes { writeAttribute(key, value, to: &out) }
        if element.children.isEmpty && element.text == nil {
            out += "/>"
            return
        }
        out += ">"
        writeContent(element, to: &out)
        out += "</" + name + ">"
    }

    static func writeContent(_ element: SubsonicElement, to out: inout String) {
        if let text = element.text { escapeXML(text, to: &out) }
        for (name, child) in element.children {
            switch child {
            case .one(let one): writeElement(name, one, to: &out)
            case .many(let list): for item in list { writeElement(name, item, to: &out) }
            case .values(let values):
                for value in values {
                    out += "<" + name + ">"
                    escapeXML(scalarText(value), to: &out)
                    out += "</" + name + ">"
                }
            }
        }
    }

    static func writeAttribute(_ name: String, _ value: SubsonicValue, to out: inout String) {
        out += " " + name + "=\""
        escapeXML(scalarText(value), to: &out)
        out += "\""
    }

    static func scalarText(_ value: SubsonicValue) -> String {
        switch value {
        case .string(let text): return text
        case .int(let number): return String(number)
        case .double(let number): return formatDouble(number)
        case .bool(let flag): return flag ? "true" : "false"
        }
    }

    /// A finite number as JSON and XML both read it; not finite (never expected) is 0.
    static func formatDouble(_ number: Double) -> String {
        guard number.isFinite else { return "0" }
        if number == number.rounded(), abs(number) < 1e15 { return String(Int(number)) }
        return String(number)
    }

    /// Escapes the five XML specials, and drops the control characters XML 1.0 cannot carry.
    static func escapeXML(_ text: String, to out: inout String) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF { continue }
                out.unicodeScalars.append(scalar)
            }
        }
    }

    // MARK: JSON

    static func writeJSON(_ element: SubsonicElement, to out: inout String) {
        out += "{"
        var first = true
        func key(_ name: String) {
            if !first { out += "," }
            first = false
            writeJSONString(name, to: &out)
            out += ":"
        }
        for (name, value) in element.attributes {
            key(name)
            writeJSONScalar(value, to: &out)
        }
        if let text = element.text {
            key("value")
            writeJSONString(text, to: &out)
        }
        for (name, child) in element.children {
            key(name)
            switch child {
            case .one(let one): writeJSON(one, to: &out)
            case .many(let list):
                out += "["
                for (index, item) in list.enumerated() {
                    if index > 0 { out += "," }
                    writeJSON(item, to: &out)
                }
                out += "]"
            case .values(let values):
                out += "["
                for (index, value) in values.enumerated() {
                    if index > 0 { out += "," }
                    writeJSONScalar(value, to: &out)
                }
                out += "]"
            }
        }
        out += "}"
    }

    static func writeJSONScalar(_ value: SubsonicValue, to out: inout String) {
        switch value {
        case .string(let text): writeJSONString(text, to: &out)
        case .int(let number): out += String(number)
        case .double(let number): out += formatDouble(number)
        case .bool(let flag): out += flag ? "true" : "false"
        }
    }

    static func writeJSONString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
