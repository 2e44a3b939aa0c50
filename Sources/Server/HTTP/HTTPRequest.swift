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

    public init(method: String, target: String, minorVersion: Int, headers: [(name: String, value: String)],
                authority: String? = nil, bodyFraming: RequestBodyFraming = .none) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
        self.authority = authority
        self.bodyFraming = bodyFraming
    }

    /// Whether a body follows the head.
    public var hasBody: Bool { bodyFraming != .none }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.minorVersion == rhs.minorVersion
            && lhs.authority == rhs.authority && lhs.bodyFraming == rhs.bodyFraming
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The first value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// All values of a header (for fields that may repeat), in order.
    public func headerValues(_ name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// Whether the connection stays open after the response (RFC 9112 section 9.3).
    public var keepAlive: Bool {
        let tokens = headerValues("Connection").flatMap { $0.lowercased().split(separator: ",") }
            .map { $0.trimmingCharacters(in: " \t") }
        if tokens.contains("close") { return false }
        if minorVersion == 0 { return tokens.contains("keep-alive") }
        return true
    }

    /// The path part of the target, before any `?`.
    public var path: Substring {
        target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    /// The query string after `?`, if any.
    public var query: Substring? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        return target[target.index(after: mark)...]
    }

    /// Value of one `name=value` pair of the query (first match, not percent-decoded).
    public func queryValue(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first.map(String.init) == name { return parts.count > 1 ? String(parts[1]) : "" }
        }
        return nil
    }
}

extension StringProtocol {
    /// The text with the given characters removed from both ends.
    func trimmingCharacters(in set: String) -> String {
        var view = Substring(self)
        while let first = view.first, set.contains(first) { view = view.dropFirst() }
        while let last = view.last, set.contains(last) { view = view.dropLast() }
        return String(view)
    }
}
