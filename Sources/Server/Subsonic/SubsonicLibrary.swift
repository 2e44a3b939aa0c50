import StreamShared
import StreamLibrary

/// A song, album or artist of an answer, with one user's marks on it.
protocol SubsonicMarked {
    var sid: String { get }
    var marks: SubsonicMarks { get set }
}

/// A song as a Subsonic answer shows it: the catalog's track, its ids, and one user's marks.
struct SubsonicSong: SubsonicMarked {
    var track: Track
    var sid: String
    var albumSid: String?
    var artistSid: String?
    var marks = SubsonicMarks()
}

/// One user's marks on a song, album or artist (`subsonic_annotations`).
struct SubsonicMarks: Equatable {
    var starredAt: Int?
    var rating: Int?
    var playCount = 0
    var playedAt: Int?
}

/// An album (AlbumID3) as the answers show it.
struct SubsonicAlbum: SubsonicMarked, Equatable {
    var id: Int
    var sid: String
    var title: String
    var artist: String
    var artistSid: String?
    var songCount: Int
    var duration: Double
    var year: Int?
    var created: Int
    var genre: String?
    var marks = SubsonicMarks()
}

/// An artist (ArtistID3) as the answers show it.
struct SubsonicArtist: SubsonicMarked {
    var id: Int
    var sid: String
    var name: String
    var albumCount: Int
    var marks = SubsonicMarks()
}

/// The catalog read for Subsonic answers: songs, albums and artists with their Subsonic ids,
/// and the asking user's marks on them. Every call reads the database: callers run off the loop.
struct SubsonicLibrary {
    let store: LibraryStore

    static let songSelect = """
        SELECT \(TrackRepository.columns), s.sid, al.sid, ar.sid FROM tracks t
        JOIN subsonic_track_ids s ON s.track_id = t.id
        LEFT JOIN subsonic_album_ids al ON al.album_id = t.album_id
        LEFT JOIN subsonic_artist_ids ar ON ar.artist_id = t.artist_id
        """

    static func song(_ s: SQLiteDatabase.Statement) -> SubsonicSong {
        SubsonicSong(track: TrackRepository.row(s), sid: s.text(35), albumSid: s.optionalText(36), artistSid: s.optionalText(37))
    }

    static let albumSelect = """
        SELECT a.id, al.sid, a.title, a.artist_name, ar.sid, a.track_count, a.duration_s, a.year, al.created, al.genre FROM albums a
        JOIN subsonic_album_ids al ON al.album_id = a.id
        LEFT JOIN subsonic_artist_ids ar ON ar.artist_id = a.artist_id
        """

    static func album(_ s: SQLiteDatabase.Statement) -> SubsonicAlbum {
        SubsonicAlbum(id: s.int(0), sid: s.text(1), title: s.text(2), artist: s.text(3), artistSid: s.optionalText(4),
                      songCount: s.int(5), duration: s.double(6), year: s.optionalInt(7), created: s.int(8), genre: s.optionalText(9))
    }

    static let artistSelect = """
        SELECT r.id, ar.sid, r.name, (SELECT count(*) FROM albums WHERE artist_id = r.id) FROM artists r
        JOIN subsonic_artist_ids ar ON ar.artist_id = r.id
        """

    static func artist(_ s: SQLiteDatabase.Statement) -> SubsonicArtist {
        SubsonicArtist(id: s.int(0), sid: s.text(1), name: s.text(2), albumCount: s.int(3))
    }

    // MARK: Songs

    func songs(_ whereAndOrder: String, _ values: [SQLiteValue] = [], user: Int) throws(SQLiteError) -> [SubsonicSong] {
        try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                var songs = try db.query(Self.songSelect + " " + whereAndOrder, values, row: Self.song)
                try Self.mark(&songs, user: user, db)
                return songs
            }
        }
    }

    /// Songs by catalog row id, in the order given (ids without a row are left out).
    func songs(trackIDs: [Int], user: Int) throws(SQLiteError) -> [SubsonicSong] {
        guard !trackIDs.isEmpty else { return [] }
        return try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                var songs: [SubsonicSong] = []
                songs.reserveCapacity(trackIDs.count)
                try db.each(Self.songSelect + " WHERE t.id = ?", keys: trackIDs) { songs.append(Self.song($0)) }
                try Self.mark(&songs, user: user, db)
                return songs
            }
        }
    }

    /// Songs by Subsonic id, in the order given (unknown ids left out, repeats kept).
    func songs(sids: [String], user: Int) throws(SQLiteError) -> [SubsonicSong] {
        guard !sids.isEmpty else { return [] }
        return try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                let statement = try db.prepare(Self.songSelect + " WHERE s.sid = ?")
                var songs: [SubsonicSong] = []
                for sid in sids {
                    statement.reset()
                    try statement.bind([.text(sid)])
                    if try statement.step() { songs.append(Self.song(statement)) }
                }
                statement.reset()
                try Self.mark(&songs, user: user, db)
                return songs
            }
        }
    }

    /// The user's marks on each of `sids` that has any, in one statement (the sids as a JSON
    /// array for `json_each`, so the statement's text and its prepared copy stay the same for
    /// every list): a point lookup per item was most of a search's reads.
    static func marks(_ sids: [String], user: Int, _ db: SQLiteDatabase) throws(SQLiteError) -> [String: SubsonicMarks] {
        guard !sids.isEmpty else { return [:] }
        // As bytes: appending scalars to a String was most of this function's time.
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(sids.count * 24 + 2)
        for (index, sid) in sids.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            // Subsonic ids are ASCII letters, digits and `-`; anything else is escaped all the same.
            for byte in sid.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                if byte < 0x20 { continue }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "]"))
        let list = String(decoding: bytes, as: UTF8.self)
        var found: [String: SubsonicMarks] = [:]
        try db.each("""
            SELECT sid, starred_at, rating, play_count, played_at FROM subsonic_annotations
            WHERE user_id = ?1 AND sid IN (SELECT value FROM json_each(?2))
            """, [.int(Int64(user)), .text(list)]) {
            found[$0.text(0)] = SubsonicMarks(starredAt: $0.optionalInt(1), rating: $0.optionalInt(2), playCount: $0.int(3),
                                              playedAt: $0.optionalInt(4))
        }
        return found
    }

    /// Sets each item's marks to the user's (items without any keep none).
    static func mark<Item: SubsonicMarked>(_ items: inout [Item], user: Int, _ db: SQLiteDatabase) throws(SQLiteError) {
        let found = try marks(items.map(\.sid), user: user, db)
        guard !found.isEmpty else { return }
        for i in items.indices { items[i].marks = found[items[i].sid] ?? SubsonicMarks() }
    }

    // MARK: Albums and artists

    /// `items` with the user's marks (read in one statement).
    func marked<Item: SubsonicMarked>(_ items: [Item], user: Int) throws(SQLiteError) -> [Item] {
        guard !items.isEmpty else { return items }
        var items = items
        try store.read { db throws(SQLiteError) in try Self.mark(&items, user: user, db) }
        return items
    }

    func albums(_ whereAndOrder: String, _ values: [SQLiteValue] = [], user: Int) throws(SQLiteError) -> [SubsonicAlbum] {
        try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                var albums = try db.query(Self.albumSelect + " " + whereAndOrder, values, row: Self.album)
                try Self.mark(&albums, user: user, db)
                return albums
            }
        }
    }

    func artists(_ whereAndOrder: String, _ values: [SQLiteValue] = [], user: Int) throws(SQLiteError) -> [SubsonicArtist] {
        try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                var artists = try db.query(Self.artistSelect + " " + whereAndOrder, values, row: Self.artist)
                try Self.mark(&artists, user: user, db)
                return artists
            }
        }
    }

    /// Albums by catalog row id, in the order given.
    func albums(ids: [Int], user: Int) throws(SQLiteError) -> [SubsonicAlbum] {
        guard !ids.isEmpty else { return [] }
        return try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                var albums: [SubsonicAlbum] = []
                albums.reserveCapacity(ids.count)
                try db.each(Self.albumSelect + " WHERE a.id = ?", keys: ids) { albums.append(Self.album($0)) }
                try Self.mark(&albums, user: user, db)
                return albums
            }
        }
    }

    /// Artists by catalog row id, in the order given.
    func artists(ids: [Int], user: Int) throws(SQLiteError) -> [SubsonicArtist] {
        guard !ids.isEmpty else { return [] }
        return try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                var artists: [SubsonicArtist] = []
                try db.each(Self.artistSelect + " WHERE r.id = ?", keys: ids) { artists.append(Self.artist($0)) }
                try Self.mark(&artists, user: user, db)
                return artists
            }
        }
    }

    func count(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        try store.read { db throws(SQLiteError) in try db.queryOne(sql, values) { $0.int(0) } ?? 0 }
    }
}

/// Row ids in a list's order, read once per catalog generation and kept (a few hundred KB at
/// 100,000 tracks), so a page at any offset is a slice and its rows point lookups: SQLite's
/// OFFSET steps through every row before the page, joins included (a client syncing 100,000
/// songs 500 at a time made it walk five million).
final class SubsonicOrderCache: Sendable {
    private let lists = Lock<[String: (generation: UInt64, ids: [Int])]>([:])

    func ids(_ key: String, store: LibraryStore, sql: String) throws(SQLiteError) -> [Int] {
        let generation = store.generation
        if let hit = lists.withLock({ $0[key] }), hit.generation == generation { return hit.ids }
        let ids = try store.read { db throws(SQLiteError) in try db.query(sql) { $0.int(0) } }
        lists.withLock { $0[key] = (generation, ids) }
        return ids
    }

    /// `ids[offset ..< offset + count]`, clamped.
    static func page(_ ids: [Int], offset: Int, count: Int) -> [Int] {
        guard offset < ids.count, count > 0 else { return [] }
        return Array(ids[offset..<min(ids.count, offset + count)])
    }
}

