/// The `/api/status` document: the library's counts, the scan's progress, the analysis and
/// seek index settings, the folder watcher's and the server's state, and the first skipped files.
public struct StatusDocument: Sendable, Equatable {
    /// Tracks listed.
    public var tracks: Int
    /// Files skipped (all of them; `skipped` names the first ones).
    public var skippedCount: Int
    /// Files ignored by the last full scan (the first scan's count so far until one has ended).
    public var ignoredCount: Int
    public var quarantinedCount: Int
    /// Full scans ended since the start.
    public var scans: Int
    public var lastScanMillis: Int
    public var scanning: Bool
    public var scanFound: Int
    public var scanToRead: Int
    public var scanRead: Int
    public var analyzerWorkers: Int
    public var analyzeTimeoutSeconds: Double
    /// The catalog database's path.
    public var database: String
    public var seekIndexesCached: Int
    public var seekIndexesBuiltAhead: Int
    public var seekIndexesBuiltOnPlay: Int
    /// Tracks at least this long get their index built ahead; nil when none are.
    public var indexAheadSeconds: Double?
    /// The folder watcher's state; nil (its members left out) without a scanner.
    public var watcher: Watcher?
    /// The server's connections; nil (its members left out) when no server runs.
    public var connections: Connections?
    /// The transcoder's counters; nil (its members left out) when streamd runs without one.
    public var transcodes: Transcodes?
    /// The first skipped files, by path.
    public var skipped: [SkippedFile]

    /// How the library folder is watched (`watch`, `watched_folders`, `rescan_interval_s`).
    public struct Watcher: Sendable, Equatable {
        /// "starting", "inotify" or "polling".
        public var mode: String
        public var folders: Int
        public var rescanIntervalSeconds: Double

        public init(mode: String, folders: Int, rescanIntervalSeconds: Double) {
            self.mode = mode
            self.folders = folders
            self.rescanIntervalSeconds = rescanIntervalSeconds
        }
    }

    /// Open connections (`connections`, `connections_per_loop`).
    public struct Connections: Sendable, Equatable {
        public var total: Int
        /// One count per event loop.
        public var perLoop: [Int]

        public init(total: Int, perLoop: [Int]) {
            self.total = total
            self.perLoop = perLoop
        }
    }

    /// `/media/...?format=` transcodes (`transcodes_active`, `transcodes_queued`, ...): encodes
    /// running and waiting now; since the start, encodes started, requests that joined one in
    /// progress, whole-track requests answered from the cache or not, 503s for a full queue, and
    /// queued encodes dropped because their listeners left first.
    public struct Transcodes: Sendable, Equatable {
        public var active: Int
        public var queued: Int
        public var started: Int
        public var joined: Int
        public var cacheHits: Int
        public var cacheMisses: Int
        public var refused: Int
        public var droppedFromQueue: Int

        public init(active: Int = 0, queued: Int = 0, started: Int = 0, joined: Int = 0, cacheHits: Int = 0, cacheMisses: Int = 0,
                    refused: Int = 0, droppedFromQueue: Int = 0) {
            self.active = active
            self.queued = queued
            self.started = started
            self.joined = joined
            self.cacheHits = cacheHits
            self.cacheMisses = cacheMisses
            self.refused = refused
            self.droppedFromQueue = droppedFromQueue
        }
    }

    /// One skipped file of `skipped`.
    public struct SkippedFile: Sendable, Equatable {
        public var path: String
        public var reason: String
        /// True when the analyzer crashed or hung on it (it is not tried again until it changes).
        public var quarantined: Bool

        public init(path: String, reason: String, quarantined: Bool) {
            self.path = path
            self.reason = reason
            self.quarantined = quarantined
        }
    }

    public init(tracks: Int = 0, skippedCount: Int = 0, ignoredCount: Int = 0, quarantinedCount: Int = 0, scans: Int = 0,
                lastScanMillis: Int = 0, scanning: Bool = false, scanFound: Int = 0, scanToRead: Int = 0, scanRead: Int = 0,
                analyzerWorkers: Int = 0, analyzeTimeoutSeconds: Double = 0, database: String = "",
                seekIndexesCached: Int = 0, seekIndexesBuiltAhead: Int = 0, seekIndexesBuiltOnPlay: Int = 0,
                indexAheadSeconds: Double? = nil, watcher: Watcher? = nil, connections: Connections? = nil,
                skipped: [SkippedFile] = []) {
        self.tracks = tracks
        self.skippedCount = skippedCount
        self.ignoredCount = ignoredCount
        self.quarantinedCount = quarantinedCount
        self.scans = scans
        self.lastScanMillis = lastScanMillis
        self.scanning = scanning
        self.scanFound = scanFound
        self.scanToRead = scanToRead
        self.scanRead = scanRead
        self.analyzerWorkers = analyzerWorkers
        self.analyzeTimeoutSeconds = analyzeTimeoutSeconds
        self.database = database
        self.seekIndexesCached = seekIndexesCached
        self.seekIndexesBuiltAhead = seekIndexesBuiltAhead
        self.seekIndexesBuiltOnPlay = seekIndexesBuiltOnPlay
        self.indexAheadSeconds = indexAheadSeconds
        self.watcher = watcher
        self.connections = connections
        self.skipped = skipped
    }

    /// Most skipped files and per-loop counts `decode` takes.
    public static let maxListCount = 4096

    /// The JSON text streamd sends, newline-terminated; members in this order.
    public func encoded() -> String {
        var w = JSONObjectWriter()
        w.add("tracks", tracks)
        w.add("skipped_count", skippedCount)
        w.add("ignored_count", ignoredCount)
        w.add("quarantined_count", quarantinedCount)
        w.add("scans", scans)
        w.add("last_scan_ms", lastScanMillis)
        w.add("scanning", scanning)
        w.add("scan_found", scanFound)
        w.add("scan_to_read", scanToRead)
        w.add("scan_read", scanRead)
        w.add("analyzer_workers", analyzerWorkers)
        w.add("analyze_timeout_s", analyzeTimeoutSeconds)
        w.add("db", database)
        w.add("seek_indexes_cached", seekIndexesCached)
        w.add("seek_indexes_built_ahead", seekIndexesBuiltAhead)
        w.add("seek_indexes_built_on_play", seekIndexesBuiltOnPlay)
        w.add("index_ahead_s", indexAheadSeconds)
        if let watcher {
            w.add("watch", watcher.mode)
            w.add("watched_folders", watcher.folders)
            w.add("rescan_interval_s", watcher.rescanIntervalSeconds)
        }
        if let connections {
            w.add("connections", connections.total)
            w.addRaw("connections_per_loop", "[" + connections.perLoop.map { String($0) }.joined(separator: ",") + "]")
        }
        if let transcodes {
            w.add("transcodes_active", transcodes.active)
            w.add("transcodes_queued", transcodes.queued)
            w.add("transcodes_started", transcodes.started)
            w.add("transcodes_joined", transcodes.joined)
            w.add("transcode_cache_hits", transcodes.cacheHits)
            w.add("transcode_cache_misses", transcodes.cacheMisses)
            w.add("transcodes_refused", transcodes.refused)
            w.add("transcodes_dropped_from_queue", transcodes.droppedFromQueue)
        }
        let items = skipped.map { file -> String in
            var item = JSONObjectWriter()
            item.add("path", file.path)
            item.add("reason", file.reason)
            item.add("quarantined", file.quarantined)
            return item.text
        }
        w.addRaw("skipped", "[" + items.joined(separator: ",\n") + "]")
        return w.text + "\n"
    }

    /// Reads a document as `encoded()` writes it (members in any order, unknown ones ignored;
    /// the watcher's, the connections' and the transcodes' members all present or all absent). Anything else
    /// is a typed error.
    public static func decode(_ bytes: [UInt8]) throws(APIDocumentError) -> StatusDocument {
        let r = try APIObjectReader(APIObjectReader.parse(bytes, maxValues: 8 * maxListCount + 4096), context: "")
        var status = StatusDocument(
            tracks: try r.int("tracks"), skippedCount: try r.int("skipped_count"), ignoredCount: try r.int("ignored_count"),
            quarantinedCount: try r.int("quarantined_count"), scans: try r.int("scans"),
            lastScanMillis: try r.int("last_scan_ms"), scanning: try r.bool("scanning"), scanFound: try r.int("scan_found"),
            scanToRead: try r.int("scan_to_read"), scanRead: try r.int("scan_read"),
            analyzerWorkers: try r.int("analyzer_workers"), analyzeTimeoutSeconds: try r.double("analyze_timeout_s"),
            database: try r.string("db"), seekIndexesCached: try r.int("seek_indexes_cached"),
            seekIndexesBuiltAhead: try r.int("seek_indexes_built_ahead"),
            seekIndexesBuiltOnPlay: try r.int("seek_indexes_built_on_play"),
            indexAheadSeconds: try r.optionalDouble("index_ahead_s"))
        if r.members["watch"] != nil {
            status.watcher = Watcher(mode: try r.string("watch"), folders: try r.int("watched_folders"),
                                     rescanIntervalSeconds: try r.double("rescan_interval_s"))
        }
        if r.members["connections"] != nil {
            var perLoop: [Int] = []
            for (i, count) in try r.array("connections_per_loop", limit: maxListCount).enumerated() {
                guard let number = count.int else {
                    throw .wrongType(member: "connections_per_loop[\(i)]", expected: "a whole number")
                }
                perLoop.append(number)
            }
            status.connections = Connections(total: try r.int("connections"), perLoop: perLoop)
        }
        if r.members["transcodes_active"] != nil {
            status.transcodes = Transcodes(active: try r.int("transcodes_active"), queued: try r.int("transcodes_queued"),
                                           started: try r.int("transcodes_started"), joined: try r.int("transcodes_joined"),
                                           cacheHits: try r.int("transcode_cache_hits"),
                                           cacheMisses: try r.int("transcode_cache_misses"),
                                           refused: try r.int("transcodes_refused"),
                                           droppedFromQueue: try r.int("transcodes_dropped_from_queue"))
        }
        for (i, item) in try r.array("skipped", limit: maxListCount).enumerated() {
            let file = try APIObjectReader(item, context: "skipped[\(i)]")
            status.skipped.append(SkippedFile(path: try file.string("path"), reason: try file.string("reason"),
                                              quarantined: try file.bool("quarantined")))
        }
        return status
    }
}
