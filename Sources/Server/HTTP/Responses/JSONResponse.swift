extension HTTPResponse {
    /// A JSON document (`/api/*`) with a strong ETag over its bytes and `Cache-Control: no-cache`,
    /// so a client revalidates and gets 304 while the catalog is unchanged; If-Match is honoured too.
    /// `headers` (a list's `X-Total-Count`) go out with it, also on a 304, and are part of the ETag.
    package static func json(_ text: String, for request: HTTPRequest, headers: [(String, String)] = []) -> HTTPResponse {
        generated(Array(text.utf8), contentType: "application/json", headers: headers, for: request)
    }

    /// A generated document (JSON, a playlist, a cover picture) with the JSON answers' validators:
    /// a strong ETag over its bytes and `headers` (or `etag` when the caller has one that changes
    /// with them), `Cache-Control: no-cache`, 304 on a matching If-None-Match, 412 on a failed If-Match.
    package static func generated(_ body: [UInt8], contentType: String, etag: String? = nil, headers extra: [(String, String)] = [],
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
package enum JSONResponse {
    /// `"j-<64-bit hash of the bytes>-<length>"`: equal bytes give equal tags, so the tag is strong.
    /// With `headers`, their names and values are hashed after the bytes (a list's `X-Total-Count`).
    /// The bytes go in 8 at a time on four independent lanes (word i on lane i mod 4: FNV-1a's
    /// step on a word, then an xor-shift that carries the high bits down), folded into one at the
    /// end; every step is invertible, so one differing word always changes the tag. One lane was
    /// a chain of dependent multiplies, 8 % of an uncached page's CPU; four run side by side.
    package static func etag(of bytes: [UInt8], headers: [(String, String)] = []) -> String {
        let prime: UInt64 = 0x0000_0100_0000_01B3
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        bytes.withUnsafeBytes { raw in
            var lanes: (UInt64, UInt64, UInt64, UInt64) = (hash, hash ^ 1, hash ^ 2, hash ^ 3)
            var i = 0
            while i + 32 <= raw.count {
                lanes.0 = (lanes.0 ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* prime
                lanes.1 = (lanes.1 ^ raw.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)) &* prime
                lanes.2 = (lanes.2 ^ raw.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self)) &* prime
                lanes.3 = (lanes.3 ^ raw.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self)) &* prime
                lanes.0 ^= lanes.0 >> 29
                lanes.1 ^= lanes.1 >> 29
                lanes.2 ^= lanes.2 >> 29
                lanes.3 ^= lanes.3 >> 29
                i += 32
            }
            // Folded with a step before each xor: a plain xor of two lanes would let the same
            // change in either (a flipped top bit stays one flipped bit pattern) give one tag.
            hash = lanes.0
            for lane in [lanes.1, lanes.2, lanes.3] {
                hash = hash &* prime
                hash ^= hash >> 29
                hash = (hash ^ lane) &* prime
                hash ^= hash >> 29
            }
            while i + 8 <= raw.count {
                hash = (hash ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* prime
                hash ^= hash >> 29
                i += 8
            }
            while i < raw.count {
                hash = (hash ^ UInt64(raw[i])) &* prime
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
