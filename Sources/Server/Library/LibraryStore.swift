#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP
import Synchronization
import Logging

/// The catalog database: tracks, albums, artists, the search index, skipped files and cached
/// exact analyses, in SQLite (WAL mode, so readers never wait for the scanner's writes).
///
/// The store keeps the connections, the schema and the scan's writes (one transaction across
/// the tables: `LibraryStore+Scan.swift`); reads go through one small repository per table
/// (`tracks`, `albums`, `artists`, `covers`, `analyses`, `skipped`, `search`), each a value over
/// the store's connection pool, made on use.
///
/// Reads go through a small pool of connections, one per caller at a time; writes through one
/// writer connection under a lock. A database that is damaged, someone else's, or from a newer
/// streamd is moved aside with a warning and a new one is built.
public final class LibraryStore: @unchecked Sendable {
    // @unchecked: the writer is used only under `writeLock`; idle readers live under `pool`,
    // and a reader taken from the pool is used by one thread until it is put back.
    public let path: String
    let writer: SQLiteDatabase
    let writeLock = Lock(())
    let pool = ConditionLock()
    var idleReaders: [SQLiteDatabase] = []
    /// Set by `close`: readers are closed as they come back, and none is opened.
    var closed = false
    var readerCount = 0
    /// Reader connections at most: a caller waits for one rather than open more (each holds
    /// three descriptors, and reads take well under a millisecond).
    static let maxReaders = 4
    /// An in-memory database has one connection: reads go through the writer.
    let inMemory: Bool
    let changeCount = ManagedAtomic<UInt64>(0)
    /// When `changeCount` last moved (`DispatchTime` nanoseconds): the in-memory search index
    /// waits for writes to settle before it is read.
    let lastWriteNanos = ManagedAtomic<UInt64>(0)
    let searchIndexLock = Lock(())
    var searchIndexStorage = SearchIndexState()
    var artistIDs: [String: Int] = [:]
    var albumIDs: [String: Int] = [:]
    /// While the search index's insert trigger is off (a first scan; a scan after the migration
    /// to schema 2): every track with an id up to this one is in the search index, those above
    /// are added by one statement per write (`indexSearchBacklog`), in the write's transaction,
    /// so that search finds a track one chunk after the scan wrote it. nil while the trigger
    /// keeps the index. Also in `meta`, so that a scan cut short carries on from it. Used under
    /// `writeLock` only.
    var searchIndexedThrough: Int?
    /// The track count and the `generation` it was read at (`trackCount`).
    let countCache = Lock(())
    var cachedCount: (generation: UInt64, count: Int)?

    // MARK: repositories

    /// The `tracks` table and its API items: rows, pages, lookups.
    public var tracks: TrackRepository { TrackRepository(store: self) }
    /// The `albums` table.
    public var albums: AlbumRepository { AlbumRepository(store: self) }
    /// The `artists` table.
    public var artists: ArtistRepository { ArtistRepository(store: self) }
    /// Where albums' covers come from.
    public var covers: CoverRepository { CoverRepository(store: self) }
    /// The `analyses` table: exact analyses (seek indexes) stored once built.
    public var analyses: AnalysisRepository { AnalysisRepository(store: self) }
    /// The `skipped` table: files not listed, and why.
    public var skipped: SkippedRepository { SkippedRepository(store: self) }
    /// The search index (`tracks_fts`) and its in-memory copy.
    public var search: SearchRepository { SearchRepository(store: self) }

    /// Opens the database at `path` for the library `folder` (":memory:" for one that lives
    /// as long as the process). `logger` hears about a database moved aside or wiped (warnings).
    public init(path: String, folder: String, logger: Logger = .silent("streamd.library")) throws(SQLiteError) {
        self.path = path
        inMemory = path == ":memory:"
        if !inMemory { Self.makeParentFolder(of: path) }
        do {
            writer = try Self.openWriter(path: path, folder: folder, logger: logger)
        } catch let error where !inMemory && (error.isCorruption || error.context == Self.foreignContext) {
            let aside = Self.moveAside(path)
            logger.warning("library: \(path) is not a usable streamd database (\(error.message)); moved to \(aside), building a new one")
            writer = try Self.openWriter(path: path, folder: folder, logger: logger)
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

    static func openWriter(path: String, folder: String, logger: Logger) throws(SQLiteError) -> SQLiteDatabase {
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
            if mode != "wal" { logger.warning("library: \(path): journal mode \(mode ?? "?"), not WAL") }
        }
        try db.execute("PRAGMA synchronous = NORMAL")
        // A scan's chunk (2,048 tracks) touches pages of five tables, their indexes and the search
        // index: with SQLite's default 2 MB cache the writer read many back from the file in each
        // chunk, and the WAL was copied into the file after nearly every chunk (its default
        // checkpoint is at 1,000 pages), the same hot pages again and again.
        try db.execute("PRAGMA cache_size = -16384")
        try db.execute("PRAGMA wal_autocheckpoint = 8192")
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
                logger.warning("library: \(path) described \(recorded), not \(folder): starting it over")
            }
            try db.transaction { () throws(SQLiteError) in
                try db.execute("DELETE FROM tracks; DELETE FROM skipped; DELETE FROM analyses; DELETE FROM albums; DELETE FROM artists;")
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('folder', ?)", [.text(folder)])
            }
        }
        return db
    }

    /// Creates the folders above `path` (mode 0700): the default lives in ~/.local/state.
    static func makeParentFolder(of path: String) {
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
    /// With `waiting` false (an event loop's point lookup) a busy pool, or a writer in use for an
    /// in-memory database, is `SQLITE_BUSY` at once instead of a wait behind slow queries.
    package func read<T>(waiting: Bool = true, _ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        if inMemory {
            return try withWriter(waiting: waiting, body)
        }
        let db = try takeReader(waiting: waiting)
        defer {
            pool.lock()
            if closed { db.close() } else { idleReaders.append(db) }
            pool.signal()
            pool.unlock()
        }
        return try body(db)
    }

    /// An idle reader, a new one while there are fewer than `maxReaders`, else the next one put back.
    func takeReader(waiting: Bool = true) throws(SQLiteError) -> SQLiteDatabase {
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
            guard waiting else { throw Self.busy }
            pool.wait()
        }
    }

    package static let busy = SQLiteError(code: SQLITE_BUSY, message: "no reader free now", context: "read without waiting")

    /// Closes the database at shutdown: the WAL is checkpointed into the main file, the writer and
    /// the idle readers closed (a reader in use closes when it comes back); later calls fail.
    public func close() {
        writeLock.withLock { _ in
            if !inMemory { try? writer.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            writer.close()
        }
        pool.lock()
        closed = true
        for reader in idleReaders { reader.close() }
        idleReaders.removeAll()
        pool.broadcast()
        pool.unlock()
    }

    package func write<T>(_ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        return try withWriter(waiting: true, body)
    }

    /// Runs `body` with the writer, holding `writeLock`; not waiting, a writer in use is
    /// `SQLITE_BUSY`.
    private func withWriter<T>(waiting: Bool, _ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        if waiting {
            return try writeLock.withLock { _ throws(SQLiteError) in try body(writer) }
        }
        let outcome = writeLock.withLockIfAvailable { _ in Result { () throws(SQLiteError) -> T in try body(writer) } }
        guard let outcome else { throw Self.busy }
        return try outcome.get()
    }
}
