/// Incremental decoder of a `Transfer-Encoding: chunked` body (RFC 9112 section 7.1), of a
/// request (streamd's live sources) or a response (streamplay's HTTP client): feed it the bytes
/// as they come, get the payload. Chunk extensions are skipped, trailer
/// fields read and dropped; every line is bounded.
public struct ChunkedBodyDecoder: Sendable {
    /// Why the body is malformed.
    public enum DecodeError: Error, Equatable, Sendable {
        case badChunkSize
        case lineTooLong
        case missingCRLF
    }

    private enum State: Sendable, Equatable {
        case sizeLine
        case data(Int)
        case dataEnd(Int)     // bytes of the CRLF after the data still expected (2, then 1)
        case trailer
        case done
    }

    private var state = State.sizeLine
    private var line: [UInt8] = []
    /// Longest chunk-size or trailer line (with extensions) accepted.
    public static let maxLine = 4096

    public init() {}

    /// The last chunk and the trailer section have been read.
    public var isComplete: Bool { state == .done }

    /// Decodes `bytes`; returns the payload they carry and how many bytes were used (input past
    /// the end of the body is left).
    public mutating func feed(_ bytes: ArraySlice<UInt8>) throws(DecodeError) -> (payload: [UInt8], consumed: Int) {
        var payload: [UInt8] = []
        let used = try feed(bytes) { payload += $0 }
        return (payload, used)
    }

    /// Decodes `bytes`, handing each run of payload to `payload` as a slice of `bytes` (nothing is
    /// copied); returns how many bytes were used (input past the end of the body is left).
    public mutating func feed(_ bytes: ArraySlice<UInt8>,
                              payload: (ArraySlice<UInt8>) -> Void) throws(DecodeError) -> Int {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            switch state {
            case .done:
                return i - bytes.startIndex
            case .sizeLine, .trailer:
                let byte = bytes[i]
                i += 1
                if byte == 0x0A {
                    if line.last == 0x0D { line.removeLast() }
                    try endLine()
                    line.removeAll(keepingCapacity: true)
                } else {
                    guard line.count < Self.maxLine else { throw .lineTooLong }
                    line.append(byte)
                }
            case .data(let left):
                let n = min(left, bytes.endIndex - i)
                payload(bytes[i..<(i + n)])
                i += n
                state = left - n == 0 ? .dataEnd(2) : .data(left - n)
            case .dataEnd(let expected):
                let byte = bytes[i]
                i += 1
                if expected == 2 {
                    // A bare LF is tolerated as the line end, as for the size line.
                    if byte == 0x0D { state = .dataEnd(1) } else if byte == 0x0A { state = .sizeLine } else { throw .missingCRLF }
                } else {
                    guard byte == 0x0A else { throw .missingCRLF }
                    state = .sizeLine
                }
            }
        }
        return i - bytes.startIndex
    }

    private mutating func endLine() throws(DecodeError) {
        if state == .trailer {
            if line.isEmpty { state = .done }   // end of the trailer section
            return
        }
        // chunk-size [ ; extensions ]
        let sizeField = line.prefix { $0 != UInt8(ascii: ";") }
        var size = 0
        var digits = 0
        var trailingSpace = false
        for byte in sizeField {
            if byte == 0x20 || byte == 0x09 {
                guard digits > 0 else { throw .badChunkSize }
                trailingSpace = true
                continue
            }
            guard !trailingSpace else { throw .badChunkSize }
            let value: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = Int(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = Int(byte - UInt8(ascii: "A")) + 10
            default: throw .badChunkSize
            }
            digits += 1
            // 15 hex digits stay below Int.max: more is refused, not wrapped.
            guard digits <= 15 else { throw .badChunkSize }
            size = size << 4 | value
        }
        guard digits > 0 else { throw .badChunkSize }
        state = size == 0 ? .trailer : .data(size)
    }
}
