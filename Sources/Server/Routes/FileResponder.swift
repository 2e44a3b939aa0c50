/// Builds the response for a static file: conditional requests, ranges, chunked or
/// multipart bodies (RFC 9110 sections 13-14 and 8.8).
public enum FileResponder {
    /// The response for `request` on `file`, served as `contentType`.
    public static func respond(to request: HTTPRequest, file: OpenFile, contentType: String) -> HTTPResponse {
        let lastModified = HTTPDate.format(file.mtime)
        var headers: [(String, String)] = [
            ("Content-Type", contentType),
            ("Accept-Ranges", "bytes"),
            ("ETag", file.etag),
            ("Last-Modified", lastModified),
            ("Cache-Control", "no-cache"),
        ]
        // RFC 9110 13.2.2: If-None-Match first; If-Modified-Since only without it.
        if let ifNoneMatch = request.header("If-None-Match") {
            if etagListMatches(ifNoneMatch, file.etag, weak: true) {
                return HTTPResponse(status: 304, headers: headers.filter { $0.0 != "Content-Type" })
            }
        } else if let since = request.header("If-Modified-Since"), let date = HTTPDate.parse(since), file.mtime <= date {
            return HTTPResponse(status: 304, headers: headers.filter { $0.0 != "Content-Type" })
        }

        var rangeHeader = request.header("Range")
        if let ifRange = request.header("If-Range"), rangeHeader != nil {
            // A range applies only when the validator still matches (strong comparison for ETags).
            let matches: Bool
            if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
                matches = !ifRange.hasPrefix("W/") && ifRange == file.etag
            } else {
                matches = HTTPDate.parse(ifRange) == file.mtime
            }
            if !matches { rangeHeader = nil }
        }
        var response: HTTPResponse
        switch RangeRequest.parse(request.method == "GET" || request.method == "HEAD" ? rangeHeader : nil, size: file.size) {
        case .full:
            if request.minorVersion == 0 {
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
        if let kbps = request.queryValue("kbps").flatMap(Int.init), kbps > 0 {
            response.pacingBytesPerSecond = max(1, kbps * 1000 / 8)
        }
        return response
    }

    /// Whether a list like `"a", W/"b"` or `*` names `etag` (weak comparison ignores W/).
    static func etagListMatches(_ list: String, _ etag: String, weak: Bool) -> Bool {
        let trimmed = list.trimmingCharacters(in: " \t")
        if trimmed == "*" { return true }
        for item in trimmed.split(separator: ",") {
            var tag = item.trimmingCharacters(in: " \t")
            if tag.hasPrefix("W/") {
                guard weak else { continue }
                tag = String(tag.dropFirst(2))
            }
            if tag == etag { return true }
        }
        return false
    }
}
