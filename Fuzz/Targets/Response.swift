import StreamShared

/// The response side of HTTP, as streamplay's own client reads it: heads (HTTP/1.x and
/// SHOUTcast's `ICY`) one after another, every question the client asks of a head (length,
/// framing, range, keep-alive, fields by name), and the body after each head delimited as the
/// client would (Content-Length, chunked in slices, or the rest).
enum ResponseTarget {
    static func run(_ bytes: [UInt8]) {
        fieldLines(bytes[...])
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

    /// The shared field-line reader alone, under a server's rules and a user agent's: whatever
    /// the bytes, names are tokens, values carry no NUL or CR (a server's no control byte), the
    /// counts and sizes stay within the rules, and the end lies inside the input.
    static func fieldLines(_ bytes: ArraySlice<UInt8>) {
        for unfolds in [false, true] {
            let rules = HTTPFieldRules(maxFields: 20, maxBytes: 2_000, unfoldsLines: unfolds, keepsControlBytes: unfolds)
            var reader = HTTPFieldLineReader(from: bytes.startIndex, rules: rules)
            var fields = 0
            reading: while true {
                guard let line = try? reader.next(in: bytes) else { break }
                switch line {
                case .field(let name, let value):
                    fields += 1
                    require(fields <= rules.maxFields, "\(fields) fields")
                    require(!name.isEmpty && bytes[name].allSatisfy(HTTPSyntax.isTokenByte), "a name that is not a token")
                    check(bytes[value], rules)
                case .continuation(let value):
                    require(unfolds && fields > 0, "a continuation the rules refuse")
                    check(bytes[value], rules)
                case .end(let next):
                    require(next > bytes.startIndex && next <= bytes.endIndex, "end \(next) outside the input")
                    require(next - bytes.startIndex <= rules.maxBytes + 4, "a field section of \(next - bytes.startIndex) bytes")
                    break reading
                case .incomplete:
                    break reading
                }
            }
        }
    }

    static func check(_ value: ArraySlice<UInt8>, _ rules: HTTPFieldRules) {
        require(!value.contains(0) && !value.contains(0x0D), "NUL or CR in a value")
        require(value.first.map { !HTTPSyntax.isWhitespace($0) } ?? true
                && value.last.map { !HTTPSyntax.isWhitespace($0) } ?? true, "an untrimmed value")
        if !rules.keepsControlBytes {
            require(value.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, "a control byte a server refuses")
        }
    }
}
