#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// One client connection, owned by exactly one event loop thread.
final class Connection {
    let fd: Int32
    /// Distinguishes this connection from a later one that reuses the same fd number.
    let generation: UInt32
    let peer: String
    var readBuffer: [UInt8] = []
    /// Bytes the buffer must reach before the next request can be handled (a form body being
    /// read); 0 when no body is awaited.
    var wantedBytes = 0
    /// Set once the peer has closed its side (read returned 0).
    var peerClosed = false
    /// The response being written, if any.
    var outgoing: Outgoing?
    /// Deadline for the current request head to arrive (slowloris guard), or nil.
    var headDeadline: UInt64?
    /// Deadline for an idle keep-alive connection, or nil.
    var idleDeadline: UInt64?
    /// The socket is full: the response waits for EPOLLOUT.
    var writeBlocked = false
    /// Bytes handed to the kernel on this connection, all responses together.
    var bytesWritten = 0
    /// Write timeout bookkeeping: bytes the client had acknowledged at the last check that saw
    /// progress, when that was, and when the last check ran.
    var deliveredCheckpoint = -1
    var deliveredAt: UInt64 = 0
    var deliveryCheckedAt: UInt64 = 0
    /// Set while closing lingeringly: the last response is sent and our side shut down; what
    /// the client still sends is read and dropped until it closes, this deadline passes or
    /// `lingerBudget` bytes are dropped.
    var lingerDeadline: UInt64?
    var lingerBudget = 0
    /// The live exchange while it runs (also in `outgoing`; here so a wake of the loop can ask
    /// it `quietUntil` without touching the response state).
    var liveExchange: (any LiveExchange)?
    /// The request whose response is being made on the blocking pool (`HTTPResponse.offLoop`):
    /// nothing else is parsed or sent on this connection until it comes back.
    var awaiting: HTTPRequest?
    /// The awaited response is parked until an event (`HTTPResponse.parked`), and when its wait ends.
    var parked: ParkedResponse?
    var parkedDeadline: UInt64?
    /// The epoll events currently registered.
    var interest: UInt32 = 0
    var requestsServed = 0

    init(fd: Int32, generation: UInt32, peer: String) {
        self.fd = fd
        self.generation = generation
        self.peer = peer
    }

    /// State of a response on its way out.
    struct Outgoing {
        var head: [UInt8]
        var body: (any ResponseBody)?
        /// The part being written and how much of it is already sent.
        var part: BodyPart?
        /// The part after it, fetched ahead so MSG_MORE is set only when more follows
        /// (MSG_MORE on the last bytes makes the kernel hold them for up to 200 ms).
        var lookahead: BodyPart?
        var lookaheadFetched = false
        var partSent = 0
        var headSent = 0
        var keepAlive: Bool
        // For the access log (the target as requested: its secrets are redacted only when a line is written).
        var method: String
        var target: String
        var status: Int
        var started: UInt64
        var bytesSent = 0
        /// Pacing: bytes per second, the time pacing started, and when to wake to write more.
        var pace: Int?
        var paceStart: UInt64 = 0
        var paceBodyBytes = 0
        var wakeAt: UInt64?
        /// The exchange that runs once the head is out (a radio listener or source).
        var live: (any LiveExchange)?
        var liveStarted = false
        /// The live exchange waits for input.
        var liveWantsInput = false
    }

    /// Outcome of trying to write.
    enum WriteOutcome {
        /// The whole response went out.
        case finished
        /// The socket is full; wait for EPOLLOUT.
        case blocked
        /// Pacing: wait until the given time.
        case paced(UInt64)
        /// The head is out and a live exchange carries on.
        case live
    }

    /// Writes as much of the current response as the socket (and pacing) allows.
    func write(now: UInt64) throws -> WriteOutcome {
        guard var out = outgoing else { return .finished }
        defer { outgoing = out }
        // A live exchange may send the head itself, with its first bytes.
        if out.headSent == 0, let live = out.live, live.takeHead(out.head) {
            out.headSent = out.head.count
            return .live
        }
        // Head first.
        if !out.lookaheadFetched {
            out.lookahead = out.body?.nextPart()
            out.lookaheadFetched = true
            // A body in memory leaves with its head in one sendmsg: one trip through the
            // kernel's TCP path and one wake of the client instead of two.
            if out.live == nil, out.pace == nil, case .bytes(let bytes)? = out.lookahead, !bytes.isEmpty {
                out.part = out.lookahead
                out.lookahead = out.body?.nextPart()
                out.partSent = 0
                let n = try Self.sendTogether(fd, head: out.head, body: bytes, more: out.lookahead != nil)
                guard n > 0 else { return .blocked }
                let headPart = min(n, out.head.count)
                out.headSent = headPart
                out.partSent = n - headPart
                out.bytesSent += n
                bytesWritten += n
                if out.partSent >= bytes.count { out.part = nil }
            }
        }
        while out.headSent < out.head.count {
            let more = out.lookahead != nil || out.part != nil
            let result = try out.head.withUnsafeBytes { raw throws -> IOResult<Int> in
                try syscall("send") {
                    send(fd, raw.baseAddress.map { $0 + out.headSent }, raw.count - out.headSent,
                         Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0))
                }
            }
            guard case .done(let n) = result else { return .blocked }
            out.headSent += n
            out.bytesSent += n
            bytesWritten += n
        }
        if out.live != nil { return .live }
        let yieldAfter = out.body?.yieldAfterBytes ?? Int.max
        var writtenNow = 0
        while true {
            if out.part == nil {
                out.part = out.lookahead
                out.lookahead = out.part == nil ? nil : out.body?.nextPart()
                out.partSent = 0
                if out.part == nil { return .finished }
            }
            guard let part = out.part else { return .finished }
            var allowance = part.length - out.partSent
            if let pace = out.pace {
                if out.paceStart == 0 { out.paceStart = now }
                let budget = Pacing.budget(bytesPerSecond: pace, elapsedNanos: now > out.paceStart ? now - out.paceStart : 0,
                                           sent: out.paceBodyBytes)
                if budget <= 0 {
                    return .paced(now + Pacing.wait(bytesPerSecond: pace, budget: budget))
                }
                allowance = min(allowance, budget)
            }
            let n: Int
            let more = out.lookahead != nil
            switch part {
            case .bytes(let bytes):
                let sent = out.partSent
                let result = try bytes.withUnsafeBytes { raw throws -> IOResult<Int> in
                    try syscall("send") {
                        send(fd, raw.baseAddress.map { $0 + sent }, allowance,
                             Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0))
                    }
                }
                guard case .done(let count) = result else { return .blocked }
                n = count
            case .file(let file, let offset, _):
                var position = off_t(offset + out.partSent)
                let result = try syscall("sendfile") { sendfile(fd, file.fd, &position, allowance) }
                guard case .done(let count) = result else { return .blocked }
                if count == 0 {
                    // The file shrank while being served: the promised length cannot be met.
                    throw SystemError(call: "sendfile", errno: EIO)
                }
                n = count
            }
            out.partSent += n
            out.bytesSent += n
            bytesWritten += n
            out.paceBodyBytes += n
            if out.partSent >= part.length { out.part = nil }
            writtenNow += n
            // Due again at once, after the loop's other ready connections.
            if writtenNow >= yieldAfter { return .paced(now) }
        }
    }

    /// `head` then `body` in one sendmsg; the bytes the socket took, 0 when it took none.
    private static func sendTogether(_ fd: Int32, head: [UInt8], body: [UInt8], more: Bool) throws -> Int {
        let result = try head.withUnsafeBytes { headBytes throws -> IOResult<Int> in
            try body.withUnsafeBytes { bodyBytes throws -> IOResult<Int> in
                var vectors = (iovec(iov_base: UnsafeMutableRawPointer(mutating: headBytes.baseAddress), iov_len: headBytes.count),
                               iovec(iov_base: UnsafeMutableRawPointer(mutating: bodyBytes.baseAddress), iov_len: bodyBytes.count))
                return try withUnsafeMutableBytes(of: &vectors) { raw throws -> IOResult<Int> in
                    var message = msghdr()
                    message.msg_iov = raw.baseAddress?.assumingMemoryBound(to: iovec.self)
                    message.msg_iovlen = 2
                    return try syscall("sendmsg") {
                        sendmsg(fd, &message, Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0))
                    }
                }
            }
        }
        guard case .done(let n) = result else { return 0 }
        return n
    }
}
