#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Atomics
import Foundation
import Logging
import StreamShared

/// Configuration of an `HTTPServer`.
public struct HTTPServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    /// 0 picks a free port.
    public var port: Int = 8080
    /// Event-loop threads; defaults to the number of cores.
    public var threads: Int = ProcessInfo.processInfo.activeProcessorCount
    public var limits = HTTPLimits()
    /// Seconds for a request head to arrive (then 408).
    public var headTimeout: Double = 10
    /// Seconds an idle keep-alive connection is kept.
    public var idleTimeout: Double = 30
    /// Seconds a pending response may wait for the client to take any byte (then closed).
    public var writeTimeout: Double = 30
    /// Lingering close after a last response: at most this many seconds, and bytes dropped.
    public var lingerTime: Double = 2
    public var lingerBytes = 8 << 20
    public var maxConnections = 10_000
    public var accessLog = true
    /// Threads that make the responses that may wait (`HTTPResponse.offLoop`), and how many such
    /// responses may queue for them before requests are refused with 503.
    public var blockingThreads = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
    public var blockingQueue = 1024
    /// How long in-flight responses may run after a shutdown request.
    public var shutdownGrace: Double = 5

    public init() {}
}

/// Why the server could not start.
public enum ServerStartError: Error, CustomStringConvertible, Sendable {
    case badAddress(String)
    case portInUse(String, Int)
    case system(SystemError)
    /// A loop or pool thread could not be started.
    case thread(ThreadError)

    public var description: String {
        switch self {
        case .badAddress(let host): return "cannot listen on '\(host)': not an IPv4 or IPv6 address"
        case .portInUse(let host, let port): return "cannot listen on \(host):\(port): address already in use"
        case .system(let error): return "cannot listen: \(error)"
        case .thread(let error): return "cannot serve: \(error)"
        }
    }
}

/// The HTTP/1.1 server: a listening socket and a fixed set of epoll loops, one thread each.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked: `loops` and `threads` are set in start() before any other thread sees them,
    // then only read; shutdown coordination goes through the loops' atomics.
    public let configuration: HTTPServerConfiguration
    private let handler: RequestHandler
    private let logger: Logger
    private var listenFD: Int32 = -1
    private var loops: [EventLoop] = []
    private var pool: BlockingPool?
    private var threads: [NativeThread] = []
    private let openConnections = ManagedAtomic<Int>(0)
    /// The port actually bound (useful with port 0).
    public private(set) var port: Int = 0

    public init(configuration: HTTPServerConfiguration, logger: Logger, handler: @escaping RequestHandler) {
        self.configuration = configuration
        self.logger = logger
        self.handler = handler
    }

    /// Binds, listens and starts the loops; returns the bound port.
    @discardableResult
    public func start() throws(ServerStartError) -> Int {
        signal(SIGPIPE, SIG_IGN)
        Self.raiseDescriptorLimit(to: configuration.maxConnections + 256)
        let fd = try bindListener()
        listenFD = fd
        port = Self.boundPort(fd)
        let settings = LoopSettings(limits: configuration.limits,
                                    headTimeout: Self.nanos(configuration.headTimeout),
                                    idleTimeout: Self.nanos(configuration.idleTimeout),
                                    writeTimeout: Self.nanos(configuration.writeTimeout),
                                    lingerTime: Self.nanos(configuration.lingerTime),
                                    lingerBytes: max(0, configuration.lingerBytes),
                                    maxConnections: configuration.maxConnections,
                                    accessLog: configuration.accessLog)
        let pool: BlockingPool
        do {
            pool = try BlockingPool(threads: configuration.blockingThreads, capacity: configuration.blockingQueue,
                                    name: "streamd-pool")
        } catch {
            close(fd)
            listenFD = -1
            throw .thread(error)
        }
        self.pool = pool
        do {
            for _ in 0..<max(1, configuration.threads) {
                loops.append(try EventLoop(listenFD: fd, settings: settings, handler: handler, pool: pool, logger: logger,
                                           openConnections: openConnections))
            }
        } catch {
            pool.shutdown(deadline: monotonicNanos())
            throw .system(error)
        }
        for loop in loops { loop.siblings = loops }
        for (i, loop) in loops.enumerated() {
            do {
                threads.append(try NativeThread(name: "streamd-loop-\(i)") { loop.run() })
            } catch {
                // The loops already running stop and are joined; nothing is left listening.
                shutdown()
                throw .thread(error)
            }
        }
        return port
    }

    /// Seconds to nanoseconds, clamped to 1 ms ... 1 year so no setting can trap the conversion.
    static func nanos(_ seconds: Double) -> UInt64 {
        guard seconds.isFinite else { return seconds > 0 ? 31_536_000_000_000_000 : 1_000_000 }
        return UInt64(min(max(seconds, 0.001), 31_536_000) * 1e9)
    }

    /// What a shutdown left behind.
    public struct ShutdownReport: Sendable {
        /// Event loops still running at the join deadline (none normally: each closes what it
        /// holds at the drain deadline).
        public var loopsLeft = 0
        /// The blocking pool's jobs dropped and abandoned.
        public var pool = BlockingPool.ShutdownReport()
    }

    /// Stops accepting, lets in-flight responses (and the blocking pool's jobs) finish within the
    /// grace period, waits for the loops until `joinDeadline` (monotonic ns; by default a second
    /// after the grace period), and reports what did not end.
    @discardableResult
    public func shutdown(joinDeadline: UInt64? = nil) -> ShutdownReport {
        var report = ShutdownReport()
        let deadline = monotonicNanos() + Self.nanos(configuration.shutdownGrace)
        let joinBy = max(deadline, joinDeadline ?? deadline + 1_000_000_000)
        for loop in loops { loop.requestStop(deadline: deadline) }
        for thread in threads where !thread.join(until: Monotonic(nanoseconds: joinBy)) { report.loopsLeft += 1 }
        if report.loopsLeft == 0 {
            for loop in loops { loop.siblings = [] }   // they referred to each other
        }
        if let pool { report.pool = pool.shutdown(deadline: deadline) }
        if listenFD >= 0 && report.loopsLeft == 0 {
            close(listenFD)
            listenFD = -1
        }
        return report
    }

    /// Raises the soft open-file limit toward `wanted` (bounded by the hard limit), as the
    /// connection cap is useless if accept fails first with EMFILE.
    static func raiseDescriptorLimit(to wanted: Int) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let target = min(rlim_t(wanted), limit.rlim_max)
        if limit.rlim_cur < target {
            limit.rlim_cur = target
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
    }

    /// Connections currently open (for tests and stats).
    public var connectionCount: Int { openConnections.load(ordering: .relaxed) }

    /// Connections each event loop serves (or has been handed and is about to take).
    public var loopConnectionCounts: [Int] { loops.map { $0.ownedCount.load(ordering: .relaxed) } }

    private func bindListener() throws(ServerStartError) -> Int32 {
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(truncatingIfNeeded: configuration.port)).bigEndian
        } else if inet_pton(AF_INET6, host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(truncatingIfNeeded: configuration.port)).bigEndian
        } else {
            throw .badAddress(configuration.host)
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(SystemError(call: "socket", errno: errno)) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let result: Int32
        if family == AF_INET {
            result = withUnsafePointer(to: &v4) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        } else {
            result = withUnsafePointer(to: &v6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        if result != 0 {
            let code = errno
            close(fd)
            if code == EADDRINUSE { throw .portInUse(configuration.host, configuration.port) }
            throw .system(SystemError(call: "bind", errno: code))
        }
        guard listen(fd, 4096) == 0 else {
            let code = errno
            close(fd)
            throw .system(SystemError(call: "listen", errno: code))
        }
        return fd
    }

    private static func boundPort(_ fd: Int32) -> Int {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        if Int32(address.ss_family) == AF_INET6 {
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }
}
