#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StreamShared
import Synchronization
import Logging
import Atomics
import StreamHTTP

extension OpenFile: RandomAccessBytes {
    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, offset < size, count > 0 else { return [] }
        do {
            return try PositionalRead.bytes(fd, at: offset, count: min(count, size - offset))
        } catch {
            throw SystemError(call: "pread", errno: error.errno)
        }
    }

    /// Size, mtime and inode of the opened file.
    public var stamp: FileStamp { FileStamp(size: size, mtimeNanos: mtimeNanos, inode: inode) }
}

/// A file the catalog does not list, and why.
public struct SkippedFile: Sendable, Equatable {
    /// Size and mtime when it was tried: it is tried again only when they change.
    public var size: Int
    public var mtime: Int
    public var reason: String
    /// True when the analyzer crashed or overran on it (not merely "not audio").
    public var quarantined: Bool
}

/// The library: every audio file under the folder, kept in the catalog database (`LibraryStore`)
/// by a background scanner that reads headers only, in worker processes (`IsolatedAnalyzer`).
/// Exact seek indexes are built on first need and cached in the database.
public final class Catalog: @unchecked Sendable {
    // @unchecked: mutable state is behind `lock` (`inFlight` behind `building`); scans are
    // serialised by `scanLock`; the
    // logger and the settings (`chunkSize`, `excludedPrefix`, `indexAheadSeconds`) are set before the
    // scanner and the server start, and only read after.
    public let resolver: PathResolver
    /// Runs the analyzer out of process: a file that crashes or hangs it costs that file only.
    public let analyzer: IsolatedAnalyzer
    /// The catalog database the routes read.
    public let store: LibraryStore
    private let lock = Lock(())
    private let scanLock = Lock(())
    /// Set at shutdown: a scan under way reads no further chunk, and none starts.
    private let scansStopped = ManagedAtomic<Bool>(false)
    private var progress = ScanProgress()
    private var indexedAhead = 0
    private var indexedOnPlay = 0
    /// Tracks handed to the indexer by `prefetchIndex` in this run.
    private var prefetched: Set<String> = []
    /// The indexer's to-do list: the catalog adds, the scanner's indexer thread takes.
    public let indexRequests = IndexRequests()
    /// Files whose exact analysis a thread is building (relative paths), and its signal.
    private var inFlight: Set<String> = []
    private let building = ConditionLock()
    /// Where the catalog logs ("streamd.library"): a warning per file that could not be analyzed
    /// and other trouble, progress (scan started, every few seconds, done) at info. Set before the
    /// first scan.
    public var logger = Logger.silent("streamd.library")
    /// Files read per batch written to the database.
    public var chunkSize = 2048
    /// Absolute paths the walk leaves out (the database and its WAL files, when they sit inside the folder).
    public var excludedPrefix: String?

    public init(resolver: PathResolver, store: LibraryStore, analyzer: IsolatedAnalyzer = IsolatedAnalyzer()) {
        self.resolver = resolver
        self.store = store
        self.analyzer = analyzer
    }

    /// A catalog over an in-memory database (for `streamd package` and tests).
    public convenience init(resolver: PathResolver, analyzer: IsolatedAnalyzer = IsolatedAnalyzer()) throws(SQLiteError) {
        self.init(resolver: resolver, store: try LibraryStore(path: ":memory:", folder: resolver.root), analyzer: analyzer)
    }

    /// Where a scan is: what `/api/status` shows.
    public struct ScanProgress: Sendable {
        public var scanning = false
        public var found = 0
        public var toRead = 0
        public var read = 0
        public var removed = 0
        /// Companion files (cover pictures, notes, playlists: `CompanionFiles`) the walk passed by.
        public var ignored = 0
        /// `ignored` of the last full scan that ran to its end.
        public var lastIgnored = 0
        public var scans = 0
        public var lastScanMillis = 0
        public var startedNanos: UInt64 = 0
    }

    /// The scan's progress now.
    public var scanProgress: ScanProgress { lock.withLock { _ in progress } }

    // MARK: scanning

    /// Scans the folder recursively and brings the database up to date. Unchanged files (same
    /// size, mtime and inode) are not read; the others go to the analyzer workers (headers only).
    public func scan() {
        scan(.all)
    }

    /// Scans `scope` (serialised with every other scan). `walked` gets the folders it walked (the
    /// scanner's watches) before the scan counts as done in `/api/status`, so a client that waited
    /// for the scan sees the watches too; it is not called when the scan could not run. The
    /// indexer is told a scan ended.
    func scan(_ scope: ScanScope, walked: ([String]) -> Void = { _ in }) {
        scanLock.withLock { _ in
            guard !scansStopped.load(ordering: .relaxed) else { return }
            scanNow(scope, walked: walked)
        }
    }

    /// Shutdown: ends the scan under way at its next chunk (what it read so far is written) and
    /// refuses new ones.
    public func stopScans() {
        scansStopped.store(true, ordering: .relaxed)
    }

    /// Brings the catalog up to date for one file or folder (relative to the library, or an
    /// absolute path inside it) now, ahead of the background scan: what a `--channel` needs
    /// before the server starts. Unchanged files are not read.
    public func refresh(path: String) {
        var wanted = path.hasPrefix("/") ? path : resolver.root + "/" + path
        while wanted.count > 1, wanted.hasSuffix("/") { wanted.removeLast() }
        if let real = PathResolver.realPath(wanted) { wanted = real }
        if wanted == resolver.root {
            scan(.all)
        } else if wanted.hasPrefix(resolver.root + "/") {
            let relative = String(wanted.dropFirst(resolver.root.count + 1))
            scan(.path(relative))
            // A playlist file of the library: the tracks it lists too.
            if PlaylistFolder.isPlaylist(wanted),
               let listed = try? PlaylistFolder(resolver: resolver).entries(relative: relative).entries {
                for entry in listed { scan(.path(entry.path)) }
            }
        }
    }

    /// What a scan looks at.
    enum ScanScope: Equatable {
        case all
        /// One file or folder (relative path): what an inotify event names.
        case path(String)
    }

    private func scanNow(_ scope: ScanScope, walked: ([String]) -> Void) {
        let started = monotonicNanos()
        var prefix: String?
        switch scope {
        case .all:
            lock.withLock { _ in
                progress.scanning = true
                progress.startedNanos = started
                progress.found = 0
                progress.toRead = 0
                progress.read = 0
                progress.removed = 0
                progress.ignored = 0
            }
        case .path(let relative):
            guard !PathResolver.isHidden(relative) else { return }
            prefix = relative
        }
        defer { if scope == .all { lock.withLock { _ in progress.scanning = false } } }
        var tally = ReadTally(logProgress: scope == .all)
        var announced = false
        // The workers read chunk N + 1 while chunk N is written.
        let writer = ScanWriter { [self] changes in write(changes) }
        let walk = CatalogWalk(root: resolver.root, excludedPrefix: excludedPrefix, store: store, under: prefix, chunkSize: chunkSize,
                               read: { [self] chunk in
                                   if scansStopped.load(ordering: .relaxed) { return }
                                   if scope == .all && !announced {
                                       announced = true
                                       logger.info("scan: reading new and changed files")
                                   }
                                   read(chunk[...], tally: &tally, writer: writer)
                               },
                               awaitWrites: { writer.drain() },
                               progress: { [self] found, toRead, ignored in
                                   guard scope == .all else { return }
                                   lock.withLock { _ in
                                       progress.found = found
                                       progress.toRead = toRead
                                       progress.ignored = ignored
                                   }
                               })
        if scope == .all {
            do {
                if try store.beginBulkLoad() {
                    logger.info("scan: first scan; the list orders' indexes are built at its end")
                } else {
                    // A search index left behind (a first scan cut short, the migration to
                    // schema 2) catches up before the walk, so search answers in a second or two.
                    let added = try store.indexSearchBacklog()
                    if added > 0 { logger.info("scan: \(added) tracks added to the search index") }
                }
            } catch {
                logger.warning("catalog: cannot prepare the library database: \(error)")
            }
        }
        // The same workers for every chunk of the scan (started once, not once per chunk).
        let removed = analyzer.keepingWorkers { prefix.map { walk.scan(relative: $0) } ?? walk.scanAll() }
        writer.finish()
        if scope == .all {
            do {
                try store.ensureOrderIndexes()
                let filled = try store.fillMissingTrackJSON()
                if filled > 0 { logger.info("scan: \(filled) tracks' API items written (a database from before they were kept)") }
                // A first scan writes the search index a chunk at a time: one segment each.
                if let segments = try store.search.compact() { logger.info("scan: search index merged from \(segments) segments into one") }
            } catch {
                logger.warning("catalog: cannot index the library database: \(error)")
            }
        }
        if let failure = walk.failure {
            logger.warning("catalog: cannot read the library database: \(failure)")
            return
        }
        if !removed.isEmpty { write(removed.map { .removed(path: $0) }) }
        finish(tally)
        walked(walk.folders)
        indexRequests.requestAhead()
        guard scope == .all else { return }
        let elapsed = Int((monotonicNanos() - started) / 1_000_000)
        lock.withLock { _ in
            progress.removed = removed.count
            progress.ignored = walk.ignored
            progress.lastIgnored = walk.ignored
            progress.scans += 1
            progress.lastScanMillis = elapsed
        }
        if walk.toRead > 0 || !removed.isEmpty {
            logger.info(.init(stringLiteral: "scan: done in \(elapsed) ms: \(walk.found) files, \(walk.toRead) new or changed read, \(removed.count) gone, "
                 + "\(walk.ignored) companion files (covers, notes, playlists) passed by"))
        }
    }

    /// What the chunks of one scan add up to, for its log lines.
    struct ReadTally {
        var logProgress: Bool
        var done = 0
        var unavailable = 0
        var rejected = 0
        var lastLog = monotonicNanos()
    }

    /// Reads one chunk in the workers and hands what they found to the scan's writer.
    private func read(_ chunk: ArraySlice<(path: String, stamp: FileStamp)>, tally: inout ReadTally, writer: ScanWriter) {
        let outcomes = analyzer.analyze(chunk.map { (resolver.root + "/" + $0.path, $0.stamp.size) }, mode: .quick, batch: 32)
        var changes: [LibraryChange] = []
        changes.reserveCapacity(chunk.count)
        for (file, outcome) in zip(chunk, outcomes) {
            switch outcome {
            case .analyzed(let analysis):
                changes.append(.track(path: file.path, stamp: file.stamp, analysis: analysis))
            case .rejected(let why):
                changes.append(.skipped(path: file.path, stamp: file.stamp, reason: why, quarantined: false))
                // Companion files never get here; a folder of other files still costs a few lines only.
                tally.rejected += 1
                if tally.rejected <= Self.namedSkipsPerScan { logger.warning("catalog: skipping \(resolver.root)/\(file.path): \(why)") }
            case .quarantined(let why):
                changes.append(.skipped(path: file.path, stamp: file.stamp, reason: why, quarantined: true))
                logger.warning("catalog: skipping \(resolver.root)/\(file.path): \(why); quarantined until the file changes")
            case .unavailable(let why):
                // Not the file's fault: no record, so the next scan tries it again.
                if tally.unavailable == 0 { logger.warning("catalog: \(why)") }
                tally.unavailable += 1
            }
        }
        writer.submit(changes)
        tally.done += chunk.count
        let done = tally.done
        lock.withLock { _ in progress.read = done }
        let now = monotonicNanos()
        if tally.logProgress, now - tally.lastLog >= 3_000_000_000 {
            tally.lastLog = now
            let seconds = Double(now - lock.withLock { _ in progress.startedNanos }) / 1e9
            logger.info("scan: \(done) files read (\(Int(Double(done) / max(seconds, 0.001))) files/s)")
        }
    }

    /// The log lines of a scan's end.
    private func finish(_ tally: ReadTally) {
        if tally.rejected > Self.namedSkipsPerScan {
            logger.warning("catalog: \(tally.rejected - Self.namedSkipsPerScan) more files skipped as not audio (/api/status counts them)")
        }
        if tally.unavailable > 1 { logger.warning("catalog: \(tally.unavailable) files not analyzed; they are tried again at the next scan") }
    }

    /// Files not audio named one by one in the log per scan; the rest are counted.
    static let namedSkipsPerScan = 20

    private func write(_ changes: [LibraryChange]) {
        do {
            try store.apply(changes)
        } catch {
            logger.warning("catalog: cannot write the library database: \(error)")
        }
    }

    package static func stamp(_ info: stat) -> FileStamp {
        FileStamp(size: Int(info.st_size),
                  mtimeNanos: Int(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int(info.st_mtim.tv_nsec),
                  inode: UInt64(info.st_ino))
    }

    // MARK: exact analyses

    /// Why a track's analysis is not available.
    public struct AnalysisFailure: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// The exact analysis (every frame, full seek index) of `file` at `path`: from the database
    /// when it holds one for these very bytes, else from a worker, then stored (the track's row
    /// is corrected when the quick scan's figures differ, as an ADTS estimate may). A file
    /// quarantined, or listed but rejected by the full walk, at this size and mtime is not tried again.
    public func analysis(forAbsolutePath path: String, file: OpenFile) throws(AnalysisFailure) -> TrackAnalysis {
        // A cover picture or a note is not sent to a worker, nor recorded as skipped.
        if CompanionFiles.isCompanion(path) { throw AnalysisFailure(reason: Self.companionReason) }
        let relative = resolver.relative(path)
        let stamp = file.stamp
        var claimed: String?
        defer { if let claimed { release(claimed) } }
        if let relative {
            if let cached = try? store.analyses.cached(path: relative, stamp: stamp) { return cached }
            if let reason = knownFailure(of: relative, stamp: stamp) { throw AnalysisFailure(reason: reason) }
            // Another thread (the indexer, another request) is walking this file: its result is
            // awaited rather than a second walk started.
            if claim(relative) {
                claimed = relative
            } else {
                awaitBuild(of: relative, timeout: analyzer.settings.timeout(forSize: file.size))
                if let cached = try? store.analyses.cached(path: relative, stamp: stamp) { return cached }
                // The other walk may have failed.
                if let reason = knownFailure(of: relative, stamp: stamp) { throw AnalysisFailure(reason: reason) }
            }
        }
        switch analyzer.analyze([(path, file.size)]).first {
        case .analyzed(let analysis):
            guard let relative else { return analysis }
            do {
                try store.analyses.save(path: relative, stamp: stamp, analysis: analysis)
                if let row = try store.tracks.track(path: relative), row.stamp == stamp,
                   row.frames != analysis.frames || row.durationSeconds != analysis.durationSeconds {
                    try store.apply([.track(path: relative, stamp: stamp, analysis: analysis)])
                }
            } catch {
                logger.warning("catalog: cannot store the analysis of \(path): \(error)")
            }
            return analysis
        case .rejected(let why):
            // Recorded, so asking again costs no worker: as skipped, or, when the quick scan
            // listed the track (its headers read well, its frames do not), in memory.
            if let relative {
                if (try? store.tracks.track(path: relative)) == nil {
                    write([.skipped(path: relative, stamp: stamp, reason: why, quarantined: false)])
                } else {
                    rememberRejection(of: relative, stamp: stamp, reason: why)
                    logger.warning("catalog: \(relative): no exact seek index: \(why); not tried again until the file changes")
                }
            }
            throw AnalysisFailure(reason: why)
        case .quarantined(let why):
            if let relative { write([.skipped(path: relative, stamp: stamp, reason: why, quarantined: true)]) }
            logger.warning("catalog: skipping \(path): \(why); quarantined until the file changes")
            throw AnalysisFailure(reason: why)
        case .unavailable(let why):
            throw AnalysisFailure(reason: why)
        case nil:
            throw AnalysisFailure(reason: "not analyzed")
        }
    }

    /// Listed tracks whose exact analysis was rejected, with the version rejected: without this,
    /// every seek index or HLS request for one, and the indexer after every scan (inotify's
    /// too), had a worker walk the whole file again (160 ms for a 3.6 MB MP3 that loses sync).
    private var rejected: [String: (stamp: FileStamp, reason: String)] = [:]
    /// Rejections remembered at most; past it they start over (each costs one more walk).
    static let rejectedLimit = 10_000

    /// Why this version of the file is known not to analyze: recorded as skipped or quarantined,
    /// or remembered as rejected by the full walk; nil when it is not.
    private func knownFailure(of relative: String, stamp: FileStamp) -> String? {
        if let skip = try? store.skipped.file(path: relative), skip.stamp == stamp { return skip.reason }
        return rejection(of: relative, stamp: stamp)
    }

    /// Why the full walk rejected this version of the listed track, if it did.
    private func rejection(of relative: String, stamp: FileStamp) -> String? {
        lock.withLock { _ in rejected[relative].flatMap { $0.stamp == stamp ? $0.reason : nil } }
    }

    private func rememberRejection(of relative: String, stamp: FileStamp, reason: String) {
        lock.withLock { _ in
            if rejected.count >= Self.rejectedLimit { rejected.removeAll() }
            rejected[relative] = (stamp, reason)
        }
    }

    /// Marks `relative` as being analyzed; false when another thread already is.
    private func claim(_ relative: String) -> Bool {
        building.lock()
        defer { building.unlock() }
        return inFlight.insert(relative).inserted
    }

    private func release(_ relative: String) {
        building.lock()
        inFlight.remove(relative)
        building.broadcast()
        building.unlock()
    }

    /// Waits (at most `timeout` seconds) until no thread analyzes `relative`.
    private func awaitBuild(of relative: String, timeout: Double) {
        let deadline = Monotonic.now.adding(seconds: timeout)
        building.lock()
        while inFlight.contains(relative) && building.wait(until: deadline) {}
        building.unlock()
    }

    // MARK: indexes ahead

    /// Why a companion file (`CompanionFiles`) has no analysis.
    static let companionReason = "not audio (a cover picture, note, log, cue sheet or playlist, by its extension)"

    /// Tracks at least this many seconds long get their exact analysis (the seek index) built in
    /// the background after each scan (`--index-ahead`; nil: only on first need), so their first
    /// seek or HLS request finds it stored. Walking a file costs about 20 ms per hour of MP3, so
    /// short tracks are left to first need and a library of songs is never read whole.
    public var indexAheadSeconds: Double? = Catalog.defaultIndexAheadSeconds

    /// The default of `indexAheadSeconds`: half an hour (mixes, audiobooks, podcasts, concerts).
    public static let defaultIndexAheadSeconds = 1800.0

    /// Builds the analyses of long tracks that have none stored for their current version,
    /// longest first, one file at a time on one worker; returns how many were built. `shouldStop`
    /// is asked between files. A file that fails is tried again after the next scan, unless the
    /// walk rejected it (then only once it changes).
    @discardableResult
    public func buildIndexesAhead(shouldStop: () -> Bool = { false }) -> Int {
        guard let minimum = indexAheadSeconds else { return 0 }
        let due: [(path: String, stamp: FileStamp)]
        do { due = try store.analyses.missing(minSeconds: minimum, limit: 100_000) } catch {
            logger.warning("catalog: cannot list the tracks to index: \(error)")
            return 0
        }
        guard !due.isEmpty else { return 0 }
        let started = monotonicNanos()
        var built = 0
        analyzer.keepingWorkers {
            for track in due {
                if shouldStop() { break }
                let path = resolver.root + "/" + track.path
                // A file changed since the scan is left to the scan that follows.
                guard let file = try? OpenFile(path: path), file.stamp == track.stamp else { continue }
                do {
                    _ = try analysis(forAbsolutePath: path, file: file)
                    built += 1
                } catch {
                    continue
                }
            }
        }
        lock.withLock { _ in indexedAhead += built }
        if built > 0 {
            let elapsed = Int((monotonicNanos() - started) / 1_000_000)
            logger.info("index: \(built) built ahead (exact seek indexes of tracks of \(Int(minimum)) s or more) in \(elapsed) ms")
        }
        return built
    }

    /// Called (on an event loop: it must be quick) when a client starts reading a file
    /// (`/media/`): the indexer builds its exact analysis next, unless it is stored, so the
    /// client's first seek finds it. A song's walk takes a few ms; the worker's start (about 30 ms)
    /// is most of what a first-need request waits for. Once per path per run.
    public func prefetchIndex(forAbsolutePath path: String) {
        guard let relative = resolver.relative(path) else { return }
        let first = lock.withLock { (_) -> Bool in
            if prefetched.count >= 100_000 { prefetched.removeAll() }
            return prefetched.insert(relative).inserted
        }
        if first { indexRequests.requestPlayed(path) }
    }

    /// The indexer's work for a played track: its analysis, unless stored, or WAV (whose seek is
    /// arithmetic), or not a listed track.
    func buildIndex(forAbsolutePath path: String) {
        guard let relative = resolver.relative(path), let row = try? store.tracks.track(path: relative),
              row.container != "wav", let file = try? OpenFile(path: path), file.stamp == row.stamp else { return }
        if (try? store.analyses.cached(path: relative, stamp: row.stamp)) != nil { return }
        if (try? analysis(forAbsolutePath: path, file: file)) != nil { lock.withLock { _ in indexedOnPlay += 1 } }
    }

    /// Indexes built because a client started reading the track (for `/api/status`).
    public var indexesBuiltOnPlay: Int { lock.withLock { _ in indexedOnPlay } }

    /// Seek indexes built ahead since the start (for `/api/status`).
    public var indexesBuiltAhead: Int { lock.withLock { _ in indexedAhead } }

    // MARK: reading

    /// Files under the folder that are not listed, with the reason, by absolute path.
    public func skippedFiles() -> [String: SkippedFile] {
        var result: [String: SkippedFile] = [:]
        for row in (try? store.skipped.all()) ?? [] {
            result[resolver.root + "/" + row.path] = SkippedFile(size: row.stamp.size, mtime: row.stamp.mtimeNanos / 1_000_000_000,
                                                                 reason: row.reason, quarantined: row.quarantined)
        }
        return result
    }

    /// The catalog's part of `/api/status`: track count, skipped, quarantined and ignored files, scans,
    /// scan progress (the router adds the watcher's and the connections' members).
    public func status() -> StatusDocument {
        let state = scanProgress
        // The first 100 by path: a library of cover pictures and notes would make this list the whole answer.
        let skips = (try? store.skipped.summary(limit: Self.statusSkippedLimit)) ?? (count: 0, quarantined: 0, first: [])
        let status = StatusDocument(
            tracks: (try? store.tracks.count()) ?? 0, skippedCount: skips.count,
            // Until a full scan has ended, the first one's count so far.
            ignoredCount: state.scans > 0 ? state.lastIgnored : state.ignored,
            quarantinedCount: skips.quarantined, scans: state.scans, lastScanMillis: state.lastScanMillis,
            scanning: state.scanning, scanFound: state.found, scanToRead: state.toRead, scanRead: state.read,
            analyzerWorkers: analyzer.settings.workers, analyzeTimeoutSeconds: analyzer.settings.timeoutSeconds,
            database: store.path, seekIndexesCached: (try? store.analyses.count()) ?? 0,
            seekIndexesBuiltAhead: indexesBuiltAhead, seekIndexesBuiltOnPlay: indexesBuiltOnPlay,
            indexAheadSeconds: indexAheadSeconds,
            skipped: skips.first.map { StatusDocument.SkippedFile(path: $0.path, reason: $0.reason, quarantined: $0.quarantined) })
        return status
    }

    /// Skipped files `/api/status` lists by name (`skipped_count` counts them all).
    static let statusSkippedLimit = 100

    /// All tracks, ordered by path (the whole library: for `streamd package` and a channel of a folder).
    public func tracks() -> [Track] {
        var result: [Track] = []
        try? store.tracks.forEach { result.append($0) }
        return result
    }

    /// The listed track at an absolute path (inside the folder); nil when it is not listed.
    public func track(forAbsolutePath path: String) -> Track? {
        guard let relative = resolver.relative(path) else { return nil }
        return try? store.tracks.track(path: relative)
    }

    /// Where a listed track's file is.
    public func absolutePath(of track: Track) -> String { resolver.root + "/" + track.path }

    /// Content-Type for a file served by `/media/`, and the first read's prefetch of its index:
    /// from memory while the catalog is unchanged. A database lookup on every request, on the
    /// event loop, cost 64 KiB Range GETs a third of their rate against nginx.
    public func mediaContentType(forAbsolutePath path: String) -> String {
        let generation = store.generation
        if let known = mediaTypes.withLock({ $0.value(for: path, generation: generation) }) { return known }
        // On the loop: a point lookup, but never a wait for a reader that slow queries hold; when
        // none is free, the extension says (and is not remembered).
        guard let type = contentType(forAbsolutePath: path, waiting: false) else { return Self.contentType(byExtensionOf: path) }
        prefetchIndex(forAbsolutePath: path)
        mediaTypes.withLock { $0.insert(type, for: path, generation: generation) }
        return type
    }

    private let mediaTypes = Lock(GenerationCache<String>(limit: 4096))

    /// Content-Type for a file: from its probed container, else from its extension.
    public func contentType(forAbsolutePath path: String) -> String {
        contentType(forAbsolutePath: path, waiting: true) ?? Self.contentType(byExtensionOf: path)
    }

    /// From the probed container; nil when the lookup would have had to wait (`waiting` false).
    private func contentType(forAbsolutePath path: String, waiting: Bool) -> String? {
        guard let relative = resolver.relative(path) else { return Self.contentType(byExtensionOf: path) }
        do {
            if let row = try store.tracks.track(path: relative, waiting: waiting), let container = Container(rawValue: row.container) {
                // Browsers pick a decoder from the codecs parameter (Chromium plays Ogg Opus natively).
                if container == .ogg { return "audio/ogg; codecs=\(row.codec)" }
                return container.mimeType
            }
        } catch {
            if error.code == LibraryStore.busy.code && !waiting { return nil }
        }
        return Self.contentType(byExtensionOf: path)
    }

    /// Content-Type by file extension, for files the catalog does not describe.
    public static func contentType(byExtensionOf path: String) -> String {
        switch path.split(separator: ".").last?.lowercased() {
        case "mp3": return "audio/mpeg"
        case "aac": return "audio/aac"
        case "m4a", "mp4": return "audio/mp4"
        case "wav": return "audio/wav"
        case "flac": return "audio/flac"
        case "ogg", "oga", "opus": return "audio/ogg"
        case "aif", "aiff", "aifc": return "audio/aiff"
        case "html", "htm": return "text/html; charset=utf-8"
        case "json": return "application/json"
        default: return "application/octet-stream"
        }
    }

    /// One `/api/tracks` item.
    public static func trackJSON(_ track: Track) -> String { track.item.encoded() }

    /// Why a seek index cannot be served.
    public enum IndexError: Error, CustomStringConvertible {
        case notAudio(String)
        public var description: String {
            switch self {
            case .notAudio(let why): return "not an audio track: \(why)"
            }
        }
    }

    /// The `/api/index/<path>` document (the exact index, built on first need).
    /// With `around`, only the points from 2 s before to 1 s after that time are listed.
    public func seekIndex(forAbsolutePath path: String, around: Double? = nil) -> Result<SeekIndexDocument, IndexError> {
        guard let file = try? OpenFile(path: path) else { return .failure(.notAudio("not in the catalog")) }
        let analysis: TrackAnalysis
        do {
            analysis = try self.analysis(forAbsolutePath: path, file: file)
        } catch {
            return .failure(.notAudio(error.reason))
        }
        let index = analysis.seekIndex
        var selected = index.points[...]
        if let around {
            let lower = selected.firstIndex { $0.t >= around - 2 } ?? max(0, selected.count - 1)
            let upper = selected.firstIndex { $0.t > around + 1 } ?? selected.count
            selected = selected[max(0, min(lower, upper - 1))..<upper]
        }
        return .success(SeekIndexDocument(path: resolver.relative(path) ?? path, durationSeconds: analysis.durationSeconds,
                                          firstFrameOffset: index.firstFrameOffset, audioEndOffset: index.audioEndOffset,
                                          encoderDelay: index.encoderDelay, encoderPadding: index.encoderPadding,
                                          sampleRate: analysis.sampleRate, etag: file.etag, points: Array(selected)))
    }

    /// The `/api/index/<path>` JSON text (`seekIndex(forAbsolutePath:around:)`, encoded).
    public func seekIndexJSON(forAbsolutePath path: String, around: Double? = nil) -> Result<String, IndexError> {
        seekIndex(forAbsolutePath: path, around: around).map { $0.encoded() }
    }
}

/// Values by key, each valid for the catalog generation it was read at; at most `limit` kept
/// (all are dropped when full: the cache refills with what is asked now).
struct GenerationCache<Value> {
    private var values: [String: (generation: UInt64, value: Value)] = [:]
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func value(for key: String, generation: UInt64) -> Value? {
        guard let found = values[key], found.generation == generation else { return nil }
        return found.value
    }

    mutating func insert(_ value: Value, for key: String, generation: UInt64) {
        if values.count >= limit { values.removeAll(keepingCapacity: true) }
        values[key] = (generation, value)
    }
}
