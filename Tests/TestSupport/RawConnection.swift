import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP response as received on the wire.
public struct RawResponse {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// The body as sent (chunk framing included), for checking the framing itself.
    public var rawBody: [UInt8]
    /// The status line as sent ("HTTP/1.1 200 OK").
    public var statusLine = ""

    public init(status: Int, headers: [(String, String)], body: [UInt8], rawBody: [UInt8], statusLine: String = "") {
        self.status = status
        self.headers = headers
        self.body = body
        self.rawBody = rawBody
        self.statusLine = statusLine
    }

    /// The first header of that name (any case).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// The loopback HTTP/1.1 client over a plain socket, for tests that need to see or send exactly
/// what goes over the wire: whole request/response exchanges (chunk framing, hostile requests,
/// pipelining: `sendAll`, `request`, `readResponse(head:)`), and connection states (socket
/// options set before connecting, non-blocking sends, half-close and abortive close, a bounded
/// look at how the server ended the connection: `send(_:timeout:)`, `readUntilEnd`, `abort`).
public final class RawConnection {
    /// The socket; -1 once closed.
    public private(set) var fd: Int32
    private var buffer: [UInt8] = []

    /// How a connection looked from the client side after reading what there was.
    public enum End: Equatable {
        /// Still open: nothing more arrived within the wait.
        case open
        /// The server closed it cleanly (FIN).
        case eof
        /// The server reset it (RST), or another socket error.
        case reset
    }

    /// Connects to 127.0.0.1:port. Blocking reads give up after `timeout` seconds;
    /// `receiveBuffer` (bytes) is set before connecting so the advertised window stays small
    /// and a non-reading client fills up quickly.
    public init(port: Int, timeout: Double = 10, receiveBuffer: Int? = nil) throws {
        fd = try connectLoopback(port: port) { fd in
            var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            if var size = receiveBuffer.map(Int32.init) {
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
        }
    }

    deinit { close() }

    // MARK: Request/response exchanges

    /// Sends all of `text`, or throws.
    public func sendAll(_ text: String) throws { try sendAll(Array(text.utf8)) }

    /// Sends all of `bytes`, or throws.
    public func sendAll(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress.map { $0 + sent }, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send failed: errno \(errno)") }
            sent += n
        }
    }

    /// Reads more bytes; false at EOF or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }

    /// True when the server has closed the connection (EOF) within the timeout.
    public func isClosedByPeer() -> Bool {
        if !buffer.isEmpty { return false }
        var chunk = [UInt8](repeating: 0, count: 1)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 1, 0) }
        if n > 0 { buffer += chunk[0..<1] }
        return n == 0
    }

    private func readLine() throws -> String {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = buffer[..<nl]
                buffer.removeFirst(nl + 1)
                return String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
            }
            guard fill() else { throw TestFailure("connection ended while reading a line") }
        }
    }

    private func readExactly(_ n: Int) throws -> [UInt8] {
        while buffer.count < n {
            guard fill() else { throw TestFailure("connection ended after \(buffer.count) of \(n) bytes") }
        }
        let out = Array(buffer[..<n])
        buffer.removeFirst(n)
        return out
    }

    /// Reads one response; `head` says no body follows (HEAD request, 304).
    public func readResponse(head: Bool = false) throws -> RawResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw TestFailure("bad status line '\(statusLine)'") }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw TestFailure("bad header '\(line)'") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = RawResponse(status: status, headers: headers, body: [], rawBody: [], statusLine: statusLine)
        if head || status == 304 || status == 204 { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine()
                response.rawBody += Array((sizeLine + "\r\n").utf8)
                guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else {
                    throw TestFailure("bad chunk size '\(sizeLine)'")
                }
                if size == 0 {
                    let trailer = try readLine()
                    response.rawBody += Array((trailer + "\r\n").utf8)
                    break
                }
                let data = try readExactly(size)
                response.body += data
                response.rawBody += data
                let crlf = try readExactly(2)
                response.rawBody += crlf
                guard crlf == [0x0D, 0x0A] else { throw TestFailure("chunk not followed by CRLF") }
            }
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try readExactly(length)
            response.rawBody = response.body
        } else {
            while fill() {}
            response.body = buffer
            response.rawBody = buffer
            buffer.removeAll()
        }
        return response
    }

    /// Sends a GET (or another method) and reads the response.
    public func request(_ method: String = "GET", _ target: String, headers: [String: String] = [:]) throws -> RawResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        try sendAll(text + "\r\n")
        return try readResponse(head: method == "HEAD")
    }

    // MARK: Connection states

    /// Sends what the socket takes right now without blocking; returns the bytes accepted.
    @discardableResult
    public func sendSome(_ bytes: [UInt8]) -> Int {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress.map { $0 + sent }, bytes.count - sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if n <= 0 { break }
            sent += n
        }
        return sent
    }

    /// Sends everything, blocking for at most `timeout` seconds per send; returns the bytes sent
    /// (fewer when the server stopped reading or closed).
    @discardableResult
    public func send(_ bytes: [UInt8], timeout: Double = 5) -> Int { Self.send(fd: fd, bytes, timeout: timeout) }

    /// `send(_:timeout:)` of the text's UTF-8 bytes.
    @discardableResult
    public func send(_ text: String, timeout: Double = 5) -> Int { send(Array(text.utf8), timeout: timeout) }

    /// `send(_:timeout:)` on a bare descriptor, for a writer thread beside a reading one.
    @discardableResult
    public static func send(fd: Int32, _ bytes: [UInt8], timeout: Double) -> Int {
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress.map { $0 + sent }, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n <= 0 { break }
            sent += n
        }
        return sent
    }

    /// `shutdown(SHUT_WR)`: the request is all there is; the client may still read.
    public func halfClose() { shutdown(fd, Int32(SHUT_WR)) }

    /// Closes with SO_LINGER 0, so the server sees a reset.
    public func abort() {
        guard fd >= 0 else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    /// Closes the socket (once).
    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// One non-blocking read of at most `limit` bytes: what was there, and whether the
    /// connection is still open.
    public func readSome(upTo limit: Int) -> (bytes: [UInt8], end: End) {
        var chunk = [UInt8](repeating: 0, count: limit)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n > 0 { return (Array(chunk[0..<n]), .open) }
        if n == 0 { return ([], .eof) }
        return ([], errno == EAGAIN || errno == EINTR ? .open : .reset)
    }

    /// Reads until the server ends the connection or nothing arrives for `quiet` seconds,
    /// stopping after `limit` seconds in all; returns the bytes read and how it ended.
    public func readUntilEnd(quiet: Double, limit: Double = 30) -> (bytes: [UInt8], end: End) {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(limit)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(quiet * 1000))
            if ready == 0 { return (bytes, .open) }
            if ready < 0 { continue }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                bytes += chunk[0..<n]
            } else if n == 0 {
                return (bytes, .eof)
            } else if errno != EAGAIN && errno != EINTR {
                return (bytes, .reset)
            }
        }
        return (bytes, .open)
    }

    /// Reads until a whole response head has come (or the connection ends), at most `limit`
    /// seconds: the bytes read, which may run past the head. (A loaded server may take more than
    /// a quiet spell to answer; this waits for the answer, not for silence.)
    public func readHead(limit: Double = 10) -> (bytes: [UInt8], end: End) {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(limit)
        while Date() < deadline, bytes.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 100) <= 0 { continue }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                bytes += chunk[0..<n]
            } else if n == 0 {
                return (bytes, .eof)
            } else if errno != EAGAIN && errno != EINTR {
                return (bytes, .reset)
            }
        }
        return (bytes, .open)
    }

    /// Reads one whole response (head and a Content-Length body) within `timeout` seconds,
    /// polling; nil when the connection ended first or the response was cut.
    public func readSizedResponse(timeout: Double = 10) -> (status: Int, head: String, body: [UInt8])? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
                let fields = head.split(separator: "\r\n")
                let parts = fields.first?.split(separator: " ") ?? []
                guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
                let length = fields.dropFirst().compactMap { line -> Int? in
                    let pair = line.split(separator: ":", maxSplits: 1)
                    guard pair.count == 2, pair[0].lowercased() == "content-length" else { return nil }
                    return Int(pair[1].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
                if bytes.count - end.upperBound >= length {
                    return (status, head, Array(bytes[end.upperBound..<(end.upperBound + length)]))
                }
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 100) <= 0 { continue }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                bytes += chunk[0..<n]
            } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
                return nil
            }
        }
        return nil
    }
}
