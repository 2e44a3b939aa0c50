/// Why an HTTP response head or its framing is malformed (RFC 9112); every case is bad input
/// from the server, never a reason to trap.
public enum HTTPResponseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The status line is not `HTTP/1.x NNN reason` (or SHOUTcast's `ICY NNN reason`).
    case badStatusLine
    /// An HTTP version other than 1.0 and 1.1 (a client speaking HTTP/1.1 cannot read it).
    case unsupportedVersion
    /// A header line without a colon, with an empty or non-token name, or with space before the colon.
    case badHeaderLine
    /// A control character (NUL, a bare CR) inside the head.
    case badCharacter
    /// The head is longer than `HTTPResponseHead.maxHeadBytes`.
    case headTooLarge
    /// More header lines than `HTTPResponseHead.maxFields`.
    case tooManyFields
    /// A Content-Length that is not digits, is above `InputLimits.maxBytes`, or disagrees with another.
    case badContentLength
    /// A Content-Range that is not `bytes first-last/total` (or `bytes */total`) with first <= last < total.
    case badContentRange
    /// A chunked body with a bad size line, a missing CRLF or an overlong line.
    case badChunkedBody

    public var description: String {
        switch self {
        case .badStatusLine: return "malformed status line"
        case .unsupportedVersion: return "HTTP version other than 1.0/1.1"
        case .badHeaderLine: return "malformed header line"
        case .badCharacter: return "control character in the response head"
        case .headTooLarge: return "response head larger than \(HTTPResponseHead.maxHeadBytes) bytes"
        case .tooManyFields: return "more than \(HTTPResponseHead.maxFields) header lines"
        case .badContentLength: return "invalid or conflicting Content-Length"
        case .badContentRange: return "invalid Content-Range"
        case .badChunkedBody: return "malformed chunked body"
        }
    }
}

/// Header fields in the order received, looked up by name without regard to case.
public struct HTTPHeaderFields: Sendable, Equatable {
    /// Every field as received (names as the server spelled them, values without surrounding spaces).
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public mutating func append(name: String, value: String) { fields.append((name, value)) }

    /// The first value of the field `name` (any case), nil when absent.
    public subscript(_ name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    /// Every value of the field `name` (any case), in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// ASCII case-insensitive comparison (field names are tokens: ASCII only).
    static func sameName(_ a: String, _ b: String) -> Bool { HTTPSyntax.sameName(a.utf8, b.utf8) }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.fields.count == rhs.fields.count && zip(lhs.fields, rhs.fields).allSatisfy { $0 == $1 }
    }
}

/// The status line and header fields of an HTTP/1.x response, or of a SHOUTcast server's
/// `ICY 200 OK`, which is read as an HTTP/1.0 200 (RFC 9112 sections 4 and 5).
public struct HTTPResponseHead: Sendable, Equatable {
    /// The protocol named in the status line.
    public enum Version: Sendable, Equatable {
        case http10, http11
        /// SHOUTcast's `ICY` status line: HTTP/1.0 semantics (the body runs until the connection closes).
        case icy
    }

    /// How the body that follows the head is delimited (RFC 9112 section 6.3).
    public enum BodyFraming: Sendable, Equatable {
        /// No body (a HEAD answer, 1xx, 204, 304).
        case none
        /// Exactly this many bytes.
        case length(Int)
        /// `Transfer-Encoding: chunked`.
        case chunked
        /// Until the server closes the connection.
        case untilClose
    }

    /// `Content-Range: bytes first-last/total`; `total` nil for `/*`, `range` nil for `bytes */total`.
    public struct ContentRange: Sendable, Equatable {
        public var range: ClosedRange<Int>?
        public var total: Int?
    }

    public var version: Version
    public var status: Int
    public var reason: String
    public var fields: HTTPHeaderFields

    /// Longest head accepted, status line to the empty line.
    public static let maxHeadBytes = 64 * 1024
    /// Most header lines accepted.
    public static let maxFields = 128

    /// The first value of header `name`, any case.
    public subscript(_ name: String) -> String? { fields[name] }

    /// Parses the head at the start of `bytes`. nil means the empty line that ends it has not
    /// arrived yet; a thrown error means these bytes are not a valid head. Up to four empty lines
    /// before the status line (left over from an earlier response) are skipped.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(HTTPResponseError) -> (head: HTTPResponseHead, consumed: Int)? {
        let start = HTTPHeadLine.skipEmptyLines(in: bytes, from: bytes.startIndex)
        guard let statusEnd = HTTPHeadLine.find(in: bytes, from: start, limit: maxHeadBytes) else {
            if bytes.endIndex - start > maxHeadBytes { throw .headTooLarge }
            return nil
        }
        let statusLine = bytes[start..<statusEnd.contentEnd]
        guard !statusLine.contains(where: { $0 == 0x0D || $0 == 0x00 }) else { throw .badCharacter }
        var head = try parseStatusLine(statusLine)
        // The field lines, read by the same code as a request's, with a user agent's rules:
        // obs-fold becomes a space (RFC 9112 section 5.2), other control bytes in values stay.
        let rules = HTTPFieldRules(maxFields: maxFields, maxBytes: maxHeadBytes - (statusEnd.next - start),
                                   unfoldsLines: true, keepsControlBytes: true)
        var lines = HTTPFieldLineReader(from: statusEnd.next, rules: rules)
        while true {
            let line: HTTPFieldLineReader.Line
            do { line = try lines.next(in: bytes) } catch { throw refusal(error) }
            switch line {
            case .field(let name, let value): head.fields.append(name: text(bytes[name]), value: text(bytes[value]))
            case .continuation(let more): head.fields.continueLastValue(with: text(bytes[more]))
            case .end(let next): return (head, next - bytes.startIndex)
            case .incomplete: return nil
            }
        }
    }

    /// The response error for a field line the reader refused.
    private static func refusal(_ error: HTTPFieldError) -> HTTPResponseError {
        switch error {
        case .noColon, .badName, .obsFold: return .badHeaderLine
        case .badValue: return .badCharacter
        case .tooManyFields: return .tooManyFields
        case .tooLarge: return .headTooLarge
        }
    }

    /// `HTTP/1.1 206 Partial Content`, `HTTP/1.0 200` (no reason), `ICY 200 OK`.
    private static func parseStatusLine(_ line: ArraySlice<UInt8>) throws(HTTPResponseError) -> HTTPResponseHead {
        let version: Version
        var rest: ArraySlice<UInt8>
        if line.starts(with: Array("ICY ".utf8)) {
            version = .icy
            rest = line.dropFirst(4)
        } else if line.starts(with: Array("HTTP/".utf8)) {
            let number = line.dropFirst(5).prefix { $0 != 0x20 }
            switch Array(number) {
            case Array("1.1".utf8): version = .http11
            case Array("1.0".utf8): version = .http10
            default:
                guard number.count == 3, number.allSatisfy({ $0 == UInt8(ascii: ".") || isDigit($0) }) else {
                    throw .badStatusLine
                }
                throw .unsupportedVersion
            }
            rest = line.dropFirst(5 + number.count)
            guard rest.first == 0x20 else { throw .badStatusLine }
            rest = rest.dropFirst()
        } else {
            throw .badStatusLine
        }
        let code = rest.prefix(3)
        guard code.count == 3, code.allSatisfy(isDigit), rest.count == 3 || rest.dropFirst(3).first == 0x20 else {
            throw .badStatusLine
        }
        let status = code.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard status >= 100 else { throw .badStatusLine }
        return HTTPResponseHead(version: version, status: status, reason: text(rest.dropFirst(4)), fields: HTTPHeaderFields())
    }

    public init(version: Version, status: Int, reason: String, fields: HTTPHeaderFields) {
        self.version = version
        self.status = status
        self.reason = reason
        self.fields = fields
    }

    /// Whether the connection can carry another request after this response's body.
    public var keepsAlive: Bool {
        let tokens = fields.values("Connection").flatMap { $0.split(separator: ",") }.map { trimmedText($0).lowercased() }
        switch version {
        case .http11: return !tokens.contains("close")
        case .http10: return tokens.contains("keep-alive")
        case .icy: return false
        }
    }

    /// The Content-Length, nil when absent; equal repeated values are one value (section 6.3).
    public func contentLength() throws(HTTPResponseError) -> Int? {
        var length: Int?
        for value in fields.values("Content-Length") {
            for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = trimmedText(part)
                guard !digits.isEmpty, digits.utf8.count <= 16, digits.utf8.allSatisfy(Self.isDigit),
                      let n = Int(digits), n <= InputLimits.maxBytes else { throw .badContentLength }
                if let length, length != n { throw .badContentLength }
                length = n
            }
        }
        return length
    }

    /// How the body is delimited; `requestWasHEAD` for the answer to a HEAD request.
    public func bodyFraming(requestWasHEAD: Bool = false) throws(HTTPResponseError) -> BodyFraming {
        if requestWasHEAD || status < 200 || status == 204 || status == 304 { return .none }
        let codings = fields.values("Transfer-Encoding").flatMap { $0.split(separator: ",") }.map { trimmedText($0).lowercased() }
        if let last = codings.last, version != .http10 {
            // Chunked must be the final coding; otherwise the body runs until the close (section 6.3).
            return last == "chunked" ? .chunked : .untilClose
        }
        if let length = try contentLength() { return .length(length) }
        return .untilClose
    }

    /// The parsed Content-Range, nil when absent.
    public func contentRange() throws(HTTPResponseError) -> ContentRange? {
        guard let value = fields["Content-Range"] else { return nil }
        var rest = Substring(value)
        guard rest.lowercased().hasPrefix("bytes"), rest.count > 5 else { throw .badContentRange }
        rest = rest.dropFirst(5).drop { $0 == " " }
        guard let slash = rest.firstIndex(of: "/") else { throw .badContentRange }
        let rangeText = rest[..<slash], totalText = rest[rest.index(after: slash)...]
        let total: Int?
        if totalText == "*" { total = nil } else {
            guard let n = Self.byteCount(totalText) else { throw .badContentRange }
            total = n
        }
        if rangeText == "*" {
            guard total != nil else { throw .badContentRange }
            return ContentRange(range: nil, total: total)
        }
        let ends = rangeText.split(separator: "-", omittingEmptySubsequences: false)
        guard ends.count == 2, let first = Self.byteCount(ends[0]), let last = Self.byteCount(ends[1]), first <= last else {
            throw .badContentRange
        }
        if let total, last >= total { throw .badContentRange }
        return ContentRange(range: first...last, total: total)
    }

    /// Digits only, at most `InputLimits.maxBytes`.
    static func byteCount(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 16, text.utf8.allSatisfy(isDigit),
              let n = Int(text), n <= InputLimits.maxBytes else { return nil }
        return n
    }

    private static func isDigit(_ byte: UInt8) -> Bool { HTTPSyntax.isDigit(byte) }

    /// Header text: UTF-8 where it is, each invalid byte shown as U+FFFD (obs-text is allowed in values).
    private static func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }

    private func trimmedText(_ text: Substring) -> String { Self.trimmedText(text) }

    private static func trimmedText(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

extension HTTPHeaderFields {
    /// An obs-fold line: its text joins the last value after a space (RFC 9112 section 5.2).
    mutating func continueLastValue(with more: String) {
        guard !fields.isEmpty else { return }
        fields[fields.count - 1].value += " " + more
    }
}
