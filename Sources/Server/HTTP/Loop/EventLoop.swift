#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Atomics
import Logging
import Foundation
import Synchronization
import StreamShared

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
    var connections: [Int32: Connection] = [:]
    /// Connections handed to a live exchange (radio listeners and sources): every wake of the
    /// loop pumps those not waiting for room in their socket.
    var liveConnections: [Int32: Connection] = [:]
    var waker: LoopWaker { LoopWaker(fd: wakeFD) }
    var nextGeneration: UInt32 = 1
    let parser: HTTPRequestParser
    var listening = true
    let stopRequested = ManagedAtomic<Bool>(false)
    let drainDeadline = ManagedAtomic<UInt64>(0)
    var cachedDateSecond = -1
    var cachedDate = ""
    /// Receive buffer for every read of this loop's connections (one thread, so one buffer).
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// Connections this loop serves or has been handed and not yet taken: what the loops compare
    /// when one accepts, so a burst of connections is shared out instead of kept by the loop that
    /// woke (the listening socket wakes one loop at a time, and often the same one).
    let ownedCount = ManagedAtomic<Int>(0)
    /// The server's loops, this one included; set before any loop runs, then only read.
    var siblings: [EventLoop] = []
    /// Connections another loop accepted for this one: the descriptor and the peer's address;
    /// both under `handoffLock`, and `handoffClosed` once the loop has taken its last ones.
    let handoffLock = Lock(())
    var handedOver: [(fd: Int32, peer: String)] = []
    var handoffClosed = false
    /// Responses the pool has made, waiting for this loop to send them; under `handoffLock`.
    var madeOffLoop: [(fd: Int32, generation: UInt32, response: HTTPResponse)] = []
    /// Parked responses whose event came, waiting for this loop to resume them; under `handoffLock`.
    var woken: [(fd: Int32, generation: UInt32)] = []
    /// The loop's thread, once it runs: loop-owned state is touched only there (checked in debug builds).
    var loopThread: pthread_t?

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
                expireParked(now: now, all: true)
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
                    resumeWoken()
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

    // MARK: Connection events

    func handle(event: UInt32, on connection: Connection) {
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

    func isOpen(_ connection: Connection) -> Bool { connections[connection.fd] === connection }

    /// Most bytes buffered from a client ahead of the response being written (pipelining).
    var maxReadBuffer: Int { settings.limits.maxRequestLine + settings.limits.maxHeaderBytes + 4096 }

    /// How much the connection may buffer: more than `maxReadBuffer` while a form body is read.
    func readLimit(_ connection: Connection) -> Int { max(maxReadBuffer, connection.wantedBytes) }

    /// Reads until the socket is empty, the peer has closed its side or the buffer is full; the
    /// rest stays in the kernel, unwatched, until the buffer has room again.
    func readAvailable(_ connection: Connection) {
        while !connection.peerClosed && connection.readBuffer.count < readLimit(connection) {
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
    func updateInterest(_ connection: Connection) {
        var events: UInt32 = 0
        if connection.lingerDeadline != nil {
            events = Epoll.readable
        } else if let out = connection.outgoing, out.liveStarted {
            if out.liveWantsInput { events |= Epoll.readable }
            if connection.writeBlocked { events |= Epoll.writable }
        } else {
            if !connection.peerClosed && connection.readBuffer.count < readLimit(connection) { events |= Epoll.readable }
            if connection.writeBlocked { events |= Epoll.writable }
        }
        setInterest(connection, events)
    }

    /// Starts the next response if none is running, and writes what can be written.
    func progress(_ connection: Connection) {
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
    func closeAfterResponse(_ connection: Connection, now: UInt64) {
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
    func discardInput(_ connection: Connection) {
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
    func startNextResponse(_ connection: Connection) -> Bool {
        let now = monotonicNanos()
        var request: HTTPRequest
        var consumed: Int
        do {
            guard var (parsed, used) = try parser.parse(connection.readBuffer[...]) else { return false }
            parsed.peer = connection.peer
            request = parsed
            consumed = used
            // A small form POST is read whole before it is handled (the head is parsed again
            // when more bytes come: it is small, and this keeps the parser stateless).
            if let length = request.formBodyLength {
                guard connection.readBuffer.count >= used + length else {
                    connection.wantedBytes = used + length
                    return false
                }
                connection.wantedBytes = 0
                request.formBody = Array(connection.readBuffer[used..<(used + length)])
                request.bodyFraming = .none
                consumed = used + length
            }
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
            // Only a radio source reads a body; refused here, the body is dropped by the lingering
            // close. A refusal the handler made (401 for wrong credentials, 404, 405) is kept: what
            // was wrong with the request is judged before its body.
            if response.status < 400 || response.offLoop != nil {
                response = HTTPResponse.error(413, Self.message(for: .bodyNotAllowed), close: true)
            } else {
                response.closeConnection = true
            }
        }
        if let make = response.offLoop {
            makeOffLoop(make, for: request, on: connection, now: now)
        } else if let parked = response.parked {
            park(parked, for: request, on: connection, now: now)
        } else {
            begin(Self.finished(response, for: request), for: request, on: connection, now: now)
        }
        return true
    }

    func begin(_ response: HTTPResponse, for request: HTTPRequest?, on connection: Connection, now: UInt64) {
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

    static func message(for error: HTTPParseError) -> String {
        switch error {
        case .badRequest(let why): return "bad request: \(why)"
        case .uriTooLong: return "request line too long"
        case .headersTooLarge: return "request header fields too large"
        case .versionNotSupported: return "HTTP version not supported"
        case .bodyNotAllowed: return "request bodies are not accepted"
        }
    }

    func currentDate() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let second = Int(ts.tv_sec)
        if second != cachedDateSecond {
            cachedDateSecond = second
            cachedDate = HTTPDate.format(second)
        }
        return cachedDate
    }

    /// One access-log line per response: peer, method, target, status, bytes sent, time; a
    /// response the connection ended before it was whole (the client went away, a listener too
    /// slow, shutdown) says "cut short", so a player that stops mid-file is still seen.
    func logAccess(_ connection: Connection, _ out: Connection.Outgoing, now: UInt64, cutShort: Bool = false) {
        guard settings.accessLog else { return }
        let ms = Double(now - out.started) / 1e6
        logger.info("\(connection.peer) \(out.method) \(LoggedTarget.redact(out.target)) \(out.status) \(out.bytesSent) \(Int(ms.rounded()))ms\(cutShort ? " cut short" : "")")
    }

    /// Wake times of the connections (pacing, a live exchange's timer); see `TimerHeap`.
    var timers = TimerHeap()

    var lastSweep: UInt64 = 0
    static let sweepInterval: UInt64 = 250_000_000

    // MARK: Bookkeeping

    func setInterest(_ connection: Connection, _ events: UInt32, add: Bool = false) {
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
    func closeConnection(_ connection: Connection, reset: Bool = false) {
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
        if let unfinished = connection.outgoing { logAccess(connection, unfinished, now: monotonicNanos(), cutShort: true) }
        connection.outgoing = nil
        openConnections.wrappingDecrement(ordering: .relaxed)
        ownedCount.wrappingDecrement(ordering: .relaxed)
    }
}
