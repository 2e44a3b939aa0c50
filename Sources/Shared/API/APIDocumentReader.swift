/// Why an API document was refused: the typed error of every `decode` in `Sources/Shared/API`.
public enum APIDocumentError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The bytes are not JSON (or hold more values than the document may have).
    case malformed(JSONError)
    /// A member the document must have is absent (`member` names it, e.g. `points[3].t`).
    case missing(member: String)
    /// A member holds another type, or a number out of its range.
    case wrongType(member: String, expected: String)
    /// A list is longer than the document allows.
    case tooMany(member: String, limit: Int)

    public var description: String {
        switch self {
        case .malformed(let error): return "\(error)"
        case .missing(let member): return "missing member \(member)"
        case .wrongType(let member, let expected): return "\(member) is not \(expected)"
        case .tooMany(let member, let limit): return "\(member) has more than \(limit) items"
        }
    }
}

/// Reads typed members out of one parsed JSON object, naming the member in every error.
/// Members the reader is not asked about are ignored (a newer server may add some).
struct APIObjectReader {
    let members: [String: JSONValue]
    /// The member path of this object in its document ("" for the top level, "points[3]").
    let context: String

    init(_ value: JSONValue, context: String) throws(APIDocumentError) {
        guard case .object(let members) = value else {
            throw .wrongType(member: context.isEmpty ? "the document" : context, expected: "an object")
        }
        self.members = members
        self.context = context
    }

    /// Parses `bytes` with at most `maxValues` JSON values (so a hostile body's size in memory
    /// is bounded by the document's, not by its byte count) and reads the top-level object.
    static func parse(_ bytes: [UInt8], maxValues: Int) throws(APIDocumentError) -> JSONValue {
        do {
            return try JSONValue.parse(bytes, maxValues: maxValues)
        } catch {
            throw .malformed(error)
        }
    }

    func name(_ key: String) -> String { context.isEmpty ? key : context + "." + key }

    /// The member's value; `.missing` when absent.
    func value(_ key: String) throws(APIDocumentError) -> JSONValue {
        guard let value = members[key] else { throw .missing(member: name(key)) }
        return value
    }

    func string(_ key: String) throws(APIDocumentError) -> String {
        guard case .string(let text) = try value(key) else { throw .wrongType(member: name(key), expected: "a string") }
        return text
    }

    func optionalString(_ key: String) throws(APIDocumentError) -> String? {
        switch try value(key) {
        case .null: return nil
        case .string(let text): return text
        default: throw .wrongType(member: name(key), expected: "a string or null")
        }
    }

    func int(_ key: String) throws(APIDocumentError) -> Int {
        guard let number = try value(key).int else { throw .wrongType(member: name(key), expected: "a whole number") }
        return number
    }

    func optionalInt(_ key: String) throws(APIDocumentError) -> Int? {
        let value = try value(key)
        if value == .null { return nil }
        guard let number = value.int else { throw .wrongType(member: name(key), expected: "a whole number or null") }
        return number
    }

    /// `optionalInt`, an absent member read as null: for members added after a document's first
    /// version, which an older streamd does not write.
    func intIfPresent(_ key: String) throws(APIDocumentError) -> Int? {
        members[key] == nil ? nil : try optionalInt(key)
    }

    /// `optionalDouble`, an absent member read as null (see `intIfPresent`).
    func doubleIfPresent(_ key: String) throws(APIDocumentError) -> Double? {
        members[key] == nil ? nil : try optionalDouble(key)
    }

    func double(_ key: String) throws(APIDocumentError) -> Double {
        guard let number = try value(key).double else { throw .wrongType(member: name(key), expected: "a number") }
        return number
    }

    func optionalDouble(_ key: String) throws(APIDocumentError) -> Double? {
        let value = try value(key)
        if value == .null { return nil }
        guard let number = value.double else { throw .wrongType(member: name(key), expected: "a number or null") }
        return number
    }

    func bool(_ key: String) throws(APIDocumentError) -> Bool {
        guard case .bool(let flag) = try value(key) else { throw .wrongType(member: name(key), expected: "true or false") }
        return flag
    }

    /// An array member of at most `limit` items.
    func array(_ key: String, limit: Int) throws(APIDocumentError) -> [JSONValue] {
        guard case .array(let items) = try value(key) else { throw .wrongType(member: name(key), expected: "an array") }
        guard items.count <= limit else { throw .tooMany(member: name(key), limit: limit) }
        return items
    }
}
