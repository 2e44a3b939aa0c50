import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
@testable import StreamShared

/// A radio listener over a socketpair with a small send buffer, so writes are partial and the
/// framing (HTTP chunks, ICY blocks) must resume mid-piece.
final class ListenerHarness {
    let channel: RadioChannel
    let listener: RadioListener
    let server: Int32
    let client: Int32
    let scratch = ListenerScratch()
    var received: [UInt8] = []
    var now: UInt64 = 1_000_000_000

    init(channel: RadioChannel, options: ListenerOptions, sendBuffer: Int32 = 4096) throws {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw TestError("socketpair") }
        server = fds[0]
        client = fds[1]
        var size = sendBuffer
        setsockopt(server, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(server, F_SETFL, fcntl(server, F_GETFL) | O_NONBLOCK)
        _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
        self.channel = channel
        let shared = scratch
        listener = RadioListener(channel: channel, options: options) { _ in shared }
        listener.start(waker: LoopWaker(fd: -1), leftover: [], now: now)
    }

    deinit {
        listener.stop()
        close(server)
        close(client)
    }

    /// Pumps and reads alternately until the listener waits for new chunks (or `limit` rounds), a
    /// write interval after the last drain (a listener that caught up is not written sooner).
    @discardableResult
    func drain(limit: Int = 10_000) -> LiveStep {
        now += listener.options.writeInterval
        var step = LiveStep.failed
        for _ in 0..<limit {
            var written = 0
            step = listener.pump(fd: server, now: now, readable: false, written: &written)
            readAvailable()
            // A wait with a wake time is a yield or a timer (the loop pumps again then).
            if case .wait(_, let writable, let wakeAt) = step, !writable {
                guard let wakeAt else { return step }
                now = max(now, wakeAt)
            }
            if step == .finished || step == .failed { return step }
        }
        return step
    }

    func readAvailable() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            received += buffer[0..<n]
        }
    }
}

struct TestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Undoes `Transfer-Encoding: chunked`; returns the payload and whether the last chunk came.
func dechunk(_ bytes: [UInt8]) throws -> (payload: [UInt8], complete: Bool) {
    var payload: [UInt8] = []
    var i = 0
    while i < bytes.count {
        guard let lineEnd = bytes[i...].firstIndex(of: 0x0A), lineEnd > i, bytes[lineEnd - 1] == 0x0D else {
            return (payload, false)
        }
        guard let size = Int(String(decoding: bytes[i..<(lineEnd - 1)], as: UTF8.self), radix: 16) else {
            throw TestError("bad chunk size line at \(i)")
        }
        let start = lineEnd + 1
        if size == 0 { return (payload, true) }
        guard start + size + 2 <= bytes.count else { return (payload + bytes[start..<min(bytes.count, start + size)], false) }
        payload += bytes[start..<(start + size)]
        guard bytes[start + size] == 0x0D, bytes[start + size + 1] == 0x0A else { throw TestError("no CRLF after chunk at \(start)") }
        i = start + size + 2
    }
    return (payload, false)
}

@Suite struct RadioListenerTests {
    static func chunk(_ i: Int, size: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0) } }

    static func options(chunked: Bool, metaint: Int?, burst: Int = 1 << 30, lag: UInt64 = 5_000_000_000) -> ListenerOptions {
        ListenerOptions(chunked: chunked, metaint: metaint, burst: burst, lagLimit: lag)
    }

    @Test(arguments: [(true, 1000), (true, nil), (false, 777), (false, nil)] as [(Bool, Int?)])
    func listener_receivesExactlyTheStream_withTitlesInBand(chunked: Bool, metaint: Int?) throws {
        let channel = RadioChannel(name: "t", ringCapacity: 1 << 20)
        var stream: [UInt8] = []
        channel.setTitle("First - One")
        for i in 0..<20 {
            let bytes = Self.chunk(i, size: 300 + i * 97)
            channel.publish(bytes[...], frameStarts: [0])
            stream += bytes
        }
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: chunked, metaint: metaint))
        harness.drain()
        channel.setTitle("Second - Two")
        for i in 20..<60 {
            let bytes = Self.chunk(i, size: 50 + i * 211)
            channel.publish(bytes[...], frameStarts: [0])
            stream += bytes
            if i % 7 == 0 { harness.drain() }
        }
        harness.drain()
        var payload = harness.received
        if chunked {
            let (body, complete) = try dechunk(harness.received)
            #expect(!complete)
            payload = body
        }
        guard let metaint else {
            #expect(payload == stream)
            return
        }
        // The checked reader: a block of ours that is not metadata fails the test.
        var reader = try ICYStreamReader(metaint: metaint)
        var audio: [UInt8] = []
        var titles: [String] = []
        try reader.feed(payload[...], audio: { audio += $0 }, update: { titles.append($0.title ?? "?") })
        #expect(audio == stream)
        #expect(titles == ["First - One", "Second - Two"])
    }

    @Test func burst_startsOnAFrameBoundary_atMostBurstBytesBack() throws {
        let channel = RadioChannel(name: "t", ringCapacity: 1 << 20)
        var stream: [UInt8] = []
        for i in 0..<10 {
            let bytes = Self.chunk(i, size: 1000)
            // Frames of 100 bytes.
            channel.publish(bytes[...], frameStarts: stride(from: 0, to: 1000, by: 100).map { Int32($0) })
            stream += bytes
        }
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: false, metaint: nil, burst: 2550))
        harness.drain()
        // 2550 back from 10,000 is 7450; the next frame starts at 7500.
        #expect(harness.received == Array(stream[7500...]))
    }

    @Test func firstPump_sendsAFirstSlice_thenTheRestOfTheBurstAMomentLater() throws {
        let channel = RadioChannel(name: "t", ringCapacity: 1 << 20)
        var stream: [UInt8] = []
        for i in 0..<64 {
            let bytes = Self.chunk(i, size: 1024)
            channel.publish(bytes[...], frameStarts: [0])
            stream += bytes
        }
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: true, metaint: nil, burst: 64 * 1024),
                                          sendBuffer: 1 << 20)
        var written = 0
        let first = harness.listener.pump(fd: harness.server, now: harness.now, readable: false, written: &written)
        #expect(written == RadioListener.firstSlice, "the first pump writes the first slice only")
        #expect(first == .wait(readable: true, writable: false, wakeAt: harness.now + RadioListener.burstDelay),
                "and leaves the rest of the burst for a moment later")
        #expect(harness.listener.quietUntil == harness.now + RadioListener.burstDelay,
                "wakes of the loop before then are skipped; the timer pumps it")
        written = 0
        let early = harness.listener.pump(fd: harness.server, now: harness.now + 1_000_000, readable: false, written: &written)
        #expect(written == 0, "a wake of the loop before the delay (a publish) does not send the rest early")
        #expect(early == .wait(readable: true, writable: false, wakeAt: harness.now + RadioListener.burstDelay),
                "and the burst's timer stays set")
        let second = harness.listener.pump(fd: harness.server, now: harness.now + RadioListener.burstDelay, readable: false,
                                           written: &written)
        #expect(written >= 64 * 1024 - RadioListener.firstSlice, "the rest of the burst (and its chunk framing) when it is due")
        #expect(second == .wait(readable: true, writable: false, wakeAt: nil), "the rest of the burst, then it waits for chunks")
        harness.readAvailable()
        let (payload, _) = try dechunk(harness.received)
        #expect(payload == stream, "the slice cut mid-chunk resumes exactly")
    }

    @Test func caughtUpListener_isWrittenAgainOnlyAfterTheWriteInterval() throws {
        let channel = RadioChannel(name: "t", ringCapacity: 1 << 20)
        channel.publish(Self.chunk(0, size: 8000)[...], frameStarts: [0])
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: false, metaint: nil),
                                          sendBuffer: 1 << 20)
        let start = harness.now
        var written = 0
        _ = harness.listener.pump(fd: harness.server, now: start, readable: false, written: &written)
        _ = harness.listener.pump(fd: harness.server, now: start + RadioListener.burstDelay, readable: false, written: &written)
        #expect(written == 8000, "slice and burst go out at once, whatever the interval")
        let caughtUp = start + RadioListener.burstDelay
        #expect(harness.listener.quietUntil == caughtUp + RadioListener.writeInterval,
                "the loop may skip this listener on wakes until the interval has passed")
        channel.publish(Self.chunk(1, size: 4000)[...], frameStarts: [0])
        written = 0
        let early = harness.listener.pump(fd: harness.server, now: caughtUp + 250_000_000, readable: false, written: &written)
        #expect(written == 0, "a publish 250 ms after catching up waits")
        #expect(early == .wait(readable: true, writable: false, wakeAt: nil), "for a later wake of the loop, no timer")
        channel.publish(Self.chunk(2, size: 4000)[...], frameStarts: [0])
        let due = caughtUp + RadioListener.writeInterval
        _ = harness.listener.pump(fd: harness.server, now: due, readable: false, written: &written)
        #expect(written == 8000, "both publishes in one write once the interval has passed")
        harness.readAvailable()
        #expect(harness.received == Self.chunk(0, size: 8000) + Self.chunk(1, size: 4000) + Self.chunk(2, size: 4000))
        // The end of the channel is not held back.
        channel.publish(Self.chunk(3, size: 100)[...], frameStarts: [0])
        #expect(harness.listener.quietUntil > due + 1, "caught up again: quiet for a while")
        channel.end()
        #expect(harness.listener.quietUntil == 0, "an ended channel's wake is never skipped")
        written = 0
        let last = harness.listener.pump(fd: harness.server, now: due + 1, readable: false, written: &written)
        #expect(written == 100 && last == .finished, "an ended channel's last bytes go out at once")
    }

    @Test func listenerBlockedOnAFullSocket_isNotHeldBackByTheWriteInterval() throws {
        let channel = RadioChannel(name: "t", ringCapacity: 1 << 20)
        channel.publish(Self.chunk(0, size: 1000)[...], frameStarts: [0])
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: false, metaint: nil), sendBuffer: 4096)
        harness.drain()
        let caughtUp = harness.now
        for i in 1...40 { channel.publish(Self.chunk(i, size: 1024)[...], frameStarts: [0]) }
        var written = 0
        var step = harness.listener.pump(fd: harness.server, now: caughtUp + RadioListener.writeInterval, readable: false,
                                         written: &written)
        #expect(step == .wait(readable: true, writable: true, wakeAt: nil), "the socket filled: it waits for room")
        // Room again a moment later (EPOLLOUT): the rest goes at once, not a write interval later.
        var rounds = 0
        while case .wait(_, true, _) = step, rounds < 1000 {
            harness.readAvailable()
            step = harness.listener.pump(fd: harness.server, now: caughtUp + RadioListener.writeInterval + 1, readable: false,
                                         written: &written)
            rounds += 1
        }
        harness.readAvailable()
        #expect(harness.received.count == 1000 + 40 * 1024, "everything published was written while catching up")
    }

    @Test func responseHead_goesOutWithTheFirstSlice_inOneWrite() throws {
        let channel = RadioChannel(name: "t", ringCapacity: 1 << 20)
        var stream: [UInt8] = []
        for i in 0..<16 {
            let bytes = Self.chunk(i, size: 1024)
            channel.publish(bytes[...], frameStarts: [0])
            stream += bytes
        }
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: false, metaint: nil), sendBuffer: 1 << 20)
        let head = Array("HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\n\r\n".utf8)
        #expect(harness.listener.takeHead(head), "a listener sends its head itself")
        var written = 0
        let first = harness.listener.pump(fd: harness.server, now: harness.now, readable: false, written: &written)
        #expect(written == head.count + RadioListener.firstSlice, "head and first slice in the first write")
        #expect(first == .wait(readable: true, writable: false, wakeAt: harness.now + RadioListener.burstDelay))
        harness.readAvailable()
        #expect(harness.received == head + stream[0..<RadioListener.firstSlice], "the head, then the audio")
        #expect(channel.bytesOut.load(ordering: .relaxed) == RadioListener.firstSlice, "bytes out counts audio only")
        harness.drain()
        #expect(harness.received == head + stream)
    }

    @Test func responseHead_partlyWritten_resumes_andAnEmptyChannelStillGetsIt() throws {
        let channel = RadioChannel(name: "t", ringCapacity: 1 << 20)
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: true, metaint: nil), sendBuffer: 4096)
        // Longer than the socket takes at once, and nothing published yet.
        let head = Array("HTTP/1.1 200 OK\r\nX-Pad: ".utf8) + [UInt8](repeating: 0x61, count: 30_000) + Array("\r\n\r\n".utf8)
        #expect(harness.listener.takeHead(head))
        let step = harness.drain()
        #expect(harness.received == head, "the whole head, though no audio is there to send with it")
        #expect(step == .wait(readable: true, writable: false, wakeAt: nil))
        let bytes = Self.chunk(1, size: 3000)
        channel.publish(bytes[...], frameStarts: [0])
        harness.drain()
        let (payload, _) = try dechunk(Array(harness.received[head.count...]))
        #expect(payload == bytes, "then the audio, chunked")
    }

    @Test func trim_shortensTheIovecsToTheLimit() {
        let iovecs = UnsafeMutablePointer<iovec>.allocate(capacity: 3)
        defer { iovecs.deallocate() }
        for (i, length) in [1000, 5000, 3000].enumerated() { iovecs[i] = iovec(iov_base: nil, iov_len: length) }
        #expect(RadioListener.trim(iovecs, count: 3, to: 4096) == 2)
        #expect(iovecs[0].iov_len == 1000 && iovecs[1].iov_len == 3096)
        #expect(RadioListener.trim(iovecs, count: 1, to: 4096) == 1 && iovecs[0].iov_len == 1000, "shorter than the limit: unchanged")
        #expect(RadioListener.trim(iovecs, count: 2, to: 1000) == 1 && iovecs[0].iov_len == 1000)
    }

    @Test func listenerBehindTheRing_isMovedToTheLiveEdge_andCounted() throws {
        let channel = RadioChannel(name: "t", ringCapacity: 16 * 1024)
        channel.publish(Self.chunk(0, size: 1000)[...], frameStarts: [0])
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: false, metaint: nil))
        harness.drain()
        #expect(harness.received.count == 1000)
        // 40 KiB published while the listener is not pumped: it is more than the ring behind.
        for i in 1...40 { channel.publish(Self.chunk(i, size: 1024)[...], frameStarts: [0]) }
        harness.drain()
        #expect(channel.skips.load(ordering: .relaxed) == 1)
        #expect(Array(harness.received[1000...]) == Self.chunk(40, size: 1024))
    }

    @Test func listenerThatStaysBehind_isClosedAfterTheLagLimit() throws {
        let channel = RadioChannel(name: "t", ringCapacity: 16 * 1024)
        channel.publish(Self.chunk(0, size: 1000)[...], frameStarts: [0])
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: false, metaint: nil, lag: 2_000_000_000),
                                          sendBuffer: 4096)
        // The client never reads: the listener is moved forward, stays behind, and is dropped.
        var step = LiveStep.failed
        for round in 0..<40 {
            for i in 0..<20 { channel.publish(Self.chunk(round * 20 + i, size: 1024)[...], frameStarts: [0]) }
            var written = 0
            step = harness.listener.pump(fd: harness.server, now: harness.now, readable: false, written: &written)
            if step == .failed { break }
            harness.now += 250_000_000
        }
        #expect(step == .failed)
        #expect(harness.now - 1_000_000_000 > 2_000_000_000)
        #expect(channel.skips.load(ordering: .relaxed) >= 1)
    }

    @Test func endedChannel_finishesTheChunkedBody() throws {
        let channel = RadioChannel(name: "t")
        channel.publish(Self.chunk(0, size: 500)[...], frameStarts: [0])
        let harness = try ListenerHarness(channel: channel, options: Self.options(chunked: true, metaint: nil))
        #expect(harness.drain() != .finished)
        channel.end()
        #expect(harness.drain() == .finished)
        let (payload, complete) = try dechunk(harness.received)
        #expect(complete)
        #expect(payload == Self.chunk(0, size: 500))
    }

    @Test func listenerCounts_followStartAndStop() throws {
        let channel = RadioChannel(name: "t")
        var harness: ListenerHarness? = try ListenerHarness(channel: channel, options: Self.options(chunked: true, metaint: nil))
        let second = try ListenerHarness(channel: channel, options: Self.options(chunked: true, metaint: nil))
        #expect(channel.listeners.load(ordering: .relaxed) == 2)
        harness = nil
        #expect(harness == nil)
        #expect(channel.listeners.load(ordering: .relaxed) == 1)
        #expect(channel.listenerPeak.load(ordering: .relaxed) == 2)
        _ = second
    }

    @Test(arguments: [0, 1, 15, 16, 255, 4096, 65_535, 1 << 20])
    func sizeLines_areLowercaseHex(size: Int) {
        let slot = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)
        defer { slot.deallocate() }
        let length = RadioListener.writeSizeLine(size, into: slot)
        #expect(String(decoding: UnsafeBufferPointer(start: slot, count: length), as: UTF8.self) == String(size, radix: 16) + "\r\n")
    }
}
