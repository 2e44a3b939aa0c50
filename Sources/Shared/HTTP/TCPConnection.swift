#if canImport(Glibc)
import Glibc
#endif

/// Why a TCP connection could not be made or used; carries the call and its errno.
public struct TCPError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a caller decides on retrying.
    public enum Kind: Sendable, Equatable {
        /// getaddrinfo found no address for the host (retrying cannot help).
        case resolve
        /// Every address refused or failed (`connect`), or the connection broke (`send`, `recv`).
        case io
        /// No answer within the time allowed.
        case timedOut
    }

    public var kind: Kind
    public var call: String
    public var detail: String

    public init(kind: Kind, call: String, detail: String) {
        self.kind = kind
        self.call = call
        self.detail = detail
    }

    public var description: String { "\(call): \(detail)" }

    static func errno(_ call: String, _ code: Int32 = Glibc.errno) -> TCPError {
        TCPError(kind: .io, call: call, detail: String(cString: strerror(code)))
    }
}

/// One TCP connection: resolved with getaddrinfo, connected with a timeout, read and written
/// with a timeout per call. Closed when released. The transport of the own HTTP client and of
/// the server's relay.
public final class TCPConnection {
    private var fd: Int32

    /// Connects to `host:port`, trying each address getaddrinfo gives for up to `timeout` seconds.
    public init(host: String, port: Int, timeout: Double) throws(TCPError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        // AI_ADDRCONFIG leaves out IPv6 on a machine whose only IPv6 address is ::1, so an
        // address literal (`[::1]`) is taken as it is, without it.
        hints.ai_flags = Self.isAddressLiteral(host) ? AI_NUMERICHOST : AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let why = status == EAI_SYSTEM ? String(cString: strerror(Glibc.errno)) : String(cString: gai_strerror(status))
            throw TCPError(kind: .resolve, call: "getaddrinfo", detail: "\(host): \(why)")
        }
        defer { freeaddrinfo(first) }
        let deadline = Monotonic.now.adding(seconds: timeout)
        var failure = TCPError(kind: .io, call: "connect", detail: "\(host): no address")
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            next = entry.pointee.ai_next
            do {
                fd = try Self.connect(entry.pointee, deadline: deadline)
                return
            } catch {
                failure = TCPError(kind: error.kind, call: error.call, detail: "\(host) port \(port): \(error.detail)")
                if error.kind == .timedOut { break }
            }
        }
        throw failure
    }

    /// Whether `host` is an IPv4 or IPv6 address rather than a name.
    private static func isAddressLiteral(_ host: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1 || inet_pton(AF_INET, host, &address) == 1
    }

    /// A non-blocking connect to one address, waited for with poll until `deadline`.
    private static func connect(_ address: addrinfo, deadline: Monotonic) throws(TCPError) -> Int32 {
        let fd = socket(address.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                        address.ai_protocol)
        guard fd >= 0 else { throw .errno("socket") }
        var one: Int32 = 1
        // Keep-alive probes, as libcurl's TCP_KEEPALIVE did: a dead peer is noticed on an idle socket.
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
        if Glibc.connect(fd, address.ai_addr, address.ai_addrlen) != 0 && Glibc.errno != EINPROGRESS {
            let code = Glibc.errno
            close(fd)
            throw .errno("connect", code)
        }
        let ready: Bool
        do { ready = try wait(fd, for: Int16(POLLOUT), until: deadline) } catch {
            close(fd)
            throw error
        }
        guard ready else {
            close(fd)
            throw TCPError(kind: .timedOut, call: "connect", detail: "no answer")
        }
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
        guard code == 0 else {
            close(fd)
            throw .errno("connect", code)
        }
        return fd
    }

    /// Shuts both directions of the connection (`shutdown(SHUT_RDWR)`), from any thread: a send
    /// or receive waiting on it returns at once (end of stream, or an error). The descriptor
    /// stays open until the connection is freed, so its number cannot be reused meanwhile.
    public func interrupt() {
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Writes all of `bytes`, waiting up to `timeout` seconds each time the socket is full.
    public func send(_ bytes: [UInt8], timeout: Double) throws(TCPError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress.map { $0 + sent }, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                sent += n
            } else if n < 0 && (Glibc.errno == EAGAIN || Glibc.errno == EWOULDBLOCK) {
                guard try Self.wait(fd, for: Int16(POLLOUT), until: Monotonic.now.adding(seconds: timeout)) else {
                    throw TCPError(kind: .timedOut, call: "send", detail: "the peer reads nothing")
                }
            } else if n < 0 && Glibc.errno == EINTR {
                continue
            } else {
                throw .errno("send")
            }
        }
    }

    /// What one `receive` got.
    public enum Received: Equatable, Sendable {
        case bytes(Int)
        /// The peer closed its side (end of stream).
        case closed
        /// Nothing arrived within the timeout.
        case timedOut
    }

    /// Reads what is there into `buffer` (at most its size), waiting up to `timeout` seconds.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Double) throws(TCPError) -> Received {
        guard buffer.count > 0 else { return .bytes(0) }
        let deadline = Monotonic.now.adding(seconds: timeout)
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            switch Glibc.errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK:
                guard try Self.wait(fd, for: Int16(POLLIN), until: deadline) else { return .timedOut }
            default:
                throw .errno("recv")
            }
        }
    }

    /// Whether the peer has closed or sent something unasked (an idle keep-alive connection
    /// is only reusable when it has neither).
    public var isIdleAndOpen: Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    /// Polls `fd` for `events` until `deadline`; false when the time ran out.
    private static func wait(_ fd: Int32, for events: Int16, until deadline: Monotonic) throws(TCPError) -> Bool {
        while true {
            let left = deadline.seconds(since: .now)
            guard left > 0 else { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&entry, 1, Int32(min(left * 1000, 3_600_000).rounded(.up)))
            if n > 0 { return true }
            if n == 0 { continue }
            if Glibc.errno == EINTR { continue }
            throw .errno("poll")
        }
    }
}
