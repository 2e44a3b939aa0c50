import StreamShared
import StreamLibrary

/// Subsonic ids: opaque strings made from what a track, album or artist is, not from where the
/// catalog keeps it, so they stay the same across rescans, restarts, a rebuilt database, upgrades
/// and a move of the files when their tags are unchanged (clients keep ids in their own caches,
/// play queues and offline copies; navidrome PR #5824, subwave #1699 are what changing ids break).
///
/// - song `tr-<16 hex>`: MD5 of its tags (title, track and disc numbers, year, genre; artist,
///   album artist and album unless they came from folder names, which a move changes), its
///   duration in milliseconds and its size. Two files alike in all of that (one file copied)
///   get `-2`, `-3` … after the id in the order they were found; when the first goes, the next
///   takes the bare id, so a move seen as a new file before the old one is gone ends up with
///   the id it had.
/// - album `al-<16 hex>`: MD5 of its album artist and title folded to lower case (the catalog's
///   own album key); artist `ar-<16 hex>`: of the name.
/// - playlist `pl-<n>`: the row of `subsonic_playlists`.
///
/// The maps live in `subsonic_*_ids` and are brought up to date (`reconcile`) by the first
/// request after the catalog changed, in one write transaction.
public final class SubsonicIDs: Sendable {
    let store: LibraryStore
    /// The catalog generation the maps were last brought up to; the lock also makes one
    /// request do the work while others wait for it.
    private let reconciled = Lock<UInt64?>(nil)

    init(store: LibraryStore) {
        self.store = store
    }

    /// Brings the maps up to date with the catalog when it changed since the last time.
    func ensureCurrent() throws(SQLiteError) {
        let generation = store.generation
        try reconciled.withLock { (last: inout UInt64?) throws(SQLiteError) in
            if last == generation { return }
            try reconcile()
            last = generation
        }
    }

    static func hex64(_ text: String) -> String {
        String(MD5.hex(text.utf8).prefix(16))
    }

    /// The song id's base (before any `-n` of a copy) for a track.
    static func songBase(_ track: Track) -> String {
        let d = track.derived
        let parts: [String] = [
            track.title ?? "", d.contains(.artist) ? "" : track.artist ?? "", d.contains(.album) ? "" : track.album ?? "",
            d.contains(.albumArtist) ? "" : track.albumArtist ?? "", track.trackNumber.map(String.init) ?? "",
            track.discNumber.map(String.init) ?? "", track.year.map(String.init) ?? "", track.genre ?? "",
            String(Int((track.durationSeconds * 1000).rounded())), String(track.stamp.size),
        ]
        return "tr-" + hex64(parts.joined(separator: "\u{1F}").lowercased())
    }

    static func albumID(artist: String, title: String) -> String {
        "al-" + hex64(artist.lowercased() + "\u{1F}" + title.lowercased())
    }

    static func artistID(name: String) -> String {
        "ar-" + hex64(name.lowercased())
    }

    /// Drops the maps of rows that are gone, gives the next copy a freed bare id, and maps the new rows.
    func reconcile() throws(SQLiteError) {
        try store.write { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                // Songs.
                let goneBases = try db.query("SELECT DISTINCT base FROM subsonic_track_ids WHERE track_id NOT IN (SELECT id FROM tracks)") { $0.text(0) }
                if !goneBases.isEmpty {
                    try db.run("DELETE FROM subsonic_track_ids WHERE track_id NOT IN (SELECT id FROM tracks)")
                    for base in goneBases {
                        let bareTaken = try db.queryOne("SELECT 1 FROM subsonic_track_ids WHERE sid = ?", [.text(base)]) { _ in true } ?? false
                        if bareTaken { continue }
                        try db.run("""
                            UPDATE subsonic_track_ids SET sid = base WHERE track_id =
                              (SELECT track_id FROM subsonic_track_ids WHERE base = ?1 ORDER BY length(sid), sid LIMIT 1)
                            """, [.text(base)])
                    }
                }
                var newTracks: [Track] = []
                try db.each("""
                    SELECT \(TrackRepository.columns) FROM tracks t
                    WHERE NOT EXISTS (SELECT 1 FROM subsonic_track_ids s WHERE s.track_id = t.id) ORDER BY t.path
                    """) { newTracks.append(TrackRepository.row($0)) }
                for track in newTracks {
                    let base = Self.songBase(track)
                    try Self.insertUnique(db, sql: "INSERT OR IGNORE INTO subsonic_track_ids(track_id, base, sid) VALUES (?, ?, ?)",
                                          base: base) { sid in [.int(Int64(track.id)), .text(base), .text(sid)] }
                }
                // Albums.
                try db.run("DELETE FROM subsonic_album_ids WHERE album_id NOT IN (SELECT id FROM albums)")
                let newAlbums = try db.query("""
                    SELECT a.id, a.artist_name, a.title,
                      coalesce((SELECT min(mtime_ns) FROM tracks WHERE album_id = a.id), 0),
                      (SELECT genre FROM tracks WHERE album_id = a.id AND genre IS NOT NULL GROUP BY genre ORDER BY count(*) DESC, genre LIMIT 1)
                    FROM albums a WHERE NOT EXISTS (SELECT 1 FROM subsonic_album_ids s WHERE s.album_id = a.id)
                    """) { ($0.int(0), $0.text(1), $0.text(2), $0.int(3), $0.optionalText(4)) }
                for (id, artist, title, mtime, genre) in newAlbums {
                    let base = Self.albumID(artist: artist, title: title)
                    try Self.insertUnique(db, sql: "INSERT OR IGNORE INTO subsonic_album_ids(album_id, sid, created, genre) VALUES (?, ?, ?, ?)",
                                          base: base) { sid in [.int(Int64(id)), .text(sid), .int(Int64(max(0, mtime / 1_000_000_000))), .optional(genre)] }
                }
                // Artists.
                try db.run("DELETE FROM subsonic_artist_ids WHERE artist_id NOT IN (SELECT id FROM artists)")
                let newArtists = try db.query("""
                    SELECT r.id, r.name FROM artists r WHERE NOT EXISTS (SELECT 1 FROM subsonic_artist_ids s WHERE s.artist_id = r.id)
                    """) { ($0.int(0), $0.text(1)) }
                for (id, name) in newArtists {
                    try Self.insertUnique(db, sql: "INSERT OR IGNORE INTO subsonic_artist_ids(artist_id, sid) VALUES (?, ?)",
                                          base: Self.artistID(name: name)) { sid in [.int(Int64(id)), .text(sid)] }
                }
            }
        }
    }

    /// Inserts with `base` as the id, else `base-2`, `base-3` … (a copy, or a name that differs
    /// only in non-ASCII case); the row's own key conflicting ends it too (`changes` is 0 for both,
    /// so the key is checked by the caller's NOT EXISTS).
    static func insertUnique(_ db: SQLiteDatabase, sql: String, base: String,
                             values: (String) -> [SQLiteValue]) throws(SQLiteError) {
        var n = 1
        while n < 10_000 {
            let sid = n == 1 ? base : "\(base)-\(n)"
            try db.run(sql, values(sid))
            if db.changes > 0 { return }
            n += 1
        }
    }

    // MARK: Lookups

    /// The catalog row of a song, album or artist id; nil when no such id is mapped.
    func trackID(_ sid: String) throws(SQLiteError) -> Int? {
        try store.read { db throws(SQLiteError) in try db.queryOne("SELECT track_id FROM subsonic_track_ids WHERE sid = ?", [.text(sid)]) { $0.int(0) } }
    }

    func albumID(_ sid: String) throws(SQLiteError) -> Int? {
        try store.read { db throws(SQLiteError) in try db.queryOne("SELECT album_id FROM subsonic_album_ids WHERE sid = ?", [.text(sid)]) { $0.int(0) } }
    }

    func artistID(_ sid: String) throws(SQLiteError) -> Int? {
        try store.read { db throws(SQLiteError) in try db.queryOne("SELECT artist_id FROM subsonic_artist_ids WHERE sid = ?", [.text(sid)]) { $0.int(0) } }
    }
}

/// What kind of thing a Subsonic id names, from its prefix.
enum SubsonicIDKind {
    case song, album, artist, playlist

    init?(_ sid: String) {
        if sid.hasPrefix("tr-") { self = .song } else if sid.hasPrefix("al-") { self = .album }
        else if sid.hasPrefix("ar-") { self = .artist } else if sid.hasPrefix("pl-") { self = .playlist } else { return nil }
    }
}
