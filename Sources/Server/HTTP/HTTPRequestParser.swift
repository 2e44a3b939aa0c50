/// Limits the parser enforces against hostile or broken clients.
public struct HTTPLimits: Sendable {
    /// Longest request line accepted (longer → 414).
    public var maxRequestLine = 8 * 1024
    /// Largest header block accepted, request line excluded (larger → 431).
    public var maxHeaderBytes = 16 * 1024
    /// Most header fields accepted (more → 431).
    public var maxHeaderCount = 100

    public init() {}
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
    /// A request with a body (Content-Length > 0 or Transfer-Encoding), which GET/HEAD do not have (413 keeps it simple).
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
        var index = bytes.startIndex
        // RFC 9112 2.2: ignore at least one empty line before the request line.
        var leading = 0
        while index < bytes.endIndex, bytes[index] == 0x0D || bytes[index] == 0x0A, leading < 4 {
            index += 1
            leading += 1
        }
        guard let lineEnd = findLineEnd(bytes, from: index, limit: limits.maxRequestLine) else {
            try rejectEarly(bytes[index...])
            if bytes.endIndex - index > limits.maxRequestLine { throw .uriTooLong }
            return nil
        }
        let requestLine = bytes[index..<lineEnd.contentEnd]
        let (method, target, minor) = try parseRequestLine(requestLine)
        index = lineEnd.next

        var headers: [(name: String, value: String)] = []
        let headerStart = index
        while true {
            guard let end = findLineEnd(bytes, from: index, limit: limits.maxHeaderBytes - (index - headerStart)) else {
                if bytes.endIndex - headerStart > limits.maxHeaderBytes { throw .headersTooLarge }
                return nil
            }
            if end.contentEnd == index {   // empty line: end of the head
                index = end.next
                break
            }
            if headers.count >= limits.maxHeaderCount { throw .headersTooLarge }
            headers.append(try parseHeaderLine(bytes[index..<end.contentEnd]))
            index = end.next
            if index - headerStart > limits.maxHeaderBytes { throw .headersTooLarge }
        }
        let request = HTTPRequest(method: method, target: target, minorVersion: minor, headers: headers)
        if let length = request.header("Content-Length") {
            guard let value = Int(length.trimmingCharacters(in: " \t")), value >= 0 else {
                throw .badRequest("bad Content-Length")
            }
            if value > 0 { throw .bodyNotAllowed }
        }
        if request.header("Transfer-Encoding") != nil { throw .bodyNotAllowed }
        if minor == 1 && request.header("Host") == nil { throw .badRequest("missing Host header") }
        return (request, index - bytes.startIndex)
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
            if !sawSpace && !Self.isTokenByte(b) { throw .badRequest("bad method") }
            if sawSpace && (b < 0x20 || b == 0x7F) && b != 0x0D { throw .badRequest("control byte in request line") }
        }
    }

    private struct LineEnd {
        var contentEnd: Int
        var next: Int
    }

    /// Finds the end of a line (CRLF, or a bare LF as RFC 9112 2.2 allows) within `limit` bytes.
    private func findLineEnd(_ bytes: ArraySlice<UInt8>, from start: Int, limit: Int) -> LineEnd? {
        let stop = min(bytes.endIndex, start + max(0, limit) + 2)
        var i = start
        while i < stop {
            if bytes[i] == 0x0A {
                let contentEnd = (i > start && bytes[i - 1] == 0x0D) ? i - 1 : i
                return LineEnd(contentEnd: contentEnd, next: i + 1)
            }
            i += 1
        }
        return nil
    }

    private func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (String, String, Int) {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .badRequest("malformed request line") }
        let method = parts[0], target = parts[1], version = parts[2]
        guard !method.isEmpty, method.allSatisfy(Self.isTokenByte) else { throw .badRequest("bad method") }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .badRequest("bad request target")
        }
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)) else {
            throw .badRequest("bad HTTP version")
        }
        let major = version[version.startIndex + 5], dot = version[version.startIndex + 6],
            minor = version[version.startIndex + 7]
        guard dot == UInt8(ascii: "."), (0x30...0x39).contains(major), (0x30...0x39).contains(minor) else {
            throw .badRequest("bad HTTP version")
        }
        guard major == UInt8(ascii: "1"), minor <= UInt8(ascii: "1") else { throw .versionNotSupported }
        return (String(decoding: method, as: UTF8.self), String(decoding: target, as: UTF8.self),
                Int(minor - 0x30))
    }

    private func parseHeaderLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .badRequest("header without colon") }
        let name = line[line.startIndex..<colon]
        // RFC 9112 5.1: no whitespace between name and colon; obs-fold is rejected.
        guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else { throw .badRequest("bad header name") }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            throw .badRequest("bad header value")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// RFC 9110 tchar.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }
}
