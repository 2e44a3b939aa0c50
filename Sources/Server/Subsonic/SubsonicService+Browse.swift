import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary

/// Browsing, lists and search.
extension SubsonicService {
    static func body(_ name: String, _ element: SubsonicElement) -> SubsonicAnswer {
        var body = SubsonicElement()
        body.add(name, element)
        return .element(body)
    }

    /// The artists that head an album, by name.
    func albumArtists(user: Int) throws(SQLiteError) -> [SubsonicArtist] {
        try library.artists("WHERE EXISTS (SELECT 1 FROM albums WHERE artist_id = r.id) ORDER BY r.name COLLATE NOCASE, r.id", user: user)
    }

    func getArtists(_ call: SubsonicCall) throws -> SubsonicAnswer {
        var artists = SubsonicElement([("ignoredArticles", .string(SubsonicItems.ignoredArticles.joined(separator: " ")))])
        artists.add("index", list: SubsonicItems.indexes(try albumArtists(user: call.user.id)) { SubsonicItems.artist($0) })
        return Self.body("artists", artists)
    }

    func getIndexes(_ call: SubsonicCall) throws -> SubsonicAnswer {
        var indexes = SubsonicElement([("ignoredArticles", .string(SubsonicItems.ignoredArticles.joined(separator: " "))),
                                       ("lastModified", .int(SubsonicItems.now() * 1000))])
        indexes.add("index", list: SubsonicItems.indexes(try albumArtists(user: call.user.id)) { SubsonicItems.folderArtist($0) })
        return Self.body("indexes", indexes)
    }

    func artistAlbums(_ artistID: Int, user: Int) throws(SQLiteError) -> [SubsonicAlbum] {
        try library.albums("WHERE a.artist_id = ?1 ORDER BY a.year, a.title COLLATE NOCASE, a.id", [.int(Int64(artistID))], user: user)
    }

    func getArtist(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let sid = try call.parameters.required("id")
        guard let id = try ids.artistID(sid), let artist = try library.artists("WHERE r.id = ?1", [.int(Int64(id))], user: call.user.id).first
        else { throw SubsonicError.notFound("Artist") }
        return Self.body("artist", SubsonicItems.artist(artist, albums: try artistAlbums(id, user: call.user.id)))
    }

    func albumSongs(_ albumID: Int, user: Int) throws(SQLiteError) -> [SubsonicSong] {
        try library.songs("WHERE t.album_id = ?1 ORDER BY t.disc_number, t.track_number, t.path", [.int(Int64(albumID))], user: user)
    }

    func getAlbum(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let sid = try call.parameters.required("id")
        guard let id = try ids.albumID(sid), let album = try library.albums("WHERE a.id = ?1", [.int(Int64(id))], user: call.user.id).first
        else { throw SubsonicError.notFound("Album") }
        return Self.body("album", SubsonicItems.album(album, songs: try albumSongs(id, user: call.user.id)))
    }

    func getSong(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let sid = try call.parameters.required("id")
        guard let song = try library.songs(sids: [sid], user: call.user.id).first else { throw SubsonicError.notFound("Song") }
        return Self.body("song", SubsonicItems.song(song))
    }

    /// A folder: the library's (id 1: its album artists), an artist's (its albums) or an album's (its songs).
    func getMusicDirectory(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let sid = try call.parameters.required("id")
        var directory: SubsonicElement
        switch SubsonicIDKind(sid) {
        case .artist:
            guard let id = try ids.artistID(sid), let artist = try library.artists("WHERE r.id = ?1", [.int(Int64(id))], user: call.user.id).first
            else { throw SubsonicError.notFound("Directory") }
            directory = SubsonicElement([("id", .string(sid)), ("parent", .string(String(Self.folderID))), ("name", .string(artist.name))])
            directory.set("starred", artist.marks.starredAt.map { .string(SubsonicItems.date($0)) })
            directory.add("child", list: try artistAlbums(id, user: call.user.id).map(SubsonicItems.albumChild))
        case .album:
            guard let id = try ids.albumID(sid), let album = try library.albums("WHERE a.id = ?1", [.int(Int64(id))], user: call.user.id).first
            else { throw SubsonicError.notFound("Directory") }
            directory = SubsonicElement([("id", .string(sid)), ("parent", .optional(album.artistSid)), ("name", .string(album.title))])
            directory.set("starred", album.marks.starredAt.map { .string(SubsonicItems.date($0)) })
            directory.set("playCount", .int(album.marks.playCount))
            directory.add("child", list: try albumSongs(id, user: call.user.id).map(SubsonicItems.song))
        default:
            guard sid == String(Self.folderID) else { throw SubsonicError.notFound("Directory") }
            directory = SubsonicElement([("id", .string(sid)), ("name", .string("Music"))])
            directory.add("child", list: try albumArtists(user: call.user.id).map { artist in
                SubsonicElement([("id", .string(artist.sid)), ("parent", .string(sid)), ("isDir", .bool(true)),
                                 ("title", .string(artist.name)), ("artist", .string(artist.name))])
            })
        }
        return Self.body("directory", directory)
    }

    func getGenres(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let rows = try store.read { db throws(SQLiteError) in
            try db.query("""
                SELECT genre, count(*), count(DISTINCT album_id) FROM tracks WHERE genre IS NOT NULL AND genre != ''
                GROUP BY genre ORDER BY genre COLLATE NOCASE
                """) { ($0.text(0), $0.int(1), $0.int(2)) }
        }
        var genres = SubsonicElement()
        genres.add("genre", list: rows.map { SubsonicElement([("songCount", .int($0.1)), ("albumCount", .int($0.2))], text: $0.0) })
        return Self.body("genres", genres)
    }

    /// `size` (default 10, at most 500) and `offset` of a list.
    static func page(_ p: SubsonicParameters, size sizeName: String = "size", offset offsetName: String = "offset",
                     default fallback: Int = 10, max: Int = 500) throws(SubsonicError) -> (size: Int, offset: Int) {
        let size = try p.int(sizeName, default: fallback, in: 0...max) ?? fallback
        let offset = try p.int(offsetName, default: 0, in: 0...100_000_000) ?? 0
        return (size, offset)
    }

    func getAlbumList(_ call: SubsonicCall, id3: Bool) throws -> SubsonicAnswer {
        let p = call.parameters
        let type = try p.required("type")
        let (size, offset) = try Self.page(p)
        let user = Int64(call.user.id)
        let limit = " LIMIT \(size) OFFSET \(offset)"
        let marked = "JOIN subsonic_annotations n ON n.user_id = ?1 AND n.sid = al.sid"
        let albums: [SubsonicAlbum]
        switch type {
        case "random":
            albums = try library.albums("WHERE ?1 = ?1 ORDER BY random() LIMIT \(size)", [.int(user)], user: call.user.id)
        case "newest", "alphabeticalByName", "alphabeticalByArtist":
            let order = type == "newest" ? "al.created DESC, a.id DESC"
                : type == "alphabeticalByName" ? "a.title COLLATE NOCASE, a.id" : "a.artist_name COLLATE NOCASE, a.title COLLATE NOCASE, a.id"
            let ids = try orders.ids("albums " + type, store: store,
                                     sql: "SELECT a.id FROM albums a JOIN subsonic_album_ids al ON al.album_id = a.id ORDER BY " + order)
            albums = try tables.albums(ids: SubsonicOrderCache.page(ids, offset: offset, count: size), user: call.user.id, store: store,
                                       marks: try tables.userMarks(user: call.user, version: marksVersion(of: call.user.id), store: store))
        case "frequent":
            albums = try library.albums(marked + " WHERE n.play_count > 0 ORDER BY n.play_count DESC, a.id" + limit, [.int(user)], user: call.user.id)
        case "recent":
            albums = try library.albums(marked + " WHERE n.played_at IS NOT NULL ORDER BY n.played_at DESC, a.id" + limit,
                                        [.int(user)], user: call.user.id)
        case "starred":
            albums = try library.albums(marked + " WHERE n.starred_at IS NOT NULL ORDER BY n.starred_at DESC, a.id" + limit,
                                        [.int(user)], user: call.user.id)
        case "highest":
            albums = try library.albums(marked + " WHERE n.rating IS NOT NULL ORDER BY n.rating DESC, a.id" + limit, [.int(user)], user: call.user.id)
        case "byYear":
            guard let from = try p.int("fromYear", in: -9999...9999) else { throw SubsonicError.missing("fromYear") }
            guard let to = try p.int("toYear", in: -9999...9999) else { throw SubsonicError.missing("toYear") }
            let order = from <= to ? "a.year, a.id" : "a.year DESC, a.id"
            albums = try library.albums("WHERE ?1 = ?1 AND a.year BETWEEN ?2 AND ?3 ORDER BY \(order)" + limit,
                                        [.int(user), .int(Int64(min(from, to))), .int(Int64(max(from, to)))], user: call.user.id)
        case "byGenre":
            let genre = try p.required("genre")
            albums = try library.albums("WHERE ?1 = ?1 AND al.genre = ?2 COLLATE NOCASE ORDER BY a.title COLLATE NOCASE, a.id" + limit,
                                        [.int(user), .text(genre)], user: call.user.id)
        default:
            throw SubsonicError.invalid("type", "one of random, newest, highest, frequent, recent, alphabeticalByName, alphabeticalByArtist, starred, byYear, byGenre")
        }
        var list = SubsonicElement()
        list.add("album", written: tables.items(albums, id3: id3, generation: store.generation))
        return Self.body(id3 ? "albumList2" : "albumList", list)
    }

    func getRandomSongs(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let p = call.parameters
        let size = try p.int("size", default: 10, in: 0...500) ?? 10
        var conditions = ["?1 = ?1"]
        var values: [SQLiteValue] = [.int(Int64(call.user.id))]
        if let genre = p.string("genre"), !genre.isEmpty {
            values.append(.text(genre))
            conditions.append("t.genre = ?\(values.count) COLLATE NOCASE")
        }
        if let from = try p.int("fromYear", in: -9999...9999) {
            values.append(.int(Int64(from)))
            conditions.append("t.year >= ?\(values.count)")
        }
        if let to = try p.int("toYear", in: -9999...9999) {
            values.append(.int(Int64(to)))
            conditions.append("t.year <= ?\(values.count)")
        }
        // Random rows by id, not ORDER BY random() over the whole table: draws of ids in the id
        // range, as many as asked (a library with holes in its ids takes a few more draws).
        let songs: [SubsonicSong]
        if conditions.count == 1 {
            let range = try store.read { db throws(SQLiteError) in try db.queryOne("SELECT min(id), max(id) FROM tracks") { ($0.optionalInt(0), $0.optionalInt(1)) } }
            guard let low = range?.0, let high = range?.1 else { return Self.body("randomSongs", SubsonicElement()) }
            var picked = Set<Int>()
            var found: [SubsonicSong] = []
            var attempts = 0
            while found.count < size && attempts < 8 {
                attempts += 1
                var draw: [Int] = []
                while draw.count < (size - found.count) * 2 { draw.append(Int.random(in: low...high)) }
                for song in try library.songs(trackIDs: draw.filter { picked.insert($0).inserted }, user: call.user.id) where found.count < size {
                    found.append(song)
                }
            }
            songs = found
        } else {
            songs = try library.songs("WHERE " + conditions.joined(separator: " AND ") + " ORDER BY random() LIMIT \(size)", values, user: call.user.id)
        }
        var list = SubsonicElement()
        list.add("song", list: songs.map(SubsonicItems.song))
        return Self.body("randomSongs", list)
    }

    func getSongsByGenre(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let p = call.parameters
        let genre = try p.required("genre")
        let (count, offset) = try Self.page(p, size: "count", default: 10, max: 500)
        let songs = try library.songs("WHERE t.genre = ?1 COLLATE NOCASE ORDER BY t.id LIMIT \(count) OFFSET \(offset)", [.text(genre)], user: call.user.id)
        var list = SubsonicElement()
        list.add("song", list: songs.map(SubsonicItems.song))
        return Self.body("songsByGenre", list)
    }

    /// search2/search3: artists, albums and songs matching every word of `query`. An empty query
    /// (`""` as clients send it, or none) is the whole library, paged: how clients sync.
    func search(_ call: SubsonicCall, id3: Bool) throws -> SubsonicAnswer {
        let p = call.parameters
        var query = (p.string("query") ?? "").trimmingCharacters(in: " \t")
        if query == "\"\"" || query == "''" || query == "*" { query = "" }
        if query.hasPrefix("\""), query.hasSuffix("\""), query.count >= 2 { query = String(query.dropFirst().dropLast()) }
        let (artistCount, artistOffset) = try Self.page(p, size: "artistCount", offset: "artistOffset", default: 20, max: 500)
        let (albumCount, albumOffset) = try Self.page(p, size: "albumCount", offset: "albumOffset", default: 20, max: 500)
        let (songCount, songOffset) = try Self.page(p, size: "songCount", offset: "songOffset", default: 20, max: 500)
        let user = call.user.id
        // The caller's marks from memory, read once per change of them (nil: too many, read per list).
        let marks = try tables.userMarks(user: call.user, version: marksVersion(of: user), store: store)
        var artists: [SubsonicArtist] = [], albums: [SubsonicAlbum] = [], songs: [SubsonicSong] = []
        var songItems: [SubsonicWrittenItem] = []
        if query.isEmpty {
            if artistCount > 0 {
                let ids = try orders.ids("artists", store: store, sql: """
                    SELECT r.id FROM artists r JOIN subsonic_artist_ids ar ON ar.artist_id = r.id
                    WHERE EXISTS (SELECT 1 FROM albums WHERE artist_id = r.id) ORDER BY r.id
                    """)
                artists = try tables.artists(ids: SubsonicOrderCache.page(ids, offset: artistOffset, count: artistCount), user: user, store: store,
                                             marks: marks)
            }
            if albumCount > 0 {
                let ids = try orders.ids("albums", store: store, sql: "SELECT album_id FROM subsonic_album_ids ORDER BY album_id")
                albums = try tables.albums(ids: SubsonicOrderCache.page(ids, offset: albumOffset, count: albumCount), user: user, store: store,
                                           marks: marks)
            }
            if songCount > 0 {
                let ids = try orders.ids("songs", store: store, sql: "SELECT track_id FROM subsonic_track_ids ORDER BY track_id")
                songs = try library.songs(trackIDs: SubsonicOrderCache.page(ids, offset: songOffset, count: songCount), user: user)
            }
        } else {
            // Albums and artists whose name holds every word as a prefix, from the in-memory
            // name indexes (one per catalog generation), in id order.
            let terms = SubsonicNameIndex.words(query).prefix(8).map { $0 }
            if artistCount > 0 {
                let index = try names.index("artists", store: store, sql: """
                    SELECT r.id, r.name FROM artists r JOIN subsonic_artist_ids ar ON ar.artist_id = r.id
                    WHERE EXISTS (SELECT 1 FROM albums WHERE artist_id = r.id)
                    """)
                let page = SubsonicOrderCache.page(index.ids(matching: Array(terms)), offset: artistOffset, count: artistCount)
                artists = try tables.artists(ids: page, user: user, store: store, marks: marks)
            }
            if albumCount > 0 {
                let index = try names.index("albums", store: store, sql: """
                    SELECT a.id, a.title FROM albums a JOIN subsonic_album_ids al ON al.album_id = a.id
                    """)
                let page = SubsonicOrderCache.page(index.ids(matching: Array(terms)), offset: albumOffset, count: albumCount)
                albums = try tables.albums(ids: page, user: user, store: store, marks: marks)
            }
            // Songs from the catalog's in-memory search index (no SQLite), title hits first, then
            // the others, in catalog order (`unrankedTrackIDs`); their items written once.
            if songCount > 0, songOffset < 1000 {
                let ids = try store.search.unrankedTrackIDs(query: query, limit: min(1000, songOffset + songCount), readIndexNow: true)
                songItems = try tables.songItems(trackIDs: Array(ids.dropFirst(songOffset)), user: user, store: store, marks: marks)
            }
        }
        // As `SubsonicItems.artistsAlbumsSongs` writes them, the albums from their written items.
        var result = SubsonicElement()
        result.add("artist", list: artists.map { id3 ? SubsonicItems.artist($0) : SubsonicItems.folderArtist($0) })
        result.add("album", written: tables.items(albums, id3: id3, generation: store.generation))
        if query.isEmpty {
            result.add("song", list: songs.map(SubsonicItems.song))
        } else {
            result.add("song", written: songItems)
        }
        return Self.body(id3 ? "searchResult3" : "searchResult2", result)
    }
}
