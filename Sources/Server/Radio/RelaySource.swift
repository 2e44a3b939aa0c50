import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import Logging

/// `--relay NAME=URL`: pulls a stream from another streamd or an Icecast server (plain HTTP) and
/// feeds it to the live channel NAME as its source, ICY titles carried through. Reconnects every
/// `retryNanos` while the upstream is away; blocking I/O on its own thread.
final class RelaySource: @unchecked Sendable {
    // @unchecked: `stopped` and `upstream` are guarded by `lock`; `thread` is set by `start`
    // before anyone joins it; the rest is used by the relay thread only.
    let url: HTTPURL
    let producer: LiveProducer
    let retryNanos: UInt64
    /// Where a broken upstream is reported (streamd's log).
    let logger: Logger
    private let lock = Lock(())
    private var stopped = false
    /// The upstream being read, shut by `requestStop` so a blocked read ends at once.
    private var upstream: RelayUpstream?
    /// The last problem reported: a retry that fails the same way again is not logged again.
    private var lastProblem: String?
    /// The relay thread, set by `start`, joined by `join` (`stop` only asks it to end).
    private var thread: NativeThread?

    init(url: HTTPURL, producer: LiveProducer, retryNanos: UInt64 = 2_000_000_000,
         logger: Logger = .silent("streamd.radio")) {
        self.url = url
        self.producer = producer
        self.retryNanos = retryNanos
        self.logger = logger
    }

    func start() {
        do {
            thread = try NativeThread(name: "radio-relay-\(producer.channel.name)") { [self] in run() }
        } catch {
            logger.warning("relay \(producer.channel.name): \(error)")
        }
    }

    /// Asks the thread to stop: a read from the upstream under way ends now.
    package func requestStop() {
        let reading = lock.withLock { _ in
            stopped = true
            return upstream
        }
        reading?.interrupt()
    }

    /// Waits until the thread has ended, until `deadline` (monotonic ns) when given; true once
    /// it has (a second join returns at once). A connect under way ends with its own timeout.
    @discardableResult
    package func join(deadline: UInt64?) -> Bool {
        return thread?.join(deadline: deadline) ?? true
    }

    package func stop() {
        requestStop()
    }

    private var isStopped: Bool {
        return lock.withLock { _ in stopped }
    }

    private func run() {
        while !isStopped {
            do throws(RelayError) {
                try relayOnce()
                lastProblem = nil
            } catch {
                report(error)
            }
            // The pause before the next try, cut short by a stop.
            let retryAt = monotonicNanos() + retryNanos
            while !isStopped, monotonicNanos() < retryAt { sleepNanos(min(50_000_000, retryNanos)) }
        }
    }

    /// One line per new problem: an upstream that stays away or stays broken is named once.
    private func report(_ error: RelayError) {
        let text = "\(error)"
        guard text != lastProblem else { return }
        lastProblem = text
        logger.warning("relay \(producer.channel.name) from http://\(url.hostHeader)\(url.target): \(text); retrying every \(retryNanos / 1_000_000_000) s")
    }

    /// One connection to the upstream, until its stream ends (returns) or breaks (throws).
    private func relayOnce() throws(RelayError) {
        let upstream = try RelayUpstream(url: url)
        let stopping = lock.withLock { _ in
            self.upstream = upstream
            return stopped
        }
        defer { lock.withLock { _ in self.upstream = nil } }
        if stopping { return }
        let head = upstream.head
        let station = StationInfo(name: head["icy-name"] ?? producer.channel.name, genre: head["icy-genre"],
                                  url: head["icy-url"], description: head["icy-description"])
        let feed = SourceFeed()
        // The previous source may still be draining: wait for the mount to be free.
        var attached = false
        for _ in 0..<100 where !isStopped {
            if producer.attach(LiveProducer.AttachedSource(feed: feed, codec: upstream.codec, station: station,
                                                            kbps: head["icy-br"].flatMap { Int($0) })) {
                attached = true
                break
            }
            sleepNanos(100_000_000)
        }
        guard attached else { return }
        defer { feed.close() }
        try upstream.pump(audio: { feed.appendWaiting($0, stopped: { isStopped }) }, title: { producer.setSourceTitle($0) }, shouldStop: { isStopped })
    }
}
