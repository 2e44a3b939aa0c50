extension HTTPResponse {
    /// A JSON document (`/api/*`) with a strong ETag over its bytes and `Cache-Control: no-cache`,
    /// so a client revalidates and gets 304 while the catalog is unchanged; If-Match is honoured too.
    /// `headers` (a list's `X-Total-Count`) go out with it, also on a 304, and are part of the ETag.
    static func json(_ text: String, for request: HTTPRequest, headers: [(String, String)] = []) -> HTTPResponse {
        generated(Array(text.utf8), contentType: "application/json", headers: headers, for: request)
    }

    /// A generated document (JSON, a playlist, a cover picture) with the JSON answers' validators:
    /// a strong ETag over its bytes and `headers` (or `etag` when the caller has one that changes
    /// with them), `Cache-Control: no-cache`, 304 on a matching If-None-Match, 412 on a failed If-Match.
    static func generated(_ body: [UInt8], contentType: String, etag: String? = nil, headers extra: [(String, String)] = [],
                          for request: HTTPRequest) -> HTTPResponse {
        let tag = etag ?? JSONResponse.etag(of: body, headers: extra)
        let headers = [("ETag", tag), ("Cache-Control", "no-cache")] + extra
        switch Precondition.evaluate(request, etag: tag, lastModified: nil) {
        case .failed:
            return .error(412, "precondition failed")
        case .notModified:
            return HTTPResponse(status: 304, headers: headers)
        case .proceed:
            return .bytes(200, body, contentType: contentType, extraHeaders: headers)
        }
    }
}

/// Validators for generated JSON.
enum JSONResponse {
    /// `"j-<64-bit hash of the bytes>-<length>"`: equal bytes give equal tags, so the tag is strong.
    /// With `headers`, their names and values are hashed after the bytes (a list's `X-Total-Count`).
    /// The bytes go in 8 at a time (FNV-1a's step on a word, then an xor-shift that carries the
    /// high bits down; each step is invertible, so one differing word always changes the tag):
    /// byte by byte, hashing a 57 KB page was a tenth of its CPU.
    static func etag(of bytes: [UInt8], headers: [(String, String)] = []) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        bytes.withUnsafeBytes { raw in
            var i = 0
            while i + 8 <= raw.count {
                hash = (hash ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x0000_0100_0000_01B3
                hash ^= hash >> 29
                i += 8
            }
            while i < raw.count {
                hash = (hash ^ UInt64(raw[i])) &* 0x0000_0100_0000_01B3
                i += 1
            }
        }
        for (name, value) in headers {
            for byte in "\n\(name): \(value)".utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01B3
            }
        }
        return "\"j-\(String(hash, radix: 16))-\(String(bytes.count, radix: 16))\""
    }
}
