import Foundation
import StreamHTTP
import StreamLibrary
import StreamRadio
import StreamHLS

/// The one owner of what streamd runs: it starts the HTTP server (its loops and blocking pool)
/// and the catalog's scanner, and stops everything, last started first, within 5 s.
public final class ServerLifecycle: Sendable {
    public let server: HTTPServer
    public let scanner: CatalogScanner
    public let radio: RadioService?
    public let hls: HLSService?
    public let store: LibraryStore
    private let warn: @Sendable (String) -> Void

    /// Seconds a whole stop may take; the HTTP server's drain (`shutdownGrace`) is part of it.
    public static let stopBudget = 4.5

    public init(server: HTTPServer, scanner: CatalogScanner, radio: RadioService?, hls: HLSService? = nil,
                store: LibraryStore, warn: @escaping @Sendable (String) -> Void) {
        self.server = server
        self.scanner = scanner
        self.radio = radio
        self.hls = hls
        self.store = store
        self.warn = warn
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
                _ = hls.stopLive(deadline: monotonicNanos() + UInt64(Self.stopBudget * 1e9))
                throw error
            }
        }
        let port = try server.start()
        scanner.start()
        return port
    }

    /// Stops, in order: the HTTP server (connections drain, then its loops and pool are joined),
    /// the radio producers, the scanner and indexer threads (their analyzer workers stop and are
    /// reaped with them), then the database is checkpointed and closed. A part that does not stop
    /// in time is named and left (the database stays open under it).
    public func stop() {
        let started = Date()
        server.shutdown()
        radio?.stop()
        for name in hls?.stopLive(deadline: monotonicNanos() + 1_000_000_000) ?? [] {
            warn("shutdown: the live loop \(name) did not stop in time; leaving it")
        }
        let left = Self.stopBudget - Date().timeIntervalSince(started)
        guard scanner.stop(within: left) else {
            warn("shutdown: the scanner did not stop within \(String(format: "%.1f", max(0, left))) s; leaving it")
            return
        }
        store.close()
    }
}
