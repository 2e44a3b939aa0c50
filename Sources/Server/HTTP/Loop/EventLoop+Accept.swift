#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Atomics
import Logging
import Foundation

/// Accepting: connections taken from the shared listening socket and shared out between the loops.
extension EventLoop {
    /// Connections taken per wake of the listening socket. The socket stays readable while more
    /// wait (level-triggered, EPOLLEXCLUSIVE), so the rest go to the next wake of this loop or of
    /// another one: a burst of connections is shared by the loops, and each loop serves the
    /// requests of those it took between batches instead of accepting a thousand first.
    static let acceptBatch = 32

    func acceptPending() {
        for _ in 0..<Self.acceptBatch {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(listenFD, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EAGAIN, EWOULDBLOCK: return
                case EMFILE, ENFILE:
                    logger.warning("accept4: out of file descriptors")
                    return
                default:
                    return
                }
            }
            // The connection cap: beyond it, new connections are closed at once.
            if openConnections.loadThenWrappingIncrement(ordering: .relaxed) >= settings.maxConnections {
                openConnections.wrappingDecrement(ordering: .relaxed)
                close(fd)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let peer = Self.describe(address)
            // The loop with the fewest connections serves it (this one on a tie).
            let mine = ownedCount.load(ordering: .relaxed)
            let fewest = siblings.lazy.map { ($0, $0.ownedCount.load(ordering: .relaxed)) }.min { $0.1 < $1.1 }
            if let (other, theirs) = fewest, other !== self, theirs < mine, other.take(fd: fd, peer: peer) {
                continue
            }
            ownedCount.wrappingIncrement(ordering: .relaxed)
            register(fd: fd, peer: peer)
        }
    }

    func register(fd: Int32, peer: String) {
        let generation = nextGeneration
        nextGeneration = nextGeneration == UInt32.max ? 1 : nextGeneration + 1
        let connection = Connection(fd: fd, generation: generation, peer: peer)
        connection.headDeadline = monotonicNanos() + settings.headTimeout
        connections[fd] = connection
        setInterest(connection, Epoll.readable, add: true)
    }

    /// Called by another loop: queues a connection it accepted for this one and wakes it; false
    /// when this loop is stopping (the caller keeps the connection).
    func take(fd: Int32, peer: String) -> Bool {
        let taken = handoffLock.withLock { _ in
            guard !handoffClosed, !stopRequested.load(ordering: .acquiring) else { return false }
            ownedCount.wrappingIncrement(ordering: .relaxed)
            handedOver.append((fd, peer))
            return true
        }
        guard taken else { return false }
        Epoll.signal(eventFD: wakeFD)
        return true
    }

    /// Registers the connections other loops handed over (on this loop's thread); when stopping,
    /// closes them instead.
    func takeHandedOver(last: Bool = false) {
        let taken = handoffLock.withLock { _ in
            let taken = handedOver
            handedOver.removeAll()
            if last { handoffClosed = true }
            return taken
        }
        for (fd, peer) in taken {
            if stopRequested.load(ordering: .acquiring) {
                close(fd)
                ownedCount.wrappingDecrement(ordering: .relaxed)
                openConnections.wrappingDecrement(ordering: .relaxed)
            } else {
                register(fd: fd, peer: peer)
            }
        }
    }

    static func describe(_ address: sockaddr_storage) -> String {
        var copy = address
        var host = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &copy) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    inet_ntop(AF_INET, &addr, &host, socklen_t(host.count))
                    return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                        + ":\(UInt16(bigEndian: sin.pointee.sin_port))"
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &copy) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &host, socklen_t(host.count))
                    return "[" + String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                        + "]:\(UInt16(bigEndian: sin.pointee.sin6_port))"
                }
            }
        default:
            return "unknown"
        }
    }
}
