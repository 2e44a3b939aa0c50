import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// Why a relay's connection to its upstream ended (other than the upstream closing a stream
/// it sent well): one log line each, then the relay reconnects.
enum RelayError: Error, Equatable, CustomStringConvertible {
    /// Connecting, sending or receiving failed, or nothing came for `RelayUpstream.silence` seconds.
    case transport(TCPError.Kind, String)
    /// The upstream closed before its response head was complete.
    case closedBeforeHead
    /// The response head is not HTTP/1.x (or ICY).
    case malformedHead(HTTPResponseError)
    /// A final status other than 200.
    case refused(status: Int, reason: String)
    /// `icy-metaint` is not a byte count the checked reader takes.
    case badMetaint(ICYStreamError)
    /// Where a metadata block should be, the upstream sent something else.
    case badStream(ICYStreamError)
    /// The chunked body is malformed.
    case badChunkedBody(ChunkedBodyDecoder.DecodeError)

    var description: String {
        switch self {
        case let .transport(_, detail): return detail
        case .closedBeforeHead: return "the upstream closed before its response head"
        case let .malformedHead(error): return "malformed response head: \(error)"
        case let .refused(status, reason): return "the upstream answered \(status) \(reason.prefix(100))"
        case let .badMetaint(error), let .badStream(error): return "\(error)"
        case let .badChunkedBody(error): return "malformed chunked body (\(error))"
        }
    }
}

/// One connection of a relay to its upstream (another streamd, an Icecast or SHOUTcast mount):
/// the GET with `Icy-MetaData: 1`, the response head read by the shared `HTTPResponseHead`, then
/// the body de-chunked and split into audio and titles by the checked `ICYStreamReader`.
/// Everything the upstream sends is untrusted: memory is bounded (the head buffer, one
/// metadata block) and every malformed byte is a typed `RelayError`, never a trap.
final class RelayUpstream {
    /// Longest wait for the next bytes before the upstream counts as gone (seconds).
    static let silence = 10.0
    static let connectTimeout = 10.0

    let head: HTTPResponseHead
    private let connection: TCPConnection
    private let framing: HTTPResponseHead.BodyFraming
    private let metaint: Int?
    /// Body bytes that came with the head.
    private var early: [UInt8]

    /// Connects, asks for `url` and reads the head; throws unless the answer is a 200 whose
    /// `icy-metaint` (when present) is valid.
    init(url: HTTPURL) throws(RelayError) {
        do {
            connection = try TCPConnection(host: url.host, port: url.port, timeout: Self.connectTimeout)
            let request = "GET \(url.target) HTTP/1.1\r\nHost: \(url.hostHeader)\r\nIcy-MetaData: 1\r\n"
                + "User-Agent: streamd-relay\r\n\r\n"
            try connection.send(Array(request.utf8), timeout: Self.silence)
        } catch {
            throw .transport(error.kind, error.description)
        }
        let (head, rest) = try Self.readHead(connection)
        self.head = head
        early = rest
        do { framing = try head.bodyFraming() } catch { throw .malformedHead(error) }
        do { metaint = try head["icy-metaint"].map(ICYStreamReader.metaint(header:)) } catch { throw .badMetaint(error) }
    }

    /// The final response head (interim 1xx answers skipped), which must be a 200, and the body
    /// bytes that came with it.
    private static func readHead(_ connection: TCPConnection) throws(RelayError) -> (HTTPResponseHead, [UInt8]) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let parsed: (head: HTTPResponseHead, consumed: Int)?
            do { parsed = try HTTPResponseHead.parse(buffer[...]) } catch { throw .malformedHead(error) }
            if let (head, consumed) = parsed {
                buffer.removeFirst(consumed)
                if head.status < 200 && head.status != 101 { continue }
                guard head.status == 200 else { throw .refused(status: head.status, reason: head.reason) }
                return (head, buffer)
            }
            // parse throws past HTTPResponseHead.maxHeadBytes: the buffer stays below that plus one chunk.
            guard try receive(connection, into: &chunk, appendingTo: &buffer) else { throw .closedBeforeHead }
        }
    }

    /// Shuts the connection from another thread: a read or write under way ends now (the relay stops).
    func interrupt() {
        connection.interrupt()
    }

    /// The codec named by Content-Type: Ogg (Opus or Vorbis links, passed page by page with
    /// their titles from their comments), AAC, else MP3.
    var codec: AudioFrameSplitter.Codec {
        let type = SourceRequest.mediaType(head["Content-Type"] ?? "audio/mpeg")
        return SourceRequest.codec(mediaType: type) ?? (type.contains("aac") ? .adts : .mpeg)
    }

    /// Reads the stream until it ends (returns) or breaks (throws): audio goes to `audio`, each
    /// metadata block's title to `title`. `shouldStop` is asked between reads.
    func pump(audio: (ArraySlice<UInt8>) -> Void, title: (String) -> Void, shouldStop: () -> Bool) throws(RelayError) {
        var reader: ICYStreamReader?
        if let metaint {
            do { reader = try ICYStreamReader(metaint: metaint) } catch { throw .badMetaint(error) }
        }
        var chunked = ChunkedBodyDecoder()
        var left: Int?
        switch framing {
        case .none: return
        case .length(let n): left = n
        case .chunked, .untilClose: break
        }
        var body = early
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while !shouldStop() {
            var payload = body[...]
            if framing == .chunked {
                do { payload = try chunked.feed(payload).payload[...] } catch { throw .badChunkedBody(error) }
            }
            if let n = left {
                payload = payload.prefix(n)
                left = n - payload.count
            }
            if reader != nil {
                do {
                    try reader?.feed(payload, audio: audio) { update in
                        if let text = update.title { title(text) }
                    }
                } catch {
                    throw .badStream(error)
                }
            } else {
                audio(payload)
            }
            if chunked.isComplete || left == 0 { return }
            body.removeAll(keepingCapacity: true)
            guard try Self.receive(connection, into: &chunk, appendingTo: &body) else { return }
        }
    }

    /// Receives what is there (waiting up to `silence` seconds) onto `bytes`; false at the end
    /// of the stream.
    private static func receive(_ connection: TCPConnection, into chunk: inout [UInt8],
                                appendingTo bytes: inout [UInt8]) throws(RelayError) -> Bool {
        // Result: withUnsafeMutableBytes does not carry a typed error through.
        let result = chunk.withUnsafeMutableBytes { raw in
            Result { () throws(TCPError) in try connection.receive(into: raw, timeout: silence) }
        }
        let received: TCPConnection.Received
        switch result {
        case .success(let value): received = value
        case .failure(let error): throw .transport(error.kind, error.description)
        }
        switch received {
        case .bytes(let n):
            bytes += chunk[0..<n]
            return true
        case .closed:
            return false
        case .timedOut:
            throw .transport(.timedOut, "nothing from the upstream for \(Int(silence)) s")
        }
    }
}
