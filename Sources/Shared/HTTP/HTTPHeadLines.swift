/// Line ends of an HTTP/1 head (RFC 9112 section 2.2): CRLF, or a bare LF, which a recipient
/// may take as one. The request parser and the response-head parser split heads with these.
public enum HTTPHeadLine {
    /// Where the line that starts at `start` ends: `contentEnd` before its CRLF (or LF), `next`
    /// after it. nil when no LF comes within `limit` content bytes (plus the CRLF) of `start`.
    @inlinable
    public static func find(in bytes: ArraySlice<UInt8>, from start: Int, limit: Int) -> (contentEnd: Int, next: Int)? {
        let stop = min(bytes.endIndex, start + max(0, limit) + 2)
        guard start < stop, let lf = bytes[start..<stop].firstIndex(of: 0x0A) else { return nil }
        let contentEnd = lf > start && bytes[lf - 1] == 0x0D ? lf - 1 : lf
        return (contentEnd, lf + 1)
    }

    /// The index after at most four empty lines (CRLF or LF) at `start`: a peer may send them
    /// before a start line (RFC 9112 section 2.2), left over from the previous message.
    @inlinable
    public static func skipEmptyLines(in bytes: ArraySlice<UInt8>, from start: Int) -> Int {
        var index = start
        for _ in 0..<4 {
            if index < bytes.endIndex && bytes[index] == 0x0A {
                index += 1
            } else if index + 1 < bytes.endIndex && bytes[index] == 0x0D && bytes[index + 1] == 0x0A {
                index += 2
            } else {
                break
            }
        }
        return index
    }
}

/// Why the field lines of a head are refused (RFC 9112 section 5); each parser maps a case to
/// its own error (a 400 or 431 for the server, a malformed response for a client).
public enum HTTPFieldError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A field line without a colon.
    case noColon
    /// An empty name, or one that is not a token (a space before the colon, a control byte).
    case badName
    /// A NUL or a bare CR in a value, or a control byte the rules do not keep.
    case badValue
    /// A line that starts with SP or HTAB (obs-fold) where the rules refuse it, or before any field.
    case obsFold
    /// More field lines than the rules allow.
    case tooManyFields
    /// More bytes of field lines than the rules allow.
    case tooLarge

    public var description: String {
        switch self {
        case .noColon: return "header line without a colon"
        case .badName: return "bad header name"
        case .badValue: return "control character in a header value"
        case .obsFold: return "folded header line (obs-fold)"
        case .tooManyFields: return "too many header lines"
        case .tooLarge: return "header block too large"
        }
    }
}

/// What the field lines of a head may hold and how many there may be. A server refuses what
/// RFC 9112 lets it refuse; a user agent keeps what RFC 9112 and 9110 ask it to tolerate.
public struct HTTPFieldRules: Sendable, Equatable {
    /// Most field lines (obs-fold continuations are not counted).
    public var maxFields: Int
    /// Most bytes of field lines, their line ends included, the empty line that ends them not.
    public var maxBytes: Int
    /// Whether an obs-fold line continues the previous field's value, as a user agent must take
    /// it (RFC 9112 section 5.2); otherwise it is refused, as a server may (and should: a folded
    /// line that two parties read differently is a request-smuggling vector).
    public var unfoldsLines: Bool
    /// Whether control bytes other than NUL and CR may stay in values (RFC 9110 section 5.5 lets a
    /// recipient keep them); NUL and a bare CR are always refused.
    public var keepsControlBytes: Bool

    public init(maxFields: Int, maxBytes: Int, unfoldsLines: Bool, keepsControlBytes: Bool) {
        self.maxFields = maxFields
        self.maxBytes = maxBytes
        self.unfoldsLines = unfoldsLines
        self.keepsControlBytes = keepsControlBytes
    }
}

/// Reads the field lines of an HTTP/1 head in place, one per `next(in:)`: `name: value` with
/// the value's surrounding whitespace trimmed (RFC 9112 section 5), up to the empty line that
/// ends the head. No copies and no reference counting: a line is given as index ranges into the
/// bytes, the caller makes strings of what it keeps (the server runs this on every request).
/// Incremental: `.incomplete` when the bytes stop before the empty line.
public struct HTTPFieldLineReader: Sendable {
    /// One step through the field section; ranges index the bytes given to `next(in:)`.
    public enum Line: Sendable, Equatable {
        /// A field line: its name (a token) and its value without surrounding SP or HTAB.
        case field(name: Range<Int>, value: Range<Int>)
        /// An obs-fold line's text (trimmed), continuing the previous field's value; only with
        /// `unfoldsLines` rules.
        case continuation(Range<Int>)
        /// The empty line: the head ends just before `next`.
        case end(next: Int)
        /// The bytes stop before the empty line.
        case incomplete
    }

    @usableFromInline let rules: HTTPFieldRules
    @usableFromInline let start: Int
    @usableFromInline var index: Int
    @usableFromInline var count = 0

    /// Reads from `start`, the first byte after the start line.
    public init(from start: Int, rules: HTTPFieldRules) {
        self.rules = rules
        self.start = start
        self.index = start
    }

    /// The next field line of `bytes` (the same bytes, or more of them, at every call), the end
    /// of the head, or `.incomplete`. Throws once the bytes so far break a rule, even before the
    /// head is complete (a peer sending junk is refused early). Inlinable: on the server's hot path.
    @inlinable
    public mutating func next(in bytes: ArraySlice<UInt8>) throws(HTTPFieldError) -> Line {
        guard let end = HTTPHeadLine.find(in: bytes, from: index, limit: rules.maxBytes - (index - start)) else {
            if bytes.endIndex - start > rules.maxBytes { throw .tooLarge }
            return .incomplete
        }
        let lineStart = index
        guard lineStart < end.contentEnd else {
            index = end.next
            return .end(next: end.next)
        }
        let result: Line
        if HTTPSyntax.isWhitespace(bytes[lineStart]) {
            guard rules.unfoldsLines, count > 0 else { throw .obsFold }
            result = .continuation(try value(bytes, lineStart..<end.contentEnd))
        } else {
            if count >= rules.maxFields { throw .tooManyFields }
            count += 1
            var colon = lineStart
            // RFC 9112 section 5.1: a token, then the colon at once (no whitespace before it).
            while colon < end.contentEnd, HTTPSyntax.isTokenByte(bytes[colon]) { colon += 1 }
            guard colon < end.contentEnd, bytes[colon] == UInt8(ascii: ":") else {
                throw bytes[colon..<end.contentEnd].contains(UInt8(ascii: ":")) ? .badName : .noColon
            }
            guard colon > lineStart else { throw .badName }
            result = .field(name: lineStart..<colon, value: try value(bytes, (colon + 1)..<end.contentEnd))
        }
        index = end.next
        if index - start > rules.maxBytes { throw .tooLarge }
        return result
    }

    /// The value's range without its surrounding whitespace, its bytes checked against the rules.
    @inlinable
    func value(_ bytes: ArraySlice<UInt8>, _ raw: Range<Int>) throws(HTTPFieldError) -> Range<Int> {
        var lower = raw.lowerBound, upper = raw.upperBound
        while lower < upper, HTTPSyntax.isWhitespace(bytes[lower]) { lower += 1 }
        while upper > lower, HTTPSyntax.isWhitespace(bytes[upper - 1]) { upper -= 1 }
        var i = lower
        if rules.keepsControlBytes {
            while i < upper {
                guard bytes[i] != 0x00 && bytes[i] != 0x0D else { throw .badValue }
                i += 1
            }
        } else {
            while i < upper {
                let byte = bytes[i]
                guard byte == 0x09 || (byte >= 0x20 && byte != 0x7F) else { throw .badValue }
                i += 1
            }
        }
        return lower..<upper
    }
}
