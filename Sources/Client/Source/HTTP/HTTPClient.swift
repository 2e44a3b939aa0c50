import StreamShared

/// Why an own-client request failed.
enum HTTPClientError: Error, CustomStringConvertible {
    /// Connecting, sending or receiving failed or timed out.
    case transport(TCPError)
    /// The response is not valid HTTP/1.x.
    case malformed(HTTPResponseError)
    /// The connection closed before the head or the body was complete.
    case truncated(String)
    /// More than `HTTPClient.maxRedirects` redirects.
    case tooManyRedirects
    /// A URL the client cannot request (no host, bad port, not http://).
    case badURL(String)
    /// A redirect to an https:// URL, which the libcurl path must take.
    case redirectedToTLS(String)
    /// The caller asked to stop while waiting.
    case interrupted

    var description: String {
        switch self {
        case .transport(let error): return "\(error)"
        case .malformed(let error): return "malformed HTTP response: \(error)"
        case .truncated(let why): return "the connection closed \(why)"
        case .tooManyRedirects: return "more than \(HTTPClient.maxRedirects) redirects"
        case .badURL(let why): return "bad URL: \(why)"
        case .redirectedToTLS(let url): return "redirected to \(url)"
        case .interrupted: return "interrupted"
        }
    }
}

/// An HTTP/1.1 client on POSIX sockets for `http://` URLs: GET requests one at a time, with
/// Range and If-Range, redirects followed (at most 10), interim 1xx answers skipped, and one
/// idle keep-alive connection kept for the next request to the same host.
final class HTTPClient {
    /// What to ask for.
    struct Request {
        var url: String
        /// `Range: bytes=from-to` (`to` inclusive, nil for "to the end").
        var range: (from: Int, to: Int?)?
        var ifRange: String?
        /// More header lines (`Name: value`).
        var headers: [String] = []
    }

    static let maxRedirects = 10
    let userAgent: String
    let connectTimeout: Double
    /// How long one wait for the server may last (the head, a send).
    let readTimeout: Double
    private var idle: (key: String, connection: TCPConnection)?

    init(userAgent: String, connectTimeout: Double, readTimeout: Double) {
        self.userAgent = userAgent
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
    }

    /// Sends `request`, follows redirects, and returns the response with its head read.
    /// `shouldStop` is asked about every 0.1 s while waiting for the head.
    func open(_ request: Request, shouldStop: () -> Bool = { false }) throws(HTTPClientError) -> HTTPResponse {
        var url = request.url
        for _ in 0...Self.maxRedirects {
            let target: HTTPURL
            do { target = try HTTPURL(url) } catch {
                switch error {
                case .notHTTP: throw url.lowercased().hasPrefix("https://") ? .redirectedToTLS(url) : .badURL("\(url): not an http:// URL")
                case .malformed(let why): throw .badURL("\(url): \(why)")
                }
            }
            let response = try exchange(request, url: url, target: target, shouldStop: shouldStop)
            guard [301, 302, 303, 307, 308].contains(response.head.status), let location = response.head["Location"] else {
                return response
            }
            url = HTTPURL.resolve(location, against: url)
            // A short redirect body is read so the connection can carry the next request.
            if case .length(let n) = response.framing, n <= HTTPResponse.bufferSize {
                var overflow = false
                if (try? response.readAll(limit: n, timeout: readTimeout, overflow: &overflow)) != nil { finish(response) }
            } else {
                finish(response)
            }
        }
        throw .tooManyRedirects
    }

    /// Keeps the response's connection for the next request when its body was read to the end
    /// and the server allows it.
    func finish(_ response: HTTPResponse) {
        guard response.isComplete, response.head.keepsAlive, response.framing != .untilClose,
              !response.hasExtraBytes else { return }
        idle = (response.connectionKey, response.connection)
    }

    /// One request on one connection (a kept one first, a fresh one when that fails before
    /// any byte of the answer arrived: the server may have closed it meanwhile).
    private func exchange(_ request: Request, url: String, target: HTTPURL,
                          shouldStop: () -> Bool) throws(HTTPClientError) -> HTTPResponse {
        let key = "\(target.host)|\(target.port)"
        let message = Array(requestHead(request, target: target).utf8)
        if let kept = idle, kept.key == key {
            idle = nil
            if kept.connection.isIdleAndOpen {
                let response = HTTPResponse(connection: kept.connection, url: url, key: key)
                do throws(HTTPClientError) {
                    do { try kept.connection.send(message, timeout: readTimeout) } catch { throw .transport(error) }
                    try response.readHead(timeout: readTimeout, shouldStop: shouldStop)
                    return response
                } catch {
                    if case .interrupted = error { throw error }
                    if response.receivedBytes > 0 { throw error }
                }
            }
        }
        let connection: TCPConnection
        do { connection = try TCPConnection(host: target.host, port: target.port, timeout: connectTimeout) } catch {
            throw .transport(error)
        }
        do { try connection.send(message, timeout: readTimeout) } catch { throw .transport(error) }
        let response = HTTPResponse(connection: connection, url: url, key: key)
        try response.readHead(timeout: readTimeout, shouldStop: shouldStop)
        return response
    }

    private func requestHead(_ request: Request, target: HTTPURL) -> String {
        var head = "GET \(target.target) HTTP/1.1\r\nHost: \(target.hostHeader)\r\nUser-Agent: \(userAgent)\r\nAccept: */*\r\n"
        if let range = request.range { head += "Range: bytes=\(range.from)-\(range.to.map(String.init) ?? "")\r\n" }
        if let ifRange = request.ifRange { head += "If-Range: \(ifRange)\r\n" }
        for line in request.headers { head += line + "\r\n" }
        // Only to the host the credential is for (a redirect elsewhere goes without it).
        if let line = ServerCredentials.authorizationLine(host: target.host, port: target.port) { head += line + "\r\n" }
        return head + "\r\n"
    }
}

/// One response: its head, then its body read piece by piece, delimited by Content-Length,
/// chunked coding or the close of the connection.
final class HTTPResponse {
    private(set) var head = HTTPResponseHead(version: .http11, status: 0, reason: "", fields: HTTPHeaderFields())
    private(set) var framing = HTTPResponseHead.BodyFraming.none
    /// The URL this response answers (after redirects).
    let url: String
    let connection: TCPConnection
    let connectionKey: String
    /// Received bytes not yet handed out: `buffer[start..<end]`.
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var remaining = 0
    private var chunked = ChunkedBodyDecoder()
    /// The body has been read to its end.
    private(set) var isComplete = false
    /// Bytes received on this connection for this response, head included.
    private(set) var receivedBytes = 0
    /// Room for the largest head accepted plus its end, and for a good batch of body bytes.
    static let bufferSize = HTTPResponseHead.maxHeadBytes + 16 * 1024

    init(connection: TCPConnection, url: String, key: String) {
        self.connection = connection
        self.url = url
        self.connectionKey = key
        buffer = [UInt8](repeating: 0, count: Self.bufferSize)
    }

    /// Bytes after the end of the body (a server that sent more than it announced).
    var hasExtraBytes: Bool { end > start }

    /// Reads the head (skipping 1xx interim answers) and decides how the body is delimited.
    func readHead(timeout: Double, shouldStop: () -> Bool) throws(HTTPClientError) {
        let deadline = Monotonic.now.adding(seconds: timeout)
        while true {
            let parsed: (head: HTTPResponseHead, consumed: Int)?
            do { parsed = try HTTPResponseHead.parse(buffer[start..<end]) } catch { throw .malformed(error) }
            if let parsed {
                start += parsed.consumed
                if parsed.head.status < 200 && parsed.head.status != 101 { continue }
                head = parsed.head
                do { framing = try head.bodyFraming() } catch { throw .malformed(error) }
                switch framing {
                case .none: isComplete = true
                case .length(let n): remaining = n; isComplete = n == 0
                case .chunked, .untilClose: break
                }
                return
            }
            if shouldStop() { throw .interrupted }
            guard deadline.seconds(since: .now) > 0 else {
                throw .transport(TCPError(kind: .timedOut, call: "recv", detail: "no response within \(Int(timeout)) s"))
            }
            compact()
            guard end < buffer.count else { throw .malformed(.headTooLarge) }
            switch try receive(timeout: min(0.1, max(0.001, deadline.seconds(since: .now)))) {
            case .bytes: continue
            case .timedOut: continue
            case .closed: throw .truncated(receivedBytes == 0 ? "before answering" : "inside the response head")
            }
        }
    }

    /// What one `read` did.
    enum Step: Equatable {
        /// This many body bytes were handed to the sink.
        case data(Int)
        /// The body is complete.
        case end
        /// Nothing arrived within the timeout.
        case timedOut
    }

    /// Hands the next body bytes (at most `max`) to `sink`, waiting up to `timeout` seconds for
    /// some to arrive. The slices point into the response's buffer: copy what must be kept.
    func read(max: Int, timeout: Double, into sink: (ArraySlice<UInt8>) -> Void) throws(HTTPClientError) -> Step {
        if isComplete { return .end }
        guard max > 0 else { return .data(0) }
        if start == end {
            start = 0
            end = 0
            switch try receive(timeout: timeout, limit: max) {
            case .bytes: break
            case .timedOut: return .timedOut
            case .closed:
                switch framing {
                case .untilClose, .none:
                    isComplete = true
                    return .end
                case .length:
                    throw .truncated("after \(receivedBytes) bytes, \(remaining) bytes before the end of the body")
                case .chunked:
                    throw .truncated("inside a chunked body")
                }
            }
        }
        var handed = 0
        switch framing {
        case .none:
            isComplete = true
        case .length:
            let n = min(remaining, end - start, max)
            sink(buffer[start..<(start + n)])
            start += n
            remaining -= n
            handed = n
            isComplete = remaining == 0
        case .untilClose:
            let n = min(end - start, max)
            sink(buffer[start..<(start + n)])
            start += n
            handed = n
        case .chunked:
            let used: Int
            do {
                used = try chunked.feed(buffer[start..<min(end, start + max)]) { piece in
                    sink(piece)
                    handed += piece.count
                }
            } catch { throw .malformed(.badChunkedBody) }
            start += used
            isComplete = chunked.isComplete
        }
        return isComplete && handed == 0 ? .end : .data(handed)
    }

    /// Reads the whole body, at most `limit` bytes: past them `overflow` is set and reading
    /// stops (whether that is an error is the caller's call).
    func readAll(limit: Int, timeout: Double, overflow: inout Bool) throws(HTTPClientError) -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            var over = false
            let step = try read(max: Self.bufferSize, timeout: timeout) { piece in
                let room = limit - bytes.count
                bytes += piece.prefix(room)
                if piece.count > room { over = true }
            }
            if over {
                overflow = true
                return bytes
            }
            switch step {
            case .data: continue
            case .end: return bytes
            case .timedOut:
                throw .transport(TCPError(kind: .timedOut, call: "recv", detail: "no data for \(Int(timeout)) s"))
            }
        }
    }

    /// Moves unread bytes to the front of the buffer so a receive has room behind them.
    private func compact() {
        guard start > 0 else { return }
        if start < end {
            buffer.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                (base).copyMemory(from: base + start, byteCount: end - start)
            }
        }
        end -= start
        start = 0
    }

    private func receive(timeout: Double, limit: Int = .max) throws(HTTPClientError) -> TCPConnection.Received {
        let room = min(buffer.count - end, limit)
        let received: TCPConnection.Received
        let window = end..<(end + room)
        let result = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(TCPError) in
                try connection.receive(into: UnsafeMutableRawBufferPointer(rebasing: raw[window]), timeout: timeout)
            }
        }
        switch result {
        case .success(let value): received = value
        case .failure(let error): throw .transport(error)
        }
        if case .bytes(let n) = received {
            end += n
            receivedBytes += n
        }
        return received
    }
}
