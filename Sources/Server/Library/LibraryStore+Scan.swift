#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP

/// Scan writes: the files the walk compares against, and the chunks it writes (tracks, albums, artists, their API items and the search index that follows them).
extension LibraryStore {
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
    static func hasSearchInsertTrigger(_ db: SQLiteDatabase) throws(SQLiteError) -> Bool {
        try db.queryOne("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'tracks_fts_insert'") { $0.int(0) } != 0
    }

    /// Where `searchIndexedThrough` is kept in `meta`.
    static let searchWatermarkKey = "search_indexed_through"

    /// `searchIndexedThrough` as the database says: nil with the insert trigger, else the stored
    /// id (0 when none is: a database migrated to schema 2, or a first scan of before), never above
    /// the largest track id (a smaller id freed by a delete is given again to the next insert).
    static func searchWatermark(_ db: SQLiteDatabase) throws(SQLiteError) -> Int? {
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
    func lowerSearchWatermark(_ db: SQLiteDatabase) throws(SQLiteError) {
        guard let through = searchIndexedThrough, db.changes > 0 else { return }
        let top = try Self.largestTrackID(db)
        searchIndexedThrough = min(through, top)
    }

    /// Adds the tracks above `searchIndexedThrough` to the search index, at most `limit`, in
    /// the caller's transaction (`transaction`, which puts the watermark back on a rollback);
    /// returns how many. Replacing, so a row the update trigger indexed meanwhile is not doubled.
    func indexSearchBacklog(limit: Int, _ db: SQLiteDatabase) throws(SQLiteError) -> Int {
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
    func transaction<T>(_ db: SQLiteDatabase, _ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
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
    func changed() {
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
                    case .track(let track):
                        if let old = try albumOf(track.path, db) { touched.insert(old) }
                        if let album = try upsertTrack(track, db) { touched.insert(album) }
                        try db.run("DELETE FROM skipped WHERE path = ?", [.text(track.path)])
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

    func albumOf(_ path: String, _ db: SQLiteDatabase) throws(SQLiteError) -> Int? {
        try db.queryOne("SELECT album_id FROM tracks WHERE path = ?", [.text(path)]) { $0.optionalInt(0) } ?? nil
    }

    /// The name an album is filed under: its album artist, else its artist.
    static let unknownArtist = "Unknown Artist"

    func upsertTrack(_ t: Track, _ db: SQLiteDatabase) throws(SQLiteError) -> Int? {
        let artistID = try t.artist.map { name throws(SQLiteError) in try artist(name, db) }
        var albumID: Int?
        if let album = t.album {
            let owner = t.albumArtist ?? t.artist ?? Self.unknownArtist
            albumID = try self.album(album, artistID: try artist(owner, db), artistName: owner, db)
        }
        let gain = t.replayGain
        let values: [SQLiteValue] = [
            .text(t.path), .int(Int64(t.stamp.size)), .int(Int64(t.stamp.mtimeNanos)), .int(Int64(bitPattern: t.stamp.inode)),
            .optional(t.title), .optional(t.artist), .optional(t.album), .optional(t.albumArtist),
            .optional(t.trackNumber), .optional(t.trackTotal), .optional(t.discNumber), .optional(t.discTotal),
            .optional(t.year), .optional(t.genre),
            .double(t.durationSeconds), .text(t.codec), .text(t.container),
            .int(Int64(t.sampleRate)), .int(Int64(t.channels)), .int(Int64(t.bitrate)),
            .int(Int64(t.frames)), .int(Int64(t.totalSamples)), .int(Int64(t.firstFrameOffset)),
            .int(Int64(t.encoderDelay)), .int(Int64(t.encoderPadding)),
            .optional(gain?.trackGain), .optional(gain?.trackPeak), .optional(gain?.albumGain), .optional(gain?.albumPeak),
            .optional(t.coverArtBytes), .text(t.displayTitle),
            .optional(artistID), .optional(albumID), .int(Int64(t.derived.rawValue)), .optional(t.bitsPerSample),
        ]
        try db.run("""
            INSERT INTO tracks(path, size, mtime_ns, inode, title, artist, album, album_artist,
              track_number, track_total, disc_number, disc_total, year, genre,
              duration_s, codec, container, sample_rate, channels, bitrate, frames, total_samples, first_frame_offset,
              encoder_delay, encoder_padding, rg_track_gain, rg_track_peak, rg_album_gain, rg_album_peak,
              cover_art_bytes, sort_title, artist_id, album_id, derived, bits_per_sample)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
              artist_id = excluded.artist_id, album_id = excluded.album_id, derived = excluded.derived,
              bits_per_sample = excluded.bits_per_sample
            """, values)
        try writeTrackJSON(path: t.path, db)
        return albumID
    }

    /// Writes the `/api/tracks` item of the track at `path` from its row as it now stands (its
    /// update trigger dropped the old one).
    func writeTrackJSON(path: String, _ db: SQLiteDatabase) throws(SQLiteError) {
        var item: [UInt8] = []
        var id: Int?
        try db.each("SELECT \(TrackRepository.columns) FROM tracks t WHERE t.path = ?", [.text(path)]) { row in
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
                        SELECT \(TrackRepository.columns) FROM tracks t WHERE NOT EXISTS (SELECT 1 FROM track_json j WHERE j.id = t.id)
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

    func artist(_ name: String, _ db: SQLiteDatabase) throws(SQLiteError) -> Int {
        if let id = artistIDs[name] { return id }
        try db.run("INSERT OR IGNORE INTO artists(name) VALUES (?)", [.text(name)])
        guard let id = try db.queryOne("SELECT id FROM artists WHERE name = ?", [.text(name)], row: { $0.int(0) }) else {
            throw SQLiteError(code: 0, message: "artist '\(name)' not found after insert", context: "artist")
        }
        artistIDs[name] = id
        return id
    }

    func album(_ title: String, artistID: Int, artistName: String, _ db: SQLiteDatabase) throws(SQLiteError) -> Int {
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

    /// Recomputes the counts, length, year, cover, folder and derived fields of `albums`; drops
    /// albums and artists that no track refers to any more. An album's title (artist) is derived
    /// when every one of its tracks took its album (album artist) from the path.
    /// (min of a masked bit over the tracks is the bit when all have it, else 0.)
    func refreshAlbums(_ albums: Set<Int>, _ db: SQLiteDatabase) throws(SQLiteError) {
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
                                     ORDER BY disc_number, track_number, path LIMIT 1), ''),
                  derived = (SELECT coalesce(CASE WHEN min(derived & \(DerivedFields.album.rawValue)) > 0
                                                  THEN \(DerivedFields.title.rawValue) ELSE 0 END
                                             | CASE WHEN min(derived & \(DerivedFields.albumArtist.rawValue)) > 0
                                                  THEN \(DerivedFields.artist.rawValue) ELSE 0 END, 0)
                             FROM tracks WHERE album_id = ?1)
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
}
