import Foundation
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
import StreamShared

/// The scan's writer thread and the workers kept for a whole scan.
@Suite struct ScanWriterTests {
    static func chunk(_ n: Int) -> [LibraryChange] { [.removed(path: "chunk-\(n)")] }

    static func name(_ changes: [LibraryChange]) -> String {
        if case .removed(let path) = changes.first { return path }
        return "?"
    }

    @Test func chunks_areWrittenInOrder_andFinishWaitsForTheLast() {
        let lock = NSLock()
        var written: [String] = []
        let writer = ScanWriter { changes in
            usleep(2_000)
            lock.withLock { written.append(Self.name(changes)) }
        }
        for n in 0..<20 { writer.submit(Self.chunk(n)) }
        writer.submit([])
        writer.finish()
        #expect(lock.withLock { written } == (0..<20).map { "chunk-\($0)" })
    }

    /// One chunk written, one waiting: the third waits in `submit` (memory stays bounded).
    @Test func atMostOneChunkWaits() {
        let release = DispatchSemaphore(value: 0)
        let writer = ScanWriter { _ in release.wait() }
        writer.submit(Self.chunk(0))
        // The writer takes chunk 0 at once and blocks on it; chunk 1 then waits in the slot.
        let deadline = Date().addingTimeInterval(5)
        writer.submit(Self.chunk(1))
        let third = ManagedFlag()
        Thread.detachNewThread {
            writer.submit(Self.chunk(2))
            third.set()
        }
        usleep(200_000)
        #expect(!third.isSet, "a third chunk waits while two are in hand")
        release.signal()   // chunk 0 written: chunk 1 is taken, chunk 2 goes into the slot
        while !third.isSet && Date() < deadline { usleep(5_000) }
        #expect(third.isSet)
        release.signal()
        release.signal()
        writer.drain()
        writer.finish()
    }

    /// Inside `keepingWorkers` the workers one call started serve the next; outside, each call
    /// starts its own. Counted by a wrapper that notes every start.
    @Test func keepingWorkers_startsThemOncePerScope() throws {
        guard let streamd = IsolatedAnalyzerTests.streamd else { return }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("worker-starts-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        var settings = IsolatedAnalyzerTests.settings(streamd, workers: 2)
        settings.executable = "/bin/sh"
        settings.arguments = ["-c", "echo started >> '\(log)'; exec '\(streamd)' \(AnalyzerWorker.subcommand)"]
        let analyzer = IsolatedAnalyzer(settings: settings)
        let track = IsolatedAnalyzerTests.media.appendingPathComponent("cbr-128k-44k.mp3").path
        let files = IsolatedAnalyzerTests.files(Array(repeating: track, count: 4))
        let starts = { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").count }
        let kept = analyzer.keepingWorkers { () -> [[IsolatedAnalyzer.Outcome]] in
            (0..<3).map { _ in analyzer.analyze(files, mode: .quick, batch: 2) }
        }
        #expect(kept.allSatisfy { $0.count == 4 && $0.allSatisfy { if case .analyzed = $0 { true } else { false } } })
        #expect(starts() == 2, "two workers for three calls")
        _ = analyzer.analyze(files, mode: .quick, batch: 2)
        _ = analyzer.analyze(files, mode: .quick, batch: 2)
        #expect(starts() == 6, "outside a scope, two per call")
    }
}

/// A first scan inserts without the list orders' indexes and builds them at its end.
@Suite struct BulkLoadTests {
    static func orderIndexes(_ path: String) throws -> [String] {
        let db = try SQLiteDatabase(path: path, readOnly: true)
        return try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND name IN "
                            + "('tracks_by_title', 'tracks_by_artist', 'tracks_by_album_title', 'tracks_by_duration', 'tracks_by_year')"
                            + " ORDER BY name") { $0.text(0) }
    }

    @Test func emptyCatalog_dropsTheOrderIndexes_andTheEndBuildsThem() throws {
        let dir = try LibraryStoreTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        let store = try LibraryStoreTests.sampleStore(path: path)
        #expect(try Self.orderIndexes(path).count == 5)
        #expect(try store.beginBulkLoad() == false, "tracks are listed: nothing dropped")
        #expect(try Self.orderIndexes(path).count == 5)

        let empty = try LibraryStore(path: dir.appendingPathComponent("empty.db").path, folder: "/music")
        let emptyPath = dir.appendingPathComponent("empty.db").path
        #expect(try empty.beginBulkLoad())
        #expect(try Self.orderIndexes(emptyPath).isEmpty)
        let sample = try LibraryStoreTests.sampleStore()
        try empty.apply(try sample.tracks.page(offset: 0, limit: 100).rows.map { .track($0) })
        // Without the insert trigger, each write indexes its own tracks: searchable before the end.
        for query in ["band", "ope", "various", "late"] {
            #expect(try empty.search.tracks(query: query, limit: 10).map(\.path) == sample.search.tracks(query: query, limit: 10).map(\.path),
                    "during the first scan: \(query)")
        }
        let generation = empty.generation
        try empty.ensureOrderIndexes()
        #expect(empty.generation != generation, "search answers changed: cached ones are stale")
        #expect(try Self.orderIndexes(emptyPath).count == 5)
        for sort in TrackSort.allCases {
            #expect(try empty.tracks.page(offset: 0, limit: 100, sort: sort).rows.map(\.path)
                    == sample.tracks.page(offset: 0, limit: 100, sort: sort).rows.map(\.path), "\(sort)")
        }
        for query in ["band", "ope", "various", "late"] {
            #expect(try empty.search.tracks(query: query, limit: 10).map(\.path) == sample.search.tracks(query: query, limit: 10).map(\.path), "\(query)")
        }
        // The trigger is back: a track added later is found at once.
        try empty.apply([.track(path: "new.mp3", stamp: LibraryStoreTests.stamp(30), analysis: LibraryStoreTests.analysis(title: "Quokka"))])
        #expect(try empty.search.tracks(query: "quok", limit: 10).map(\.path) == ["new.mp3"])
        let settled = empty.generation
        try empty.ensureOrderIndexes()   // again: nothing to do
        #expect(empty.generation == settled)
        #expect(try empty.search.tracks(query: "quok", limit: 10).map(\.path) == ["new.mp3"])
    }
}

/// A flag set on one thread and read on another.
final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
