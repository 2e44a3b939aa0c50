/// How a whole-file 200 is framed on HTTP/1.1.
public enum WholeFileFraming: Sendable {
    /// `Transfer-Encoding: chunked` (the default).
    case chunked
    /// `Content-Length`, for clients that seek only when they know the size (`streamd --content-length`).
    case contentLength
}

/// Builds the response for a static file: conditional requests, ranges, chunked or
/// multipart bodies (RFC 9110 sections 13-14 and 8.8).
public enum FileResponder {
    /// Accepted `?kbps=` pacing rates: at 1,000,000 kbit/s pacing is moot, and the byte rate
    /// `kbps * 125` stays far from any overflow.
    public static let kbpsRange = 1...1_000_000

    /// The response for `request` on `file`, served as `contentType`.
    public static func respond(to request: HTTPRequest, file: OpenFile, contentType: String,
                               framing: WholeFileFraming = .chunked) -> HTTPResponse {
        var pace: Int?
        if let text = request.queryValue("kbps") {
            guard let kbps = QueryValue.integer(text, in: kbpsRange) else {
                return .error(400, "kbps must be a whole number in \(kbpsRange.lowerBound)...\(kbpsRange.upperBound)")
            }
            pace = kbps * 1000 / 8
        }
        let lastModified = HTTPDate.format(file.mtime)
        var headers: [(String, String)] = [
            ("Content-Type", contentType),
            ("Accept-Ranges", "bytes"),
            ("ETag", file.etag),
            ("Last-Modified", lastModified),
            ("Cache-Control", "no-cache"),
        ]
        var rangeHeader = request.header("Range")
        switch Precondition.evaluate(request, etag: file.etag, lastModified: file.mtime) {
        case .failed:
            return .error(412, "precondition failed")
        case .notModified:
            return HTTPResponse(status: 304, headers: headers.filter { $0.0 != "Content-Type" })
        case .proceed(let rangeApplies):
            if !rangeApplies { rangeHeader = nil }
        }
        var response: HTTPResponse
        switch RangeRequest.parse(request.method == "GET" || request.method == "HEAD" ? rangeHeader : nil, size: file.size) {
        case .full:
            // HTTP/1.0 cannot take chunked; a HEAD sends no body, so it can state the length the
            // chunked GET would carry (RFC 9110 section 8.6).
            if request.minorVersion == 0 || framing == .contentLength || request.method == "HEAD" {
                headers.append(("Content-Length", String(file.size)))
                response = HTTPResponse(status: 200, headers: headers,
                                        body: FixedBody(file.size > 0 ? [.file(file, offset: 0, length: file.size)] : []))
            } else {
                headers.append(("Transfer-Encoding", "chunked"))
                response = HTTPResponse(status: 200, headers: headers, body: ChunkedFileBody(file: file, range: 0..<file.size))
            }
        case .unsatisfiable:
            var error = HTTPResponse.error(416, "range not satisfiable")
            error.headers.append(("Content-Range", "bytes */\(file.size)"))
            return error
        case .ranges(let ranges) where ranges.count == 1:
            let range = ranges[0]
            headers.append(("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(file.size)"))
            headers.append(("Content-Length", String(range.count)))
            response = HTTPResponse(status: 206, headers: headers,
                                    body: FixedBody([.file(file, offset: range.lowerBound, length: range.count)]))
        case .ranges(let ranges):
            let boundary = "streamd-" + String(UInt64(file.size) &* 0x9E37_79B9 ^ UInt64(file.mtime), radix: 36)
            var parts: [BodyPart] = []
            var length = 0
            for range in ranges {
                let partHead = Array(("\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\n"
                    + "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(file.size)\r\n\r\n").utf8)
                parts.append(.bytes(partHead))
                parts.append(.file(file, offset: range.lowerBound, length: range.count))
                length += partHead.count + range.count
            }
            let closing = Array("\r\n--\(boundary)--\r\n".utf8)
            parts.append(.bytes(closing))
            length += closing.count
            headers[0] = ("Content-Type", "multipart/byteranges; boundary=\(boundary)")
            headers.append(("Content-Length", String(length)))
            response = HTTPResponse(status: 206, headers: headers, body: FixedBody(parts))
        }
        response.pacingBytesPerSecond = pace
        return response
    }
}
