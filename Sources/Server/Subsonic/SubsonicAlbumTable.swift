import StreamShared
import StreamLibrary

/// Every album as the answers show it (without marks), read in one statement once per catalog
/// generation (about 250 bytes an album: 2.7 MB for the 10,900 albums of 100,000 tracks), and
/// each album's list item written once, in both wire forms, the first time an answer shows it
/// (`SubsonicWrittenElement`, about 1 KB an album). A page of getAlbumList2 was 50 point
/// lookups of three joined rows and 50 elements built and written afresh, most of its 440 µs;
/// now it is 50 dictionary reads, the page's marks (one statement) and bytes copied. While the
/// catalog changes (a scan writes several times a second) the table is read again at most once
/// a second (tens of ms at 100,000 tracks); calls in between read their albums by id.
final class SubsonicAlbumTable: Sendable {
    private struct Table {
        var generation: UInt64
        var readAt: Monotonic
        var byID: [Int: SubsonicAlbum]
        /// Written items by album id and form (AlbumID3, or Child for the folder calls), each
        /// beside the album it was written from: used only for that same album.
        var written: [WrittenKey: (album: SubsonicAlbum, element: SubsonicWrittenElement)] = [:]
    }

    private struct WrittenKey: Hashable {
        var id: Int
        var id3: Bool
    }

    private let table = Lock<Table?>(nil)

    /// Least time between two reads of the table.
    static let rereadNanos: UInt64 = 1_000_000_000

    /// The albums of `ids` in that order, with `user`'s marks (ids without an album left out).
    func albums(ids: [Int], user: Int, store: LibraryStore) throws(SQLiteError) -> [SubsonicAlbum] {
        let library = SubsonicLibrary(store: store)
        guard !ids.isEmpty else { return [] }
        guard let byID = try current(store) else { return try library.albums(ids: ids, user: user) }
        return try library.marked(ids.compactMap { byID[$0] }, user: user)
    }

    /// The albums read for this generation of the catalog, read now if it moved (nil: it moved
    /// again less than `rereadNanos` after the last read).
    private func current(_ store: LibraryStore) throws(SQLiteError) -> [Int: SubsonicAlbum]? {
        let generation = store.generation
        let now = Monotonic.now
        let kept: (byID: [Int: SubsonicAlbum]?, recent: Bool) = table.withLock { table in
            guard let table else { return (nil, false) }
            if table.generation == generation { return (table.byID, true) }
            return (nil, now.nanoseconds &- table.readAt.nanoseconds < Self.rereadNanos)
        }
        if let byID = kept.byID { return byID }
        if kept.recent { return nil }
        // Read outside the lock: calls meanwhile read their own.
        let rows = try store.read { db throws(SQLiteError) in try db.query(SubsonicLibrary.albumSelect, row: SubsonicLibrary.album) }
        var byID: [Int: SubsonicAlbum] = [:]
        byID.reserveCapacity(rows.count)
        for album in rows { byID[album.id] = album }
        table.withLock { table in
            if table?.generation != generation { table = Table(generation: generation, readAt: now, byID: byID) }
        }
        return byID
    }

    /// The list items of `albums` with their marks: AlbumID3 (`id3`) or Child elements, byte for
    /// byte `SubsonicItems.album` or `albumChild` of each.
    func items(_ albums: [SubsonicAlbum], id3: Bool) -> [SubsonicWrittenItem] {
        albums.map { album in
            SubsonicWrittenItem(written(album, id3: id3), attributes: SubsonicItems.markAttributes(album.marks))
        }
    }

    private func written(_ album: SubsonicAlbum, id3: Bool) -> SubsonicWrittenElement {
        var plain = album
        plain.marks = SubsonicMarks()
        let key = WrittenKey(id: album.id, id3: id3)
        if let kept = table.withLock({ $0?.written[key] }), kept.album == plain { return kept.element }
        let element = id3 ? SubsonicWrittenElement(name: "album", SubsonicItems.albumFixed(plain))
                          : SubsonicWrittenElement(name: "album", SubsonicItems.albumChildFixed(plain))
        // Kept only while the table is the catalog's and holds this album as it is.
        table.withLock { table in
            guard table?.byID[album.id] == plain else { return }
            table?.written[key] = (plain, element)
        }
        return element
    }
}
