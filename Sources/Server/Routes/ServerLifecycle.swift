import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamRadio
import StreamHLS
import Logging

/// The one owner of what streamd runs: it starts the `--live` loops, the HTTP server (its loops
/// and blocking pool) and the catalog's scanner (the radio channels start as they are added),
/// and stops every thread and worker process of them, last started first, within 5 s.
public final class ServerLifecycle: Sendable {
    public let server: HTTPServer
    public let scanner: CatalogScanner
    public let radio: RadioService?
    public let hls: HLSService?
    public let store: LibraryStore
    /// The waveform builders, stopped with the radio (their decode workers are killed).
    public let waveforms: WaveformService?
    /// The `/media/...?format=` encodes, stopped with the radio (their decode workers are killed).
    public let transcoder: TranscodeService?
    private let logger: Logger

    /// Seconds a whole stop may take; the HTTP server's drain (`shutdownGrace`) is part of it.
    public static let stopBudget = 4.5
    /// Of the budget, what is kept for the worker processes left at the end to be killed and
    /// reaped, and the database to be checkpointed and closed.
    static let closingReserve = 0.4

    public init(server: HTTPServer, scanner: CatalogScanner, radio: RadioService?, hls: HLSService? = nil,
                store: LibraryStore, logger: Logger, waveforms: WaveformService? = nil, transcoder: TranscodeService? = nil) {
        self.transcoder = transcoder
        self.server = server
        self.scanner = scanner
        self.radio = radio
        self.hls = hls
        self.store = store
        self.waveforms = waveforms
        self.logger = logger
    }

    /// Starts the `--live` loops (their tracks are analyzed at once, each in a worker, and each
    /// loop's first window fed), then listens, then scans (the server answers from the database
    /// meanwhile); returns the bound port. Throws `HLSLiveStartError` for a track that cannot
    /// loop (the loops started are stopped) or `ServerStartError`.
    public func start() throws -> Int {
        if let hls {
            do {
                try hls.startLive()
            } catch {
                _ = hls.stopLive(deadline: Monotonic.now.adding(seconds: Self.stopBudget).nanoseconds)
                throw error
            }
        }
        let port = try server.start()
        logger.debug("started \(max(1, server.configuration.threads)) event loops and \(server.configuration.blockingThreads) pool threads on port \(port)")
        do {
            try scanner.start()
        } catch {
            server.shutdown()
            throw ServerStartError.thread(error)
        }
        return port
    }

    /// Stops, in order, each against one deadline on the monotonic clock: the HTTP server
    /// (connections drain, the loops are joined, the blocking pool takes no new job and its
    /// running ones get the drain's time: those still running are named in the log and left), the
    /// transcodes (queued ones dropped, running ones stopped, their workers killed), the
    /// radio's threads (relays, producers and their decode workers), the `--live` loops, the
    /// scanner and indexer threads (their analyzer workers stop and are reaped with them); then
    /// any worker process still running (one a job left behind) is killed and reaped, the thread
    /// reading the in-memory search index (if one runs) is stopped, and the database is
    /// checkpointed and closed. A part that does not stop in time is named in the
    /// log and left (the database then stays open under it).
    public func stop() {
        let started = Monotonic.now
        let deadline = started.adding(seconds: Self.stopBudget)
        let partsDeadline = started.adding(seconds: Self.stopBudget - Self.closingReserve)
        // No transcode starts once the drain begins (a request then gets 503); those running stop below.
        transcoder?.refuseNew()
        let report = server.shutdown(joinDeadline: partsDeadline.nanoseconds)
        if report.loopsLeft > 0 { logger.warning("shutdown: \(report.loopsLeft) event loops did not stop in time; leaving them") }
        if !report.pool.dropped.isEmpty {
            logger.warning("shutdown: \(report.pool.dropped.count) queued blocking jobs dropped: \(Self.list(report.pool.dropped))")
        }
        if !report.pool.abandoned.isEmpty {
            logger.warning("shutdown: \(report.pool.abandoned.count) blocking jobs still running at the deadline, left: \(Self.list(report.pool.abandoned))")
        }
        logger.debug("shutdown: event loops and pool joined after \(Int(started.elapsed * 1000)) ms")
        for name in radio?.stop(deadline: partsDeadline.nanoseconds) ?? [] {
            logger.warning("shutdown: radio \(name) did not stop in time; leaving it")
        }
        logger.debug("shutdown: radio producers and relays joined after \(Int(started.elapsed * 1000)) ms")
        for number in transcoder?.stop(deadline: partsDeadline) ?? [] {
            logger.warning("shutdown: transcode \(number) did not stop in time; leaving it")
        }
        logger.debug("shutdown: transcodes stopped after \(Int(started.elapsed * 1000)) ms")
        if waveforms?.stop(deadline: partsDeadline) == false {
            logger.warning("shutdown: a waveform build did not stop in time; leaving it")
        }
        for name in hls?.stopLive(deadline: partsDeadline.nanoseconds) ?? [] {
            logger.warning("shutdown: the live loop \(name) did not stop in time; leaving it")
        }
        let left = partsDeadline.seconds(since: Monotonic.now)
        let scannerStopped = scanner.stop(within: max(0, left))
        if !scannerStopped {
            logger.warning("shutdown: the scanner did not stop within \(String(format: "%.1f", max(0, left))) s; leaving it")
        }
        reapWorkers(until: deadline)
        guard scannerStopped else { return }
        logger.debug("shutdown: scanner and indexer joined after \(Int(started.elapsed * 1000)) ms")
        if !store.stopSearchIndexBuilds(deadline: deadline.nanoseconds) {
            logger.warning("shutdown: the search index read did not stop in time; closing the database under it")
        }
        store.close()
        let took = started.elapsed
        if took > Self.stopBudget { logger.warning("shutdown took \(String(format: "%.1f", took)) s") }
    }

    /// Kills the worker processes still running (those of jobs left behind) and waits until
    /// `deadline` for their owners to reap them; names those that were not.
    private func reapWorkers(until deadline: Monotonic) {
        let running = ChildProcess.unreaped
        guard !running.isEmpty else { return }
        logger.warning("shutdown: killing \(running.count) worker processes still running: \(Self.list(running.map { "\($0.executable) (\($0.pid))" }))")
        ChildProcess.killAll()
        while !ChildProcess.unreaped.isEmpty, Monotonic.now < deadline { Monotonic.sleep(seconds: 0.01) }
        let left = ChildProcess.unreaped
        if !left.isEmpty { logger.warning("shutdown: worker processes not reaped: \(Self.list(left.map { String($0.pid) }))") }
    }

    /// At most ten items, then how many more.
    private static func list(_ items: [String]) -> String {
        items.prefix(10).joined(separator: ", ") + (items.count > 10 ? ", and \(items.count - 10) more" : "")
    }
}
