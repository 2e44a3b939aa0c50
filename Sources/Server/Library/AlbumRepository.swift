#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP

/// The `albums` table: pages of albums, and one with its tracks.
public struct AlbumRepository: Sendable {
    let store: LibraryStore

    static let columns = """
        a.id, a.title, a.artist_id, a.artist_name, a.track_count, a.duration_s, a.year,
        (SELECT path FROM tracks WHERE id = a.cover_track_id), a.folder, a.derived
        """

    static func row(_ s: SQLiteDatabase.Statement) -> AlbumRow {
        AlbumRow(id: s.int(0), title: s.text(1), artistID: s.int(2), artistName: s.text(3), trackCount: s.int(4),
                 durationSeconds: s.double(5), year: s.optionalInt(6), coverTrackPath: s.optionalText(7), folder: s.text(8),
                 derived: DerivedFields(rawValue: s.int(9)))
    }

    /// A page of albums by artist name then title, and the total.
    public func page(offset: Int, limit: Int) throws(SQLiteError) -> (total: Int, rows: [AlbumRow]) {
        try store.read { db throws(SQLiteError) in
            let total = try db.queryOne("SELECT count(*) FROM albums") { $0.int(0) } ?? 0
            let rows = try db.query("""
                SELECT \(Self.columns) FROM albums a
                ORDER BY a.artist_name COLLATE NOCASE, a.title COLLATE NOCASE, a.id LIMIT ? OFFSET ?
                """, [.int(Int64(max(0, limit))), .int(Int64(max(0, offset)))], row: Self.row)
            return (total, rows)
        }
    }

    /// An album and its tracks in disc, then track number order; nil when there is no such album.
    public func album(id: Int) throws(SQLiteError) -> (album: AlbumRow, tracks: [Track])? {
        try store.read { db throws(SQLiteError) in
            guard let album = try db.queryOne("SELECT \(Self.columns) FROM albums a WHERE a.id = ?",
                                              [.int(Int64(id))], row: Self.row) else { return nil }
            let tracks = try db.query("""
                SELECT \(TrackRepository.columns) FROM tracks t WHERE t.album_id = ?
                ORDER BY t.disc_number, t.track_number, t.path
                """, [.int(Int64(id))], row: TrackRepository.row)
            return (album, tracks)
        }
    }
}

/// The `artists` table: pages of artists, one with its albums, and its tracks.
public struct ArtistRepository: Sendable {
    let store: LibraryStore

    static let columns = """
        r.id, r.name, (SELECT count(*) FROM albums WHERE artist_id = r.id), (SELECT count(*) FROM tracks WHERE artist_id = r.id)
        """

    static func row(_ s: SQLiteDatabase.Statement) -> ArtistRow {
        ArtistRow(id: s.int(0), name: s.text(1), albumCount: s.int(2), trackCount: s.int(3))
    }

    /// A page of artists by name, and the total.
    public func page(offset: Int, limit: Int) throws(SQLiteError) -> (total: Int, rows: [ArtistRow]) {
        try store.read { db throws(SQLiteError) in
            let total = try db.queryOne("SELECT count(*) FROM artists") { $0.int(0) } ?? 0
            let rows = try db.query("SELECT \(Self.columns) FROM artists r ORDER BY r.name COLLATE NOCASE, r.id LIMIT ? OFFSET ?",
                                    [.int(Int64(max(0, limit))), .int(Int64(max(0, offset)))], row: Self.row)
            return (total, rows)
        }
    }

    /// An artist and the albums filed under it or holding its tracks (by year, then title).
    public func artist(id: Int) throws(SQLiteError) -> (artist: ArtistRow, albums: [AlbumRow])? {
        try store.read { db throws(SQLiteError) in
            guard let artist = try db.queryOne("SELECT \(Self.columns) FROM artists r WHERE r.id = ?",
                                               [.int(Int64(id))], row: Self.row) else { return nil }
            let albums = try db.query("""
                SELECT \(AlbumRepository.columns) FROM albums a
                WHERE a.artist_id = ?1 OR a.id IN (SELECT album_id FROM tracks WHERE artist_id = ?1 AND album_id IS NOT NULL)
                ORDER BY a.year, a.title COLLATE NOCASE, a.id
                """, [.int(Int64(id))], row: AlbumRepository.row)
            return (artist, albums)
        }
    }

    /// The tracks of an artist (its own, and those of the albums filed under it), album by album
    /// (by year, then title), each in disc, then track number order; tracks without an album last.
    public func tracks(artistID: Int) throws(SQLiteError) -> [Track] {
        try store.read { db throws(SQLiteError) in
            try db.query("""
                SELECT \(TrackRepository.columns) FROM tracks t LEFT JOIN albums a ON a.id = t.album_id
                WHERE t.id IN (SELECT id FROM tracks WHERE artist_id = ?1
                               UNION SELECT t2.id FROM albums a2 JOIN tracks t2 ON t2.album_id = a2.id WHERE a2.artist_id = ?1)
                ORDER BY a.id IS NULL, a.year, a.title COLLATE NOCASE, a.id, t.disc_number, t.track_number, t.path
                """, [.int(Int64(artistID))], row: TrackRepository.row)
        }
    }
}

/// Where an album's cover comes from: its track that embeds a picture, or its folder.
public struct CoverRepository: Sendable {
    let store: LibraryStore

    /// Where the cover of an album may come from; nil when there is no such album.
    public func source(albumID: Int) throws(SQLiteError) -> CoverSource? {
        try store.read { db throws(SQLiteError) in
            try db.queryOne("SELECT (SELECT path FROM tracks WHERE id = a.cover_track_id), a.folder FROM albums a WHERE a.id = ?",
                            [.int(Int64(albumID))]) { CoverSource(embeddedTrackPath: $0.optionalText(0), folder: $0.text(1)) }
        }
    }
}
