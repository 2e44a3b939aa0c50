import StreamHTTP

/// A Subsonic error: its code (the protocol's table) and a message; sent as HTTP 200 with
/// `status="failed"`, which is how every client reads a refusal.
public struct SubsonicError: Error, Sendable, Equatable {
    public var code: Int
    public var message: String

    public init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    /// 0: a generic error (also the answer of the calls streamd does not implement).
    static func generic(_ message: String) -> SubsonicError { SubsonicError(0, message) }
    /// 10: a required parameter is missing.
    static func missing(_ name: String) -> SubsonicError { SubsonicError(10, "Required parameter is missing: \(name)") }
    /// 10 too for a parameter that is there but not a value the call takes (clients show the message).
    static func invalid(_ name: String, _ why: String) -> SubsonicError { SubsonicError(10, "Invalid parameter \(name): \(why)") }
    /// 40: wrong username or password (never which of the two).
    static let wrongCredentials = SubsonicError(40, "Wrong username or password")
    /// 50: the user may not do this.
    static func notAuthorized(_ what: String) -> SubsonicError { SubsonicError(50, "User is not authorized for \(what)") }
    /// 70: the data asked for is not there.
    static func notFound(_ what: String) -> SubsonicError { SubsonicError(70, "\(what) not found") }

    var element: SubsonicElement {
        var error = SubsonicElement([("code", .int(code)), ("message", .string(message))])
        error.set("helpUrl", nil)
        var body = SubsonicElement()
        body.add("error", error)
        return body
    }
}

/// The wire form asked for with `f`.
enum SubsonicFormat: Sendable, Equatable {
    case xml
    case json
    /// JSON wrapped in a call of this function (a checked JavaScript identifier).
    case jsonp(String)
}

/// The parameters of one Subsonic call: the query's and a form POST's, decoded, in order (some
/// repeat: `id` of star, `songId` of createPlaylist).
struct SubsonicParameters: Sendable {
    var pairs: [(String, String)] = []

    /// Longest value taken (a query, a comment, a playlist's name); longer ones are cut off as bad.
    static let maxValueBytes = 4096

    init(query: Substring?, form: [UInt8]?) throws(SubsonicError) {
        if let query { try Self.parse(query, into: &pairs) }
        if let form { try Self.parse(Substring(decoding: form, as: UTF8.self), into: &pairs) }
    }

    init(pairs: [(String, String)]) { self.pairs = pairs }

    static func parse(_ text: Substring, into pairs: inout [(String, String)]) throws(SubsonicError) {
        switch QueryValue.pairs(text, maxValueBytes: maxValueBytes) {
        case .success(let more): pairs += more
        case .failure(let error): throw .invalid(error.name, error.why)
        }
    }

    func string(_ name: String) -> String? { pairs.first { $0.0 == name }?.1 }

    func all(_ name: String) -> [String] { pairs.filter { $0.0 == name }.map(\.1) }

    func required(_ name: String) throws(SubsonicError) -> String {
        guard let value = string(name), !value.isEmpty else { throw .missing(name) }
        return value
    }

    func int(_ name: String, default fallback: Int? = nil, in range: ClosedRange<Int>) throws(SubsonicError) -> Int? {
        guard let text = string(name), !text.isEmpty else { return fallback }
        var digits = Substring(text)
        var negative = false
        if digits.first == "-" { negative = true; digits = digits.dropFirst() }
        guard let magnitude = QueryValue.integer(String(digits), in: 0...Int(Int64.max / 2)) else {
            throw .invalid(name, "not a whole number")
        }
        let value = negative ? -magnitude : magnitude
        guard range.contains(value) else { throw .invalid(name, "out of \(range.lowerBound)...\(range.upperBound)") }
        return value
    }

    /// A boolean, read without regard to case (`true`, `True`, `TRUE`, `1`; clients differ).
    func bool(_ name: String) throws(SubsonicError) -> Bool? {
        guard let text = string(name), !text.isEmpty else { return nil }
        switch text.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw .invalid(name, "not a boolean")
        }
    }

    /// The wire form: `f=xml` (default), `json`, or `jsonp` with `callback` a JavaScript identifier.
    func format() -> Result<SubsonicFormat, SubsonicError> {
        switch string("f")?.lowercased() {
        case nil, "", "xml": return .success(.xml)
        case "json": return .success(.json)
        case "jsonp":
            guard let callback = string("callback"), Self.isJavaScriptIdentifier(callback) else {
                return .failure(.invalid("callback", "jsonp needs a callback that is a JavaScript identifier"))
            }
            return .success(.jsonp(callback))
        default: return .success(.xml)
        }
    }

    /// `name` or a dotted path of names (`app.cb_1`), each ASCII letters, digits, `_` and `$`,
    /// not starting with a digit; at most 128 bytes. Nothing else may end up in the script.
    static func isJavaScriptIdentifier(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 128 else { return false }
        return text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
            guard let first = part.utf8.first, !(first >= 0x30 && first <= 0x39) else { return false }
            return part.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F || $0 == 0x24 }
        }
    }
}
