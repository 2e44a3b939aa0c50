#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP

/// The catalog database: tracks, albums, artists, the search index, skipped files and cached
/// exact analyses, in SQLite (WAL mode, so readers never wait for the scanner's writes).
///
/// Reads go through a small pool of connections, one per caller at a time; writes through one
/// writer connection under a lock. A database that is damaged, someone else's, or from a newer
/// streamd is moved aside with a warning and a new one is built.
public final class LibraryStore: @unchecked Sendable {
    // @unchecked: the writer is used only under `writeLock`; idle readers live under `pool`,
    // and a reader taken from the pool is used by one thread until it is put back.
    public let path: String
    private let writer: SQLiteDatabase
    private let writeLock = NSLock()
    private let pool = NSCondition()
    private var idleReaders: [SQLiteDatabase] = []
    /// Set by `close`: readers are closed as they come back, and none is opened.
    private var closed = false
    private var readerCount = 0
    /// Reader connections at most: a caller waits for one rather than open more (each holds
    /// three descriptors, and reads take well under a millisecond).
    static let maxReaders = 4
    /// An in-memory database has one connection: reads go through the writer.
    private let inMemory: Bool
    private let changeCount = ManagedAtomic<UInt64>(0)
    /// When `changeCount` last moved (`DispatchTime` nanoseconds): the in-memory search index
    /// waits for writes to settle before it is read.
    private let lastWriteNanos = ManagedAtomic<UInt64>(0)
    private let searchIndexLock = NSLock()
    private var searchIndexStorage = SearchIndexState()
    private var artistIDs: [String: Int] = [:]
    private var albumIDs: [String: Int] = [:]
    /// While the search index's insert trigger is off (a first scan; a scan after the migration
    /// to schema 2): every track with an id up to this one is in the search index, those above
    /// are added by one statement per write (`indexSearchBacklog`), in the write's transaction,
    /// so that search finds a track one chunk after the scan wrote it. nil while the trigger
    /// keeps the index. Also in `meta`, so that a scan cut short carries on from it. Used under
    /// `writeLock` only.
    private var searchIndexedThrough: Int?
    /// The track count and the `generation` it was read at (`trackCount`).
    private let countCache = NSLock()
    private var cachedCount: (generation: UInt64, count: Int)?

    /// Opens the database at `path` for the library `folder` (":memory:" for one that lives
    /// as long as the process). `warn` hears about a database moved aside or wiped.
    public init(path: String, folder: String, warn: (String) -> Void = { _ in }) throws(SQLiteError) {
        self.path = path
        inMemory = path == ":memory:"
        if !inMemory { Self.makeParentFolder(of: path) }
        do {
            writer = try Self.openWriter(path: path, folder: folder, warn: warn)
        } catch let error where !inMemory && (error.isCorruption || error.context == Self.foreignContext) {
            let aside = Self.moveAside(path)
            warn("library: \(path) is not a usable streamd database (\(error.message)); moved to \(aside), building a new one")
            writer = try Self.openWriter(path: path, folder: folder, warn: warn)
        }
        searchIndexedThrough = try Self.searchWatermark(writer)
        // Every reader opened (and its WAL files with it) up front: the server's descriptor
        // count stays what it was at start, whatever the load.
        if !inMemory {
            for _ in 0..<Self.maxReaders {
                let reader = try SQLiteDatabase(path: path, readOnly: true)
                _ = try reader.queryOne("SELECT count(*) FROM meta") { $0.int(0) }
                idleReaders.append(reader)
            }
            readerCount = Self.maxReaders
        }
    }

    static let foreignContext = "check"

    /// Where the catalog of `folder` lives unless `--db` says: `$XDG_STATE_HOME/streamd/<hash>.db`,
    /// else `~/.local/state/streamd/<hash>.db`, the hash being of the folder's real path. Never
    /// inside the folder itself: if the state folder is in there, the temporary folder is used.
    public static func defaultPath(forFolder folder: String, environment: [String: String]) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325   // FNV-1a, 64-bit
        for byte in folder.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let name = String(hash, radix: 16) + ".db"
        let state: String
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") {
            state = xdg
        } else {
            state = (environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()) + "/.local/state"
        }
        let path = state + "/streamd/" + name
        if path.hasPrefix(folder + "/") {
            return (environment["TMPDIR"] ?? "/tmp") + "/streamd-\(getuid())/" + name
        }
        return path
    }

    /// `path` with its folder's symlinks resolved (the file itself may not exist yet).
    public static func realParentPath(_ path: String) -> String? {
        let parent = (path as NSString).deletingLastPathComponent
        guard let real = PathResolver.realPath(parent.isEmpty ? "." : parent) else { return nil }
        return real + "/" + (path as NSString).lastPathComponent
    }

    private static func openWriter(path: String, folder: String, warn: (String) -> Void) throws(SQLiteError) -> SQLiteDatabase {
        let db = try SQLiteDatabase(path: path)
        // Reading the header and the schema is where a file that is not a database says so.
        let application = try db.queryOne("PRAGMA application_id") { $0.int(0) } ?? 0
        let version = try db.queryOne("PRAGMA user_version") { $0.int(0) } ?? 0
        let objects = try db.queryOne("SELECT count(*) FROM sqlite_master") { $0.int(0) } ?? 0
        if objects > 0 && application != LibrarySchema.applicationID {
            throw SQLiteError(code: 0, message: "application id \(application), not streamd's", context: foreignContext)
        }
        if version > LibrarySchema.version {
            throw SQLiteError(code: 0, message: "schema version \(version) is newer than this streamd's \(LibrarySchema.version)",
                              context: foreignContext)
        }
        if path != ":memory:" {
            let mode = try db.queryOne("PRAGMA journal_mode = WAL") { $0.text(0) }
            if mode != "wal" { warn("library: \(path): journal mode \(mode ?? "?"), not WAL") }
        }
        try db.execute("PRAGMA synchronous = NORMAL")
        if version < LibrarySchema.version {
            try db.transaction { () throws(SQLiteError) in
                for step in version..<LibrarySchema.version { try db.execute(LibrarySchema.migrations[step]) }
                try db.execute("PRAGMA application_id = \(LibrarySchema.applicationID)")
                try db.execute("PRAGMA user_version = \(LibrarySchema.version)")
            }
        }
        // Without tracks, nothing waits to be indexed (a new database).
        if try !hasSearchInsertTrigger(db), try db.queryOne("SELECT EXISTS (SELECT 1 FROM tracks)", row: { $0.int(0) }) == 0 {
            try db.transaction { () throws(SQLiteError) in
                try db.execute(searchInsertTrigger)
                try db.run("DELETE FROM meta WHERE key = ?", [.text(searchWatermarkKey)])
            }
        }
        let recorded = try db.queryOne("SELECT value FROM meta WHERE key = 'folder'") { $0.text(0) }
        if recorded != folder {
            if let recorded {
                warn("library: \(path) described \(recorded), not \(folder): starting it over")
            }
            try db.transaction { () throws(SQLiteError) in
                try db.execute("DELETE FROM tracks; DELETE FROM skipped; DELETE FROM analyses; DELETE FROM albums; DELETE FROM artists;")
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('folder', ?)", [.text(folder)])
            }
        }
        return db
    }

    /// Creates the folders above `path` (mode 0700): the default lives in ~/.local/state.
    private static func makeParentFolder(of path: String) {
        let parent = (path as NSString).deletingLastPathComponent
        guard !parent.isEmpty else { return }
        try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
    }

    /// Renames the database (and its WAL files) to `PATH.bad-<seconds>`; returns the new name.
    static func moveAside(_ path: String) -> String {
        let aside = "\(path).bad-\(Int(Date().timeIntervalSince1970))"
        rename(path, aside)
        for suffix in ["-wal", "-shm"] {
            if rename(path + suffix, aside + suffix) != 0 { unlink(path + suffix) }
        }
        return aside
    }

    // MARK: connections

    /// Runs `body` with a reader connection of the pool.
    private func read<T>(_ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        if inMemory {
            writeLock.lock()
            defer { writeLock.unlock() }
            return try body(writer)
        }
        let db = try takeReader()
        defer {
            pool.lock()
            if closed { db.close() } else { idleReaders.append(db) }
            pool.signal()
            pool.unlock()
        }
        return try body(db)
    }

    /// An idle reader, a new one while there are fewer than `maxReaders`, else the next one put back.
    private func takeReader() throws(SQLiteError) -> SQLiteDatabase {
        pool.lock()
        defer { pool.unlock() }
        while true {
            if closed { throw SQLiteError(code: SQLITE_MISUSE, message: "the library database is closed", context: "read") }
            if let idle = idleReaders.popLast() { return idle }
            if readerCount < Self.maxReaders {
                let db = try SQLiteDatabase(path: path, readOnly: true)
                readerCount += 1
                return db
            }
            pool.wait()
        }
    }

    /// Closes the database at shutdown: the WAL is checkpointed into the main file, the writer and
    /// the idle readers closed (a reader in use closes when it comes back); later calls fail.
    public func close() {
        writeLock.lock()
        if !inMemory { try? writer.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        writer.close()
        writeLock.unlock()
        pool.lock()
        closed = true
        for reader in idleReaders { reader.close() }
        idleReaders.removeAll()
        pool.broadcast()
        pool.unlock()
    }

    private func write<T>(_ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        writeLock.lock()
        defer { writeLock.unlock() }
        return try body(writer)
    }

    // MARK: writing (the scanner)

    /// Every known file (listed or skipped) and its stamp, by relative path; with `under`, only
    /// that file or the files in that folder.
    public func stamps(under prefix: String? = nil) throws(SQLiteError) -> [String: FileStamp] {
        try read { db throws(SQLiteError) in
            var result: [String: FileStamp] = [:]
            // '0' follows '/': the paths between "P/" and "P0" are exactly those under P/.
            let filter = prefix == nil ? "" : " WHERE path = ?1 OR (path >= ?1 || '/' AND path < ?1 || '0')"
            for table in ["tracks", "skipped"] {
                let statement = try db.prepare("SELECT path, size, mtime_ns, inode FROM \(table)" + filter)
                try statement.bind(prefix.map { [.text($0)] } ?? [])
                while try statement.step() {
                    result[statement.text(0)] = FileStamp(size: statement.int(1), mtimeNanos: statement.int(2),
                                                          inode: UInt64(bitPattern: Int64(statement.int(3))))
                }
                statement.reset()
            }
            return result
        }
    }

    /// The known files (listed or skipped) whose paths follow `after` in byte order (SQLite's
    /// BINARY order), the first `limit` of them, in that order; with `under`, only that file or
    /// the files in that folder. What a scan pages through instead of holding every stamp.
    public func stamps(after: String, under prefix: String?, limit: Int) throws(SQLiteError) -> [(path: String, stamp: FileStamp)] {
        try read { db throws(SQLiteError) in
            let filter = prefix == nil ? "" : " AND (path = ?3 OR (path >= ?3 || '/' AND path < ?3 || '0'))"
            var values: [SQLiteValue] = [.text(after), .int(Int64(max(0, limit)))]
            if let prefix { values.append(.text(prefix)) }
            var lists: [[(path: String, stamp: FileStamp)]] = []
            for table in ["tracks", "skipped"] {
                lists.append(try db.query("SELECT path, size, mtime_ns, inode FROM \(table) WHERE path > ?1\(filter) ORDER BY path LIMIT ?2",
                                          values) {
                    ($0.text(0), FileStamp(size: $0.int(1), mtimeNanos: $0.int(2), inode: UInt64(bitPattern: Int64($0.int(3)))))
                })
            }
            // The two sorted lists merged (a path is in one table at a time; were it in both, once).
            var merged: [(path: String, stamp: FileStamp)] = []
            merged.reserveCapacity(min(limit, lists[0].count + lists[1].count))
            var i = 0, j = 0
            while merged.count < limit && (i < lists[0].count || j < lists[1].count) {
                let next: (path: String, stamp: FileStamp)
                if j == lists[1].count || (i < lists[0].count && !CatalogWalk.precedes(lists[1][j].path, lists[0][i].path)) {
                    next = lists[0][i]
                    i += 1
                    if j < lists[1].count && lists[1][j].path == next.path { j += 1 }
                } else {
                    next = lists[1][j]
                    j += 1
                }
                merged.append(next)
            }
            return merged
        }
    }

    /// The indexes only the list orders use (`TrackSort`, read once per catalog generation by
    /// `TrackOrderCache`). A first scan inserts without them and builds them at its end: sorting
    /// 100,000 keys once costs less than keeping five more B-trees in order through 100,000
    /// inserts (their pages are most of what each chunk's transaction writes).
    static let orderIndexes = [
        "tracks_by_title ON tracks(sort_title COLLATE NOCASE, path)",
        "tracks_by_artist ON tracks(artist COLLATE NOCASE, album COLLATE NOCASE, disc_number, track_number, path)",
        "tracks_by_album_title ON tracks(album COLLATE NOCASE, disc_number, track_number, path)",
        "tracks_by_duration ON tracks(duration_s, path)",
        "tracks_by_year ON tracks(year, path)",
    ]

    /// The trigger that adds a new track to the search index (as the first migration made it).
    /// A first scan runs without it and adds each chunk's tracks in one statement instead
    /// (`indexSearchBacklog`): with its prefix indexes, the index written row by row through
    /// 100,000 inserts cost 3 s of CPU more than the scan without it (each row's statement
    /// flushes FTS5's pending terms as a segment of their own), one INSERT … SELECT per chunk of
    /// 2,048 about 1 s, the same as one for the whole table at the end.
    static let searchInsertTrigger = """
        CREATE TRIGGER tracks_fts_insert AFTER INSERT ON tracks BEGIN
          INSERT INTO tracks_fts(rowid, title, artist, album) VALUES (new.id, \(searchColumns(of: "new.")));
        END;
        """

    /// What a track puts in the search index's title, artist and album columns, from the
    /// `tracks` row named by `row` ("new." in a trigger, "" in a SELECT): the same expressions
    /// as the update trigger of the migrations, which stay as they were written.
    static func searchColumns(of row: String) -> String {
        "\(row)sort_title, coalesce(\(row)artist, '') || ' ' || coalesce(\(row)album_artist, ''), coalesce(\(row)album, '')"
    }

    /// Whether the search index's insert trigger is in place.
    private static func hasSearchInsertTrigger(_ db: SQLiteDatabase) throws(SQLiteError) -> Bool {
        try db.queryOne("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'tracks_fts_insert'") { $0.int(0) } != 0
    }

    /// Where `searchIndexedThrough` is kept in `meta`.
    static let searchWatermarkKey = "search_indexed_through"

    /// `searchIndexedThrough` as the database says: nil with the insert trigger, else the stored
    /// id (0 when none is: a database migrated to schema 2, or a first scan of before), never above
    /// the largest track id (a smaller id freed by a delete is given again to the next insert).
    private static func searchWatermark(_ db: SQLiteDatabase) throws(SQLiteError) -> Int? {
        guard try !hasSearchInsertTrigger(db) else { return nil }
        let stored = try db.queryOne("SELECT value FROM meta WHERE key = ?", [.text(searchWatermarkKey)]) { $0.text(0) }
        let top = try largestTrackID(db)
        return min(stored.flatMap { Int($0) } ?? 0, top)
    }

    /// The largest track id (0 without tracks).
    static func largestTrackID(_ db: SQLiteDatabase) throws(SQLiteError) -> Int {
        try db.queryOne("SELECT coalesce(max(id), 0) FROM tracks") { $0.int(0) } ?? 0
    }

    /// After a delete from `tracks` with the insert trigger off: the next insert may be given a
    /// freed id at or below `searchIndexedThrough`, so it comes down to the largest id left.
    private func lowerSearchWatermark(_ db: SQLiteDatabase) throws(SQLiteError) {
        guard let through = searchIndexedThrough, db.changes > 0 else { return }
        let top = try Self.largestTrackID(db)
        searchIndexedThrough = min(through, top)
    }

    /// Adds the tracks above `searchIndexedThrough` to the search index, at most `limit`, in
    /// the caller's transaction (`transaction`, which puts the watermark back on a rollback);
    /// returns how many. Replacing, so a row the update trigger indexed meanwhile is not doubled.
    private func indexSearchBacklog(limit: Int, _ db: SQLiteDatabase) throws(SQLiteError) -> Int {
        guard let through = searchIndexedThrough else { return 0 }
        let batch = try db.queryOne("SELECT max(id), count(*) FROM (SELECT id FROM tracks WHERE id > ? ORDER BY id LIMIT ?)",
                                    [.int(Int64(through)), .int(Int64(max(1, limit)))]) { ($0.optionalInt(0), $0.int(1)) }
        guard let batch, let last = batch.0 else { return 0 }
        try db.run("""
            INSERT OR REPLACE INTO tracks_fts(rowid, title, artist, album)
              SELECT id, \(Self.searchColumns(of: "")) FROM tracks WHERE id > ? AND id <= ?
            """, [.int(Int64(through)), .int(Int64(last))])
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(Self.searchWatermarkKey), .text(String(last))])
        searchIndexedThrough = last
        return batch.1
    }

    /// `db.transaction(body)`; a rollback puts `searchIndexedThrough` back as it was.
    private func transaction<T>(_ db: SQLiteDatabase, _ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let saved = searchIndexedThrough
        do {
            return try db.transaction(body)
        } catch {
            searchIndexedThrough = saved
            throw error
        }
    }

    /// Tracks added to the search index per transaction when a backlog is worked off
    /// (`indexSearchBacklog()`): about 0.1 s of the writer each.
    static let searchBacklogBatch = 8_192

    /// Before a full scan: drops the order indexes and the search index's insert trigger when no
    /// track is listed yet (a first scan, whose inserts are then cheaper); true when it did.
    /// Each write of the scan then adds its tracks to the search index in its own transaction,
    /// so search finds what is written while the scan goes on.
    public func beginBulkLoad() throws(SQLiteError) -> Bool {
        try write { db throws(SQLiteError) in
            guard try db.queryOne("SELECT EXISTS (SELECT 1 FROM tracks)", row: { $0.int(0) }) == 0 else { return false }
            // The search index is emptied: counted as a change (before and after, as in `apply`).
            changed()
            defer { changed() }
            try transaction(db) { () throws(SQLiteError) in
                for index in Self.orderIndexes {
                    try db.execute("DROP INDEX IF EXISTS \(index.prefix { $0 != " " })")
                }
                try db.execute("DROP TRIGGER IF EXISTS tracks_fts_insert")
                try db.execute("DELETE FROM tracks_fts")
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, '0')", [.text(Self.searchWatermarkKey)])
                searchIndexedThrough = 0
            }
            return true
        }
    }

    /// Adds the tracks the search index lacks while its insert trigger is off (a first scan cut
    /// short, or a database migrated to schema 2, whose index starts empty), `searchBacklogBatch`
    /// per transaction: what a full scan does before its walk, so that search answers within a
    /// second or two of the start rather than at the walk's end. Returns how many were added.
    @discardableResult
    public func indexSearchBacklog() throws(SQLiteError) -> Int {
        var added = 0
        while true {
            // Search answers change: counted before and after, as in `apply`.
            changed()
            let count: Int
            do {
                count = try write { db throws(SQLiteError) in
                    try transaction(db) { () throws(SQLiteError) in try indexSearchBacklog(limit: Self.searchBacklogBatch, db) }
                }
            } catch {
                changed()
                throw error
            }
            changed()
            added += count
            if count < Self.searchBacklogBatch { return added }
        }
    }

    /// After a full scan: creates the order indexes that are missing and, when the search
    /// index's insert trigger is (both dropped by `beginBulkLoad`, also when that scan was cut
    /// short by the process ending), adds the tracks the search index still lacks and puts the
    /// trigger back.
    public func ensureOrderIndexes() throws(SQLiteError) {
        try write { db throws(SQLiteError) in
            for index in Self.orderIndexes { try db.execute("CREATE INDEX IF NOT EXISTS \(index)") }
            guard searchIndexedThrough != nil else { return }
            // Search answers change: answers cached before are stale (counted before and after, as in `apply`).
            changed()
            defer { changed() }
            try transaction(db) { () throws(SQLiteError) in
                _ = try indexSearchBacklog(limit: Int(Int32.max), db)
                try db.execute(Self.searchInsertTrigger)
                try db.run("DELETE FROM meta WHERE key = ?", [.text(Self.searchWatermarkKey)])
                searchIndexedThrough = nil
            }
        }
    }

    /// Moves the generation: before and after each write that changes what the lists or search answer.
    private func changed() {
        changeCount.wrappingIncrement(ordering: .acquiringAndReleasing)
        lastWriteNanos.store(DispatchTime.now().uptimeNanoseconds, ordering: .releasing)
    }

    /// Counts the writes of `apply`: what was read from the lists is current while it is unchanged.
    public var generation: UInt64 { changeCount.load(ordering: .acquiring) }

    /// Writes `changes` in one transaction and refreshes the albums they touch.
    public func apply(_ changes: [LibraryChange]) throws(SQLiteError) {
        guard !changes.isEmpty else { return }
        // Counted before and after: a reader that saw the old count may have read either state.
        changed()
        defer { changed() }
        try write { db throws(SQLiteError) in
            try transaction(db) { () throws(SQLiteError) in
                var touched = Set<Int>()
                for change in changes {
                    switch change {
                    case .track(let path, let stamp, let analysis):
                        if let old = try albumOf(path, db) { touched.insert(old) }
                        if let album = try upsertTrack(path, stamp, analysis, db) { touched.insert(album) }
                        try db.run("DELETE FROM skipped WHERE path = ?", [.text(path)])
                    case .skipped(let path, let stamp, let reason, let quarantined):
                        if let old = try albumOf(path, db) { touched.insert(old) }
                        try db.run("DELETE FROM tracks WHERE path = ?", [.text(path)])
                        try lowerSearchWatermark(db)
                        try db.run("INSERT OR REPLACE INTO skipped(path, size, mtime_ns, inode, reason, quarantined) VALUES (?, ?, ?, ?, ?, ?)",
                                   [.text(path), .int(Int64(stamp.size)), .int(Int64(stamp.mtimeNanos)),
                                    .int(Int64(bitPattern: stamp.inode)), .text(reason), .int(quarantined ? 1 : 0)])
                    case .removed(let path):
                        if let old = try albumOf(path, db) { touched.insert(old) }
                        try db.run("DELETE FROM tracks WHERE path = ?", [.text(path)])
                        try lowerSearchWatermark(db)
                        try db.run("DELETE FROM skipped WHERE path = ?", [.text(path)])
                        try db.run("DELETE FROM analyses WHERE path = ?", [.text(path)])
                    }
                }
                try refreshAlbums(touched, db)
                // A first scan's chunk (2,048 tracks) is indexed whole; a larger backlog is worked
                // off by `indexSearchBacklog()` at the scan's start, not inside one write.
                _ = try indexSearchBacklog(limit: Self.searchBacklogBatch, db)
            }
        }
    }

    private func albumOf(_ path: String, _ db: SQLiteDatabase) throws(SQLiteError) -> Int? {
        try db.queryOne("SELECT album_id FROM tracks WHERE path = ?", [.text(path)]) { $0.optionalInt(0) } ?? nil
    }

    /// The name an album is filed under: its album artist, else its artist.
    static let unknownArtist = "Unknown Artist"

    private func upsertTrack(_ path: String, _ stamp: FileStamp, _ a: TrackAnalysis, _ db: SQLiteDatabase) throws(SQLiteError) -> Int? {
        let tags = a.tags
        let artistID = try tags.artist.map { name throws(SQLiteError) in try artist(name, db) }
        var albumID: Int?
        if let album = tags.album {
            let owner = tags.albumArtist ?? tags.artist ?? Self.unknownArtist
            albumID = try self.album(album, artistID: try artist(owner, db), artistName: owner, db)
        }
        let gain = tags.replayGain
        let values: [SQLiteValue] = [
            .text(path), .int(Int64(stamp.size)), .int(Int64(stamp.mtimeNanos)), .int(Int64(bitPattern: stamp.inode)),
            .optional(tags.title), .optional(tags.artist), .optional(tags.album), .optional(tags.albumArtist),
            .optional(TrackTags.leadingNumber(tags.track)), .optional(TrackTags.total(tags.track)),
            .optional(TrackTags.leadingNumber(tags.disc)), .optional(TrackTags.total(tags.disc)),
            .optional(tags.year), .optional(tags.genre),
            .double(a.durationSeconds.isFinite ? a.durationSeconds : 0), .text(a.codec), .text(a.container.rawValue),
            .int(Int64(a.sampleRate)), .int(Int64(a.channels)), .int(Int64(a.bitrate)),
            .int(Int64(a.frames)), .int(Int64(a.totalSamples)), .int(Int64(a.firstFrameOffset)),
            .int(Int64(a.encoderDelay)), .int(Int64(a.encoderPadding)),
            .optional(gain?.trackGain), .optional(gain?.trackPeak), .optional(gain?.albumGain), .optional(gain?.albumPeak),
            .optional(tags.coverArtBytes), .text(tags.title ?? TrackRow.fileName(path)),
            .optional(artistID), .optional(albumID),
        ]
        try db.run("""
            INSERT INTO tracks(path, size, mtime_ns, inode, title, artist, album, album_artist,
              track_number, track_total, disc_number, disc_total, year, genre,
              duration_s, codec, container, sample_rate, channels, bitrate, frames, total_samples, first_frame_offset,
              encoder_delay, encoder_padding, rg_track_gain, rg_track_peak, rg_album_gain, rg_album_peak,
              cover_art_bytes, sort_title, artist_id, album_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode,
              title = excluded.title, artist = excluded.artist, album = excluded.album, album_artist = excluded.album_artist,
              track_number = excluded.track_number, track_total = excluded.track_total,
              disc_number = excluded.disc_number, disc_total = excluded.disc_total, year = excluded.year, genre = excluded.genre,
              duration_s = excluded.duration_s, codec = excluded.codec, container = excluded.container,
              sample_rate = excluded.sample_rate, channels = excluded.channels, bitrate = excluded.bitrate,
              frames = excluded.frames, total_samples = excluded.total_samples, first_frame_offset = excluded.first_frame_offset,
              encoder_delay = excluded.encoder_delay, encoder_padding = excluded.encoder_padding,
              rg_track_gain = excluded.rg_track_gain, rg_track_peak = excluded.rg_track_peak,
              rg_album_gain = excluded.rg_album_gain, rg_album_peak = excluded.rg_album_peak,
              cover_art_bytes = excluded.cover_art_bytes, sort_title = excluded.sort_title,
              artist_id = excluded.artist_id, album_id = excluded.album_id
            """, values)
        try writeTrackJSON(path: path, db)
        return albumID
    }

    /// Writes the `/api/tracks` item of the track at `path` from its row as it now stands (its
    /// update trigger dropped the old one).
    private func writeTrackJSON(path: String, _ db: SQLiteDatabase) throws(SQLiteError) {
        var item: [UInt8] = []
        var id: Int?
        try db.each("SELECT \(Self.trackColumns) FROM tracks t WHERE t.path = ?", [.text(path)]) { row in
            item.reserveCapacity(768)
            TrackJSON.append(row, to: &item)
            id = row.int(0)
        }
        guard let id else { return }
        try db.run("INSERT OR REPLACE INTO track_json(id, json) VALUES (?, ?)", [.int(Int64(id)), .blob(item)])
    }

    /// Writes the `/api/tracks` items the tracks lack (a database from before they were kept),
    /// `batch` rows per transaction so that other writes get their turn; returns how many.
    @discardableResult
    public func fillMissingTrackJSON(batch: Int = 2_048) throws(SQLiteError) -> Int {
        var filled = 0
        while true {
            let count = try write { db throws(SQLiteError) in
                try db.transaction { () throws(SQLiteError) -> Int in
                    // Read first, written after: no insert while the statement walks the tables.
                    var items: [(Int, [UInt8])] = []
                    try db.each("""
                        SELECT \(Self.trackColumns) FROM tracks t WHERE NOT EXISTS (SELECT 1 FROM track_json j WHERE j.id = t.id)
                        LIMIT ?
                        """, [.int(Int64(max(1, batch)))]) { row in
                        var item: [UInt8] = []
                        item.reserveCapacity(768)
                        TrackJSON.append(row, to: &item)
                        items.append((row.int(0), item))
                    }
                    for (id, item) in items {
                        try db.run("INSERT OR REPLACE INTO track_json(id, json) VALUES (?, ?)", [.int(Int64(id)), .blob(item)])
                    }
                    return items.count
                }
            }
            filled += count
            if count < max(1, batch) { return filled }
        }
    }

    private func artist(_ name: String, _ db: SQLiteDatabase) throws(SQLiteError) -> Int {
        if let id = artistIDs[name] { return id }
        try db.run("INSERT OR IGNORE INTO artists(name) VALUES (?)", [.text(name)])
        guard let id = try db.queryOne("SELECT id FROM artists WHERE name = ?", [.text(name)], row: { $0.int(0) }) else {
            throw SQLiteError(code: 0, message: "artist '\(name)' not found after insert", context: "artist")
        }
        artistIDs[name] = id
        return id
    }

    private func album(_ title: String, artistID: Int, artistName: String, _ db: SQLiteDatabase) throws(SQLiteError) -> Int {
        let key = "\(artistID)\u{0}\(title)"
        if let id = albumIDs[key] { return id }
        try db.run("INSERT OR IGNORE INTO albums(artist_id, artist_name, title) VALUES (?, ?, ?)",
                   [.int(Int64(artistID)), .text(artistName), .text(title)])
        guard let id = try db.queryOne("SELECT id FROM albums WHERE artist_id = ? AND title = ?",
                                       [.int(Int64(artistID)), .text(title)], row: { $0.int(0) }) else {
            throw SQLiteError(code: 0, message: "album '\(title)' not found after insert", context: "album")
        }
        albumIDs[key] = id
        return id
    }

    /// Recomputes the counts, length, year, cover and folder of `albums`; drops albums and
    /// artists that no track refers to any more.
    private func refreshAlbums(_ albums: Set<Int>, _ db: SQLiteDatabase) throws(SQLiteError) {
        guard !albums.isEmpty else { return }
        for id in albums {
            try db.run("""
                UPDATE albums SET
                  track_count = (SELECT count(*) FROM tracks WHERE album_id = ?1),
                  duration_s = (SELECT coalesce(sum(duration_s), 0) FROM tracks WHERE album_id = ?1),
                  year = (SELECT max(year) FROM tracks WHERE album_id = ?1),
                  cover_track_id = (SELECT id FROM tracks WHERE album_id = ?1 AND cover_art_bytes IS NOT NULL
                                    ORDER BY disc_number, track_number, path LIMIT 1),
                  folder = coalesce((SELECT rtrim(rtrim(path, replace(path, '/', '')), '/') FROM tracks WHERE album_id = ?1
                                     ORDER BY disc_number, track_number, path LIMIT 1), '')
                WHERE id = ?1
                """, [.int(Int64(id))])
        }
        try db.run("DELETE FROM albums WHERE track_count = 0")
        if db.changes > 0 { albumIDs.removeAll() }
        try db.run("""
            DELETE FROM artists WHERE NOT EXISTS (SELECT 1 FROM tracks WHERE artist_id = artists.id)
              AND NOT EXISTS (SELECT 1 FROM albums WHERE artist_id = artists.id)
            """)
        if db.changes > 0 { artistIDs.removeAll() }
    }

    // MARK: cached exact analyses

    /// The exact analysis (full seek index) stored for this version of the file, if any.
    public func cachedAnalysis(path: String, stamp: FileStamp) throws(SQLiteError) -> TrackAnalysis? {
        let blob = try read { db throws(SQLiteError) in
            try db.queryOne("SELECT data FROM analyses WHERE path = ? AND size = ? AND mtime_ns = ? AND inode = ?",
                            [.text(path), .int(Int64(stamp.size)), .int(Int64(stamp.mtimeNanos)), .int(Int64(bitPattern: stamp.inode))]) {
                $0.blob(0)
            }
        }
        guard let blob else { return nil }
        // A blob from another build's wire version is simply not a hit.
        return try? TrackAnalysis(encoded: blob[...])
    }

    /// Stores the exact analysis of this version of the file (replacing an older one).
    public func storeAnalysis(path: String, stamp: FileStamp, analysis: TrackAnalysis) throws(SQLiteError) {
        try write { db throws(SQLiteError) in
            try db.run("INSERT OR REPLACE INTO analyses(path, size, mtime_ns, inode, data) VALUES (?, ?, ?, ?, ?)",
                       [.text(path), .int(Int64(stamp.size)), .int(Int64(stamp.mtimeNanos)),
                        .int(Int64(bitPattern: stamp.inode)), .blob(analysis.encoded())])
        }
    }

    // MARK: reading

    static let trackColumns = """
        t.id, t.path, t.size, t.mtime_ns, t.inode, t.title, t.artist, t.album, t.album_artist, t.track_number, t.track_total,
        t.disc_number, t.disc_total, t.year, t.genre, t.duration_s, t.codec, t.container, t.sample_rate, t.channels, t.bitrate,
        t.frames, t.total_samples, t.first_frame_offset, t.encoder_delay, t.encoder_padding,
        t.rg_track_gain, t.rg_track_peak, t.rg_album_gain, t.rg_album_peak, t.cover_art_bytes, t.artist_id, t.album_id
        """

    static func trackRow(_ s: SQLiteDatabase.Statement) -> TrackRow {
        let gain = ReplayGain(trackGain: s.optionalDouble(26), trackPeak: s.optionalDouble(27),
                              albumGain: s.optionalDouble(28), albumPeak: s.optionalDouble(29))
        return TrackRow(id: s.int(0), path: s.text(1),
                        stamp: FileStamp(size: s.int(2), mtimeNanos: s.int(3), inode: UInt64(bitPattern: Int64(s.int(4)))),
                        title: s.optionalText(5), artist: s.optionalText(6), album: s.optionalText(7), albumArtist: s.optionalText(8),
                        trackNumber: s.optionalInt(9), trackTotal: s.optionalInt(10), discNumber: s.optionalInt(11),
                        discTotal: s.optionalInt(12), year: s.optionalInt(13), genre: s.optionalText(14),
                        durationSeconds: s.double(15), codec: s.text(16), container: s.text(17), sampleRate: s.int(18),
                        channels: s.int(19), bitrate: s.int(20), frames: s.int(21), totalSamples: s.int(22),
                        firstFrameOffset: s.int(23), encoderDelay: s.int(24), encoderPadding: s.int(25),
                        replayGain: gain.isEmpty ? nil : gain, coverArtBytes: s.optionalInt(30),
                        artistID: s.optionalInt(31), albumID: s.optionalInt(32))
    }

    static func orderClause(_ sort: TrackSort) -> String {
        switch sort {
        case .path: return "t.path"
        case .title: return "t.sort_title COLLATE NOCASE, t.path"
        case .artist: return "t.artist COLLATE NOCASE, t.album COLLATE NOCASE, t.disc_number, t.track_number, t.path"
        case .album: return "t.album COLLATE NOCASE, t.disc_number, t.track_number, t.path"
        case .duration: return "t.duration_s, t.path"
        case .year: return "t.year, t.path"
        }
    }

    /// Listed tracks of at least `minSeconds` whose exact analysis is not stored for their
    /// current size, mtime and inode, longest first (what is worth building before anyone asks).
    /// WAV is left out: its seek is arithmetic.
    public func tracksWithoutAnalysis(minSeconds: Double, limit: Int) throws(SQLiteError) -> [(path: String, stamp: FileStamp)] {
        try read { db throws(SQLiteError) in
            try db.query("""
                SELECT t.path, t.size, t.mtime_ns, t.inode FROM tracks t
                LEFT JOIN analyses a ON a.path = t.path AND a.size = t.size AND a.mtime_ns = t.mtime_ns AND a.inode = t.inode
                WHERE a.path IS NULL AND t.duration_s >= ? AND t.container != 'wav'
                ORDER BY t.duration_s DESC, t.path LIMIT ?
                """, [.double(minSeconds), .int(Int64(max(0, limit)))]) { row in
                (row.text(0), FileStamp(size: row.int(1), mtimeNanos: row.int(2), inode: UInt64(bitPattern: Int64(row.int(3)))))
            }
        }
    }

    /// Number of exact analyses (seek indexes) cached.
    public func cachedAnalysisCount() throws(SQLiteError) -> Int {
        try read { db throws(SQLiteError) in try db.queryOne("SELECT count(*) FROM analyses") { $0.int(0) } ?? 0 }
    }

    /// Number of listed tracks: counted once per catalog `generation` (`count(*)` walks a whole
    /// index, 1-2 ms at 100,000 tracks, and `/api/status` asks on every call). A count read while
    /// the generation moved is not kept: it may be of either state.
    public func trackCount() throws(SQLiteError) -> Int {
        let before = generation
        if let cached = countCache.withLock({ cachedCount }), cached.generation == before { return cached.count }
        let count = try read { db throws(SQLiteError) in try db.queryOne("SELECT count(*) FROM tracks") { $0.int(0) } ?? 0 }
        if generation == before { countCache.withLock { cachedCount = (before, count) } }
        return count
    }

    /// A page of tracks in `sort` order (always ending on the path: stable across pages), and the total.
    public func tracks(offset: Int, limit: Int, sort: TrackSort = .path) throws(SQLiteError) -> (total: Int, rows: [TrackRow]) {
        try read { db throws(SQLiteError) in
            let total = try db.queryOne("SELECT count(*) FROM tracks") { $0.int(0) } ?? 0
            let rows = try db.query("SELECT \(Self.trackColumns) FROM tracks t ORDER BY \(Self.orderClause(sort)) LIMIT ? OFFSET ?",
                                    [.int(Int64(max(0, limit))), .int(Int64(max(0, offset)))], row: Self.trackRow)
            return (total, rows)
        }
    }

    /// The id of every track in `sort` order (for paging by position without OFFSET's walk).
    public func trackIDs(sort: TrackSort) throws(SQLiteError) -> [Int] {
        try read { db throws(SQLiteError) in
            try db.query("SELECT t.id FROM tracks t ORDER BY \(Self.orderClause(sort))") { $0.int(0) }
        }
    }

    /// The tracks with these ids, in the order given (ids no longer listed are left out).
    public func tracks(ids: [Int]) throws(SQLiteError) -> [TrackRow] {
        var rows: [TrackRow] = []
        rows.reserveCapacity(ids.count)
        try forEachTrack(ids: ids) { rows.append(Self.trackRow($0)) }
        return rows
    }

    /// The tracks with these ids handed to `body` in the order given, each as the statement's
    /// row (`trackColumns`); ids no longer listed are left out. One prepared statement looked up
    /// id by id: an `IN (…)` list would be new SQL text, compiled and cached, on every page.
    public func forEachTrack(ids: [Int], _ body: (SQLiteDatabase.Statement) -> Void) throws(SQLiteError) {
        guard !ids.isEmpty else { return }
        try read { db throws(SQLiteError) in
            try db.each("SELECT \(Self.trackColumns) FROM tracks t WHERE t.id = ?", keys: ids, body)
        }
    }

    /// The `/api/tracks` item (`TrackJSON`) of each track with these ids, in the order given,
    /// handed to `body` as bytes valid until it returns; ids no longer listed are left out. An
    /// item is the one written with the row, else written here from the row's columns.
    public func forEachTrackJSON(ids: [Int], _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        guard !ids.isEmpty else { return }
        try read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in try Self.eachTrackJSON(ids: ids, db, body) }
        }
    }

    /// `forEachTrackJSON` on a connection, inside the caller's read transaction. A run of
    /// consecutive ids (a page in path order, where ids follow the scan's walk) is read with one
    /// range scan instead of a B-tree descent per row.
    private static func eachTrackJSON(ids: [Int], _ db: SQLiteDatabase, _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        var fallback: [UInt8] = []
        // Looked up once, not per id (the statement cache hashes the SQL text: 1 % of a search).
        let stored = try db.prepare("SELECT json FROM track_json WHERE id = ?")
        defer { stored.reset() }
        var start = 0
        while start < ids.count {
            var end = start + 1
            while end < ids.count, ids[end] == ids[end - 1] &+ 1 { end += 1 }
            if end - start >= minimumRangeRun {
                try eachStoredJSON(first: ids[start], last: ids[end - 1], db, fallback: &fallback, body)
            } else {
                for id in ids[start..<end] { try oneTrackJSON(id: id, stored, db, fallback: &fallback, body) }
            }
            start = end
        }
    }

    /// Runs shorter than this are looked up id by id.
    static let minimumRangeRun = 4

    /// The items of ids `first...last` in order, from one scan of `track_json`; an id without a
    /// stored item is written from its row.
    private static func eachStoredJSON(first: Int, last: Int, _ db: SQLiteDatabase, fallback: inout [UInt8],
                                       _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        let range = try db.prepare("SELECT id, json FROM track_json WHERE id BETWEEN ? AND ? ORDER BY id")
        defer { range.reset() }
        try range.bind([.int(Int64(first)), .int(Int64(last))])
        var rowID = try range.step() ? range.int(0) : Int.max
        for id in first...last {
            if rowID == id {
                body(range.blobBytes(1))
                rowID = try range.step() ? range.int(0) : Int.max
            } else {
                try writtenTrackJSON(id: id, db, into: &fallback, body)
            }
        }
    }

    /// The item of one id: the stored one (`stored`: the prepared lookup of `track_json`), else
    /// written from its row.
    private static func oneTrackJSON(id: Int, _ stored: SQLiteDatabase.Statement, _ db: SQLiteDatabase, fallback: inout [UInt8],
                                     _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        // bind resets the statement first; the caller resets it at the end.
        try stored.bind(key: Int64(id))
        if try stored.step() {
            body(stored.blobBytes(0))
        } else {
            try writtenTrackJSON(id: id, db, into: &fallback, body)
        }
    }

    /// The item written from the track's columns (a row whose stored item is missing); nothing
    /// when the track is no longer listed.
    private static func writtenTrackJSON(id: Int, _ db: SQLiteDatabase, into written: inout [UInt8],
                                         _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        let columns = try db.prepare("SELECT \(trackColumns) FROM tracks t WHERE t.id = ?")
        defer { columns.reset() }
        try columns.bind(key: Int64(id))
        guard try columns.step() else { return }
        written.removeAll(keepingCapacity: true)
        TrackJSON.append(columns, to: &written)
        written.withUnsafeBytes(body)
    }

    /// What a playlist line needs of the tracks with these ids (path, title, artist, duration_s),
    /// handed to `body` in the order given; ids no longer listed are left out.
    public func forEachPlaylistTrack(ids: [Int], _ body: (SQLiteDatabase.Statement) -> Void) throws(SQLiteError) {
        guard !ids.isEmpty else { return }
        try read { db throws(SQLiteError) in
            try db.each("SELECT path, title, artist, duration_s FROM tracks WHERE id = ?", keys: ids, body)
        }
    }

    /// Every track in path order, handed to `body` one at a time (no array of the whole library).
    public func forEachTrack(_ body: (TrackRow) -> Void) throws(SQLiteError) {
        try read { db throws(SQLiteError) in
            let statement = try db.prepare("SELECT \(Self.trackColumns) FROM tracks t ORDER BY t.path")
            try statement.bind([])
            while try statement.step() { body(Self.trackRow(statement)) }
            statement.reset()
        }
    }

    /// The track at a relative path.
    public func track(path: String) throws(SQLiteError) -> TrackRow? {
        try read { db throws(SQLiteError) in
            try db.queryOne("SELECT \(Self.trackColumns) FROM tracks t WHERE t.path = ?", [.text(path)], row: Self.trackRow)
        }
    }

    /// The track with a given id.
    public func track(id: Int) throws(SQLiteError) -> TrackRow? {
        try read { db throws(SQLiteError) in
            try db.queryOne("SELECT \(Self.trackColumns) FROM tracks t WHERE t.id = ?", [.int(Int64(id))], row: Self.trackRow)
        }
    }

    /// Why a file is not listed, for the files that are not.
    public func skipped() throws(SQLiteError) -> [SkippedRow] {
        try read { db throws(SQLiteError) in
            try db.query("SELECT path, size, mtime_ns, inode, reason, quarantined FROM skipped ORDER BY path") {
                SkippedRow(path: $0.text(0), stamp: FileStamp(size: $0.int(1), mtimeNanos: $0.int(2),
                                                              inode: UInt64(bitPattern: Int64($0.int(3)))),
                           reason: $0.text(4), quarantined: $0.int(5) != 0)
            }
        }
    }

    /// How many files are skipped and quarantined, and the first `limit` skipped rows by path:
    /// what `/api/status` shows, without reading every row (3,333 cover pictures at 100,000 tracks).
    public func skippedSummary(limit: Int) throws(SQLiteError) -> (count: Int, quarantined: Int, first: [SkippedRow]) {
        try read { db throws(SQLiteError) in
            let counts = try db.queryOne("SELECT count(*), coalesce(sum(quarantined != 0), 0) FROM skipped") { ($0.int(0), $0.int(1)) }
            let first = try db.query("SELECT path, size, mtime_ns, inode, reason, quarantined FROM skipped ORDER BY path LIMIT ?",
                                     [.int(Int64(max(0, limit)))]) {
                SkippedRow(path: $0.text(0), stamp: FileStamp(size: $0.int(1), mtimeNanos: $0.int(2),
                                                              inode: UInt64(bitPattern: Int64($0.int(3)))),
                           reason: $0.text(4), quarantined: $0.int(5) != 0)
            }
            return (counts?.0 ?? 0, counts?.1 ?? 0, first)
        }
    }

    /// The skipped-file row of a relative path.
    public func skipped(path: String) throws(SQLiteError) -> SkippedRow? {
        try read { db throws(SQLiteError) in
            try db.queryOne("SELECT path, size, mtime_ns, inode, reason, quarantined FROM skipped WHERE path = ?", [.text(path)]) {
                SkippedRow(path: $0.text(0), stamp: FileStamp(size: $0.int(1), mtimeNanos: $0.int(2),
                                                              inode: UInt64(bitPattern: Int64($0.int(3)))),
                           reason: $0.text(4), quarantined: $0.int(5) != 0)
            }
        }
    }

    /// The FTS5 query for what a user typed: each word a quoted prefix term, all of them required.
    /// nil when there is no word (punctuation only).
    public static func ftsQuery(_ text: String) -> String? {
        let terms = searchWords(text).map { "\"\($0)\"*" }
        return terms.isEmpty ? nil : terms.joined(separator: " ")
    }

    /// The words of what a user typed that a search looks for (each a prefix): runs of letters
    /// and digits, the first 16, each cut to 64 characters.
    static func searchWords(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                current.unicodeScalars.append(scalar)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return words.prefix(16).map { String($0.prefix(64)) }
    }

    /// Matches up to which `search` ranks by bm25. Ranking costs 1.5-11 µs a match (at 100,000
    /// tracks: 13,000 matches of "river" 20-30 ms, 32,000 of "a" 85 ms, 1,500 of two prefixes
    /// 17 ms), and the prefixes typed into a search box reach thousands at once; up to 200 it is
    /// about 2 ms. Whether there are more is read from the index's first 201 rows, not a count.
    static let rankedMatchLimit = 200

    /// Tracks whose title, artist or album match every word of `query` as a prefix, best first,
    /// at most `limit`. Up to `rankedMatchLimit` matches are ranked by bm25 (a title hit weighing
    /// most); beyond that, the tracks whose title holds every word come first, then the others,
    /// each group in catalog order, read from the index only as far as the page goes.
    public func search(query: String, limit: Int) throws(SQLiteError) -> [TrackRow] {
        var rows: [TrackRow] = []
        try search(query: query, limit: limit) { rows.append(Self.trackRow($0)) }
        return rows
    }

    /// `search(query:limit:)` handing each row to `body` as the statement's row (`trackColumns`).
    public func search(query: String, limit: Int, _ body: (SQLiteDatabase.Statement) -> Void) throws(SQLiteError) {
        let index = currentSearchIndex()
        try read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                let ids = try Self.searchIDs(query: query, limit: limit, db, index: index)
                guard !ids.isEmpty else { return }
                try db.each("SELECT \(Self.trackColumns) FROM tracks t WHERE t.id = ?", keys: ids, body)
            }
        }
    }

    /// `search(query:limit:)` handing each track's `/api/tracks` item to `body` (`forEachTrackJSON`).
    public func searchJSON(query: String, limit: Int, _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        let index = currentSearchIndex()
        try read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                try Self.eachTrackJSON(ids: try Self.searchIDs(query: query, limit: limit, db, index: index), db, body)
            }
        }
    }

    /// The ids `search` answers with, from FTS5 alone (`inMemoryIndex` false) or from the
    /// in-memory index where it can (true: read first when it is not current). What the tests
    /// compare.
    func searchIDs(query: String, limit: Int, inMemoryIndex: Bool) throws(SQLiteError) -> [Int] {
        var index: SearchIndex?
        if inMemoryIndex {
            index = currentSearchIndex(startBuilding: false)
            if index == nil { index = try buildSearchIndex() }
        }
        return try read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in try Self.searchIDs(query: query, limit: limit, db, index: index) }
        }
    }

    /// The ids `search` answers with, best first: only the search index is read (the rows are
    /// read by id after, one prepared statement for them all). With `index` (current), a query
    /// of plain ASCII words is answered from it, and FTS5 only ranks 1 to `rankedMatchLimit`
    /// matches (bm25).
    private static func searchIDs(query: String, limit: Int, _ db: SQLiteDatabase, index: SearchIndex?) throws(SQLiteError) -> [Int] {
        guard limit > 0 else { return [] }
        let words = searchWords(query)
        guard !words.isEmpty else { return [] }
        let match = words.map { "\"\($0)\"*" }.joined(separator: " ")
        if let index, let prefixes = SearchIndex.terms(words) {
            switch index.search(prefixes: prefixes, limit: limit, rankedMatchLimit: rankedMatchLimit) {
            case .ids(let ids): return ids
            case .fewMatches: return try rankedIDs(match: match, limit: limit, db)
            }
        }
        let inOrder = "SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ? ORDER BY rowid LIMIT ?"
        // The first matches in catalog order tell whether there are few enough to rank, and are
        // the first of the others once the title hits are placed.
        var asked = rankedMatchLimit + 1
        var matches = try db.query(inOrder, [.text(match), .int(Int64(asked))]) { $0.int(0) }
        if matches.count <= rankedMatchLimit { return try rankedIDs(match: match, limit: limit, db) }
        var ids = try db.query(inOrder, [.text("{title} : (\(match))"), .int(Int64(limit))]) { $0.int(0) }
        guard ids.count < limit else { return ids }
        // Fewer title hits than the page holds: these are all of them, so the rest of the page is
        // the other matches in catalog order, read on from where the first read stopped (one
        // pass of the index instead of a second query that negates the first).
        let titleHits = Set(ids)
        let after = "SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ? AND rowid > ? ORDER BY rowid LIMIT ?"
        while true {
            for id in matches where !titleHits.contains(id) {
                ids.append(id)
                if ids.count == limit { return ids }
            }
            guard matches.count == asked, let last = matches.last else { return ids }
            asked = max(limit, 256)
            matches = try db.query(after, [.text(match), .int(Int64(last)), .int(Int64(asked))]) { $0.int(0) }
        }
    }

    /// The matches of the FTS5 query `match` ranked by bm25 (a title hit weighing most), then path.
    private static func rankedIDs(match: String, limit: Int, _ db: SQLiteDatabase) throws(SQLiteError) -> [Int] {
        try db.query("""
            SELECT t.id FROM tracks_fts JOIN tracks t ON t.id = tracks_fts.rowid
            WHERE tracks_fts MATCH ? ORDER BY bm25(tracks_fts, 10.0, 5.0, 3.0), t.path LIMIT ?
            """, [.text(match), .int(Int64(limit))]) { $0.int(0) }
    }

    // MARK: the in-memory search index

    /// The in-memory search index when it is current (built at this generation); else nil, and
    /// a build is started in the background (`startBuilding`) unless one runs or this
    /// generation's failed.
    func currentSearchIndex(startBuilding: Bool = true) -> SearchIndex? {
        let now = generation
        let (current, start): (SearchIndex?, Bool) = withSearchIndexState { state in
            if let index = state.index {
                if index.generation == now { return (index, false) }
                // A stale index is let go at once: never two in memory while the next is read.
                if index.generation < now { state.index = nil }
            }
            guard startBuilding, !state.building, state.failedGeneration != now else { return (nil, false) }
            state.building = true
            return (nil, true)
        }
        if start {
            // Holds the store only while a step runs: a store dropped meanwhile ends the thread.
            let thread = Thread { [weak self] in
                while let pause = self?.searchIndexBuildStep() { usleep(useconds_t(min(pause / 1_000, 1_000_000))) }
            }
            thread.name = "search index"
            thread.start()
        }
        return current
    }

    private func withSearchIndexState<T>(_ body: (inout SearchIndexState) -> T) -> T {
        searchIndexLock.lock()
        defer { searchIndexLock.unlock() }
        return body(&searchIndexStorage)
    }

    /// The in-memory index's state, under its lock.
    private struct SearchIndexState {
        var index: SearchIndex?
        var building = false
        /// A generation whose build failed (a database error, or ids it cannot hold): not tried again.
        var failedGeneration: UInt64?
        /// When the last build ended and how long it took (`DispatchTime` nanoseconds).
        var lastBuildEnd: UInt64 = 0
        var lastBuildCost: UInt64 = 0
    }

    /// How long the catalog must have been unchanged before the index is read: a scan writes a
    /// chunk every fraction of a second, and an index read between two writes would be stale at once.
    static let searchIndexSettleNanos: UInt64 = 300_000_000

    /// Reads of the index take at most one part in this many of the wall clock: a read of 0.4 s
    /// waits 3.6 s after the one before.
    static let searchIndexDutyCycle: UInt64 = 10

    /// One step of the background build: nil when it is over (the index is current, or cannot
    /// be built for this generation), else how long to wait before the next step. It waits until
    /// writes settle, reads the index and publishes it when no write came in the meantime.
    private func searchIndexBuildStep() -> UInt64? {
        let now = DispatchTime.now().uptimeNanoseconds
        let quiet = now &- lastWriteNanos.load(ordering: .acquiring)
        if quiet < Self.searchIndexSettleNanos { return Self.searchIndexSettleNanos - quiet }
        // A library that changes every few seconds would have the index read again after each
        // change: builds take at most a tenth of the time (FTS5 answers in between).
        let due = withSearchIndexState { $0.lastBuildEnd &+ $0.lastBuildCost &* (Self.searchIndexDutyCycle - 1) }
        if now < due { return due - now }
        let attempted = generation
        let done: Bool
        do {
            done = try buildSearchIndex() != nil || withSearchIndexState { $0.failedGeneration == attempted }
            let end = DispatchTime.now().uptimeNanoseconds
            withSearchIndexState { state in
                state.lastBuildEnd = end
                state.lastBuildCost = end &- now
            }
        } catch {
            withSearchIndexState { $0.failedGeneration = attempted }
            done = true
        }
        if done { withSearchIndexState { $0.building = false } }
        return done ? nil : 1_000_000
    }

    /// Reads the in-memory index now and publishes it when the catalog did not change meanwhile;
    /// returns it then (nil when a write came in: it is stale; or when it cannot be held here,
    /// which marks this generation failed).
    @discardableResult
    func buildSearchIndex() throws(SQLiteError) -> SearchIndex? {
        let before = generation
        let built = try read { db throws(SQLiteError) -> SearchIndex? in
            try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS \(SearchIndex.vocabularyTable) USING fts5vocab(main, tracks_fts, instance)")
            return try db.reading { () throws(SQLiteError) in try SearchIndex.build(db, generation: before) }
        }
        guard generation == before else { return nil }
        return withSearchIndexState { state in
            guard let built else {
                state.failedGeneration = before
                return nil
            }
            if let index = state.index, index.generation == before { return index }
            state.index = built
            return built
        }
    }

    /// Search-index segments above which `compactSearchIndex` merges them.
    public static let maxSearchSegments = 4

    /// Merges the search index into one segment when writes have left it in more than
    /// `maxSegments` (each transaction that adds tracks writes a segment; FTS5's automerge keeps
    /// several per level). A query then reads one doclist per term instead of one per segment: at
    /// 100,000 tracks, 9 segments after a first scan made a two-word search's index work about
    /// 560 µs of CPU, one segment 390 µs. Answers do not change. Returns the segments it merged
    /// into one, nil when there were not more than `maxSegments`.
    @discardableResult
    public func compactSearchIndex(maxSegments: Int = LibraryStore.maxSearchSegments) throws(SQLiteError) -> Int? {
        try write { db throws(SQLiteError) in
            let segments = try Self.searchIndexSegments(db)
            guard segments > maxSegments else { return nil }
            try db.execute("INSERT INTO tracks_fts(tracks_fts) VALUES('optimize')")
            return segments
        }
    }

    /// Segments of the search index now.
    public func searchIndexSegments() throws(SQLiteError) -> Int {
        try read { db throws(SQLiteError) in try Self.searchIndexSegments(db) }
    }

    private static func searchIndexSegments(_ db: SQLiteDatabase) throws(SQLiteError) -> Int {
        try db.queryOne("SELECT count(DISTINCT segid) FROM tracks_fts_idx") { $0.int(0) } ?? 0
    }

    static let albumColumns = """
        a.id, a.title, a.artist_id, a.artist_name, a.track_count, a.duration_s, a.year,
        (SELECT path FROM tracks WHERE id = a.cover_track_id), a.folder
        """

    static func albumRow(_ s: SQLiteDatabase.Statement) -> AlbumRow {
        AlbumRow(id: s.int(0), title: s.text(1), artistID: s.int(2), artistName: s.text(3), trackCount: s.int(4),
                 durationSeconds: s.double(5), year: s.optionalInt(6), coverTrackPath: s.optionalText(7), folder: s.text(8))
    }

    /// A page of albums by artist name then title, and the total.
    public func albums(offset: Int, limit: Int) throws(SQLiteError) -> (total: Int, rows: [AlbumRow]) {
        try read { db throws(SQLiteError) in
            let total = try db.queryOne("SELECT count(*) FROM albums") { $0.int(0) } ?? 0
            let rows = try db.query("""
                SELECT \(Self.albumColumns) FROM albums a
                ORDER BY a.artist_name COLLATE NOCASE, a.title COLLATE NOCASE, a.id LIMIT ? OFFSET ?
                """, [.int(Int64(max(0, limit))), .int(Int64(max(0, offset)))], row: Self.albumRow)
            return (total, rows)
        }
    }

    /// An album and its tracks in disc, then track number order; nil when there is no such album.
    public func album(id: Int) throws(SQLiteError) -> (album: AlbumRow, tracks: [TrackRow])? {
        try read { db throws(SQLiteError) in
            guard let album = try db.queryOne("SELECT \(Self.albumColumns) FROM albums a WHERE a.id = ?",
                                              [.int(Int64(id))], row: Self.albumRow) else { return nil }
            let tracks = try db.query("""
                SELECT \(Self.trackColumns) FROM tracks t WHERE t.album_id = ?
                ORDER BY t.disc_number, t.track_number, t.path
                """, [.int(Int64(id))], row: Self.trackRow)
            return (album, tracks)
        }
    }

    static let artistColumns = """
        r.id, r.name, (SELECT count(*) FROM albums WHERE artist_id = r.id), (SELECT count(*) FROM tracks WHERE artist_id = r.id)
        """

    static func artistRow(_ s: SQLiteDatabase.Statement) -> ArtistRow {
        ArtistRow(id: s.int(0), name: s.text(1), albumCount: s.int(2), trackCount: s.int(3))
    }

    /// A page of artists by name, and the total.
    public func artists(offset: Int, limit: Int) throws(SQLiteError) -> (total: Int, rows: [ArtistRow]) {
        try read { db throws(SQLiteError) in
            let total = try db.queryOne("SELECT count(*) FROM artists") { $0.int(0) } ?? 0
            let rows = try db.query("SELECT \(Self.artistColumns) FROM artists r ORDER BY r.name COLLATE NOCASE, r.id LIMIT ? OFFSET ?",
                                    [.int(Int64(max(0, limit))), .int(Int64(max(0, offset)))], row: Self.artistRow)
            return (total, rows)
        }
    }

    /// An artist and the albums filed under it or holding its tracks (by year, then title).
    public func artist(id: Int) throws(SQLiteError) -> (artist: ArtistRow, albums: [AlbumRow])? {
        try read { db throws(SQLiteError) in
            guard let artist = try db.queryOne("SELECT \(Self.artistColumns) FROM artists r WHERE r.id = ?",
                                               [.int(Int64(id))], row: Self.artistRow) else { return nil }
            let albums = try db.query("""
                SELECT \(Self.albumColumns) FROM albums a
                WHERE a.artist_id = ?1 OR a.id IN (SELECT album_id FROM tracks WHERE artist_id = ?1 AND album_id IS NOT NULL)
                ORDER BY a.year, a.title COLLATE NOCASE, a.id
                """, [.int(Int64(id))], row: Self.albumRow)
            return (artist, albums)
        }
    }

    /// The tracks of an artist (its own, and those of the albums filed under it), album by album
    /// (by year, then title), each in disc, then track number order; tracks without an album last.
    public func tracks(artistID: Int) throws(SQLiteError) -> [TrackRow] {
        try read { db throws(SQLiteError) in
            try db.query("""
                SELECT \(Self.trackColumns) FROM tracks t LEFT JOIN albums a ON a.id = t.album_id
                WHERE t.id IN (SELECT id FROM tracks WHERE artist_id = ?1
                               UNION SELECT t2.id FROM albums a2 JOIN tracks t2 ON t2.album_id = a2.id WHERE a2.artist_id = ?1)
                ORDER BY a.id IS NULL, a.year, a.title COLLATE NOCASE, a.id, t.disc_number, t.track_number, t.path
                """, [.int(Int64(artistID))], row: Self.trackRow)
        }
    }

    /// Where the cover of an album may come from; nil when there is no such album.
    public func coverSource(albumID: Int) throws(SQLiteError) -> CoverSource? {
        try read { db throws(SQLiteError) in
            try db.queryOne("SELECT (SELECT path FROM tracks WHERE id = a.cover_track_id), a.folder FROM albums a WHERE a.id = ?",
                            [.int(Int64(albumID))]) { CoverSource(embeddedTrackPath: $0.optionalText(0), folder: $0.text(1)) }
        }
    }
}
