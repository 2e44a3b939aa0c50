import Foundation
import StreamHTTP
import StreamLibrary
import StreamRadio
import Logging

/// The one owner of what streamd runs: it starts the HTTP server (its loops and blocking pool)
/// and the catalog's scanner, and stops everything, last started first, within 5 s.
public final class ServerLifecycle: Sendable {
    public let server: HTTPServer
    public let scanner: CatalogScanner
    public let radio: RadioService?
    public let store: LibraryStore
    private let logger: Logger

    /// Seconds a whole stop may take; the HTTP server's drain (`shutdownGrace`) is part of it.
    public static let stopBudget = 4.5

    public init(server: HTTPServer, scanner: CatalogScanner, radio: RadioService?, store: LibraryStore,
                logger: Logger) {
        self.server = server
        self.scanner = scanner
        self.radio = radio
        self.store = store
        self.logger = logger
    }

    /// Starts listening, then the scan (the server answers from the database meanwhile); returns the bound port.
    public func start() throws(ServerStartError) -> Int {
        let port = try server.start()
        logger.debug("started \(max(1, server.configuration.threads)) event loops and \(server.configuration.blockingThreads) pool threads on port \(port)")
        do {
            try scanner.start()
        } catch {
            server.shutdown()
            throw .thread(error)
        }
        return port
    }

    /// Stops, in order: the HTTP server (connections drain, then its loops and pool are joined),
    /// the radio producers, the scanner and indexer threads (their analyzer workers stop and are
    /// reaped with them), then the database is checkpointed and closed. A part that does not stop
    /// in time is named and left (the database stays open under it).
    public func stop() {
        let started = Date()
        server.shutdown()
        logger.debug("shutdown: event loops and pool joined after \(Int(Date().timeIntervalSince(started) * 1000)) ms")
        radio?.stop()
        logger.debug("shutdown: radio producers joined after \(Int(Date().timeIntervalSince(started) * 1000)) ms")
        let left = Self.stopBudget - Date().timeIntervalSince(started)
        guard scanner.stop(within: left) else {
            logger.warning("shutdown: the scanner did not stop within \(String(format: "%.1f", max(0, left))) s; leaving it")
            return
        }
        logger.debug("shutdown: scanner and indexer joined after \(Int(Date().timeIntervalSince(started) * 1000)) ms")
        store.close()
    }
}
