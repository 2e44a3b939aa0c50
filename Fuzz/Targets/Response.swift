import StreamShared

/// The response side of HTTP, as streamplay's own client reads it: heads (HTTP/1.x and
/// SHOUTcast's `ICY`) one after another, every question the client asks of a head (length,
/// framing, range, keep-alive, fields by name), and the body after each head delimited as the
/// client would (Content-Length, chunked in slices, or the rest).
enum ResponseTarget {
    static func run(_ bytes: [UInt8]) {
        var rest = bytes[...]
        var heads = 0
        while heads < 100, !rest.isEmpty {
            guard let parsed = try? HTTPResponseHead.parse(rest), let (head, consumed) = Optional(parsed) else { return }
            require(consumed > 0 && consumed <= rest.count, "consumed \(consumed) of \(rest.count)")
            require(head.status >= 100 && head.status <= 999, "status \(head.status)")
            require(head.fields.fields.count <= HTTPResponseHead.maxFields, "\(head.fields.fields.count) fields")
            _ = head.keepsAlive
            _ = head["icy-metaint"]
            _ = head.fields.values("content-length")
            if let range = try? head.contentRange() {
                if let total = range.total, let span = range.range { require(span.upperBound < total, "range past total") }
            }
            rest = rest.dropFirst(consumed)
            guard let framing = try? head.bodyFraming() else { return }
            switch framing {
            case .none:
                break
            case .length(let n):
                require(n >= 0 && n <= InputLimits.maxBytes, "length \(n)")
                rest = rest.dropFirst(n)
            case .untilClose:
                return
            case .chunked:
                var decoder = ChunkedBodyDecoder()
                var payload = 0
                var used = 0
                // Fed in pieces of 7 bytes, as a socket might deliver them.
                while used < rest.count, !decoder.isComplete {
                    let piece = rest.dropFirst(used).prefix(7)
                    guard let n = try? decoder.feed(piece, payload: { payload += $0.count }) else { return }
                    require(n <= piece.count, "used \(n) of \(piece.count)")
                    if n == 0 { break }
                    used += n
                }
                require(payload <= used, "payload \(payload) from \(used) bytes")
                guard decoder.isComplete else { return }
                rest = rest.dropFirst(used)
            }
            heads += 1
        }
    }
}
