import StreamHTTP

/// The HTTP/1.1 request-head parser on pipelined input, and what the server reads from a
/// parsed request (path, query, keep-alive, the Range header against a few sizes, the target
/// as the access log shows it with credentials taken out).
/// Only the public API is used, so the HTTP folder can change underneath.
enum HTTPTarget {
    static func run(_ bytes: [UInt8]) {
        let parser = HTTPRequestParser()
        var rest = bytes[...]
        var requests = 0
        while requests < 1_000, !rest.isEmpty {
            guard let parsed = try? parser.parse(rest), let (request, consumed) = Optional(parsed) else { return }
            require(consumed > 0 && consumed <= rest.count, "consumed \(consumed) of \(rest.count)")
            _ = request.path
            _ = request.query
            _ = request.keepAlive
            _ = request.queryValue("kbps")
            // What the access log shows: every secret parameter's value is "-".
            let logged = request.loggedTarget
            if let mark = logged.firstIndex(of: "?") {
                for pair in logged[logged.index(after: mark)...].split(separator: "&") {
                    let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    if parts.count == 2, ["sig", "token", "apikey"].contains(parts[0].lowercased()) {
                        require(parts[1] == "-", "a \(parts[0]) value kept in the logged target")
                    }
                }
            }
            require(logged.utf8.count <= request.target.utf8.count + 1_000_000, "logged target grew")
            for size in [0, 1, 1_000, 1 << 40] { _ = RangeRequest.parse(request.header("Range"), size: size) }
            rest = rest.dropFirst(consumed)
            requests += 1
        }
    }
}

/// The byte-range parser alone: the first 8 bytes give the representation size, the rest is
/// the Range header value.
enum RangeTarget {
    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return }
        let size = Int(bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> 16)   // up to 2^48
        let header = String(decoding: bytes.dropFirst(8), as: UTF8.self)
        // `if case`, not a switch: the enum may gain cases as the HTTP code grows.
        if case .ranges(let ranges) = RangeRequest.parse(header, size: size) {
            for range in ranges {
                require(range.lowerBound >= 0 && range.upperBound <= size && !range.isEmpty,
                        "range \(range) of a \(size)-byte file")
            }
        }
    }
}
