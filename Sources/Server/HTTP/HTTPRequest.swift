import StreamShared

/// How a request's body is delimited (RFC 9112 section 6.3).
public enum RequestBodyFraming: Sendable, Equatable {
    case none
    /// `Content-Length`; values past `Int.max` saturate (they are refused anyway).
    case length(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
}

/// One parsed HTTP/1.x request head. Only a radio source reads a body; any other request that
/// has one is answered 413.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The request target in origin form (path and optional query, still percent-encoded); an
    /// absolute-form target arrives here without its scheme and authority. `*` and CONNECT's
    /// authority form stay as sent.
    public var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1 (and for 1.2 and later, which are served as 1.1).
    public var minorVersion: Int
    /// Header fields in order, names as sent.
    public var headers: [(name: String, value: String)]
    /// The `host[:port]` of an absolute-form target, which RFC 9112 section 3.2.2 puts before Host.
    public var authority: String?
    /// The body's framing, from Content-Length and Transfer-Encoding.
    public var bodyFraming: RequestBodyFraming
    /// The body of a small `application/x-www-form-urlencoded` or `application/json` POST, read whole by the event
    /// loop before the handler sees the request (`HTTPRequest.maxFormBodyBytes`); nil otherwise.
    public var formBody: [UInt8]?
    /// The connection's peer as the server accepted it (`1.2.3.4:5678`, `[::1]:5678`; "" when
    /// made by hand): who the access check and the failed-login back-off count a request against.
    public var peer: String = ""
    /// Signs the links a response hands out (`?exp=…&uid=…&sig=…`): set by the access check
    /// for a user's request to a playlist, so generic players can follow its links; nil: bare links.
    public var linkSigner: LinkSigner?

    public init(method: String, target: String, minorVersion: Int, headers: [(name: String, value: String)],
                authority: String? = nil, bodyFraming: RequestBodyFraming = .none) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
        self.authority = authority
        self.bodyFraming = bodyFraming
    }

    /// The peer's address without its port (`1.2.3.4`, `::1`).
    public var peerAddress: Substring {
        if peer.hasPrefix("["), let close = peer.firstIndex(of: "]") {
            return peer[peer.index(after: peer.startIndex)..<close]
        }
        if let colon = peer.lastIndex(of: ":") { return peer[..<colon] }
        return peer[...]
    }

    /// The target as logs may show it: the values of query parameters that carry credentials
    /// (`LoggedTarget.secretParameters`) replaced by `-`.
    public var loggedTarget: String { LoggedTarget.redact(target) }

    /// Whether a body follows the head.
    public var hasBody: Bool { bodyFraming != .none }

    /// Largest form body the event loop reads ahead of the handler (Subsonic clients POST their
    /// parameters, a playlist's song ids among them); a larger one is left to the handler, which refuses it.
    public static let maxFormBodyBytes = 256 * 1024

    /// The length of the form body to read before handling, when this is a POST of a small
    /// `application/x-www-form-urlencoded` or `application/json` body (OpenSubsonic's
    /// getTranscodeDecision posts its ClientInfo as JSON) with a Content-Length; nil otherwise.
    public var formBodyLength: Int? {
        guard method == "POST", case .length(let length) = bodyFraming, length <= Self.maxFormBodyBytes,
              let type = header("Content-Type"),
              HTTPSyntax.sameName(type.utf8.prefix(33), "application/x-www-form-urlencoded".utf8) || Self.isJSON(type) else { return nil }
        return length
    }

    /// Whether the body read ahead (`formBody`) is JSON rather than a form.
    public var formBodyIsJSON: Bool { formBody != nil && header("Content-Type").map(Self.isJSON) == true }

    static func isJSON(_ contentType: String) -> Bool {
        let type = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }
        var trimmed = type[...]
        while let last = trimmed.last, last == 0x20 || last == 0x09 { trimmed = trimmed.dropLast() }
        return HTTPSyntax.sameName(trimmed, "application/json".utf8)
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.minorVersion == rhs.minorVersion
            && lhs.authority == rhs.authority && lhs.bodyFraming == rhs.bodyFraming
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The first value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { Self.sameName($0.name, name) }?.value
    }

    /// All values of a header (for fields that may repeat), in order.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Field names compared ASCII case-insensitively, byte by byte (`HTTPSyntax.sameName`): no
    /// lowercased copies on every lookup of every request.
    static func sameName(_ a: String, _ b: String) -> Bool {
        HTTPSyntax.sameName(a.utf8, b.utf8)
    }

    /// Whether a comma-separated field value lists `token` (ASCII case-insensitive, optional
    /// whitespace around each element), read in place.
    static func listContains(_ value: String, token: String) -> Bool {
        let bytes = value.utf8
        var start = bytes.startIndex
        while true {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
            var element = bytes[start..<end]
            while let first = element.first, first == 0x20 || first == 0x09 { element = element.dropFirst() }
            while let last = element.last, last == 0x20 || last == 0x09 { element = element.dropLast() }
            if HTTPSyntax.sameName(element, token.utf8) { return true }
            if end == bytes.endIndex { return false }
            start = bytes.index(after: end)
        }
    }

    /// Whether the connection stays open after the response (RFC 9112 section 9.3).
    public var keepAlive: Bool {
        var keepAliveListed = false
        for field in headers where Self.sameName(field.name, "Connection") {
            if Self.listContains(field.value, token: "close") { return false }
            keepAliveListed = keepAliveListed || Self.listContains(field.value, token: "keep-alive")
        }
        return minorVersion == 0 ? keepAliveListed : true
    }

    /// The path part of the target, before any `?`.
    public var path: Substring {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target[...] }
        return target[..<mark]
    }

    /// The query string after `?`, if any.
    public var query: Substring? {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return target[target.utf8.index(after: mark)...]
    }

    /// Value of one `name=value` pair of the query (first match, not percent-decoded); "" for a
    /// pair without `=`. Scans the bytes: `&` and `=` are ASCII, so their places are valid
    /// string indices.
    public func queryValue(_ name: String) -> String? {
        guard let query else { return nil }
        let bytes = query.utf8
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            let equals = bytes[start..<end].firstIndex(of: UInt8(ascii: "="))
            if start < end, bytes[start..<(equals ?? end)].elementsEqual(name.utf8) {
                guard let equals else { return "" }
                return String(query[bytes.index(after: equals)..<end])
            }
            if end == bytes.endIndex { break }
            start = bytes.index(after: end)
        }
        return nil
    }
}

extension StringProtocol {
    /// The text with the given characters removed from both ends.
    package func trimmingCharacters(in set: String) -> String {
        var view = Substring(self)
        while let first = view.first, set.contains(first) { view = view.dropFirst() }
        while let last = view.last, set.contains(last) { view = view.dropLast() }
        return String(view)
    }
}

/// Logged request targets with their secrets taken out.
public enum LoggedTarget {
    /// Query parameters whose values are credentials: signed-URL signatures, tokens, API keys.
    /// Matched case-insensitively.
    public static let secretParameters: Set<String> = ["sig", "token", "access_token", "apikey", "password"]
    /// Subsonic's password, token and salt (`/rest/` only: `t` is a seek time elsewhere).
    public static let subsonicSecretParameters: Set<String> = ["p", "t", "s"]

    /// `target` with the value of each secret parameter replaced by `-`.
    public static func redact(_ target: String) -> String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        let pairs = target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false)
        var changed = false
        let subsonic = target.hasPrefix("/rest/")
        let redacted = pairs.map { pair -> Substring in
            guard let equals = pair.firstIndex(of: "=") else { return pair }
            let name = pair[..<equals]
            guard secretParameters.contains(name.lowercased()) || (subsonic && subsonicSecretParameters.contains(String(name))) else { return pair }
            changed = true
            return name + "=-"
        }
        guard changed else { return target }
        return String(target[...mark]) + redacted.joined(separator: "&")
    }
}

/// Makes the query that signs one link (a percent-encoded path) for the user a response is for.
public struct LinkSigner: Sendable {
    public let query: @Sendable (String) -> String

    public init(_ query: @escaping @Sendable (String) -> String) { self.query = query }

    /// `path` with its signing query appended.
    public func sign(_ path: String) -> String { path + "?" + query(path) }
}
