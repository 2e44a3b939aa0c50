import StreamShared
import StreamHTTP
import StreamLibrary

/// Each user's own data: stars, ratings, play counts, playlists, the play queue, what is playing.
extension SubsonicService {
    /// The ids of `id`, `albumId` and `artistId`, each checked to name something in the library.
    func markedIDs(_ call: SubsonicCall) throws -> [String] {
        let p = call.parameters
        let sids = p.all("id") + p.all("albumId") + p.all("artistId")
        for sid in sids {
            let known: Bool
            switch SubsonicIDKind(sid) {
            case .song: known = try ids.trackID(sid) != nil
            case .album: known = try ids.albumID(sid) != nil
            case .artist: known = try ids.artistID(sid) != nil
            default: known = false
            }
            guard known else { throw SubsonicError.notFound("Item \(sid)") }
        }
        return sids
    }

    /// Sets one column of the user's marks on `sid` (a row made when there is none).
    func setMark(user: Int, sid: String, _ assignment: String, _ value: SQLiteValue) throws(SQLiteError) {
        try store.write { db throws(SQLiteError) in
            try db.run("INSERT OR IGNORE INTO subsonic_annotations(user_id, sid) VALUES (?, ?)", [.int(Int64(user)), .text(sid)])
            try db.run("UPDATE subsonic_annotations SET \(assignment) = ?3 WHERE user_id = ?1 AND sid = ?2", [.int(Int64(user)), .text(sid), value])
        }
        marksChanged(of: user)
    }

    func star(_ call: SubsonicCall, on: Bool) throws -> SubsonicAnswer {
        let sids = try markedIDs(call)
        guard !sids.isEmpty else { throw SubsonicError.missing("id") }
        let now = SubsonicItems.now()
        for sid in sids { try setMark(user: call.user.id, sid: sid, "starred_at", on ? .int(Int64(now)) : .null) }
        return .empty
    }

    func setRating(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let sid = try call.parameters.required("id")
        guard let rating = try call.parameters.int("rating", in: 0...5) else { throw SubsonicError.missing("rating") }
        _ = try markedIDs(SubsonicCall(request: call.request, parameters: SubsonicParameters(pairs: [("id", sid)]), user: call.user))
        try setMark(user: call.user.id, sid: sid, "rating", rating == 0 ? .null : .int(Int64(rating)))
        return .empty
    }

    func getStarred(_ call: SubsonicCall, id3: Bool) throws -> SubsonicAnswer {
        let user = Int64(call.user.id)
        let starred = "JOIN subsonic_annotations n ON n.user_id = ?1 AND n.sid = "
        let artists = try library.artists(starred + "ar.sid WHERE n.starred_at IS NOT NULL ORDER BY n.starred_at DESC", [.int(user)], user: call.user.id)
        let albums = try library.albums(starred + "al.sid WHERE n.starred_at IS NOT NULL ORDER BY n.starred_at DESC", [.int(user)], user: call.user.id)
        let songs = try library.songs(starred + "s.sid WHERE n.starred_at IS NOT NULL ORDER BY n.starred_at DESC", [.int(user)], user: call.user.id)
        let result = SubsonicItems.artistsAlbumsSongs(artists, albums, songs, id3: id3)
        return Self.body(id3 ? "starred2" : "starred", result)
    }

    /// A play (`submission`, the default: the song's, its album's and its artist's play counts)
    /// or what is playing now (`submission=false`).
    func scrobble(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let p = call.parameters
        let sids = p.all("id")
        guard !sids.isEmpty else { throw SubsonicError.missing("id") }
        let times = p.all("time")
        let submission = try p.bool("submission") ?? true
        let songs = try library.songs(sids: sids, user: call.user.id)
        guard songs.count == sids.count else { throw SubsonicError.notFound("Song") }
        let now = SubsonicItems.now()
        if !submission {
            let entry = NowPlayingEntry(userID: call.user.id, userName: call.user.name, sid: songs[songs.count - 1].sid,
                                        player: p.string("c") ?? "", at: now)
            nowPlaying.withLock { entries in
                entries.removeAll { $0.userID == entry.userID && $0.player == entry.player }
                entries.append(entry)
                if entries.count > 1000 { entries.removeFirst(entries.count - 1000) }
            }
            return .empty
        }
        try store.write { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                for (index, song) in songs.enumerated() {
                    // `time` is in milliseconds since 1970.
                    let at = index < times.count ? (Int(times[index]).map { $0 / 1000 } ?? now) : now
                    for sid in [song.sid, song.albumSid, song.artistSid].compactMap({ $0 }) {
                        try db.run("INSERT OR IGNORE INTO subsonic_annotations(user_id, sid) VALUES (?, ?)", [.int(Int64(call.user.id)), .text(sid)])
                        try db.run("""
                            UPDATE subsonic_annotations SET play_count = play_count + 1, played_at = max(coalesce(played_at, 0), ?3)
                            WHERE user_id = ?1 AND sid = ?2
                            """, [.int(Int64(call.user.id)), .text(sid), .int(Int64(at))])
                    }
                }
            }
        }
        marksChanged(of: call.user.id)
        return .empty
    }

    func getNowPlaying(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let now = SubsonicItems.now()
        // Anything not played on for an hour is not playing now.
        let entries = nowPlaying.withLock { entries in
            entries.removeAll { now - $0.at > 3600 }
            return entries
        }
        var list: [SubsonicElement] = []
        for entry in entries.reversed() {
            guard let song = try library.songs(sids: [entry.sid], user: call.user.id).first else { continue }
            var e = SubsonicItems.song(song)
            e.set("username", .string(entry.userName))
            e.set("minutesAgo", .int((now - entry.at) / 60))
            e.set("playerId", .int(0))
            e.set("playerName", .string(entry.player))
            list.append(e)
        }
        var body = SubsonicElement()
        body.add("entry", list: list)
        return Self.body("nowPlaying", body)
    }

    // MARK: Playlists

    struct PlaylistRow {
        var id: Int
        var userID: Int
        var owner: String
        var name: String
        var comment: String?
        var isPublic: Bool
        var created: Int
        var changed: Int
    }

    static func playlistSID(_ id: Int) -> String { "pl-\(id)" }

    func playlistRows(user: SubsonicUser, id: Int? = nil) throws(SQLiteError) -> [PlaylistRow] {
        try store.read { db throws(SQLiteError) in
            try db.query("""
                SELECT id, user_id, name, comment, public, created, changed FROM subsonic_playlists
                WHERE (user_id = ?1 OR public = 1) AND (?2 IS NULL OR id = ?2) ORDER BY name COLLATE NOCASE, id
                """, [.int(Int64(user.id)), .optional(id)]) {
                PlaylistRow(id: $0.int(0), userID: $0.int(1), owner: $0.int(1) == user.id ? user.name : "user \($0.int(1))",
                            name: $0.text(2), comment: $0.optionalText(3), isPublic: $0.int(4) != 0, created: $0.int(5), changed: $0.int(6))
            }
        }
    }

    func playlistEntries(_ id: Int) throws(SQLiteError) -> [String] {
        try store.read { db throws(SQLiteError) in
            try db.query("SELECT sid FROM subsonic_playlist_entries WHERE playlist_id = ? ORDER BY position", [.int(Int64(id))]) { $0.text(0) }
        }
    }

    func playlistElement(_ row: PlaylistRow, songs: [SubsonicSong], withEntries: Bool) -> SubsonicElement {
        var e = SubsonicElement([
            ("id", .string(Self.playlistSID(row.id))), ("name", .string(row.name)), ("comment", .optional(row.comment)),
            ("owner", .string(row.owner)), ("public", .bool(row.isPublic)), ("songCount", .int(songs.count)),
            ("duration", .int(Int(songs.reduce(0) { $0 + $1.track.durationSeconds }.rounded()))),
            ("created", .string(SubsonicItems.date(row.created))), ("changed", .string(SubsonicItems.date(row.changed))),
            ("coverArt", .optional(songs.first?.albumSid)),
        ])
        if withEntries { e.add("entry", list: songs.map(SubsonicItems.song)) }
        return e
    }

    func getPlaylists(_ call: SubsonicCall) throws -> SubsonicAnswer {
        if let other = call.parameters.string("username"), other != call.user.name, !call.user.isAdmin {
            throw SubsonicError.notAuthorized("other users' playlists")
        }
        var list: [SubsonicElement] = []
        for row in try playlistRows(user: call.user) {
            list.append(playlistElement(row, songs: try library.songs(sids: try playlistEntries(row.id), user: call.user.id), withEntries: false))
        }
        var body = SubsonicElement()
        body.add("playlist", list: list)
        return Self.body("playlists", body)
    }

    /// The playlist `pl-<n>` the user may read (their own or a public one).
    func playlist(_ sid: String, user: SubsonicUser) throws -> PlaylistRow {
        guard sid.hasPrefix("pl-"), let id = Int(sid.dropFirst(3)), let row = try playlistRows(user: user, id: id).first
        else { throw SubsonicError.notFound("Playlist") }
        return row
    }

    func getPlaylist(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let row = try playlist(try call.parameters.required("id"), user: call.user)
        let songs = try library.songs(sids: try playlistEntries(row.id), user: call.user.id)
        return Self.body("playlist", playlistElement(row, songs: songs, withEntries: true))
    }

    /// Creates a playlist (`name`), or replaces the songs of one (`playlistId`), with `songId`s in order.
    func createPlaylist(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let p = call.parameters
        let songIDs = p.all("songId")
        let known = try library.songs(sids: songIDs, user: call.user.id)
        guard known.count == songIDs.count else { throw SubsonicError.notFound("Song") }
        let now = SubsonicItems.now()
        let id: Int
        if let existing = p.string("playlistId") {
            let row = try playlist(existing, user: call.user)
            guard row.userID == call.user.id else { throw SubsonicError.notAuthorized("another user's playlist") }
            id = row.id
            try store.write { db throws(SQLiteError) in
                try db.transaction { () throws(SQLiteError) in
                    if let name = p.string("name") {
                        try db.run("UPDATE subsonic_playlists SET name = ? WHERE id = ?", [.text(name), .int(Int64(id))])
                    }
                    try Self.replaceEntries(db, playlist: id, sids: songIDs, now: now)
                }
            }
        } else {
            let name = try p.required("name")
            id = try store.write { db throws(SQLiteError) in
                try db.transaction { () throws(SQLiteError) in
                    try db.run("INSERT INTO subsonic_playlists(user_id, name, created, changed) VALUES (?, ?, ?, ?)",
                               [.int(Int64(call.user.id)), .text(name), .int(Int64(now)), .int(Int64(now))])
                    let id = db.lastInsertRowID
                    try Self.replaceEntries(db, playlist: id, sids: songIDs, now: now)
                    return id
                }
            }
        }
        let row = try playlist(Self.playlistSID(id), user: call.user)
        return Self.body("playlist", playlistElement(row, songs: try library.songs(sids: try playlistEntries(id), user: call.user.id), withEntries: true))
    }

    static func replaceEntries(_ db: SQLiteDatabase, playlist id: Int, sids: [String], now: Int) throws(SQLiteError) {
        try db.run("DELETE FROM subsonic_playlist_entries WHERE playlist_id = ?", [.int(Int64(id))])
        for (position, sid) in sids.enumerated() {
            try db.run("INSERT INTO subsonic_playlist_entries(playlist_id, position, sid) VALUES (?, ?, ?)",
                       [.int(Int64(id)), .int(Int64(position)), .text(sid)])
        }
        try db.run("UPDATE subsonic_playlists SET changed = ? WHERE id = ?", [.int(Int64(now)), .int(Int64(id))])
    }

    /// Renames, comments, makes public or not, adds `songIdToAdd`s and removes `songIndexToRemove`s (positions before the change).
    func updatePlaylist(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let p = call.parameters
        let row = try playlist(try p.required("playlistId"), user: call.user)
        guard row.userID == call.user.id else { throw SubsonicError.notAuthorized("another user's playlist") }
        let adding = p.all("songIdToAdd")
        guard try library.songs(sids: adding, user: call.user.id).count == adding.count else { throw SubsonicError.notFound("Song") }
        var removing = Set<Int>()
        for text in p.all("songIndexToRemove") {
            guard let index = Int(text), index >= 0 else { throw SubsonicError.invalid("songIndexToRemove", "not an index") }
            removing.insert(index)
        }
        let isPublic = try p.bool("public")
        var entries = try playlistEntries(row.id)
        entries = entries.enumerated().filter { !removing.contains($0.offset) }.map(\.element) + adding
        let now = SubsonicItems.now()
        try store.write { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                if let name = p.string("name") { try db.run("UPDATE subsonic_playlists SET name = ? WHERE id = ?", [.text(name), .int(Int64(row.id))]) }
                if let comment = p.string("comment") {
                    try db.run("UPDATE subsonic_playlists SET comment = ? WHERE id = ?", [.text(comment), .int(Int64(row.id))])
                }
                if let isPublic { try db.run("UPDATE subsonic_playlists SET public = ? WHERE id = ?", [.int(isPublic ? 1 : 0), .int(Int64(row.id))]) }
                try Self.replaceEntries(db, playlist: row.id, sids: entries, now: now)
            }
        }
        return .empty
    }

    func deletePlaylist(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let row = try playlist(try call.parameters.required("id"), user: call.user)
        guard row.userID == call.user.id || call.user.isAdmin else { throw SubsonicError.notAuthorized("another user's playlist") }
        try store.write { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                try db.run("DELETE FROM subsonic_playlist_entries WHERE playlist_id = ?", [.int(Int64(row.id))])
                try db.run("DELETE FROM subsonic_playlists WHERE id = ?", [.int(Int64(row.id))])
            }
        }
        return .empty
    }

    // MARK: Play queue

    func getPlayQueue(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let row = try store.read { db throws(SQLiteError) in
            try db.queryOne("SELECT current, position_ms, changed, changed_by, entries FROM subsonic_play_queues WHERE user_id = ?",
                            [.int(Int64(call.user.id))]) { ($0.optionalText(0), $0.int(1), $0.int(2), $0.text(3), $0.text(4)) }
        }
        // No queue saved: an empty answer (OpenSubsonic allows it; clients treat it as none).
        guard let row else { return .empty }
        let sids = row.4.split(separator: "\n").map(String.init)
        var queue = SubsonicElement([("current", .optional(row.0)), ("position", .int(row.1)), ("username", .string(call.user.name)),
                                     ("changed", .string(SubsonicItems.date(row.2))), ("changedBy", .string(row.3))])
        queue.add("entry", list: try library.songs(sids: sids, user: call.user.id).map(SubsonicItems.song))
        return Self.body("playQueue", queue)
    }

    func savePlayQueue(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let p = call.parameters
        let sids = p.all("id")
        guard sids.count <= 10_000 else { throw SubsonicError.invalid("id", "at most 10,000 songs") }
        if sids.isEmpty {
            try store.write { db throws(SQLiteError) in try db.run("DELETE FROM subsonic_play_queues WHERE user_id = ?", [.int(Int64(call.user.id))]) }
            return .empty
        }
        let current = p.string("current")
        let position = try p.int("position", default: 0, in: 0...Int(Int32.max) * 1000) ?? 0
        try store.write { db throws(SQLiteError) in
            try db.run("INSERT OR REPLACE INTO subsonic_play_queues(user_id, current, position_ms, changed, changed_by, entries) VALUES (?, ?, ?, ?, ?, ?)",
                       [.int(Int64(call.user.id)), .optional(current), .int(Int64(position)), .int(Int64(SubsonicItems.now())),
                        .text(p.string("c") ?? ""), .text(sids.joined(separator: "\n"))])
        }
        return .empty
    }
}
