#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP
import CLinux

/// One response reading a transcode in progress, on its connection's event loop: it sends the
/// spool's bytes as the job publishes them and sleeps until the job wakes the loop again; it
/// never waits for the encode, nor for the disk: each chunk is read on `TranscodeSpoolReads`'
/// threads, which wake the loop when it is in memory, and sent with writes the socket takes
/// without waiting. A paced spool (`TranscodeJob.ring`) is told how far this reader has come.
/// Framing: chunked (HTTP/1.1), the bare bytes up to the close (HTTP/1.0), or an estimated
/// Content-Length (`&estimate=1`) met exactly by silence frames after the last real byte.
final class TranscodeReader: LiveExchange, @unchecked Sendable {
    // @unchecked: used by one event-loop thread (the job only reads its identity and wakes it).
    enum Framing { case chunked, closeDelimited, length(Int) }

    private let job: TranscodeJob
    private let framing: Framing
    /// The next spool byte to send.
    private var position = 0
    /// Bytes framed and not yet written.
    private var pending: [UInt8] = []
    private var pendingSent = 0
    /// Body bytes sent (the framing's own bytes left out).
    private var bodySent = 0
    private var ending = false
    private var stopped = false
    private let reads: TranscodeSpoolReads
    private var waker: LoopWaker?
    /// The chunk being read off the loop, and what the read brought (empty: it failed).
    private struct Fetch { var inFlight = false; var result: [UInt8]? }
    private let fetch = Lock(Fetch())
    /// The silence that completes an estimated length (`TranscodeService.padding`).
    private let padding: @Sendable (Int) -> [UInt8]?

    /// `?kbps=`: body bytes per second (the first 16 KiB at once), nil: as fast as the client takes.
    private let pace: Int?
    private var started: UInt64 = 0
    static let paceBurst = 16 * 1024

    /// `job` has already counted this reader (`TranscodeService.admit`, under its lock, so a job
    /// is never dropped between a request joining it and its reader starting).
    init(job: TranscodeJob, reads: TranscodeSpoolReads, framing: Framing, pace: Int? = nil,
         padding: @escaping @Sendable (Int) -> [UInt8]? = { _ in nil }) {
        self.job = job
        self.reads = reads
        self.framing = framing
        self.pace = pace
        self.padding = padding
    }

    deinit { if !stopped { job.removeReader(self) } }

    func start(waker: LoopWaker, leftover: [UInt8], now: UInt64) {
        started = now
        self.waker = waker
        job.setWaker(waker, for: self)
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        job.removeReader(self)
    }

    func pump(fd: Int32, now: UInt64, readable: Bool, written: inout Int) -> LiveStep {
        if readable {
            // A client sends nothing more: input is its close (or bytes we drop).
            var scratch = [UInt8](repeating: 0, count: 512)
            let n = recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT))
            if n == 0 { return .failed }
            if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { return .failed }
        }
        var budget = 512 * 1024
        while budget > 0 {
            if pendingSent < pending.count {
                let n = pending[pendingSent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN || errno == EWOULDBLOCK { return .wait(readable: true, writable: true, wakeAt: nil) }
                    return .failed
                }
                pendingSent += n
                written += n
                budget -= n
                continue
            }
            pending.removeAll(keepingCapacity: true)
            pendingSent = 0
            if ending { return .finished }
            // The chunk read off the loop: sent once it is in memory, waited for until then.
            let (inFlight, fetched) = fetch.withLock { f in
                defer { f.result = nil }
                return (f.inFlight, f.result)
            }
            if inFlight { return .wait(readable: true, writable: false, wakeAt: nil) }
            if let fetched {
                guard !fetched.isEmpty else { return .failed }
                position += fetched.count
                job.readerMoved(self, to: position)
                frame(fetched[...])
                continue
            }
            let (state, published, skip) = job.shared.withLock { ($0.state, $0.published, $0.skip) }
            if let skip, position >= skip.lowerBound, position < skip.upperBound { position = skip.upperBound }
            var limit = published
            if let skip, position < skip.lowerBound { limit = min(limit, skip.lowerBound) }
            if position < limit {
                var count = min(TranscodeSpoolReads.chunk, limit - position)
                if let pace {
                    // Paced: no byte before its time (the loop wakes this exchange then).
                    let allowed = Self.paceBurst + Int(Double(now &- started) / 1e9 * Double(pace))
                    guard allowed > bodySent else {
                        let due = started + UInt64(Double(bodySent + 4096 - Self.paceBurst) / Double(pace) * 1e9)
                        return .wait(readable: true, writable: false, wakeAt: due)
                    }
                    count = min(count, allowed - bodySent)
                }
                guard let waker else { return .failed }
                fetch.withLock { $0.inFlight = true }
                let fetch = fetch
                let asked = reads.read(job, at: position, count: count) { bytes in
                    fetch.withLock { $0 = Fetch(inFlight: false, result: bytes) }
                    waker.wake()
                }
                guard asked else { return .failed }
                return .wait(readable: true, writable: false, wakeAt: nil)
            }
            switch state {
            case .complete:
                if case .length(let total) = framing, bodySent < total {
                    guard let silence = padding(total - bodySent), silence.count == total - bodySent else { return .failed }
                    pending = silence
                    bodySent = total
                    ending = true
                    continue
                }
                if case .chunked = framing { pending = Array("0\r\n\r\n".utf8) }
                ending = true
            case .failed, .cancelled:
                // The response cannot be completed: the client sees it cut short.
                return .failed
            case .queued, .running:
                return .wait(readable: true, writable: false, wakeAt: nil)
            }
        }
        return .wait(readable: true, writable: false, wakeAt: now)
    }

    /// Frames `bytes` for the wire into `pending`.
    private func frame(_ bytes: ArraySlice<UInt8>) {
        switch framing {
        case .chunked:
            pending += Array((String(bytes.count, radix: 16) + "\r\n").utf8)
            pending += bytes
            pending += [0x0D, 0x0A]
            bodySent += bytes.count
        case .closeDelimited:
            pending += bytes
            bodySent += bytes.count
        case .length(let total):
            // Never more than announced (the estimate is an upper bound; this only guards it).
            let room = max(0, total - bodySent)
            pending += bytes.prefix(room)
            bodySent += min(room, bytes.count)
        }
    }
}
