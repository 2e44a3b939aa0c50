import Foundation
import StreamShared
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The browse, search, cover and playlist API over the catalog, on the real streamd.
@Suite(.ownThreads) struct LibraryAPITests {
    /// The generated library plus an album whose disc/track order differs from its path order
    /// (c: disc 1 track 1, b: 1/2, a: 2/1, d: 2/2) with a `Cover.JPG` beside it.
    static func makeLibrary() throws -> URL {
        let library = try ServerEndToEndTests.makeLibrary()
        let album = library.appendingPathComponent("Ordered Artist/Ordered Album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        let ffmpeg = try #require(which("ffmpeg"))
        for (name, disc, track, title) in [("a", 2, 1, "Third Zebra"), ("b", 1, 2, "Second Yak"), ("c", 1, 1, "First Xenops"),
                                           ("d", 2, 2, "Fourth Walrus")] {
            let result = try runCommand(ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                                                 "-i", "sine=frequency=440:duration=1.5", "-c:a", "libmp3lame", "-b:a", "64k",
                                                 "-id3v2_version", "3", "-metadata", "title=\(title)",
                                                 "-metadata", "artist=Ordered Artist", "-metadata", "album=Ordered Album",
                                                 "-metadata", "track=\(track)", "-metadata", "disc=\(disc)",
                                                 album.appendingPathComponent("\(name).mp3").path])
            #expect(result.status == 0, "\(String(decoding: result.stderr, as: UTF8.self))")
        }
        try Data([0xFF, 0xD8, 0xFF, 0xE0] + Array("folder cover".utf8) + [0xFF, 0xD9]).write(to: album.appendingPathComponent("Cover.JPG"))
        return library
    }

    static func get(_ server: StreamdProcess, _ target: String, headers: [String: String] = [:]) throws -> RawResponse {
        try PlaylistFileTests.get(server, target, headers: headers)
    }

    static func list(_ response: RawResponse) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]])
    }

    static func object(_ response: RawResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    static func album(_ server: StreamdProcess, titled title: String) throws -> [String: Any] {
        try #require(try list(get(server, "/api/albums?limit=1000")).first { $0["title"] as? String == title })
    }

    @Test func tracks_pagedInAStableOrderWithTheTotal() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let whole = try Self.get(server, "/api/tracks")
        let all = try Self.list(whole)
        #expect(all.count == TestPaths.mediaFiles().count + 4)
        #expect(whole.header("X-Total-Count") == String(all.count))
        #expect(whole.header("Cache-Control") == "no-cache")
        for sort in ["path", "title", "artist", "album", "duration", "year"] {
            let ordered = try Self.list(Self.get(server, "/api/tracks?sort=\(sort)&limit=1000")).map { $0["path"] as? String ?? "" }
            var paged: [String] = []
            for offset in stride(from: 0, to: all.count + 5, by: 5) {
                let page = try Self.get(server, "/api/tracks?offset=\(offset)&limit=5&sort=\(sort)")
                #expect(page.header("X-Total-Count") == String(all.count), "total with sort \(sort)")
                paged += try Self.list(page).map { $0["path"] as? String ?? "" }
            }
            #expect(paged == ordered, "pages of 5 in \(sort) order join up to the whole list")
            #expect(Set(ordered).count == all.count)
        }
        let byPath = try Self.list(Self.get(server, "/api/tracks?limit=1000")).map { $0["path"] as? String ?? "" }
        #expect(byPath == byPath.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }))
        let titles = try Self.list(Self.get(server, "/api/tracks?sort=duration&limit=1000")).map { $0["duration_s"] as? Double ?? -1 }
        #expect(titles == titles.sorted())
        #expect(try Self.list(Self.get(server, "/api/tracks?offset=100000")).isEmpty)
    }

    /// Answers are cached while the catalog is unchanged: a file added shows in the lists,
    /// the search and the totals as soon as the catalog has it.
    @Test func answersFollowTheCatalog() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let before = try Self.get(server, "/api/tracks?limit=2")
        let header = try #require(before.header("X-Total-Count"))
        let total = try #require(Int(header))
        #expect(try Self.list(Self.get(server, "/api/search?q=quokka")).isEmpty)
        _ = try Self.get(server, "/api/albums")
        let source = library.appendingPathComponent("Ordered Artist/Ordered Album/a.mp3")
        let tagged = try Data(contentsOf: source)
        let copy = library.appendingPathComponent("Ordered Artist/Ordered Album/e.mp3")
        // The same bytes with another title: "Third Zebra" → "Fifth Quokka" (same length).
        var bytes = [UInt8](tagged)
        let old = Array("Third Zebra".utf8), new = Array("Fifth Quokk".utf8)
        if let at = (0...(bytes.count - old.count)).first(where: { Array(bytes[$0..<($0 + old.count)]) == old }) {
            bytes.replaceSubrange(at..<(at + old.count), with: new)
        }
        try Data(bytes).write(to: copy)
        let deadline = Date().addingTimeInterval(TestTiming.seconds(10))
        var after = total
        while after == total, Date() < deadline {
            after = Int(try Self.get(server, "/api/tracks?limit=2").header("X-Total-Count") ?? "") ?? total
            if after == total { usleep(50_000) }
        }
        #expect(after == total + 1, "the new file counted")
        #expect(try Self.list(Self.get(server, "/api/search?q=quokk")).map { $0["path"] as? String }
                == ["Ordered Artist/Ordered Album/e.mp3"])
        let album = try Self.album(server, titled: "Ordered Album")
        #expect(album["track_count"] as? Int == 5)
    }

    /// The answers cached by target and catalog generation (a page, a search, the streamed
    /// playlist's tag) follow a file changed in place within 2 s, and revalidate to 304 while
    /// nothing changes.
    @Test func cachedAnswers_followAFileChangedInPlace_withinTwoSeconds() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let page = "/api/tracks?offset=0&limit=500&sort=title"
        let before = try Self.get(server, page)
        let etag = try #require(before.header("ETag"))
        #expect(try Self.get(server, page, headers: ["If-None-Match": etag]).status == 304, "unchanged: revalidated")
        #expect(try Self.list(Self.get(server, "/api/search?q=zebra")).count == 1)
        let playlist = try Self.get(server, "/playlist/all.m3u8")
        #expect(playlist.header("Transfer-Encoding") == "chunked" && playlist.header("Content-Length") == nil)
        let listTag = try #require(playlist.header("ETag"))
        #expect(try Self.get(server, "/playlist/all.m3u8", headers: ["If-None-Match": listTag]).status == 304)

        // The same file rewritten in place with another title of the same length.
        let file = library.appendingPathComponent("Ordered Artist/Ordered Album/a.mp3")
        var bytes = [UInt8](try Data(contentsOf: file))
        let old = Array("Third Zebra".utf8), new = Array("Third Quagg".utf8)
        let at = try #require((0...(bytes.count - old.count)).first { Array(bytes[$0..<($0 + old.count)]) == old })
        bytes.replaceSubrange(at..<(at + old.count), with: new)
        let changed = Date()
        try Data(bytes).write(to: file)
        let deadline = changed.addingTimeInterval(TestTiming.seconds(2))
        var found: [[String: Any]] = []
        while found.isEmpty, Date() < deadline {
            found = try Self.list(Self.get(server, "/api/search?q=quagg"))
            if found.isEmpty { usleep(20_000) }
        }
        #expect(found.map { $0["title"] as? String } == ["Third Quagg"], "the search answer follows within 2 s")
        #expect(try Self.list(Self.get(server, "/api/search?q=zebra")).isEmpty, "the old title's cached answer is gone")
        let after = try Self.get(server, page)
        #expect(after.header("ETag") != etag)
        #expect(try Self.list(after).contains { $0["title"] as? String == "Third Quagg" }, "the cached page follows")
        #expect(try Self.get(server, page, headers: ["If-None-Match": etag]).status == 200, "the old tag no longer matches")
        let newList = try Self.get(server, "/playlist/all.m3u8", headers: ["If-None-Match": listTag])
        #expect(newList.status == 200 && String(decoding: newList.body, as: UTF8.self).contains("Third Quagg"))
        #expect(newList.header("ETag") != listTag)
    }

    /// HTTP/1.0 cannot take chunked framing: the playlist ends with the connection.
    @Test func allPlaylist_overHTTP10_endsWithTheConnection() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let chunked = try Self.get(server, "/playlist/all.m3u8")
        let connection = try RawConnection(port: server.port)
        try connection.sendAll("GET /playlist/all.m3u8 HTTP/1.0\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 200 && response.header("Transfer-Encoding") == nil)
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(response.body == chunked.body && response.body.starts(with: Array("#EXTM3U\n".utf8)))
    }

    @Test func badParameters_are400WithAJSONError() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let longQuery = String(repeating: "a", count: 257)
        for target in ["/api/tracks?limit=0", "/api/tracks?limit=1001", "/api/tracks?limit=-1", "/api/tracks?offset=-1",
                       "/api/tracks?offset=1e3", "/api/tracks?offset=100000001", "/api/tracks?sort=bogus",
                       "/api/albums?limit=99999", "/api/artists?offset=x", "/api/search", "/api/search?q=",
                       "/api/search?q=%20%20", "/api/search?q=\(longQuery)", "/api/search?q=%ZZ", "/api/search?q=%C3",
                       "/api/search?q=a%0Ab", "/api/search?q=a&limit=0", "/api/search?q=a&offset=10",
                       "/playlist/search.m3u8", "/playlist/all.m3u8?shuffle=-1", "/playlist/all.m3u8?shuffle=99999999999999999999"] {
            let response = try Self.get(server, target)
            #expect(response.status == 400, "\(target) → \(response.status)")
            #expect(response.header("Content-Type") == "application/json", "\(target)")
            let error = try Self.object(response)["error"] as? String
            #expect(error?.isEmpty == false, "\(target): \(String(decoding: response.body, as: UTF8.self))")
        }
        // 256 bytes is the limit, not past it; a query of punctuation only matches nothing.
        #expect(try Self.get(server, "/api/search?q=\(String(repeating: "a", count: 256))").status == 200)
        #expect(try Self.list(Self.get(server, "/api/search?q=%2B%2B%2A")).isEmpty)
        for target in ["/api/albums/999999", "/api/artists/999999", "/api/cover/999999", "/playlist/album/999999.m3u8",
                       "/api/albums/x", "/api/albums/1x", "/playlist/album/1.m3u"] {
            #expect(try Self.get(server, target).status == 404, "\(target)")
        }
    }

    @Test func search_prefixesOverTitleArtistAlbum_ranked() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        func paths(_ query: String, limit: Int = 100) throws -> [String] {
            try Self.list(Self.get(server, "/api/search?q=\(query)&limit=\(limit)")).map { $0["path"] as? String ?? "" }
        }
        // A prefix of a title word, of an artist word, of an album word; words are all required.
        #expect(try paths("xeno") == ["Ordered Artist/Ordered Album/c.mp3"])
        #expect(try Set(paths("ordered")) == Set(["a", "b", "c", "d"].map { "Ordered Artist/Ordered Album/\($0).mp3" }))
        #expect(try paths("ordered+walr") == ["Ordered Artist/Ordered Album/d.mp3"])
        #expect(try paths("%C3%A7a%20va") == ["Album Ünïcode/01 Ça va — chanson.mp3"], "Unicode, percent-encoded")
        #expect(try paths("ca+va") == ["Album Ünïcode/01 Ça va — chanson.mp3"], "diacritics folded")
        // Ranked: a title hit before an album hit ("chords" is in titles; "Generated" only in an album name).
        let chords = try paths("chords")
        #expect(chords.count >= 3)
        #expect(try paths("spoken").first == "vbr-v2.mp3")
        // limit bounds the list; X-More says there is more.
        let limited = try Self.get(server, "/api/search?q=ordered&limit=2")
        #expect(try Self.list(limited).count == 2)
        #expect(limited.header("X-More") == "true")
        #expect(try Self.get(server, "/api/search?q=ordered&limit=4").header("X-More") == "false")
    }

    @Test func albumsAndArtists_withTracksInDiscTrackOrder() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let albums = try Self.get(server, "/api/albums")
        let albumList = try Self.list(albums)
        #expect(albums.header("X-Total-Count") == String(albumList.count))
        let ordered = try Self.album(server, titled: "Ordered Album")
        #expect(ordered["artist"] as? String == "Ordered Artist")
        #expect(ordered["track_count"] as? Int == 4)
        let id = try #require(ordered["id"] as? Int)
        let detail = try Self.object(Self.get(server, "/api/albums/\(id)"))
        let tracks = try #require(detail["tracks"] as? [[String: Any]])
        #expect(tracks.map { $0["title"] as? String } == ["First Xenops", "Second Yak", "Third Zebra", "Fourth Walrus"])
        #expect(tracks.map { $0["disc"] as? Int } == [1, 1, 2, 2])
        #expect(tracks.map { $0["track"] as? Int } == [1, 2, 1, 2])
        // Pages of albums join up.
        let one = try Self.list(Self.get(server, "/api/albums?offset=0&limit=1"))
        let two = try Self.list(Self.get(server, "/api/albums?offset=1&limit=100"))
        #expect((one + two).map { $0["id"] as? Int } == albumList.map { $0["id"] as? Int })

        let artists = try Self.list(Self.get(server, "/api/artists"))
        let artist = try #require(artists.first { $0["name"] as? String == "Ordered Artist" })
        #expect(artist["track_count"] as? Int == 4)
        let artistID = try #require(artist["id"] as? Int)
        let artistDetail = try Self.object(Self.get(server, "/api/artists/\(artistID)"))
        #expect((artistDetail["albums"] as? [[String: Any]])?.map { $0["id"] as? Int } == [id])
        // Revalidation and preconditions, as every JSON answer.
        let etag = try #require(albums.header("ETag"))
        #expect(try Self.get(server, "/api/albums", headers: ["If-None-Match": etag]).status == 304)
        #expect(try Self.get(server, "/api/albums", headers: ["If-Match": "\"other\""]).status == 412)
        #expect(try Self.get(server, "/api/albums/\(id)", headers: ["If-None-Match": etag]).status == 200)
    }

    @Test func covers_embeddedThenFolderImage_else404() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        // Embedded: the APIC picture of vbr-v2.mp3, byte for byte.
        let generated = try Self.album(server, titled: "Generated Library")
        let picture = try #require(try EmbeddedPictureReader.picture(
            in: MemoryBytes(Array(Data(contentsOf: library.appendingPathComponent("vbr-v2.mp3"))))))
        let embedded = try Self.get(server, "/api/cover/\(try #require(generated["id"] as? Int))")
        #expect(embedded.status == 200)
        #expect(embedded.header("Content-Type") == "image/jpeg")
        #expect(embedded.body == picture.data)
        let etag = try #require(embedded.header("ETag"))
        #expect(try Self.get(server, "/api/cover/\(try #require(generated["id"] as? Int))",
                             headers: ["If-None-Match": etag]).status == 304)
        // Beside the tracks: Cover.JPG, whatever its case.
        let ordered = try Self.album(server, titled: "Ordered Album")
        let folder = try Self.get(server, "/api/cover/\(try #require(ordered["id"] as? Int))")
        #expect(folder.status == 200)
        #expect(folder.header("Content-Type") == "image/jpeg")
        #expect(folder.body == Array(try Data(contentsOf: library.appendingPathComponent("Ordered Artist/Ordered Album/Cover.JPG"))))
        #expect(folder.header("ETag") != nil)
        // None: 404 with a JSON error.
        let unicode = try Self.album(server, titled: "Album Ünïcode")
        let none = try Self.get(server, "/api/cover/\(try #require(unicode["id"] as? Int))")
        #expect(none.status == 404)
        #expect(String(decoding: none.body, as: UTF8.self).contains("no cover"))
    }

    @Test func playlists_albumArtistSearchAndShuffledAll() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let base = server.baseURL
        let ordered = try Self.album(server, titled: "Ordered Album")
        let album = try Self.get(server, "/playlist/album/\(try #require(ordered["id"] as? Int)).m3u8")
        #expect(album.status == 200)
        #expect(album.header("Content-Type") == "audio/x-mpegurl; charset=utf-8")
        let text = String(decoding: album.body, as: UTF8.self)
        let folder = "\(base)/media/Ordered%20Artist/Ordered%20Album"
        #expect(text == """
        #EXTM3U
        #PLAYLIST:Ordered Artist - Ordered Album
        #EXTINF:2,Ordered Artist - First Xenops
        \(folder)/c.mp3
        #EXTINF:2,Ordered Artist - Second Yak
        \(folder)/b.mp3
        #EXTINF:2,Ordered Artist - Third Zebra
        \(folder)/a.mp3
        #EXTINF:2,Ordered Artist - Fourth Walrus
        \(folder)/d.mp3

        """)
        let artists = try Self.list(Self.get(server, "/api/artists"))
        let artistID = try #require(artists.first { $0["name"] as? String == "Ordered Artist" }?["id"] as? Int)
        let artist = String(decoding: try Self.get(server, "/playlist/artist/\(artistID).m3u8").body, as: UTF8.self)
        #expect(PlaylistPlayers.urls(in: try Self.get(server, "/playlist/artist/\(artistID).m3u8"))
                == ["c", "b", "a", "d"].map { "\(folder)/\($0).mp3" }, "\(artist)")
        let search = try Self.get(server, "/playlist/search.m3u8?q=zebra")
        #expect(PlaylistPlayers.urls(in: search) == ["\(folder)/a.mp3"])

        let all = PlaylistPlayers.urls(in: try Self.get(server, "/playlist/all.m3u8"))
        let tracks = try Self.list(Self.get(server, "/api/tracks"))
        #expect(all == tracks.map { base + ($0["url"] as? String ?? "") }, "path order without a seed")
        let seven = PlaylistPlayers.urls(in: try Self.get(server, "/playlist/all.m3u8?shuffle=7"))
        let again = PlaylistPlayers.urls(in: try Self.get(server, "/playlist/all.m3u8?shuffle=7"))
        let eight = PlaylistPlayers.urls(in: try Self.get(server, "/playlist/all.m3u8?shuffle=8"))
        #expect(seven == again, "the same seed, the same order")
        #expect(seven != eight && seven != all, "another seed, another order")
        #expect(seven.sorted() == all.sorted() && eight.sorted() == all.sorted(), "every track once")
    }
}
