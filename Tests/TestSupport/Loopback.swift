import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket connected to 127.0.0.1:`port`, with `configure` run on it before the connect
/// (options such as buffer sizes must be set before). Closed again when the connect fails.
public func connectLoopback(port: Int, configure: (Int32) -> Void = { _ in }) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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

/// A loopback port no socket holds right now (bound to 0, read back, released), for a program
/// that must be told its port (nginx, openssl s_server) or for a port nothing listens on.
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket failed: errno \(errno)") }
    defer { Glibc.close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestFailure("no free loopback port: errno \(errno)") }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// A listening socket on the loopback address (IPv4 or IPv6) with a thread that accepts
/// connections and hands each to `handler` on a thread of its own; the handler owns the
/// descriptor and closes it. `stop` wakes the accepting thread through a pipe and waits for it
/// to end before it closes the listening socket, so the thread never polls or accepts on a
/// descriptor number that another test's socket has been given since.
public final class LoopbackListener: @unchecked Sendable {
    // @unchecked: `stopped` is guarded by `lock`; the descriptors are closed once, after the thread ended.
    /// The port it listens on.
    public let port: Int
    private let listener: Int32
    private let wakeRead: Int32, wakeWrite: Int32
    private let ended = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var stopped = false

    /// Listens on 127.0.0.1 (or ::1) at a free port and starts accepting.
    public init(ipv6: Bool = false, handler: @escaping @Sendable (Int32) -> Void) throws {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed: errno \(errno)") }
        var storage = sockaddr_storage()
        var length: socklen_t
        if ipv6 {
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    $0.pointee.sin6_family = sa_family_t(AF_INET6)
                    $0.pointee.sin6_addr = in6addr_loopback
                }
            }
        } else {
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    $0.pointee.sin_family = sa_family_t(AF_INET)
                    $0.pointee.sin_addr.s_addr = inet_addr("127.0.0.1")
                }
            }
        }
        let bound = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            Glibc.close(fd)
            throw TestFailure("loopback listener: bind/listen failed: errno \(code)")
        }
        port = withUnsafePointer(to: &storage) { pointer in
            ipv6 ? pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
                 : pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        var wake: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestFailure("loopback listener: pipe failed: errno \(code)")
        }
        for end in wake { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        listener = fd
        wakeRead = wake[0]
        wakeWrite = wake[1]
        // The thread holds the descriptors and the handler, not `self`: dropping the listener stops it.
        let (wakeRead, ended) = (wakeRead, ended)
        Thread.detachNewThread {
            defer { ended.signal() }
            while true {
                var entries = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&entries, 2, -1)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0, entries[1].revents == 0 else { return }
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED || errno == EAGAIN { continue }
                    return
                }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                Thread.detachNewThread { handler(client) }
            }
        }
    }

    /// Stops accepting (connections already handed over go on) and closes the listening socket
    /// once the accepting thread has ended. Safe to call more than once.
    public func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        ended.wait()
        Glibc.close(listener)
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    deinit { stop() }
}
