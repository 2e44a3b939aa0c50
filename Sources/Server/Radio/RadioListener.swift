#if canImport(Glibc)
import Glibc
#endif
import CLinux
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// Where a listener is in its channel's stream and in its own framing (HTTP chunks, ICY blocks).
struct ListenerCursor {
    var chunk: RadioChunk
    var offset: Int
    /// Audio bytes before the next ICY block; `Int.max` without ICY.
    var untilMeta: Int
    /// The ICY block being sent, and how much of it is out.
    var meta: ICYBlock?
    var metaSent = 0
    /// The last title block announced (later blocks say "unchanged" until the title changes).
    var lastTitle: ICYBlock?
    /// Payload bytes left in the current HTTP chunk.
    var httpLeft = 0
    /// The current HTTP chunk's size while its size line is not all sent.
    var headerSize: Int?
    var headerSent = 0
    /// Bytes of the CRLF after the HTTP chunk's data still to send.
    var trailerLeft = 0

    var position: Int { chunk.start + offset }

    /// Steps onto the next chunk when this one is used up and the next exists.
    mutating func normalize() {
        while offset >= chunk.count, let next = chunk.next.load() {
            chunk = next
            offset = 0
        }
    }
}

/// How a listener's response is framed and paced.
struct ListenerOptions: Sendable {
    var chunked: Bool
    /// `icy-metaint`, when the client asked for ICY metadata.
    var metaint: Int?
    var burst: Int
    /// Nanoseconds a listener may stay behind the ring (moved forward again and again) before it is closed.
    var lagLimit: UInt64
    /// Once a listener has caught up with the live edge, it is written again no sooner than this:
    /// a write's cost is mostly per call (loopback TCP, the client's wake), not per byte, so
    /// with the producers' 250 ms tick a listener takes every other publish in one write, half the
    /// syscalls, while its player still holds seconds of burst.
    var writeInterval: UInt64 = RadioListener.writeInterval
}

/// A radio listener: a cursor into its channel's shared chunks. Bytes go from the chunks to the
/// socket with one sendmsg over an iovec (chunk-size lines and ICY blocks interleaved), never
/// copied per listener. Waits for new chunks are wakes of its loop, never polling.
final class RadioListener: LiveExchange, @unchecked Sendable {
    // @unchecked: used by one event-loop thread only (start, pump, stop).
    let channel: RadioChannel
    let options: ListenerOptions
    private let scratchFor: @Sendable (LoopWaker) -> ListenerScratch
    private var scratch: ListenerScratch?
    private var cursor: ListenerCursor?
    /// Since when the listener has been behind the ring without catching up (nil: it is not).
    private var laggingSince: UInt64?
    private var joined = false

    /// Largest payload of one HTTP chunk, and bytes written in one pump before yielding.
    static let maxChunkPayload = 64 * 1024
    static let maxPerPump = 1 << 20
    /// What a new listener's first pump writes before it yields: when a thousand listeners
    /// arrive at once, each gets its first audio at once and the rest of its burst in the next
    /// pass of the loop, instead of waiting behind the 64 KiB bursts of all that came before it.
    static let firstSlice = 4 * 1024
    /// How long after its first slice a new listener gets the rest of its burst: while many
    /// connect at once, the loop answers the new ones' requests first (their first bytes), and
    /// the bursts (the costly writes: 64 KiB each) follow a moment later.
    static let burstDelay: UInt64 = 100_000_000
    /// Whether the first slice went out (later pumps write up to `maxPerPump`).
    private var sliced = false
    /// See `ListenerOptions.writeInterval`: 400 ms is every other publish of a 250 ms tick, and
    /// keeps the writes of a 60 s window within one of 120 (a 0.99x rate check still holds).
    static let writeInterval: UInt64 = 400_000_000
    /// No write before this time unless the channel ended (set by the first slice, to the time
    /// the rest of the burst is due, and when a pump catches up).
    private var nextWriteAt: UInt64 = 0
    /// The first slice is out and the rest of the burst waits for `nextWriteAt`.
    private var burstPending = false
    /// The response head, sent with the first slice in one sendmsg (emptied once it is out).
    private var head: [UInt8] = []
    private var headSent = 0

    init(channel: RadioChannel, options: ListenerOptions, scratch: @escaping @Sendable (LoopWaker) -> ListenerScratch) {
        self.channel = channel
        self.options = options
        self.scratchFor = scratch
    }

    /// Between writes (the rest of a burst not due, or caught up a moment ago) a publish's wake
    /// has nothing for this listener, unless the channel ended (its last bytes go at once).
    var quietUntil: UInt64 { channel.ended.load(ordering: .relaxed) ? 0 : nextWriteAt }

    func takeHead(_ head: [UInt8]) -> Bool {
        self.head = head
        headSent = 0
        return true
    }

    func start(waker: LoopWaker, leftover: [UInt8], now: UInt64) {
        scratch = scratchFor(waker)
        channel.register(waker)
        let (chunk, offset, preamble) = channel.joinPoint(burst: options.burst)
        if let preamble, !preamble.isEmpty {
            // An Ogg link's header pages go out before its first page, in the head's write.
            head += options.chunked ? Array((String(preamble.count, radix: 16) + "\r\n").utf8) + preamble + Array("\r\n".utf8) : preamble
        }
        var start = ListenerCursor(chunk: chunk, offset: offset, untilMeta: options.metaint ?? Int.max)
        start.normalize()
        cursor = start
        joined = true
        channel.listenerJoined()
    }

    package func stop() {
        if joined { channel.listenerLeft() }
        joined = false
        cursor = nil
        head = []
    }

    func pump(fd: Int32, now: UInt64, readable: Bool, written: inout Int) -> LiveStep {
        guard var c = cursor, let scratch else { return .failed }
        defer { cursor = c }
        // A listener sends nothing after its request: drop what comes, and see it leave.
        switch readable ? drainInput(fd, scratch) : .open {
        case .open: break
        case .closed: return .finished
        case .broken: return .failed
        }
        // Fallen behind the ring: move to the current frame boundary, and give up on a listener
        // that stays behind for the lag limit.
        if c.position < channel.oldestOffset.load(ordering: .acquiring) {
            let edge = channel.liveEdge()
            c.chunk = edge
            c.offset = 0
            channel.skips.wrappingIncrement(ordering: .relaxed)
            if laggingSince == nil { laggingSince = now }
        }
        if let since = laggingSince, now >= since, now - since > options.lagLimit { return .failed }
        // The rest of the burst is not due yet (its timer stays set: a publish's wake of the loop
        // must not send it early, in the middle of a storm of new listeners), or the listener
        // caught up a moment ago (the new bytes wait for a later wake and go out together).
        if now < nextWriteAt && !channel.ended.load(ordering: .acquiring) {
            return .wait(readable: true, writable: false, wakeAt: burstPending ? nextWriteAt : nil)
        }
        burstPending = false
        var total = 0
        while total < Self.maxPerPump {
            var planned = plan(&c, scratch)
            let headLeft = head.count - headSent
            if planned == 0 && headLeft == 0 {
                laggingSince = nil   // caught up with the live edge
                if total > 0 && sliced { nextWriteAt = now &+ options.writeInterval }
                if channel.ended.load(ordering: .acquiring) {
                    if options.chunked { Self.sendTerminator(fd) }
                    return .finished
                }
                return .wait(readable: true, writable: false, wakeAt: nil)
            }
            var count = scratch.segments.count
            let first = !sliced && planned > 0
            if first {
                count = Self.trim(scratch.iovecs, count: count, to: Self.firstSlice)
                planned = min(planned, Self.firstSlice)
            }
            let n = head.withUnsafeBytes { raw -> Int in
                if headLeft > 0, let base = raw.baseAddress {
                    // The head goes first, in the slot before the planned iovecs.
                    memmove(scratch.iovecs + 1, scratch.iovecs, count * MemoryLayout<iovec>.stride)
                    scratch.iovecs[0] = Glibc.iovec(iov_base: UnsafeMutableRawPointer(mutating: base + headSent), iov_len: headLeft)
                    count += 1
                }
                var message = msghdr()
                message.msg_iov = scratch.iovecs
                message.msg_iovlen = count
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return .wait(readable: true, writable: true, wakeAt: nil) }
                return .failed
            }
            let headPart = min(n, headLeft)
            headSent += headPart
            if headSent == head.count && headLeft > 0 {
                head = []
                headSent = 0
            }
            let audio = n - headPart
            account(&c, sent: audio, scratch)
            total += n
            written += n
            channel.bytesOut.wrappingIncrement(by: audio, ordering: .relaxed)
            if n < headLeft + planned { return .wait(readable: true, writable: true, wakeAt: nil) }
            if first {
                // The rest of the burst comes a moment later (the replay above took the
                // trimmed write as a partial one).
                sliced = true
                burstPending = true
                nextWriteAt = now &+ Self.burstDelay
                return .wait(readable: true, writable: false, wakeAt: nextWriteAt)
            }
        }
        // Yield to the loop's other connections; the loop wakes this one again at once.
        return .wait(readable: true, writable: false, wakeAt: now)
    }

    /// Shortens the first `count` iovecs to `limit` bytes in all; returns how many to send.
    static func trim(_ iovecs: UnsafeMutablePointer<iovec>, count: Int, to limit: Int) -> Int {
        var total = 0
        for i in 0..<count {
            let length = iovecs[i].iov_len
            if total + length >= limit {
                iovecs[i].iov_len = limit - total
                return i + 1
            }
            total += length
        }
        return count
    }

    // MARK: Planning a write

    /// Fills the scratch iovecs and segments with what can be sent from `c` (a copy is walked,
    /// `c` itself is untouched); returns the byte count.
    private func plan(_ c: inout ListenerCursor, _ scratch: ListenerScratch) -> Int {
        scratch.segments.removeAll(keepingCapacity: true)
        var sim = c
        var total = 0
        while scratch.segments.count < ListenerScratch.maxSegments, total < Self.maxPerPump {
            guard let segment = nextSegment(&sim) else { break }
            let i = scratch.segments.count
            let length = iovec(for: segment, at: i, cursor: sim, scratch)
            guard length > 0 else { break }
            scratch.segments.append(segment)
            total += length
            consume(&sim, segment, count: length)
        }
        return total
    }

    /// The next thing to send from `c`, or nil when nothing is ready.
    private func nextSegment(_ c: inout ListenerCursor) -> ListenerSegment? {
        c.normalize()
        if c.trailerLeft > 0 { return .trailer(count: c.trailerLeft) }
        if options.chunked {
            if let size = c.headerSize { return .header(size: size, from: c.headerSent, meta: nil) }
            if c.httpLeft == 0 {
                // A new HTTP chunk: an ICY block on its own, or audio up to the next block.
                if c.untilMeta == 0 {
                    let block = c.meta ?? metaBlock(c)
                    return .header(size: block.count - c.metaSent, from: 0, meta: c.meta == nil ? block : nil)
                }
                let audio = availableAudio(c, limit: min(c.untilMeta, Self.maxChunkPayload))
                guard audio > 0 else { return nil }
                return .header(size: audio, from: 0, meta: nil)
            }
        }
        if c.untilMeta == 0 {
            let block = c.meta ?? metaBlock(c)
            return .meta(block, from: c.metaSent)
        }
        var count = min(c.chunk.count - c.offset, c.untilMeta)
        if options.chunked { count = min(count, c.httpLeft) }
        guard count > 0 else { return nil }
        return .audio(count: count)
    }

    /// The block due at the cursor: the title when it changed since the last one announced.
    private func metaBlock(_ c: ListenerCursor) -> ICYBlock {
        c.chunk.title === c.lastTitle ? ICYBlock.unchanged : c.chunk.title
    }

    /// Audio bytes published past the cursor, up to `limit`.
    private func availableAudio(_ c: ListenerCursor, limit: Int) -> Int {
        var total = c.chunk.count - c.offset
        var chunk = c.chunk
        while total < limit, let next = chunk.next.load() {
            total += next.count
            chunk = next
        }
        return min(total, limit)
    }

    /// Points iovec `i` at the segment's bytes; returns their count.
    private func iovec(for segment: ListenerSegment, at i: Int, cursor c: ListenerCursor, _ scratch: ListenerScratch) -> Int {
        let vector = scratch.iovecs + i
        switch segment {
        case .header(let size, let from, _):
            let slot = scratch.headers + i * ListenerScratch.headerSlot
            let length = Self.writeSizeLine(size, into: slot)
            vector.pointee = Glibc.iovec(iov_base: UnsafeMutableRawPointer(slot + from), iov_len: length - from)
            return length - from
        case .trailer(let count):
            vector.pointee = Glibc.iovec(iov_base: UnsafeMutableRawPointer(mutating: Self.crlf + (2 - count)), iov_len: count)
            return count
        case .meta(let block, let from):
            vector.pointee = Glibc.iovec(iov_base: block.base + from, iov_len: block.count - from)
            return block.count - from
        case .audio(let count):
            vector.pointee = Glibc.iovec(iov_base: c.chunk.base + c.offset, iov_len: count)
            return count
        }
    }

    /// Advances `c` over `count` bytes of `segment`.
    private func consume(_ c: inout ListenerCursor, _ segment: ListenerSegment, count: Int) {
        guard count > 0 else { return }
        switch segment {
        case .header(let size, _, let meta):
            if c.headerSize == nil {
                c.headerSize = size
                c.headerSent = 0
                if let meta {
                    c.meta = meta
                    c.metaSent = 0
                }
            }
            c.headerSent += count
            if c.headerSent >= Self.sizeLineLength(size) {
                c.headerSize = nil
                c.headerSent = 0
                c.httpLeft = size
            }
        case .trailer:
            c.trailerLeft -= count
        case .meta(let block, _):
            if c.meta == nil {
                c.meta = block
                c.metaSent = 0
            }
            c.metaSent += count
            payloadSent(&c, count)
            if c.metaSent >= block.count {
                if block !== ICYBlock.unchanged { c.lastTitle = block }
                c.meta = nil
                c.metaSent = 0
                c.untilMeta = options.metaint ?? Int.max
            }
        case .audio:
            c.normalize()   // planned from the normalized cursor
            c.offset += count
            if options.metaint != nil { c.untilMeta -= count }
            payloadSent(&c, count)
            c.normalize()
        }
    }

    private func payloadSent(_ c: inout ListenerCursor, _ count: Int) {
        guard options.chunked else { return }
        c.httpLeft -= count
        if c.httpLeft == 0 { c.trailerLeft = 2 }
    }

    /// Replays the planned segments over the `sent` bytes the kernel took.
    private func account(_ c: inout ListenerCursor, sent: Int, _ scratch: ListenerScratch) {
        var left = sent
        for segment in scratch.segments where left > 0 {
            let length: Int
            switch segment {
            case .header(let size, let from, _): length = Self.sizeLineLength(size) - from
            case .trailer(let count): length = count
            case .meta(let block, let from): length = block.count - from
            case .audio(let count): length = count
            }
            let n = min(left, length)
            consume(&c, segment, count: n)
            left -= n
        }
    }

    // MARK: Bytes

    nonisolated(unsafe) static let crlf: UnsafeMutablePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 2)
        p[0] = 0x0D
        p[1] = 0x0A
        return p
    }()

    static func sizeLineLength(_ size: Int) -> Int {
        var digits = 1
        var rest = size >> 4
        while rest > 0 {
            digits += 1
            rest >>= 4
        }
        return digits + 2
    }

    /// Writes "<hex size>\r\n" into `slot`; returns its length.
    static func writeSizeLine(_ size: Int, into slot: UnsafeMutablePointer<UInt8>) -> Int {
        let length = sizeLineLength(size)
        var rest = size
        var i = length - 3
        while i >= 0 {
            let digit = UInt8(rest & 0xF)
            slot[i] = digit < 10 ? 0x30 + digit : 0x61 + digit - 10
            rest >>= 4
            i -= 1
        }
        slot[length - 2] = 0x0D
        slot[length - 1] = 0x0A
        return length
    }

    static func sendTerminator(_ fd: Int32) {
        let end: [UInt8] = Array("0\r\n\r\n".utf8)
        _ = end.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private enum InputState { case open, closed, broken }

    private func drainInput(_ fd: Int32, _ scratch: ListenerScratch) -> InputState {
        for _ in 0..<4 {
            let n = recv(fd, scratch.input, ListenerScratch.inputSize, Int32(MSG_DONTWAIT))
            if n > 0 { continue }
            if n == 0 { return .closed }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .open }
            return .broken
        }
        return .open
    }
}
