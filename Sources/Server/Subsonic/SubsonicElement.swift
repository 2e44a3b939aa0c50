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
        /// A list of elements whose fixed part was written before (`SubsonicWrittenElement`),
        /// each with the attributes that change from answer to answer.
        case written([SubsonicWrittenItem])
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
    public mutating func add(_ name: String, written: [SubsonicWrittenItem]) { children.append((name, .written(written))) }

    public static func == (lhs: SubsonicElement, rhs: SubsonicElement) -> Bool {
        lhs.text == rhs.text && lhs.attributes.elementsEqual(rhs.attributes) { $0.0 == $1.0 && $0.1 == $1.1 }
            && lhs.children.elementsEqual(rhs.children) { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}

extension SubsonicValue {
    static func optional(_ text: String?) -> SubsonicValue? { text.map { .string($0) } }
    static func optional(_ number: Int?) -> SubsonicValue? { number.map { .int($0) } }
}

/// Writes the `subsonic-response` envelope around an answer as XML or JSON, into bytes: text
/// that needs no escaping (nearly all of it) is copied whole, not a character at a time.
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
    public static func xml(ok: Bool, body: SubsonicElement) -> String { String(decoding: xmlBytes(ok: ok, body: body), as: UTF8.self) }
    public static func json(ok: Bool, body: SubsonicElement) -> String { String(decoding: jsonBytes(ok: ok, body: body), as: UTF8.self) }

    public static func xmlBytes(ok: Bool, body: SubsonicElement) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4096)
        raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<subsonic-response xmlns=\"\(xmlNamespace)\"", &out)
        for (name, value) in envelope(ok: ok) + body.attributes { writeAttribute(name, value, to: &out) }
        if body.children.isEmpty && body.text == nil {
            raw("/>\n", &out)
            return out
        }
        out.append(UInt8(ascii: ">"))
        writeContent(body, to: &out)
        raw("</subsonic-response>\n", &out)
        return out
    }

    public static func jsonBytes(ok: Bool, body: SubsonicElement) -> [UInt8] {
        var root = body
        root.attributes = envelope(ok: ok) + body.attributes
        var out: [UInt8] = []
        out.reserveCapacity(4096)
        raw("{\"subsonic-response\":", &out)
        writeJSON(root, to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    @inline(__always) static func raw(_ text: String, _ out: inout [UInt8]) { out.append(contentsOf: text.utf8) }

    // MARK: XML

    static func writeElement(_ name: String, _ element: SubsonicElement, to out: inout [UInt8]) {
        writeElementHead(name, element, to: &out)
        writeElementTail(name, element, to: &out)
    }

    /// `<name` and the attributes.
    static func writeElementHead(_ name: String, _ element: SubsonicElement, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "<"))
        raw(name, &out)
        for (key, value) in element.attributes { writeAttribute(key, value, to: &out) }
    }

    /// What follows the attributes: `/>`, or the content and the end tag.
    static func writeElementTail(_ name: String, _ element: SubsonicElement, to out: inout [UInt8]) {
        if element.children.isEmpty && element.text == nil {
            raw("/>", &out)
            return
        }
        out.append(UInt8(ascii: ">"))
        writeContent(element, to: &out)
        raw("</" + name + ">", &out)
    }

    static func writeContent(_ element: SubsonicElement, to out: inout [UInt8]) {
        if let text = element.text { escapeXML(text, to: &out) }
        for (name, child) in element.children {
            switch child {
            case .one(let one): writeElement(name, one, to: &out)
            case .many(let list): for item in list { writeElement(name, item, to: &out) }
            case .written(let list):
                for item in list {
                    out.append(contentsOf: item.element.xmlHead)
                    for (key, value) in item.attributes { writeAttribute(key, value, to: &out) }
                    out.append(contentsOf: item.element.xmlTail)
                }
            case .values(let values):
                for value in values {
                    raw("<" + name + ">", &out)
                    escapeXML(scalarText(value), to: &out)
                    raw("</" + name + ">", &out)
                }
            }
        }
    }

    static func writeAttribute(_ name: String, _ value: SubsonicValue, to out: inout [UInt8]) {
        out.append(UInt8(ascii: " "))
        raw(name, &out)
        raw("=\"", &out)
        escapeXML(scalarText(value), to: &out)
        out.append(UInt8(ascii: "\""))
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

    /// Escapes the five XML specials, and drops the control characters XML 1.0 cannot carry
    /// (and U+FFFE, U+FFFF); text with none of them is copied whole.
    static func escapeXML(_ text: String, to out: inout [UInt8]) {
        let bytes = text.utf8
        let clean = bytes.allSatisfy { byte in
            byte >= 0x20 && byte != UInt8(ascii: "&") && byte != UInt8(ascii: "<") && byte != UInt8(ascii: ">")
                && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "'") && byte != 0xEF
        }
        if clean {
            out.append(contentsOf: bytes)
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": raw("&amp;", &out)
            case "<": raw("&lt;", &out)
            case ">": raw("&gt;", &out)
            case "\"": raw("&quot;", &out)
            case "'": raw("&apos;", &out)
            case "\t", "\n", "\r": out.append(UInt8(scalar.value))
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF { continue }
                out.append(contentsOf: String(scalar).utf8)
            }
        }
    }

    // MARK: JSON

    static func writeJSON(_ element: SubsonicElement, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        let first = writeJSONAttributes(element.attributes, first: true, to: &out)
        writeJSONTail(element, first: first, to: &out)
    }

    /// Attributes as members, each after a comma but the very first (`first`: none written
    /// yet); whether none has been written still.
    static func writeJSONAttributes(_ attributes: [(String, SubsonicValue)], first: Bool, to out: inout [UInt8]) -> Bool {
        var first = first
        for (name, value) in attributes {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeJSONString(name, to: &out)
            out.append(UInt8(ascii: ":"))
            writeJSONScalar(value, to: &out)
        }
        return first
    }

    /// What follows the attributes: the text, the children and the closing brace.
    static func writeJSONTail(_ element: SubsonicElement, first: Bool, to out: inout [UInt8]) {
        var first = first
        func key(_ name: String) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeJSONString(name, to: &out)
            out.append(UInt8(ascii: ":"))
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
                out.append(UInt8(ascii: "["))
                for (index, item) in list.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    writeJSON(item, to: &out)
                }
                out.append(UInt8(ascii: "]"))
            case .written(let list):
                out.append(UInt8(ascii: "["))
                for (index, item) in list.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    item.writeJSON(to: &out)
                }
                out.append(UInt8(ascii: "]"))
            case .values(let values):
                out.append(UInt8(ascii: "["))
                for (index, value) in values.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    writeJSONScalar(value, to: &out)
                }
                out.append(UInt8(ascii: "]"))
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    static func writeJSONScalar(_ value: SubsonicValue, to out: inout [UInt8]) {
        switch value {
        case .string(let text): writeJSONString(text, to: &out)
        case .int(let number): raw(String(number), &out)
        case .double(let number): raw(formatDouble(number), &out)
        case .bool(let flag): raw(flag ? "true" : "false", &out)
        }
    }

    /// A JSON string: `"`, `\` and control characters escaped, the rest as UTF-8; the runs
    /// between bytes to escape (nearly always the whole string) are copied whole.
    static func writeJSONString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): raw("\\\"", &out)
                case UInt8(ascii: "\\"): raw("\\\\", &out)
                case 0x0A: raw("\\n", &out)
                case 0x0D: raw("\\r", &out)
                case 0x09: raw("\\t", &out)
                default:
                    let hex = String(byte, radix: 16)
                    raw("\\u" + String(repeating: "0", count: 4 - hex.count) + hex, &out)
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// An element's fixed part (its name, the attributes every answer shows alike, its text and
/// children) written once in both wire forms and kept, so a list of many such items (albums)
/// copies bytes instead of writing each element again; the attributes that differ by answer
/// (a user's marks) are written between the two parts (`SubsonicWrittenItem`). Written by the
/// same code as any element: a list of these is byte for byte the list of the elements.
public final class SubsonicWrittenElement: Sendable {
    /// `<name` and the fixed attributes.
    let xmlHead: [UInt8]
    /// `/>`, or `>`, the content and `</name>`.
    let xmlTail: [UInt8]
    /// `{` and the fixed attributes as members.
    let jsonHead: [UInt8]
    /// The text and children as members (after a comma) and `}`.
    let jsonTail: [UInt8]
    /// Whether `jsonHead` holds a member (then anything after it needs a comma).
    let jsonHeadHasMembers: Bool

    public init(name: String, _ element: SubsonicElement) {
        var bytes: [UInt8] = []
        SubsonicWriter.writeElementHead(name, element, to: &bytes)
        xmlHead = bytes
        bytes = []
        SubsonicWriter.writeElementTail(name, element, to: &bytes)
        xmlTail = bytes
        bytes = [UInt8(ascii: "{")]
        jsonHeadHasMembers = !SubsonicWriter.writeJSONAttributes(element.attributes, first: true, to: &bytes)
        jsonHead = bytes
        bytes = []
        SubsonicWriter.writeJSONTail(element, first: false, to: &bytes)
        jsonTail = bytes
    }

    /// The bytes it was written as, both forms.
    var written: [UInt8] { xmlHead + xmlTail + jsonHead + jsonTail }

    /// How many bytes it keeps (both forms).
    var byteCount: Int { xmlHead.count + xmlTail.count + jsonHead.count + jsonTail.count }
}

/// A list item of a `SubsonicWrittenElement`: its fixed part and this answer's attributes, which
/// come after the fixed ones.
public struct SubsonicWrittenItem: Sendable, Equatable {
    public let element: SubsonicWrittenElement
    public var attributes: [(String, SubsonicValue)]

    public init(_ element: SubsonicWrittenElement, attributes: [(String, SubsonicValue)] = []) {
        self.element = element
        self.attributes = attributes
    }

    func writeJSON(to out: inout [UInt8]) {
        out.append(contentsOf: element.jsonHead)
        let first = SubsonicWriter.writeJSONAttributes(attributes, first: !element.jsonHeadHasMembers, to: &out)
        // The tail was written after a member: without any before it, its leading comma goes.
        if first, element.jsonTail.first == UInt8(ascii: ",") {
            out.append(contentsOf: element.jsonTail.dropFirst())
        } else {
            out.append(contentsOf: element.jsonTail)
        }
    }

    public static func == (lhs: SubsonicWrittenItem, rhs: SubsonicWrittenItem) -> Bool {
        (lhs.element === rhs.element || lhs.element.written == rhs.element.written)
            && lhs.attributes.elementsEqual(rhs.attributes) { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}
