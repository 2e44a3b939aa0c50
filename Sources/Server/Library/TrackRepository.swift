#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP

/// The `tracks` table and the API items kept beside it (`track_json`): rows, pages in every order, lookups by id and path.
public struct TrackRepository: Sendable {
    let store: LibraryStore

    package static let columns = """
        t.id, t.path, t.size, t.mtime_ns, t.inode, t.title, t.artist, t.album, t.album_artist, t.track_number, t.track_total,
        t.disc_number, t.disc_total, t.year, t.genre, t.duration_s, t.codec, t.container, t.sample_rate, t.channels, t.bitrate,
        t.frames, t.total_samples, t.first_frame_offset, t.encoder_delay, t.encoder_padding,
        t.rg_track_gain, t.rg_track_peak, t.rg_album_gain, t.rg_album_peak, t.cover_art_bytes, t.artist_id, t.album_id, t.derived,
        t.bits_per_sample
        """

    package static func row(_ s: SQLiteDatabase.Statement) -> Track {
        let gain = ReplayGain(trackGain: s.optionalDouble(26), trackPeak: s.optionalDouble(27),
                              albumGain: s.optionalDouble(28), albumPeak: s.optionalDouble(29))
        return Track(id: s.int(0), path: s.text(1),
                        stamp: FileStamp(size: s.int(2), mtimeNanos: s.int(3), inode: UInt64(bitPattern: Int64(s.int(4)))),
                        title: s.optionalText(5), artist: s.optionalText(6), album: s.optionalText(7), albumArtist: s.optionalText(8),
                        trackNumber: s.optionalInt(9), trackTotal: s.optionalInt(10), discNumber: s.optionalInt(11),
                        discTotal: s.optionalInt(12), year: s.optionalInt(13), genre: s.optionalText(14),
                        durationSeconds: s.double(15), codec: s.text(16), container: s.text(17), sampleRate: s.int(18),
                        channels: s.int(19), bitrate: s.int(20), frames: s.int(21), totalSamples: s.int(22),
                        firstFrameOffset: s.int(23), encoderDelay: s.int(24), encoderPadding: s.int(25),
                        replayGain: gain.isEmpty ? nil : gain, coverArtBytes: s.optionalInt(30),
                        artistID: s.optionalInt(31), albumID: s.optionalInt(32),
                        derived: DerivedFields(rawValue: s.int(33)), bitsPerSample: s.optionalInt(34))
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

    /// Number of listed tracks: counted once per catalog `generation` (`count(*)` walks a whole
    /// index, 1-2 ms at 100,000 tracks, and `/api/status` asks on every call). A count read while
    /// the generation moved is not kept: it may be of either state.
    public func count() throws(SQLiteError) -> Int {
        let before = store.generation
        if let cached = store.countCache.withLock({ _ in store.cachedCount }), cached.generation == before { return cached.count }
        let count = try store.read { db throws(SQLiteError) in try db.queryOne("SELECT count(*) FROM tracks") { $0.int(0) } ?? 0 }
        if store.generation == before { store.countCache.withLock { _ in store.cachedCount = (before, count) } }
        return count
    }

    /// A page of tracks in `sort` order (always ending on the path: stable across pages), and the total.
    public func page(offset: Int, limit: Int, sort: TrackSort = .path) throws(SQLiteError) -> (total: Int, rows: [Track]) {
        try store.read { db throws(SQLiteError) in
            let total = try db.queryOne("SELECT count(*) FROM tracks") { $0.int(0) } ?? 0
            let rows = try db.query("SELECT \(Self.columns) FROM tracks t ORDER BY \(Self.orderClause(sort)) LIMIT ? OFFSET ?",
                                    [.int(Int64(max(0, limit))), .int(Int64(max(0, offset)))], row: Self.row)
            return (total, rows)
        }
    }

    /// The id of every track in `sort` order (for paging by position without OFFSET's walk).
    public func ids(sort: TrackSort) throws(SQLiteError) -> [Int] {
        try store.read { db throws(SQLiteError) in
            try db.query("SELECT t.id FROM tracks t ORDER BY \(Self.orderClause(sort))") { $0.int(0) }
        }
    }

    /// The tracks with these ids, in the order given (ids no longer listed are left out).
    public func list(ids: [Int]) throws(SQLiteError) -> [Track] {
        var rows: [Track] = []
        rows.reserveCapacity(ids.count)
        try forEach(ids: ids) { rows.append(Self.row($0)) }
        return rows
    }

    /// The tracks with these ids handed to `body` in the order given, each as the statement's
    /// row (`Self.columns`); ids no longer listed are left out. One prepared statement looked up
    /// id by id: an `IN (…)` list would be new SQL text, compiled and cached, on every page.
    public func forEach(ids: [Int], _ body: (SQLiteDatabase.Statement) -> Void) throws(SQLiteError) {
        guard !ids.isEmpty else { return }
        try store.read { db throws(SQLiteError) in
            try db.each("SELECT \(Self.columns) FROM tracks t WHERE t.id = ?", keys: ids, body)
        }
    }

    /// The `/api/tracks` item (`TrackJSON`) of each track with these ids, in the order given,
    /// handed to `body` as bytes valid until it returns; ids no longer listed are left out. An
    /// item is the one written with the row, else written here from the row's columns.
    public func forEachJSON(ids: [Int], _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        guard !ids.isEmpty else { return }
        try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in try Self.eachJSON(ids: ids, db, body) }
        }
    }

    /// `forEachJSON` on a connection, inside the caller's read transaction. A run of
    /// consecutive ids (a page in path order, where ids follow the scan's walk) is read with one
    /// range scan instead of a B-tree descent per row.
    static func eachJSON(ids: [Int], _ db: SQLiteDatabase, _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
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
    static func eachStoredJSON(first: Int, last: Int, _ db: SQLiteDatabase, fallback: inout [UInt8],
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
    static func oneTrackJSON(id: Int, _ stored: SQLiteDatabase.Statement, _ db: SQLiteDatabase, fallback: inout [UInt8],
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
    static func writtenTrackJSON(id: Int, _ db: SQLiteDatabase, into written: inout [UInt8],
                                         _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        let columns = try db.prepare("SELECT \(Self.columns) FROM tracks t WHERE t.id = ?")
        defer { columns.reset() }
        try columns.bind(key: Int64(id))
        guard try columns.step() else { return }
        written.removeAll(keepingCapacity: true)
        TrackJSON.append(columns, to: &written)
        written.withUnsafeBytes(body)
    }

    /// What a playlist line needs of the tracks with these ids (path, title, artist, duration_s),
    /// handed to `body` in the order given; ids no longer listed are left out.
    public func forEachPlaylistLine(ids: [Int], _ body: (SQLiteDatabase.Statement) -> Void) throws(SQLiteError) {
        guard !ids.isEmpty else { return }
        try store.read { db throws(SQLiteError) in
            try db.each("SELECT path, title, artist, duration_s FROM tracks WHERE id = ?", keys: ids, body)
        }
    }

    /// Every track in path order, handed to `body` one at a time (no array of the whole library).
    public func forEach(_ body: (Track) -> Void) throws(SQLiteError) {
        try store.read { db throws(SQLiteError) in
            let statement = try db.prepare("SELECT \(Self.columns) FROM tracks t ORDER BY t.path")
            try statement.bind([])
            while try statement.step() { body(Self.row(statement)) }
            statement.reset()
        }
    }

    /// The track at a relative path.
    /// `waiting: false`: `SQLITE_BUSY` rather than a wait for a reader (`read(waiting:)`).
    public func track(path: String, waiting: Bool = true) throws(SQLiteError) -> Track? {
        try store.read(waiting: waiting) { db throws(SQLiteError) in
            try db.queryOne("SELECT \(Self.columns) FROM tracks t WHERE t.path = ?", [.text(path)], row: Self.row)
        }
    }

    /// The track with a given id.
    public func track(id: Int) throws(SQLiteError) -> Track? {
        try store.read { db throws(SQLiteError) in
            try db.queryOne("SELECT \(Self.columns) FROM tracks t WHERE t.id = ?", [.int(Int64(id))], row: Self.row)
        }
    }
}
