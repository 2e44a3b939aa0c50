import StreamShared
import StreamLibrary

/// Rows of one statement (every album, every artist) by id, as the answers show them without
/// marks, read once per catalog generation by one call while the others read their rows by id
/// (`current` answers nil). While the catalog changes (a scan writes several times a second) it
/// is read again at most once a second (tens of ms at 100,000 tracks).
final class SubsonicRowTable<Row: Sendable>: Sendable {
    private let sql: String
    private let row: @Sendable (SQLiteDatabase.Statement) -> Row
    private let id: @Sendable (Row) -> Int
    private struct State {
        var kept: (generation: UInt64, readAt: Monotonic, byID: [Int: Row])?
        /// A call is reading the table now.
        var reading = false
    }
    private let state = Lock(State())

    /// Least time between two reads.
    static var rereadNanos: UInt64 { 1_000_000_000 }

    init(sql: String, row: @escaping @Sendable (SQLiteDatabase.Statement) -> Row, id: @escaping @Sendable (Row) -> Int) {
        self.sql = sql
        self.row = row
        self.id = id
    }

    /// The rows of this generation of the catalog with the generation, read now if it moved;
    /// nil while another call reads them, or when it moved again less than `rereadNanos` after
    /// the last read.
    func current(_ store: LibraryStore) throws(SQLiteError) -> (generation: UInt64, byID: [Int: Row])? {
        let generation = store.generation
        let now = Monotonic.now
        let kept: (byID: [Int: Row]?, read: Bool) = state.withLock { state in
            if let kept = state.kept {
                if kept.generation == generation { return (kept.byID, false) }
                if now.nanoseconds &- kept.readAt.nanoseconds < Self.rereadNanos { return (nil, false) }
            }
            if state.reading { return (nil, false) }
            state.reading = true
            return (nil, true)
        }
        if let byID = kept.byID { return (generation, byID) }
        guard kept.read else { return nil }
        // Read outside the lock (tens of ms): the calls meanwhile read their rows by id.
        let rows: [Row]
        do {
            rows = try store.read { db throws(SQLiteError) in try db.query(sql, row: row) }
        } catch {
            state.withLock { $0.reading = false }
            throw error
        }
        var byID: [Int: Row] = [:]
        byID.reserveCapacity(rows.count)
        for item in rows { byID[id(item)] = item }
        state.withLock { state in
            state.reading = false
            state.kept = (generation, now, byID)
        }
        return (generation, byID)
    }
}

/// Every album and every artist as the answers show them (without marks), in memory
/// (`SubsonicRowTable`: about 250 bytes an album, 150 an artist: 2.7 + 1.8 MB for the 10,900
/// albums and 12,000 artists of 100,000 tracks), and each album's list item written once, in
/// both wire forms, the first time an answer shows it (`SubsonicWrittenElement`, about 1 KB an
/// album). A page of getAlbumList2 was 50 point lookups of three joined rows and 50 elements
/// built and written afresh, most of its 440 µs; now it is 50 dictionary reads, the page's marks
/// (one statement) and bytes copied. search2/3's artists were point lookups with a count each.
final class SubsonicTables: Sendable {
    private let albumRows = SubsonicRowTable(sql: SubsonicLibrary.albumSelect, row: { SubsonicLibrary.album($0) }, id: { $0.id })
    private let artistRows = SubsonicRowTable(sql: SubsonicLibrary.artistSelect, row: { SubsonicLibrary.artist($0) }, id: { $0.id })

    private struct WrittenKey: Hashable {
        var id: Int
        var id3: Bool
    }

    /// Written items by album id and form (AlbumID3, or Child for the folder calls), each beside
    /// the album it was written from (used only for that same album), for one generation.
    private let written = Lock<(generation: UInt64, items: [WrittenKey: (album: SubsonicAlbum, element: SubsonicWrittenElement)])>((0, [:]))

    /// The albums of `ids` in that order, with `user`'s marks (ids without an album left out);
    /// the marks from `marks` (`userMarks`) when given, else read.
    func albums(ids: [Int], user: Int, store: LibraryStore, marks: [String: SubsonicMarks]? = nil) throws(SQLiteError) -> [SubsonicAlbum] {
        try rows(ids, of: albumRows, user: user, store: store, marks: marks) { library throws(SQLiteError) in
            try library.albums(ids: ids, user: user)
        }
    }

    /// The artists of `ids` in that order, with `user`'s marks (ids without an artist left out);
    /// the marks from `marks` when given, else read.
    func artists(ids: [Int], user: Int, store: LibraryStore, marks: [String: SubsonicMarks]? = nil) throws(SQLiteError) -> [SubsonicArtist] {
        try rows(ids, of: artistRows, user: user, store: store, marks: marks) { library throws(SQLiteError) in
            try library.artists(ids: ids, user: user)
        }
    }

    /// The rows of `ids` from `table` in that order with `user`'s marks; `uncached` reads them
    /// while the table cannot be held (a scan writing).
    private func rows<Row: SubsonicMarked & Sendable>(_ ids: [Int], of table: SubsonicRowTable<Row>, user: Int, store: LibraryStore,
                                                      marks: [String: SubsonicMarks]?,
                                                      uncached: (SubsonicLibrary) throws(SQLiteError) -> [Row]) throws(SQLiteError) -> [Row] {
        let library = SubsonicLibrary(store: store)
        guard !ids.isEmpty else { return [] }
        guard let current = try table.current(store) else { return try uncached(library) }
        let rows = ids.compactMap { current.byID[$0] }
        guard let marks else { return try library.marked(rows, user: user) }
        return Self.marked(rows, marks)
    }

    /// `items` with their marks from `marks` (none when it has none for an item).
    static func marked<Item: SubsonicMarked>(_ items: [Item], _ marks: [String: SubsonicMarks]) -> [Item] {
        guard !marks.isEmpty else { return items }
        var items = items
        for i in items.indices { items[i].marks = marks[items[i].sid] ?? SubsonicMarks() }
        return items
    }

    // MARK: marks

    /// Each user's marks on every song, album and artist they marked, by Subsonic id, as of the
    /// user's marks version (`SubsonicService.marksVersion`): a search read them in a statement
    /// per list (a JSON array of its ids for `json_each`), most of its SQLite time.
    private let userMarks = Lock<[Int: (name: String, version: UInt64, marks: [String: SubsonicMarks])]>([:])

    /// The most marks kept for one user (about 100 bytes each): a user with more is read per answer.
    static var maxKeptMarks: Int { 50_000 }

    /// All of `user`'s marks at marks version `version` (read before: a change after it takes a
    /// new version, so marks read later and kept under the older one are never used after it),
    /// read once per version; nil for a user with more than `maxKeptMarks`.
    func userMarks(user: SubsonicUser, version: UInt64, store: LibraryStore) throws(SQLiteError) -> [String: SubsonicMarks]? {
        if let kept = userMarks.withLock({ $0[user.id] }), kept.version == version, kept.name == user.name { return kept.marks }
        let limit = Self.maxKeptMarks
        let rows = try store.read { db throws(SQLiteError) in
            try db.query("""
                SELECT sid, starred_at, rating, play_count, played_at FROM subsonic_annotations WHERE user_id = ?1 LIMIT ?2
                """, [.int(Int64(user.id)), .int(Int64(limit + 1))]) {
                ($0.text(0), SubsonicMarks(starredAt: $0.optionalInt(1), rating: $0.optionalInt(2), playCount: $0.int(3), playedAt: $0.optionalInt(4)))
            }
        }
        guard rows.count <= limit else { return nil }
        let marks = Dictionary(rows, uniquingKeysWith: { first, _ in first })
        userMarks.withLock { $0[user.id] = (user.name, version, marks) }
        return marks
    }

    /// The list items of `albums` with their marks: AlbumID3 (`id3`) or Child elements, byte for
    /// byte `SubsonicItems.album` or `albumChild` of each.
    func items(_ albums: [SubsonicAlbum], id3: Bool, generation: UInt64) -> [SubsonicWrittenItem] {
        albums.map { album in
            SubsonicWrittenItem(writtenElement(album, id3: id3, generation: generation), attributes: SubsonicItems.markAttributes(album.marks))
        }
    }

    // MARK: songs

    /// A song's item as written once for every user, and its Subsonic id (for the marks).
    private struct WrittenSong {
        var sid: String
        var element: SubsonicWrittenElement
    }

    /// Song items by catalog row id, for one generation (within which a track's row does not
    /// change), and the bytes they keep.
    private let writtenSongs = Lock<(generation: UInt64, items: [Int: WrittenSong], bytes: Int)>((0, [:], 0))

    /// The most bytes of song items kept (about 1.6 KB a song in both forms: 10,000 songs):
    /// beyond, the kept ones are let go and the answers from then on fill it again, so the songs
    /// searched lately are the ones kept. A library's worth (160 MB at 100,000 songs) would be
    /// what a whole sync shows once.
    static var maxWrittenSongBytes: Int { 16 << 20 }

    /// The song items (Child) of `trackIDs` in that order with `user`'s marks, byte for byte
    /// `SubsonicItems.song` of each (ids without a track left out). An item is written once per
    /// catalog generation and kept (`keep`; a sync's pages, shown once, are not): a search's 20
    /// songs were 20 point lookups of four joined rows and 20 elements written afresh; now the
    /// kept ones are dictionary reads. The marks come from `marks` (`userMarks`: no SQLite read
    /// when every item is kept), else they are read in one statement.
    func songItems(trackIDs: [Int], user: Int, store: LibraryStore, marks userMarks: [String: SubsonicMarks]? = nil,
                   keep: Bool = true) throws(SQLiteError) -> [SubsonicWrittenItem] {
        guard !trackIDs.isEmpty else { return [] }
        let generation = store.generation
        // The kept items in the order asked (nil: not kept), then the others written below.
        var found: [WrittenSong?] = writtenSongs.withLock { kept in
            guard kept.generation == generation else { return [WrittenSong?](repeating: nil, count: trackIDs.count) }
            return trackIDs.map { kept.items[$0] }
        }
        let missing = zip(trackIDs, found).compactMap { $1 == nil ? $0 : nil }
        var rows: [SubsonicSong] = []
        var marks = userMarks ?? [:]
        if !missing.isEmpty || userMarks == nil {
            (rows, marks) = try store.read { db throws(SQLiteError) in
                try db.reading { () throws(SQLiteError) -> ([SubsonicSong], [String: SubsonicMarks]) in
                    var rows: [SubsonicSong] = []
                    if !missing.isEmpty {
                        rows.reserveCapacity(missing.count)
                        try db.each(SubsonicLibrary.songSelect + " WHERE t.id = ?", keys: missing) { rows.append(SubsonicLibrary.song($0)) }
                    }
                    if let userMarks { return (rows, userMarks) }
                    var sids = found.compactMap { $0?.sid }
                    sids += rows.map(\.sid)
                    return (rows, try SubsonicLibrary.marks(sids, user: user, db))
                }
            }
        }
        if !rows.isEmpty {
            var written: [(Int, WrittenSong)] = []
            written.reserveCapacity(rows.count)
            var byID: [Int: WrittenSong] = [:]
            for row in rows {
                let item = WrittenSong(sid: row.sid, element: SubsonicWrittenElement(name: "song", SubsonicItems.songFixed(row)))
                byID[row.track.id] = item
                written.append((row.track.id, item))
            }
            for i in found.indices where found[i] == nil { found[i] = byID[trackIDs[i]] }
            if keep {
                let max = Self.maxWrittenSongBytes
                writtenSongs.withLock { kept in
                    if kept.generation != generation { kept = (generation, [:], 0) }
                    for (id, item) in written {
                        if kept.bytes + item.element.byteCount > max { kept = (generation, [:], 0) }
                        if kept.items.updateValue(item, forKey: id) == nil { kept.bytes += item.element.byteCount }
                    }
                }
            }
        }
        return found.compactMap { song in
            song.map { SubsonicWrittenItem($0.element, attributes: SubsonicItems.markAttributes(marks[$0.sid] ?? SubsonicMarks())) }
        }
    }

    /// Song items kept now and their bytes (for tests and figures).
    var writtenSongCount: (songs: Int, bytes: Int) { writtenSongs.withLock { ($0.items.count, $0.bytes) } }

    private func writtenElement(_ album: SubsonicAlbum, id3: Bool, generation: UInt64) -> SubsonicWrittenElement {
        var plain = album
        plain.marks = SubsonicMarks()
        let key = WrittenKey(id: album.id, id3: id3)
        if let kept = written.withLock({ $0.items[key] }), kept.album == plain { return kept.element }
        let element = id3 ? SubsonicWrittenElement(name: "album", SubsonicItems.albumFixed(plain))
                          : SubsonicWrittenElement(name: "album", SubsonicItems.albumChildFixed(plain))
        // Kept for this generation: the next drops them all (albums gone or changed).
        written.withLock { written in
            if written.generation != generation { written = (generation, [:]) }
            written.items[key] = (plain, element)
        }
        return element
    }
}
