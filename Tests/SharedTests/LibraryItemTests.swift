import Testing
import StreamShared

/// `/api/albums` and `/api/artists` documents: the bytes streamd writes, read back by the shared
/// reader, and hostile documents refused with typed errors.
@Suite struct LibraryItemTests {
    static let track = TrackItem(
        path: "Band/Album/01 Ünïcødé.mp3", url: APIRoutes.mediaPath(forLibraryPath: "Band/Album/01 Ünïcødé.mp3"),
        title: "Ünïcødé", artist: "Band", album: "Album \"Live\"", durationSeconds: 201.5, codec: "mp3", container: "mp3",
        sampleRate: 44_100, channels: 2, bitrate: 192_000, size: 4_838_400, etag: "\"1f-49d400-0\"", id: 7, albumID: 3,
        artistID: 2, albumArtist: nil, trackNumber: 1, discNumber: nil, year: 2001, genre: nil)

    static let album = AlbumItem(id: 3, title: "Album \"Live\"", artist: "Band", artistID: 2, trackCount: 12,
                                 durationSeconds: 2712.125, year: 2001, folder: "Band/Album", embeddedCover: true)

    static let artist = ArtistItem(id: 2, name: "Band\tÜ", albumCount: 1, trackCount: 12)

    @Test func album_writesTheContractsBytes() {
        #expect(Self.album.encoded() == #"""
            {"id":3,"title":"Album \"Live\"","artist":"Band","artist_id":2,"track_count":12,"duration_s":2712.125,"year":2001,"folder":"Band/Album","embedded_cover":true,"cover":"/api/cover/3","url":"/api/albums/3","playlist":"/playlist/album/3.m3u8","derived":[]}
            """#)
        var withTracks = Self.album
        withTracks.year = nil
        withTracks.durationSeconds = 1.23456
        withTracks.tracks = [Self.track, Self.track]
        let item = Self.track.encoded()
        #expect(withTracks.encoded() == #"""
            {"id":3,"title":"Album \"Live\"","artist":"Band","artist_id":2,"track_count":12,"duration_s":1.235,"year":null,"folder":"Band/Album","embedded_cover":true,"cover":"/api/cover/3","url":"/api/albums/3","playlist":"/playlist/album/3.m3u8","derived":[],"tracks":[
            """# + item + ",\n" + item + "]}")
        #expect(AlbumItem.encodeList([]) == "[]\n")
        #expect(AlbumItem.encodeList([Self.album, Self.album]) == "[" + Self.album.encoded() + ",\n" + Self.album.encoded() + "]\n")
    }

    @Test func artist_writesTheContractsBytes() {
        #expect(Self.artist.encoded() == #"""
            {"id":2,"name":"Band\tÜ","album_count":1,"track_count":12,"url":"/api/artists/2","playlist":"/playlist/artist/2.m3u8"}
            """#)
        var withAlbums = Self.artist
        withAlbums.albums = [Self.album]
        #expect(withAlbums.encoded().hasSuffix(#","albums":["# + Self.album.encoded() + "]}"))
        #expect(ArtistItem.encodeList([Self.artist]) == "[" + Self.artist.encoded() + "]\n")
    }

    @Test func albums_roundTrip_aloneWithTracksAndInAList() throws {
        #expect(try AlbumItem.decode(Array(Self.album.encoded().utf8)) == Self.album)
        var withTracks = Self.album
        withTracks.tracks = [Self.track]
        #expect(try AlbumItem.decode(Array((withTracks.encoded() + "\n").utf8)) == withTracks)
        var empty = Self.album
        empty.tracks = []
        #expect(try AlbumItem.decode(Array(empty.encoded().utf8)).tracks == [], "an empty list is not an absent one")
        var second = Self.album
        second.id = 4
        second.year = nil
        second.embeddedCover = false
        #expect(try AlbumItem.decodeList(Array(AlbumItem.encodeList([Self.album, second]).utf8)) == [Self.album, second])
        #expect(try AlbumItem.decodeList(Array("[]\n".utf8)) == [])
    }

    /// An album whose title and artist every track took from its folders says so; read back.
    @Test func album_derivedMembers_writtenAndReadBack() throws {
        var derived = Self.album
        derived.derived = [.artist, .title]
        var track = Self.track
        track.derived = [.title, .album, .artist, .albumArtist, .track]
        derived.tracks = [track]
        let text = derived.encoded()
        #expect(text.contains(#""playlist":"/playlist/album/3.m3u8","derived":["title","artist"],"tracks":["#), "\(text)")
        #expect(text.contains(#""derived":["title","artist","album","album_artist","track"]}"#), "\(text)")
        #expect(try AlbumItem.decode(Array(text.utf8)) == derived)
        let older = Self.album.encoded().replacing(#","derived":[]"#, with: "")
        #expect(try AlbumItem.decodeList(Array(("[" + older + "]").utf8)) == [Self.album])
    }

    @Test func artists_roundTrip_aloneWithAlbumsAndInAList() throws {
        #expect(try ArtistItem.decode(Array(Self.artist.encoded().utf8)) == Self.artist)
        var withAlbums = Self.artist
        withAlbums.albums = [Self.album]
        #expect(try ArtistItem.decode(Array(withAlbums.encoded().utf8)) == withAlbums)
        var second = Self.artist
        second.id = 5
        second.name = ""
        #expect(try ArtistItem.decodeList(Array(ArtistItem.encodeList([Self.artist, second]).utf8)) == [Self.artist, second])
    }

    @Test func hostileDocuments_areRefused_withTypedErrors() {
        let album = Self.album.encoded()
        #expect(throws: APIDocumentError.wrongType(member: "[0].id", expected: "a whole number")) {
            try AlbumItem.decodeList(Array(("[" + album.replacingOccurrences(of: #""id":3"#, with: #""id":"3""#) + "]").utf8))
        }
        #expect(throws: APIDocumentError.missing(member: "title")) {
            try AlbumItem.decode(Array(album.replacingOccurrences(of: #""title":"#, with: #""name":"#).utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "embedded_cover", expected: "true or false")) {
            try AlbumItem.decode(Array(album.replacingOccurrences(of: "true", with: "1").utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "tracks", expected: "an array")) {
            try AlbumItem.decode(Array(album.replacingOccurrences(of: "}", with: #","tracks":{}}"#).utf8))
        }
        #expect(throws: APIDocumentError.missing(member: "tracks[0].path")) {
            try AlbumItem.decode(Array(album.replacingOccurrences(of: "}", with: #","tracks":[{}]}"#).utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "the document", expected: "an array")) {
            try AlbumItem.decodeList(Array(album.utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "albums[0]", expected: "an object")) {
            try ArtistItem.decode(Array(Self.artist.encoded().replacingOccurrences(of: "}", with: #","albums":[7]}"#).utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "the document", expected: "an object")) {
            try ArtistItem.decode(Array("[]".utf8))
        }
        let many = "[" + String(repeating: "{},", count: AlbumItem.maxListCount) + "{}]"
        #expect(throws: APIDocumentError.tooMany(member: "the document", limit: AlbumItem.maxListCount)) {
            try AlbumItem.decodeList(Array(many.utf8))
        }
        #expect(throws: APIDocumentError.tooMany(member: "the document", limit: ArtistItem.maxListCount)) {
            try ArtistItem.decodeList(Array(many.utf8))
        }
        let bytes = Array(album.utf8)
        for cut in stride(from: 0, to: bytes.count, by: 7) {
            #expect(throws: APIDocumentError.self) { try AlbumItem.decode(Array(bytes[..<cut])) }
        }
    }
}
