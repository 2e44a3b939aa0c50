import StreamShared

/// Limits the parser enforces against hostile or broken clients.
public struct HTTPLimits: Sendable {
    /// Longest request line accepted (longer → 414).
    public var maxRequestLine = 8 * 1024
    /// Largest header block accepted, request line excluded (larger → 431).
    public var maxHeaderBytes = 16 * 1024
    /// Most header fields accepted (more → 431).
    public var maxHeaderCount = 100

    public init() {}

    /// The field-line rules of a request head: these limits, and what a server refuses
    /// (obs-fold, control bytes in values).
    var fieldRules: HTTPFieldRules {
        HTTPFieldRules(maxFields: maxHeaderCount, maxBytes: maxHeaderBytes, unfoldsLines: false, keepsControlBytes: false)
    }
}

/// Why a request was refused; each case maps to the status the server answers with.
public enum HTTPParseError: Error, Equatable, Sendable {
    /// Malformed request line or header (400).
    case badRequest(String)
    /// Request line longer than the limit (414).
    case uriTooLong
    /// Header block too large or too many fields (431).
    case headersTooLarge
    /// A version other than HTTP/1.0 or 1.1 (505).
    case versionNotSupported
    /// A body the server does not take: any but a radio source's, or a transfer coding other
    /// than chunked (413 keeps it simple).
    case bodyNotAllowed

    /// The HTTP status code to answer with.
    public var status: Int {
        switch self {
        case .badRequest: return 400
        case .uriTooLong: return 414
        case .headersTooLarge: return 431
        case .versionNotSupported: return 505
        case .bodyNotAllowed: return 413
        }
    }
}

/// Incremental HTTP/1.1 request-head parser (RFC 9112): feed it the bytes read so far and it
/// returns a request and how many bytes it used, or nil when the head is not complete yet.
/// Pipelined requests are parsed one after another from the same buffer.
public struct HTTPRequestParser: Sendable {
    public var limits: HTTPLimits

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Parses one request head from the start of `bytes`.
    /// - Returns: the request and the number of bytes consumed, or nil if more bytes are needed.
    public func parse(_ bytes: ArraySlice<UInt8>) throws(HTTPParseError) -> (HTTPRequest, consumed: Int)? {
        var index = HTTPHeadLine.skipEmptyLines(in: bytes, from: bytes.startIndex)
        guard let lineEnd = HTTPHeadLine.find(in: bytes, from: index, limit: limits.maxRequestLine) else {
            try rejectEarly(bytes[index...])
            if bytes.endIndex - index > limits.maxRequestLine { throw .uriTooLong }
            return nil
        }
        let requestLine = bytes[index..<lineEnd.contentEnd]
        let (method, target, minor) = try parseRequestLine(requestLine)

        // The field lines, read by the same code as a response's (StreamShared), with the rules
        // a server keeps: no obs-fold, no control bytes in values.
        var lines = HTTPFieldLineReader(from: lineEnd.next, rules: limits.fieldRules)
        var headers: [(name: String, value: String)] = []
        reading: while true {
            let line: HTTPFieldLineReader.Line
            do { line = try lines.next(in: bytes) } catch { throw Self.refusal(error) }
            switch line {
            case .field(let name, let value):
                headers.append((String(decoding: bytes[name], as: UTF8.self), String(decoding: bytes[value], as: UTF8.self)))
            case .continuation:
                throw Self.refusal(.obsFold)   // the server's rules refuse it before this
            case .end(let next):
                index = next
                break reading
            case .incomplete:
                return nil
            }
        }
        var request = HTTPRequest(method: method, target: target.path, minorVersion: minor, headers: headers,
                                  authority: target.authority)
        request.bodyFraming = try Self.checkFraming(request)
        try Self.checkHost(request)
        return (request, index - bytes.startIndex)
    }

    /// RFC 9112 section 6: every Content-Length value is digits and all agree; Transfer-Encoding
    /// never comes with it (request smuggling), and its only coding taken is `chunked`. Whether
    /// the body is wanted is the server's decision (only a radio source's is).
    static func checkFraming(_ request: HTTPRequest) throws(HTTPParseError) -> RequestBodyFraming {
        let lengths = request.headerValues("Content-Length")
        let hasTransferEncoding = !request.headerValues("Transfer-Encoding").isEmpty
        if !lengths.isEmpty {
            if hasTransferEncoding { throw .badRequest("Transfer-Encoding together with Content-Length") }
            var seen: Substring?
            for field in lengths {
                for item in field.split(separator: ",", omittingEmptySubsequences: false) {
                    let value = Substring(item.trimmingCharacters(in: " \t"))
                    guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                        throw .badRequest("bad Content-Length")
                    }
                    // Compared as numbers of any size: "05" and "5" agree, no conversion can overflow.
                    let digits = value.drop { $0 == "0" }
                    if let seen, seen != digits { throw .badRequest("differing Content-Length values") }
                    seen = digits
                }
            }
            guard let digits = seen, !digits.isEmpty else { return .none }
            // More than 18 digits cannot be an Int: saturate, a body that size is refused anyway.
            return .length(digits.count > 18 ? Int.max : Int(digits) ?? Int.max)
        }
        if hasTransferEncoding {
            let codings = request.headerValues("Transfer-Encoding")
                .flatMap { $0.split(separator: ",") }
                .map { $0.trimmingCharacters(in: " \t").lowercased() }
                .filter { !$0.isEmpty }
            guard codings == ["chunked"] else { throw .bodyNotAllowed }
            return .chunked
        }
        return .none
    }

    /// RFC 9112 section 3.2: exactly one Host in HTTP/1.1, at most one in 1.0, and a valid value.
    static func checkHost(_ request: HTTPRequest) throws(HTTPParseError) {
        let hosts = request.headerValues("Host")
        if hosts.count > 1 { throw .badRequest("more than one Host header") }
        if request.minorVersion >= 1 && hosts.isEmpty { throw .badRequest("missing Host header") }
        if let host = hosts.first, !isValidHost(Substring(host)) { throw .badRequest("invalid Host header") }
        if let authority = request.authority, authority.isEmpty || !isValidHost(Substring(authority)) {
            throw .badRequest("invalid authority in the request target")
        }
    }

    /// `uri-host [ ":" port ]` (RFC 3986 section 3.2.2, the syntax `HTTPAuthority` reads);
    /// empty is valid (RFC 9112 section 3.2).
    static func isValidHost(_ value: Substring) -> Bool {
        HTTPAuthority(parsing: value) != nil
    }

    /// Refuses an incomplete request line that can already be seen to be wrong (binary
    /// junk, a TLS handshake), instead of waiting for the head timeout.
    private func rejectEarly(_ partial: ArraySlice<UInt8>) throws(HTTPParseError) {
        var sawSpace = false
        for (i, b) in partial.prefix(limits.maxRequestLine).enumerated() {
            if b == 0x20 {
                if i == 0 { throw .badRequest("request line starts with a space") }
                sawSpace = true
                continue
            }
            if !sawSpace && !HTTPSyntax.isTokenByte(b) { throw .badRequest("bad method") }
            if sawSpace && (b < 0x20 || b == 0x7F) && b != 0x0D { throw .badRequest("control byte in request line") }
        }
    }

    /// A request target taken apart (RFC 9112 section 3.2).
    struct Target {
        /// Origin form: the path and query; `*` and authority form stay as sent.
        var path: String
        /// The host and port of an absolute-form target.
        var authority: String?
    }

    private func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (String, Target, Int) {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .badRequest("malformed request line") }
        let method = parts[0], target = parts[1], version = parts[2]
        guard !method.isEmpty, method.allSatisfy(HTTPSyntax.isTokenByte) else { throw .badRequest("bad method") }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .badRequest("bad request target")
        }
        let minor = try Self.parseVersion(version)
        let methodName = String(decoding: method, as: UTF8.self)
        return (methodName, try Self.parseTarget(String(decoding: target, as: UTF8.self), method: methodName), minor)
    }

    /// `HTTP/1.x` gives x, with any x above 1 served as 1.1 (RFC 9110 section 6.2: same major
    /// version, highest minor we support); another major version is 505, anything else 400.
    static func parseVersion(_ version: ArraySlice<UInt8>) throws(HTTPParseError) -> Int {
        guard version.starts(with: Array("HTTP/".utf8)) else { throw .badRequest("bad HTTP version") }
        let number = version.dropFirst(5)
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        guard let major = number.first, isDigit(major) else { throw .badRequest("bad HTTP version") }
        if number.count == 1 {
            // "HTTP/2" or "HTTP/3": a version we do not speak rather than a malformed one.
            guard major >= UInt8(ascii: "2") else { throw .badRequest("bad HTTP version") }
            throw .versionNotSupported
        }
        guard number.count == 3, number[number.startIndex + 1] == UInt8(ascii: "."),
              isDigit(number[number.startIndex + 2]) else {
            throw .badRequest("bad HTTP version")
        }
        let minor = number[number.startIndex + 2]
        guard major == UInt8(ascii: "1") else { throw .versionNotSupported }
        return minor == UInt8(ascii: "0") ? 0 : 1
    }

    /// Origin form as is; absolute form (`http://host/path`, RFC 9112 section 3.2.2) split into
    /// its authority and an origin-form path; `*` only for OPTIONS and authority form only for CONNECT.
    static func parseTarget(_ target: String, method: String) throws(HTTPParseError) -> Target {
        // A fragment is never sent (RFC 9112 section 3.2); '#' here means a broken client.
        if target.utf8.contains(UInt8(ascii: "#")) { throw .badRequest("fragment in the request target") }
        if target.hasPrefix("/") { return Target(path: target) }
        if target == "*" {
            guard method == "OPTIONS" else { throw .badRequest("'*' target is for OPTIONS only") }
            return Target(path: target)
        }
        let lower = target.lowercased()
        for scheme in ["http://", "https://"] where lower.hasPrefix(scheme) {
            let afterScheme = target.dropFirst(scheme.count)
            let end = afterScheme.firstIndex { $0 == "/" || $0 == "?" } ?? afterScheme.endIndex
            let authority = afterScheme[..<end]
            if authority.contains("@") { throw .badRequest("userinfo in the request target") }
            let rest = afterScheme[end...]
            return Target(path: rest.hasPrefix("/") ? String(rest) : "/" + rest, authority: String(authority))
        }
        if method == "CONNECT" { return Target(path: target) }
        throw .badRequest("bad request target")
    }

    /// The status a field-line refusal is answered with: 431 for the limits, 400 for the rest.
    static func refusal(_ error: HTTPFieldError) -> HTTPParseError {
        switch error {
        case .tooManyFields, .tooLarge: return .headersTooLarge
        case .noColon: return .badRequest("header without colon")
        case .badName: return .badRequest("bad header name")
        case .badValue: return .badRequest("bad header value")
        case .obsFold: return .badRequest("folded header line")
        }
    }
}
