import Foundation
import Testing
@testable import StreamLibrary
@testable import StreamHTTP
@testable import StreamShared

/// Untagged and partly tagged files through the store: what the tags leave empty comes from
/// the path, is marked derived in the API items, is grouped into albums and found by search,
/// and a later scan that reads tags replaces it.
@Suite struct UntaggedCatalogTests {
    typealias Fixture = LibraryStoreTests

    static func untagged(_ path: String, _ n: Int) -> LibraryChange {
        .track(path: path, stamp: Fixture.stamp(n), analysis: Fixture.analysis(title: nil))
    }

    @Test func untaggedFiles_getTitleTrackAlbumAndArtist_fromThePath() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        try store.apply([
            Self.untagged("Nina Quartet/Blue Hours/01 - Morning Light.mp3", 1),
            Self.untagged("Nina Quartet/Blue Hours/02 - Evening Rain.mp3", 2),
            Self.untagged("Nina Quartet/Blue Hours/CD2/1-01 Midnight.mp3", 3),
            Self.untagged("Loose Folder/Drift.wav", 4),
            Self.untagged("07 Root Song.mp3", 5),
        ])
        let morning = try #require(try store.tracks.track(path: "Nina Quartet/Blue Hours/01 - Morning Light.mp3"))
        #expect(morning.title == "Morning Light" && morning.trackNumber == 1 && morning.album == "Blue Hours"
                && morning.artist == "Nina Quartet" && morning.albumArtist == "Nina Quartet" && morning.discNumber == nil)
        #expect(morning.derived == [.title, .track, .album, .artist, .albumArtist])
        let midnight = try #require(try store.tracks.track(path: "Nina Quartet/Blue Hours/CD2/1-01 Midnight.mp3"))
        #expect(midnight.title == "Midnight" && midnight.discNumber == 1 && midnight.trackNumber == 1 && midnight.album == "Blue Hours")
        #expect(midnight.derived.contains(.disc))
        let drift = try #require(try store.tracks.track(path: "Loose Folder/Drift.wav"))
        #expect(drift.title == "Drift" && drift.album == "Loose Folder" && drift.artist == nil && drift.derived == [.title, .album])
        let root = try #require(try store.tracks.track(path: "07 Root Song.mp3"))
        #expect(root.title == "Root Song" && root.trackNumber == 7 && root.album == nil && root.artist == nil
                && root.albumID == nil && root.derived == [.title, .track])

        // Albums: the folder's tracks under the folder above; the disc folder's track with them.
        let albums = try store.albums.page(offset: 0, limit: 10).rows
        #expect(albums.map(\.title) == ["Blue Hours", "Loose Folder"], "\(albums.map(\.title))")
        let blue = try #require(albums.first { $0.title == "Blue Hours" })
        #expect(blue.artistName == "Nina Quartet" && blue.trackCount == 3 && blue.derived == [.title, .artist])
        #expect(try store.albums.album(id: blue.id)?.tracks.map(\.title) == ["Morning Light", "Evening Rain", "Midnight"],
                "the tracks without a disc first (NULL sorts first), then disc 1 (from 1-01)")
        let loose = try #require(albums.first { $0.title == "Loose Folder" })
        #expect(loose.artistName == LibraryStore.unknownArtist && loose.derived == [.title])
        #expect(blue.item().encoded().contains(#""derived":["title","artist"]"#))
        #expect(try store.artists.page(offset: 0, limit: 10).rows.map(\.name) == ["Nina Quartet", LibraryStore.unknownArtist])

        // The stored API item says which fields were derived, as the Track's own item does.
        let json = try TrackJSON.array { each throws(SQLiteError) in try store.tracks.forEach(ids: [morning.id], each) }
        let item = try #require(try TrackItem.decodeList(json.bytes).first)
        #expect(item == morning.item)
        #expect(item.title == "Morning Light" && item.album == "Blue Hours" && item.artist == "Nina Quartet" && item.trackNumber == 1)
        #expect(item.derived == [.title, .track, .album, .artist, .albumArtist])
        var stored: [UInt8] = []
        try store.tracks.forEachJSON(ids: [morning.id]) { stored.append(contentsOf: $0) }
        #expect(String(decoding: stored, as: UTF8.self).hasSuffix(#""derived":["title","artist","album","album_artist","track"]}"#))
    }

    @Test func derivedNames_areSearched_byFTS5AndTheInMemoryIndex() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        try store.apply([
            Self.untagged("Nina Quartet/Blue Hours/01 - Morning Light.mp3", 1),
            Self.untagged("Nina Quartet/Blue Hours/02 - Evening Rain.mp3", 2),
            Self.untagged("Other Band/Ünïcødé Album/01_Straße.mp3", 3),
            .track(path: "Tagged/Album/01.mp3", stamp: Fixture.stamp(4),
                   analysis: Fixture.analysis(title: "Hours of Light", artist: "Tagged Artist", album: "Tagged Album", track: "1")),
        ])
        for inMemory in [false, true] {
            func paths(_ query: String) throws -> [String] {
                try store.tracks.list(ids: try store.search.ids(query: query, limit: 10, inMemoryIndex: inMemory)).map(\.path).sorted()
            }
            #expect(try paths("morning") == ["Nina Quartet/Blue Hours/01 - Morning Light.mp3"], "a derived title")
            #expect(try paths("blue hou") == ["Nina Quartet/Blue Hours/01 - Morning Light.mp3",
                                              "Nina Quartet/Blue Hours/02 - Evening Rain.mp3"], "a derived album")
            #expect(try paths("nina rain") == ["Nina Quartet/Blue Hours/02 - Evening Rain.mp3"], "a derived artist and title")
            #expect(try paths("light").count == 2, "derived and tagged titles alike")
            #expect(try paths("mp3").isEmpty, "the extension is not part of the title")
            #expect(try paths("01").isEmpty, "nor is the track number")
        }
        #expect(try store.search.tracks(query: "straße", limit: 10).map(\.title) == ["Straße"])
        #expect(try store.search.tracks(query: "unic", limit: 10).map(\.album) == ["Ünïcødé Album"])
    }

    @Test func partlyTaggedFiles_getOnlyWhatTheirTagsLack() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        try store.apply([
            // A title and nothing else.
            .track(path: "Folder Artist/Folder Album/03 name.mp3", stamp: Fixture.stamp(1),
                   analysis: Fixture.analysis(title: "Tagged Title")),
            // An artist, no album artist, no album: filed under the tagged artist, album from the folder.
            .track(path: "Various/Mixtape/02 Song.mp3", stamp: Fixture.stamp(2),
                   analysis: Fixture.analysis(title: "Song", artist: "Real Artist")),
            // An album artist and album, no artist: the artist from the folder, the album artist kept.
            .track(path: "Folder Name/Best Of/Song.mp3", stamp: Fixture.stamp(3),
                   analysis: Fixture.analysis(title: "Song", album: "Best Of", albumArtist: "Compilers")),
            // Empty and blank tags say nothing.
            .track(path: "Blank Artist/Blank Album/05 - Blank.mp3", stamp: Fixture.stamp(4),
                   analysis: Fixture.analysis(title: "  ", artist: "", album: " \t", track: "")),
            // Fully tagged: nothing derived, nothing changed (its disc comes from no folder either).
            .track(path: "X/Y/CD1/2-01 file.mp3", stamp: Fixture.stamp(5),
                   analysis: Fixture.analysis(title: "T", artist: "A", album: "B", track: "4/9", disc: "1/2")),
        ])
        let titled = try #require(try store.tracks.track(path: "Folder Artist/Folder Album/03 name.mp3"))
        #expect(titled.title == "Tagged Title" && titled.trackNumber == 3 && titled.album == "Folder Album"
                && titled.artist == "Folder Artist" && titled.derived == [.track, .album, .artist, .albumArtist])
        let mixtape = try #require(try store.tracks.track(path: "Various/Mixtape/02 Song.mp3"))
        #expect(mixtape.artist == "Real Artist" && mixtape.albumArtist == nil && mixtape.album == "Mixtape"
                && mixtape.derived == [.track, .album])
        let best = try #require(try store.tracks.track(path: "Folder Name/Best Of/Song.mp3"))
        #expect(best.artist == "Folder Name" && best.albumArtist == "Compilers" && best.derived == [.artist])
        let blank = try #require(try store.tracks.track(path: "Blank Artist/Blank Album/05 - Blank.mp3"))
        #expect(blank.title == "Blank" && blank.artist == "Blank Artist" && blank.album == "Blank Album" && blank.trackNumber == 5)
        let tagged = try #require(try store.tracks.track(path: "X/Y/CD1/2-01 file.mp3"))
        #expect(tagged.title == "T" && tagged.artist == "A" && tagged.album == "B" && tagged.albumArtist == nil
                && tagged.trackNumber == 4 && tagged.discNumber == 1 && tagged.derived == [])
        #expect(tagged.item.encoded().hasSuffix(#""rg_album_peak":null,"derived":[]}"#))

        let albums = try store.albums.page(offset: 0, limit: 10).rows
        let mixtapeAlbum = try #require(albums.first { $0.title == "Mixtape" })
        #expect(mixtapeAlbum.artistName == "Real Artist" && mixtapeAlbum.derived == [.title])
        let bestAlbum = try #require(albums.first { $0.title == "Best Of" })
        #expect(bestAlbum.artistName == "Compilers" && bestAlbum.derived == [])
        #expect(try #require(albums.first { $0.title == "B" }).derived == [])
    }

    /// A folder of tagged tracks and one untagged file: one album, whose title and artist are
    /// not derived (the tags name them), holding the untagged file too.
    @Test func anUntaggedFile_joinsItsTaggedNeighboursAlbum() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        try store.apply([
            .track(path: "Band/Record/01 One.mp3", stamp: Fixture.stamp(1),
                   analysis: Fixture.analysis(title: "One", artist: "Band", album: "Record", track: "1")),
            Self.untagged("Band/Record/02 Two.mp3", 2),
        ])
        let albums = try store.albums.page(offset: 0, limit: 10).rows
        #expect(albums.count == 1 && albums.first?.trackCount == 2 && albums.first?.derived == [])
        let first = try #require(albums.first)
        let album = try #require(try store.albums.album(id: first.id))
        #expect(album.tracks.map(\.title) == ["One", "Two"])
    }

    /// A tag added later replaces the derived value (its derived album goes when empty, search
    /// follows); a tag removed later brings the derived value back.
    @Test func rescans_replaceDerivedValues_withTagsAddedLater_andBack() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        let path = "Folder Artist/Folder Album/04 - File Title.mp3"
        try store.apply([.track(path: path, stamp: Fixture.stamp(1), analysis: Fixture.analysis(title: nil))])
        #expect(try store.albums.page(offset: 0, limit: 10).rows.map(\.title) == ["Folder Album"])
        #expect(try store.search.tracks(query: "folder", limit: 10).count == 1)

        try store.apply([.track(path: path, stamp: Fixture.stamp(2),
                                analysis: Fixture.analysis(title: "Real Title", artist: "Real Artist", album: "Real Album", track: "9"))])
        let tagged = try #require(try store.tracks.track(path: path))
        #expect(tagged.title == "Real Title" && tagged.artist == "Real Artist" && tagged.album == "Real Album"
                && tagged.albumArtist == nil && tagged.trackNumber == 9 && tagged.derived == [])
        let albums = try store.albums.page(offset: 0, limit: 10).rows
        #expect(albums.map(\.title) == ["Real Album"] && albums.first?.derived == [], "the derived album is gone")
        #expect(try store.artists.page(offset: 0, limit: 10).rows.map(\.name) == ["Real Artist"])
        #expect(try store.search.tracks(query: "folder", limit: 10).isEmpty)
        #expect(try store.search.tracks(query: "file title", limit: 10).isEmpty)
        #expect(try store.search.tracks(query: "real", limit: 10).map(\.path) == [path])
        var stored: [UInt8] = []
        try store.tracks.forEachJSON(ids: [tagged.id]) { stored.append(contentsOf: $0) }
        #expect(try TrackItem.decodeList(Array(("[" + String(decoding: stored, as: UTF8.self) + "]").utf8)) == [tagged.item])

        // Only the album tag is removed: the album comes from the folder again, the rest stays.
        try store.apply([.track(path: path, stamp: Fixture.stamp(3),
                                analysis: Fixture.analysis(title: "Real Title", artist: "Real Artist", track: "9"))])
        let partly = try #require(try store.tracks.track(path: path))
        #expect(partly.album == "Folder Album" && partly.artist == "Real Artist" && partly.derived == [.album])
        let back = try store.albums.page(offset: 0, limit: 10).rows
        #expect(back.map(\.title) == ["Folder Album"] && back.first?.artistName == "Real Artist" && back.first?.derived == [.title])
        #expect(try store.search.tracks(query: "folder alb", limit: 10).map(\.path) == [path])
    }

    /// A database of schema 3 (before derived fields): its untagged rows are read again by the
    /// next scan (their mtime no longer matches), tagged rows are left as they were, and the
    /// stored items, which lack `derived`, are written again.
    @Test func schemaThreeDatabase_marksItsUntaggedRowsForTheNextScan() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        do {
            let db = try SQLiteDatabase(path: path)
            for migration in LibrarySchema.migrations.prefix(3) { try db.execute(migration) }
            try db.execute("PRAGMA application_id = \(LibrarySchema.applicationID); PRAGMA user_version = 3")
            try db.run("INSERT INTO meta(key, value) VALUES ('folder', '/music')")
            for (n, title, album) in [(1, "Tagged", "Album"), (2, nil, nil)] as [(Int, String?, String?)] {
                try db.run("""
                    INSERT INTO tracks(path, size, mtime_ns, inode, title, artist, album, track_number, duration_s, codec, container,
                      sample_rate, channels, bitrate, frames, total_samples, first_frame_offset, encoder_delay, encoder_padding, sort_title)
                    VALUES (?, 1000, 5, ?, ?, ?, ?, 1, 10, 'mp3', 'mp3', 44100, 2, 128000, 383, 441216, 0, 0, 0, ?)
                    """, [.text("Artist/Album/0\(n) Song.mp3"), .int(Int64(n)), .optional(title), .optional(title == nil ? nil : "Artist"),
                          .optional(album), .text(title ?? "0\(n) Song.mp3")])
                try db.run("INSERT INTO track_json(id, json) VALUES (?, x'7b7d')", [.int(Int64(n))])
            }
            db.close()
        }
        let store = try LibraryStore(path: path, folder: "/music")
        let stamps = try store.stamps()
        #expect(stamps["Artist/Album/01 Song.mp3"]?.mtimeNanos == 5, "a tagged row is not read again")
        #expect(stamps["Artist/Album/02 Song.mp3"]?.mtimeNanos == -1, "an untagged row is read again")
        // The items are written from the columns again, with the `derived` member.
        var stored: [UInt8] = []
        try store.tracks.forEachJSON(ids: [1, 2]) { stored.append(contentsOf: $0) }
        #expect(String(decoding: stored, as: UTF8.self).components(separatedBy: #""derived":[]"#).count == 3)
        // The scan's read of the file derives what it lacks.
        try store.apply([Self.untagged("Artist/Album/02 Song.mp3", 7)])
        let row = try #require(try store.tracks.track(path: "Artist/Album/02 Song.mp3"))
        #expect(row.id == 2 && row.title == "Song" && row.album == "Album" && row.artist == "Artist" && row.derived.contains(.album))
    }
}
