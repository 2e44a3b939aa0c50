#if canImport(Glibc)
import Glibc
#endif
import CLinux
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// A live source's connection once its request is accepted (`PUT` or `SOURCE /radio/NAME`):
/// reads the body (Content-Length, chunked, or until the source closes, as Icecast sources send
/// it) into the channel's feed while the feed has room, and answers the final 200 when the body
/// ends after a `100 Continue`.
final class SourceExchange: LiveExchange, @unchecked Sendable {
    // @unchecked: used by one event-loop thread only.
    enum Framing { case length(Int), chunked, untilClose }

    let feed: SourceFeed
    let framing: Framing
    /// Bytes still to send when the body is over (the final response after a 100 Continue).
    private var finalResponse: [UInt8]
    private var finalSent = 0
    private var decoder = ChunkedBodyDecoder()
    private var lengthLeft: Int
    private var waker: LoopWaker?
    private var lastInput: UInt64 = 0
    private var bodyDone = false
    /// A source that sends nothing for this long is dropped.
    let silenceLimit: UInt64
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)

    init(feed: SourceFeed, framing: Framing, finalResponse: [UInt8], silenceLimit: UInt64) {
        self.feed = feed
        self.framing = framing
        self.finalResponse = finalResponse
        self.silenceLimit = silenceLimit
        if case .length(let n) = framing { lengthLeft = n } else { lengthLeft = Int.max }
    }

    func start(waker: LoopWaker, leftover: [UInt8], now: UInt64) {
        self.waker = waker
        lastInput = now
        if !leftover.isEmpty { _ = take(leftover[...]) }
    }

    package func stop() {
        feed.close()
    }

    func pump(fd: Int32, now: UInt64, readable: Bool, written: inout Int) -> LiveStep {
        if bodyDone { return finish(fd, written: &written) }
        while true {
            let room = min(feed.room, buffer.count)
            if room == 0 {
                if let waker { feed.wakeWhenRoom(waker) }
                // Re-check: the producer may have made room before the wake was registered.
                if feed.room == 0 { return .wait(readable: false, writable: false, wakeAt: now + silenceLimit) }
                continue
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, room, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                lastInput = now
                guard take(buffer[0..<n]) else { return .failed }
                if bodyDone { return finish(fd, written: &written) }
                continue
            }
            if n == 0 {
                // The source closed. That ends an until-close body; a framed one was cut.
                feed.close()
                guard case .untilClose = framing else { return .finished }
                bodyDone = true
                return finish(fd, written: &written)
            }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { break }
            return .failed
        }
        if now >= lastInput, now - lastInput >= silenceLimit { return .failed }
        return .wait(readable: true, writable: false, wakeAt: Self.wholeSecondAfter(lastInput + silenceLimit))
    }

    /// The silence deadline rounded up to a whole second: the loop queues a timer each time the
    /// wake time changes, and a source read ten times a second would leave ten stale timers a
    /// second, each waking the loop once. The deadline is then up to a second late.
    static func wholeSecondAfter(_ nanos: UInt64) -> UInt64 {
        let second: UInt64 = 1_000_000_000
        let (rounded, overflow) = nanos.addingReportingOverflow(second - 1)
        return overflow ? nanos : rounded / second * second
    }

    /// Passes body bytes to the feed; false when the framing is broken.
    private func take(_ bytes: ArraySlice<UInt8>) -> Bool {
        switch framing {
        case .untilClose:
            feed.append(bytes)
        case .length:
            let n = min(lengthLeft, bytes.count)
            feed.append(bytes.prefix(n))
            lengthLeft -= n
            if lengthLeft == 0 { bodyDone = true }
        case .chunked:
            do {
                let (payload, _) = try decoder.feed(bytes)
                feed.append(payload[...])
            } catch {
                return false
            }
            if decoder.isComplete { bodyDone = true }
        }
        return true
    }

    /// The body is over: the source is done, send the final answer and close.
    private func finish(_ fd: Int32, written: inout Int) -> LiveStep {
        feed.close()
        while finalSent < finalResponse.count {
            let sent = finalSent
            let n = finalResponse.withUnsafeBytes { send(fd, $0.baseAddress.map { $0 + sent }, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 {
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .wait(readable: false, writable: true, wakeAt: nil) }
                return .failed
            }
            finalSent += n
            written += n
        }
        return .finished
    }
}
