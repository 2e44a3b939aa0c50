import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket connected to 127.0.0.1:`port`, with `configure` run on it before the connect
/// (options such as buffer sizes must be set before). Closed again when the connect fails.
func connectLoopback(port: Int, configure: (Int32) -> Void = { _ in }) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket failed: errno \(errno)") }
    configure(fd)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port)).bigEndian
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        let code = errno
        Glibc.close(fd)
        throw TestFailure("connect failed: errno \(code)")
    }
    return fd
}

/// A loopback TCP client for connection-state tests: socket options set before connecting,
/// non-blocking sends, half-close and abortive close, and a bounded look at how the server
/// ended the connection. `RawConnection` is for well-behaved request/response exchanges.
final class ClientSocket {
    private(set) var fd: Int32

    /// How a connection looked from the client side after reading what there was.
    enum End: Equatable {
        /// Still open: nothing more arrived within the wait.
        case open
        /// The server closed it cleanly (FIN).
        case eof
        /// The server reset it (RST), or another socket error.
        case reset
    }

    /// Connects to 127.0.0.1:port; `receiveBuffer` (bytes) is set before connecting so the
    /// advertised window stays small and a non-reading client fills up quickly.
    init(port: Int, receiveBuffer: Int? = nil) throws {
        fd = try connectLoopback(port: port) { fd in
            if var size = receiveBuffer.map(Int32.init) {
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
        }
    }

    deinit { close() }

    /// Sends what the socket takes right now without blocking; returns the bytes accepted.
    @discardableResult
    func sendSome(_ bytes: [UInt8]) -> Int {
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
    func send(_ bytes: [UInt8], timeout: Double = 5) -> Int { Self.send(fd: fd, bytes, timeout: timeout) }

    /// `send(_:timeout:)` on a bare descriptor, for a writer thread beside a reading one.
    @discardableResult
    static func send(fd: Int32, _ bytes: [UInt8], timeout: Double) -> Int {
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

    func send(_ text: String, timeout: Double = 5) { send(Array(text.utf8), timeout: timeout) }

    /// `shutdown(SHUT_WR)`: the request is all there is; the client may still read.
    func halfClose() { shutdown(fd, Int32(SHUT_WR)) }

    /// Closes with SO_LINGER 0, so the server sees a reset.
    func abort() {
        guard fd >= 0 else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// One non-blocking read of at most `limit` bytes: what was there, and whether the
    /// connection is still open.
    func readSome(upTo limit: Int) -> (bytes: [UInt8], end: End) {
        var chunk = [UInt8](repeating: 0, count: limit)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n > 0 { return (Array(chunk[0..<n]), .open) }
        if n == 0 { return ([], .eof) }
        return ([], errno == EAGAIN || errno == EINTR ? .open : .reset)
    }

    /// Reads until the server ends the connection or nothing arrives for `quiet` seconds,
    /// stopping after `limit` seconds in all; returns the bytes read and how it ended.
    func readUntilEnd(quiet: Double, limit: Double = 30) -> (bytes: [UInt8], end: End) {
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

    /// Reads one whole response (head and a Content-Length body) within `timeout` seconds;
    /// nil when the connection ended first or the response was cut.
    func readResponse(timeout: Double = 10) -> (status: Int, head: String, body: [UInt8])? {
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

/// What /proc says about a running process: CPU time used and descriptors open.
enum ProcessProbe {
    /// User plus system CPU time of the whole process (all threads), in seconds.
    static func cpuSeconds(pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The share of one core the process used over the next `seconds` (1.0 = one core busy).
    static func cpuShare(pid: Int32, over seconds: Double) -> Double? {
        guard let before = cpuSeconds(pid: pid) else { return nil }
        let start = Date()
        Thread.sleep(forTimeInterval: seconds)
        guard let after = cpuSeconds(pid: pid) else { return nil }
        return (after - before) / Date().timeIntervalSince(start)
    }

    /// Descriptors the process has open now.
    static func openDescriptors(pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// Polls until the process has at most `target` descriptors open or `timeout` passes;
    /// returns the last count seen.
    static func waitForDescriptors(pid: Int32, atMost target: Int, timeout: Double) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        var count = openDescriptors(pid: pid)
        while count > target && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            count = openDescriptors(pid: pid)
        }
        return count
    }
}
