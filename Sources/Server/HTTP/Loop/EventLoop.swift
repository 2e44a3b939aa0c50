#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Atomics
import Logging
import Foundation

/// Answers one parsed request, or refuses it (the loop renders the refusal). Called on an
/// event-loop thread, so it must not block: work that may wait goes in `HTTPResponse.offLoop`.
public typealias RequestHandler = @Sendable (HTTPRequest) throws(HTTPRefusal) -> HTTPResponse

/// Settings shared by every event loop of a server.
struct LoopSettings: Sendable {
    var limits: HTTPLimits
    var headTimeout: UInt64     // ns
    var idleTimeout: UInt64     // ns
    /// How long a pending response may wait for the client to take any byte.
    var writeTimeout: UInt64    // ns
    /// Bounds of the lingering close after a last response: time, and bytes read and dropped.
    var lingerTime: UInt64      // ns
    var lingerBytes: Int
    var maxConnections: Int
    var accessLog: Bool
}

/// One epoll loop on its own thread: accepts from the shared listening socket
/// (EPOLLEXCLUSIVE, so one loop wakes per connection) and drives its connections.
final class EventLoop: @unchecked Sendable {
    // @unchecked: all mutable state is touched only by the loop's own thread, except
    // `stopRequested`/`drainDeadline`, which are atomics, and the eventfd, which is thread-safe.
    let epfd: Int32
    let wakeFD: Int32
    let listenFD: Int32
    let settings: LoopSettings
    let handler: RequestHandler
    /// Where responses that may wait are made (`HTTPResponse.offLoop`).
    let pool: BlockingPool
    let logger: Logger
    let openConnections: ManagedAtomic<Int>
    private var connections: [Int32: Connection] = [:]
    /// Connections handed to a live exchange (radio listeners and sources): every wake of the
    /// loop pumps those not waiting for room in their socket.
    private var liveConnections: [Int32: Connection] = [:]
    private var waker: LoopWaker { LoopWaker(fd: wakeFD) }
    private var nextGeneration: UInt32 = 1
    private let parser: HTTPRequestParser
    private var listening = true
    let stopRequested = ManagedAtomic<Bool>(false)
    let drainDeadline = ManagedAtomic<UInt64>(0)
    private var cachedDateSecond = -1
    private var cachedDate = ""
    /// Receive buffer for every read of this loop's connections (one thread, so one buffer).
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// Connections this loop serves or has been handed and not yet taken: what the loops compare
    /// when one accepts, so a burst of connections is shared out instead of kept by the loop that
    /// woke (the listening socket wakes one loop at a time, and often the same one).
    let ownedCount = ManagedAtomic<Int>(0)
    /// The server's loops, this one included; set before any loop runs, then only read.
    var siblings: [EventLoop] = []
    /// Connections another loop accepted for this one: the descriptor and the peer's address;
    /// both under `handoffLock`, and `handoffClosed` once the loop has taken its last ones.
    private let handoffLock = NSLock()
    private var handedOver: [(fd: Int32, peer: String)] = []
    private var handoffClosed = false
    /// Responses the pool has made, waiting for this loop to send them; under `handoffLock`.
    private var madeOffLoop: [(fd: Int32, generation: UInt32, response: HTTPResponse)] = []
    /// The loop's thread, once it runs: loop-owned state is touched only there (checked in debug builds).
    private var loopThread: pthread_t?

    static let wakeToken: UInt64 = UInt64.max
    static let listenToken: UInt64 = UInt64.max - 1

    init(listenFD: Int32, settings: LoopSettings, handler: @escaping RequestHandler, pool: BlockingPool, logger: Logger,
         openConnections: ManagedAtomic<Int>) throws(SystemError) {
        self.epfd = try Epoll.create()
        self.wakeFD = try Epoll.makeEventFD()
        self.listenFD = listenFD
        self.settings = settings
        self.handler = handler
        self.pool = pool
        self.logger = logger
        self.openConnections = openConnections
        self.parser = HTTPRequestParser(limits: settings.limits)
        try Epoll.add(epfd, fd: wakeFD, events: Epoll.readable, data: Self.wakeToken)
        try Epoll.add(epfd, fd: listenFD, events: Epoll.readable | Epoll.exclusive, data: Self.listenToken)
    }

    deinit {
        close(epfd)
        close(wakeFD)
    }

    /// Asks the loop to stop accepting and finish in-flight responses until `deadline`.
    func requestStop(deadline: UInt64) {
        drainDeadline.store(deadline, ordering: .relaxed)
        stopRequested.store(true, ordering: .releasing)
        Epoll.signal(eventFD: wakeFD)
    }

    /// Runs until stopped and drained.
    func run() {
        loopThread = pthread_self()
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while true {
            let now = monotonicNanos()
            if stopRequested.load(ordering: .acquiring) {
                if listening {
                    Epoll.remove(epfd, fd: listenFD)
                    listening = false
                }
                // Idle connections close now; busy ones (writing, or closing lingeringly) get until the deadline.
                // Live exchanges (radio) never end by themselves: they close at once too.
                for connection in Array(connections.values)
                where (connection.outgoing == nil || connection.outgoing?.liveStarted == true) && connection.lingerDeadline == nil
                    && connection.awaiting == nil {
                    closeConnection(connection)
                }
                if connections.isEmpty || now >= drainDeadline.load(ordering: .relaxed) {
                    takeHandedOver(last: true)
                    for connection in Array(connections.values) { closeConnection(connection) }
                    return
                }
            }
            let timeout = nextTimeoutMillis(now: now)
            let count = events.withUnsafeMutableBufferPointer { buffer in
                epoll_wait(epfd, buffer.baseAddress, Int32(buffer.count), timeout)
            }
            if count < 0 {
                if errno == EINTR { continue }
                logger.error("epoll_wait: \(String(cString: strerror(errno)))")
                return
            }
            for i in 0..<Int(count) {
                let event = events[i]
                let token = event.data.u64
                if token == Self.wakeToken {
                    Epoll.drain(eventFD: wakeFD)
                    takeHandedOver()
                    sendMadeOffLoop()
                    pumpLiveConnections()
                } else if token == Self.listenToken {
                    acceptPending()
                } else {
                    let fd = Int32(truncatingIfNeeded: token & 0xFFFF_FFFF)
                    let generation = UInt32(truncatingIfNeeded: token >> 32)
                    guard let connection = connections[fd], connection.generation == generation else { continue }
                    handle(event: event.events, on: connection)
                }
            }
            checkTimers(now: monotonicNanos())
        }
    }

    // MARK: Accepting

    /// Connections taken per wake of the listening socket. The socket stays readable while more
    /// wait (level-triggered, EPOLLEXCLUSIVE), so the rest go to the next wake of this loop or of
    /// another one: a burst of connections is shared by the loops, and each loop serves the
    /// requests of those it took between batches instead of accepting a thousand first.
    static let acceptBatch = 32

    private func acceptPending() {
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

    private func register(fd: Int32, peer: String) {
        let generation = nextGeneration
        nextGeneration = nextGeneration == UInt32.max ? 1 : nextGeneration + 1
        let connection = Connection(fd: fd, generation: generation, peer: peer)
        connection.headDeadline = monotonicNanos() + settings.headTimeout
        connections[fd] = connection
        setInterest(connection, Epoll.readable, add: true)
    }

    /// Called by another loop: queues a connection it accepted for this one and wakes it; false
    /// when this loop is stopping (the caller keeps the connection).
    private func take(fd: Int32, peer: String) -> Bool {
        handoffLock.lock()
        guard !handoffClosed, !stopRequested.load(ordering: .acquiring) else {
            handoffLock.unlock()
            return false
        }
        ownedCount.wrappingIncrement(ordering: .relaxed)
        handedOver.append((fd, peer))
        handoffLock.unlock()
        Epoll.signal(eventFD: wakeFD)
        return true
    }

    /// Registers the connections other loops handed over (on this loop's thread); when stopping,
    /// closes them instead.
    private func takeHandedOver(last: Bool = false) {
        handoffLock.lock()
        let taken = handedOver
        handedOver.removeAll()
        if last { handoffClosed = true }
        handoffLock.unlock()
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

    // MARK: Connection events

    private func handle(event: UInt32, on connection: Connection) {
        if event & UInt32(EPOLLERR.rawValue) != 0 {
            closeConnection(connection)
            return
        }
        if connection.lingerDeadline != nil {
            discardInput(connection)
            return
        }
        if event & UInt32(EPOLLHUP.rawValue) != 0 {
            // Both directions are shut (a reset, or the peer gone): nothing can be sent.
            closeConnection(connection)
            return
        }
        if connection.outgoing?.liveStarted == true {
            runLive(connection, now: monotonicNanos(), readable: event & Epoll.readable != 0)
            if isOpen(connection) { updateInterest(connection) }
            return
        }
        if event & Epoll.readable != 0 {
            readAvailable(connection)
            if !isOpen(connection) { return }
        }
        if event & Epoll.writable != 0 || connection.outgoing == nil {
            progress(connection)
            if !isOpen(connection) { return }
        }
        updateInterest(connection)
    }

    private func isOpen(_ connection: Connection) -> Bool { connections[connection.fd] === connection }

    /// Most bytes buffered from a client ahead of the response being written (pipelining).
    private var maxReadBuffer: Int { settings.limits.maxRequestLine + settings.limits.maxHeaderBytes + 4096 }

    /// Reads until the socket is empty, the peer has closed its side or the buffer is full; the
    /// rest stays in the kernel, unwatched, until the buffer has room again.
    private func readAvailable(_ connection: Connection) {
        while !connection.peerClosed && connection.readBuffer.count < maxReadBuffer {
            let n = scratch.withUnsafeMutableBytes { raw in
                recv(connection.fd, raw.baseAddress, raw.count, 0)
            }
            if n > 0 {
                connection.readBuffer.append(contentsOf: scratch[0..<n])
                if connection.headDeadline == nil {
                    connection.headDeadline = monotonicNanos() + settings.headTimeout
                }
                connection.idleDeadline = nil
                continue
            }
            if n == 0 {
                connection.peerClosed = true
                break
            }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { break }
            closeConnection(connection)
            return
        }
    }

    /// The events a connection waits for, derived from its state alone. Interest is
    /// level-triggered, so a condition that stays true while the loop can do nothing about it
    /// (end of input already seen, a full read buffer, a client that takes no bytes) must not be
    /// watched, or epoll_wait returns at once, forever.
    private func updateInterest(_ connection: Connection) {
        var events: UInt32 = 0
        if connection.lingerDeadline != nil {
            events = Epoll.readable
        } else if let out = connection.outgoing, out.liveStarted {
            if out.liveWantsInput { events |= Epoll.readable }
            if connection.writeBlocked { events |= Epoll.writable }
        } else {
            if !connection.peerClosed && connection.readBuffer.count < maxReadBuffer { events |= Epoll.readable }
            if connection.writeBlocked { events |= Epoll.writable }
        }
        setInterest(connection, events)
    }

    /// Starts the next response if none is running, and writes what can be written.
    private func progress(_ connection: Connection) {
        assertOnLoop()
        while true {
            // A response made on the pool comes back through `sendMadeOffLoop`.
            if connection.awaiting != nil { return }
            if connection.outgoing == nil {
                guard startNextResponse(connection) else {
                    // No complete request buffered; with the client's side closed none will come.
                    if connection.peerClosed { closeConnection(connection) }
                    return
                }
                if connection.awaiting != nil { return }
            }
            let now = monotonicNanos()
            let outcome: Connection.WriteOutcome
            do {
                outcome = try connection.write(now: now)
            } catch {
                closeConnection(connection)
                return
            }
            switch outcome {
            case .blocked:
                connection.writeBlocked = true
                return
            case .paced(let wake):
                connection.writeBlocked = false
                setWake(connection, wake)
                return
            case .live:
                connection.writeBlocked = false
                runLive(connection, now: now)
                return
            case .finished:
                connection.writeBlocked = false
                guard let done = connection.outgoing else { return }
                connection.outgoing = nil
                connection.requestsServed += 1
                logAccess(connection, done, now: now)
                if !done.keepAlive || stopRequested.load(ordering: .relaxed) {
                    closeAfterResponse(connection, now: now)
                    return
                }
                if connection.readBuffer.isEmpty {
                    if connection.peerClosed {
                        closeConnection(connection)
                        return
                    }
                    connection.idleDeadline = now + settings.idleTimeout
                    connection.headDeadline = nil
                }
            }
        }
    }

    /// Ends a connection after its last response. Closing a socket with unread input makes the
    /// kernel send a reset, which can destroy the response on its way or fail a client still
    /// sending a body; so our side is shut down (the client sees the end of the response) and
    /// what the client still sends is read and dropped until it closes too, within bounds
    /// (RFC 9112 section 9.6, lingering close).
    private func closeAfterResponse(_ connection: Connection, now: UInt64) {
        if connection.peerClosed {
            closeConnection(connection)   // all input was read: nothing to reset
            return
        }
        shutdown(connection.fd, Int32(SHUT_WR))
        connection.readBuffer = []
        connection.headDeadline = nil
        connection.idleDeadline = nil
        connection.lingerDeadline = now + settings.lingerTime
        connection.lingerBudget = settings.lingerBytes
        discardInput(connection)
        if isOpen(connection) { updateInterest(connection) }
    }

    /// Lingering close: reads and drops input until the client closes or the budget is spent.
    private func discardInput(_ connection: Connection) {
        while connection.lingerBudget > 0 {
            let n = scratch.withUnsafeMutableBytes { raw in
                recv(connection.fd, raw.baseAddress, min(raw.count, connection.lingerBudget), 0)
            }
            if n > 0 {
                connection.lingerBudget -= n
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            break   // end of input (the client is done) or an error
        }
        closeConnection(connection)
    }

    /// Parses the next request from the buffer and prepares its response; false when
    /// no complete request is buffered yet.
    private func startNextResponse(_ connection: Connection) -> Bool {
        let now = monotonicNanos()
        let request: HTTPRequest
        let consumed: Int
        do {
            guard let (parsed, used) = try parser.parse(connection.readBuffer[...]) else { return false }
            request = parsed
            consumed = used
        } catch {
            var response = HTTPResponse.error(error.status, Self.message(for: error), close: true)
            response.closeConnection = true
            connection.readBuffer.removeAll()
            begin(response, for: nil, on: connection, now: now)
            return true
        }
        connection.readBuffer.removeFirst(consumed)
        connection.headDeadline = connection.readBuffer.isEmpty ? nil : now + settings.headTimeout
        var response: HTTPResponse
        do throws(HTTPRefusal) {
            response = try handler(request)
        } catch {
            response = error.response
        }
        if request.hasBody && !response.takesRequestBody {
            // Only a radio source reads a body; refused here, the body is dropped by the lingering close.
            response = HTTPResponse.error(413, Self.message(for: .bodyNotAllowed), close: true)
        }
        if let make = response.offLoop {
            makeOffLoop(make, for: request, on: connection, now: now)
        } else {
            begin(Self.finished(response, for: request), for: request, on: connection, now: now)
        }
        return true
    }

    /// What is sent for `request`: no body for HEAD, and `Connection: keep-alive` said to an
    /// HTTP/1.0 client, which keeps the connection only when told so (RFC 9112 section 9.3).
    static func finished(_ response: HTTPResponse, for request: HTTPRequest) -> HTTPResponse {
        var response = response
        if request.minorVersion == 0 && request.keepAlive { response.announceKeepAlive = true }
        if request.method == "HEAD" {
            response.body = nil
            response.live = nil
        }
        return response
    }

    // MARK: Responses made off the loop

    /// Hands `make` to the pool; the connection waits (reading nothing more) until
    /// `sendMadeOffLoop` sends the response. A full pool is a 503 at once.
    private func makeOffLoop(_ make: @escaping @Sendable () throws(HTTPRefusal) -> HTTPResponse, for request: HTTPRequest,
                             on connection: Connection, now: UInt64) {
        let fd = connection.fd, generation = connection.generation
        connection.awaiting = request
        let queued = pool.submit { [self] in
            var response: HTTPResponse
            do throws(HTTPRefusal) {
                response = try make()
            } catch {
                response = error.response
            }
            // Work made off the loop answers once: a second deferral would be a bug, not a wait.
            if response.offLoop != nil { response = .error(500, "response deferred twice") }
            post(fd: fd, generation: generation, response)
        }
        if !queued {
            connection.awaiting = nil
            var busy = HTTPResponse.error(503, "server busy: try again shortly")
            busy.headers.append(("Retry-After", "1"))
            begin(Self.finished(busy, for: request), for: request, on: connection, now: now)
        }
    }

    /// Called on a pool thread: queues a made response for this loop and wakes it.
    private func post(fd: Int32, generation: UInt32, _ response: HTTPResponse) {
        handoffLock.lock()
        madeOffLoop.append((fd, generation, response))
        handoffLock.unlock()
        Epoll.signal(eventFD: wakeFD)
    }

    /// Sends the responses the pool has made, to the connections still waiting for them (a
    /// connection closed meanwhile, or its fd reused, gets nothing).
    private func sendMadeOffLoop() {
        handoffLock.lock()
        let made = madeOffLoop
        madeOffLoop.removeAll()
        handoffLock.unlock()
        let now = monotonicNanos()
        for (fd, generation, response) in made {
            guard let connection = connections[fd], connection.generation == generation,
                  let request = connection.awaiting else { continue }
            connection.awaiting = nil
            begin(Self.finished(response, for: request), for: request, on: connection, now: now)
            progress(connection)
            if isOpen(connection) { updateInterest(connection) }
        }
    }

    /// Traps in debug builds when called off this loop's thread.
    @inline(__always)
    private func assertOnLoop() {
        assert(loopThread.map { pthread_equal($0, pthread_self()) != 0 } ?? true, "event-loop state touched off its loop")
    }

    private func begin(_ response: HTTPResponse, for request: HTTPRequest?, on connection: Connection, now: UInt64) {
        assertOnLoop()
        let keepAlive = !(response.closeConnection || request?.keepAlive == false || request == nil
                          || stopRequested.load(ordering: .relaxed))
        // The write timeout counts from the start of a response at the earliest.
        connection.deliveredAt = now
        connection.deliveryCheckedAt = now
        connection.deliveredCheckpoint = acknowledgedBytes(connection)
        connection.outgoing = Connection.Outgoing(
            head: response.head(keepAlive: keepAlive, date: currentDate()), body: response.body,
            keepAlive: keepAlive, method: request?.method ?? "-", target: request?.target ?? "-",
            status: response.status, started: now, pace: response.pacingBytesPerSecond, live: response.live)
    }

    // MARK: Live exchanges

    /// Starts (once) and pumps the live exchange of a connection whose head is out.
    private func runLive(_ connection: Connection, now: UInt64, readable: Bool = false) {
        guard let live = connection.outgoing?.live else { return }
        if connection.outgoing?.liveStarted == false {
            connection.outgoing?.liveStarted = true
            liveConnections[connection.fd] = connection
            connection.liveExchange = live
            // Idle and head timers do not apply to a live exchange; it keeps its own.
            connection.headDeadline = nil
            connection.idleDeadline = nil
            let leftover = connection.readBuffer
            connection.readBuffer = []
            live.start(waker: waker, leftover: leftover, now: now)
        }
        var written = 0
        let step = live.pump(fd: connection.fd, now: now, readable: readable, written: &written)
        if written > 0 {
            connection.bytesWritten += written
            connection.outgoing?.bytesSent += written
        }
        switch step {
        case .wait(let readable, let writable, let wakeAt):
            connection.outgoing?.liveWantsInput = readable
            connection.writeBlocked = writable
            setWake(connection, wakeAt)
        case .finished:
            if let done = connection.outgoing { logAccess(connection, done, now: now) }
            stopLive(connection)
            connection.outgoing = nil
            connection.writeBlocked = false
            closeAfterResponse(connection, now: now)
        case .failed:
            if let done = connection.outgoing { logAccess(connection, done, now: now) }
            closeConnection(connection, reset: true)
        }
    }

    /// A loop wake: channels published or a source feed has room. Connections waiting for room
    /// in their socket are left to EPOLLOUT.
    private func pumpLiveConnections() {
        guard !liveConnections.isEmpty else { return }
        let now = monotonicNanos()
        for connection in Array(liveConnections.values)
        where !connection.writeBlocked && (connection.liveExchange?.quietUntil ?? 0) <= now && isOpen(connection) {
            runLive(connection, now: now)
            if isOpen(connection) { updateInterest(connection) }
        }
    }

    private func stopLive(_ connection: Connection) {
        connection.liveExchange = nil
        guard liveConnections.removeValue(forKey: connection.fd) != nil else { return }
        connection.outgoing?.live?.stop()
    }

    static func message(for error: HTTPParseError) -> String {
        switch error {
        case .badRequest(let why): return "bad request: \(why)"
        case .uriTooLong: return "request line too long"
        case .headersTooLarge: return "request header fields too large"
        case .versionNotSupported: return "HTTP version not supported"
        case .bodyNotAllowed: return "request bodies are not accepted"
        }
    }

    private func currentDate() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let second = Int(ts.tv_sec)
        if second != cachedDateSecond {
            cachedDateSecond = second
            cachedDate = HTTPDate.format(second)
        }
        return cachedDate
    }

    private func logAccess(_ connection: Connection, _ out: Connection.Outgoing, now: UInt64) {
        guard settings.accessLog else { return }
        let ms = Double(now - out.started) / 1e6
        logger.info("\(connection.peer) \(out.method) \(out.target) \(out.status) \(out.bytesSent) \(Int(ms.rounded()))ms")
    }

    // MARK: Timers

    /// Sets when the connection's response is due again, and queues the time (once per change).
    private func setWake(_ connection: Connection, _ wake: UInt64?) {
        guard connection.outgoing != nil, connection.outgoing?.wakeAt != wake else { return }
        connection.outgoing?.wakeAt = wake
        if let wake { timers.push(.init(time: wake, fd: connection.fd, generation: connection.generation)) }
    }

    /// Wake times of the connections (pacing, a live exchange's timer); see `TimerHeap`.
    private var timers = TimerHeap()

    private func nextTimeoutMillis(now: UInt64) -> Int32 {
        // A coarse tick bounds the work of checking timers; pacing needs finer steps. No scan of
        // the connections here: with tens of thousands of listeners, a loop that wakes often
        // would spend its time in it.
        var earliest: UInt64 = now + 1_000_000_000
        if let wake = timers.earliest { earliest = min(earliest, wake) }
        // Deadlines (head, idle, linger, write timeout) are handled by the sweep, at most every
        // 250 ms: waking sooner for one would spin.
        if !connections.isEmpty { earliest = min(earliest, lastSweep + Self.sweepInterval + 1_000_000) }
        if stopRequested.load(ordering: .relaxed) { earliest = min(earliest, now + 50_000_000) }
        // Rounded up: rounding down wakes the loop just before the time and makes it spin.
        return Int32(min(1000, ((earliest > now ? earliest - now : 0) + 999_999) / 1_000_000))
    }

    private var lastSweep: UInt64 = 0
    private static let sweepInterval: UInt64 = 250_000_000

    private func checkTimers(now: UInt64) {
        for entry in timers.popDue(now: now) {
            // Stale entries (the connection closed, or its wake time changed) are dropped here.
            guard let connection = connections[entry.fd], connection.generation == entry.generation,
                  let wake = connection.outgoing?.wakeAt, wake <= now else { continue }
            connection.outgoing?.wakeAt = nil
            progress(connection)
            if isOpen(connection) { updateInterest(connection) }
        }
        // Timeouts need only second precision: sweep at most a few times a second.
        guard now - lastSweep > Self.sweepInterval else { return }
        lastSweep = now
        for connection in Array(connections.values) {
            // Waiting on the pool: the work's own bounds (a worker's timeout) end the wait.
            if connection.awaiting != nil { continue }
            if connection.outgoing != nil {
                checkDelivery(connection, now: now)
                // A live exchange stuck on a full socket still has deadlines (radio lag).
                if isOpen(connection), connection.writeBlocked, connection.outgoing?.liveStarted == true {
                    runLive(connection, now: now)
                    if isOpen(connection) { updateInterest(connection) }
                }
                continue
            }
            if let deadline = connection.lingerDeadline {
                if deadline <= now { closeConnection(connection) }
                continue
            }
            if let deadline = connection.headDeadline, deadline <= now, !connection.readBuffer.isEmpty {
                // Slowloris: a request head that does not arrive in time.
                begin(HTTPResponse.error(408, "request head not received in time", close: true), for: nil,
                      on: connection, now: now)
                progress(connection)
                if isOpen(connection) { updateInterest(connection) }
            } else if let deadline = connection.idleDeadline, deadline <= now {
                closeConnection(connection)
            } else if let deadline = connection.headDeadline, deadline <= now {
                closeConnection(connection)
            }
        }
    }

    /// The write timeout: a pending response whose client has acknowledged no byte for
    /// `writeTimeout` is dropped, with a reset so what is queued for it is freed at once.
    /// Progress is what the client's TCP acknowledged (bytes written minus those still
    /// unacknowledged, SIOCOUTQ): the kernel's send buffer grows to megabytes, so whether the
    /// socket is full says little either way. Checked a few times per timeout period.
    private func checkDelivery(_ connection: Connection, now: UInt64) {
        // Times taken on this thread can be a little later than `now` (a response begun since).
        guard now >= connection.deliveryCheckedAt, now - connection.deliveryCheckedAt >= settings.writeTimeout / 4 else {
            return
        }
        connection.deliveryCheckedAt = now
        let delivered = acknowledgedBytes(connection)
        // Nothing waiting on the client (a paced response between writes) is not a stall.
        if delivered != connection.deliveredCheckpoint || (delivered == connection.bytesWritten && !connection.writeBlocked) {
            connection.deliveredCheckpoint = delivered
            connection.deliveredAt = now
        } else if now >= connection.deliveredAt, now - connection.deliveredAt >= settings.writeTimeout {
            closeConnection(connection, reset: true)
        }
    }

    /// Bytes of this connection the client's TCP has acknowledged.
    private func acknowledgedBytes(_ connection: Connection) -> Int {
        connection.bytesWritten - max(0, Int(clinux_unacknowledged_bytes(connection.fd)))
    }

    // MARK: Bookkeeping

    private func setInterest(_ connection: Connection, _ events: UInt32, add: Bool = false) {
        guard add || connection.interest != events else { return }
        let data = UInt64(connection.generation) << 32 | UInt64(UInt32(bitPattern: connection.fd))
        do {
            if add {
                try Epoll.add(epfd, fd: connection.fd, events: events, data: data)
            } else {
                try Epoll.modify(epfd, fd: connection.fd, events: events, data: data)
            }
            connection.interest = events
        } catch {
            closeConnection(connection)
        }
    }

    /// Closes at once; `reset` sends RST (SO_LINGER 0) instead of a FIN, freeing what is still
    /// queued for the client.
    private func closeConnection(_ connection: Connection, reset: Bool = false) {
        assertOnLoop()
        guard connections[connection.fd] === connection else { return }
        stopLive(connection)
        connections[connection.fd] = nil
        Epoll.remove(epfd, fd: connection.fd)
        if reset {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        close(connection.fd)
        connection.outgoing = nil
        openConnections.wrappingDecrement(ordering: .relaxed)
        ownedCount.wrappingDecrement(ordering: .relaxed)
    }
}
