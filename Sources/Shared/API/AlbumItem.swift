/// One album of `/api/albums` (a page of them) and `/api/albums/<id>` (one, with its tracks),
/// and of an artist's `albums`: as streamd writes it (`encoded`) and as streamplay reads it
/// (`decodeList`, `decode`).
public struct AlbumItem: Sendable, Equatable {
    public var id: Int
    public var title: String
    /// The name the album is filed under: its album artist, else its artist.
    public var artist: String
    public var artistID: Int
    public var trackCount: Int
    /// The tracks' durations summed (written with 3 decimals).
    public var durationSeconds: Double
    /// The latest year of its tracks, nil when none has one.
    public var year: Int?
    /// The folder (relative to the library) of its first track, where cover.jpg and the like sit.
    public var folder: String
    /// Whether one of its tracks embeds a cover picture.
    public var embeddedCover: Bool
    /// `/api/cover/<id>`.
    public var cover: String
    /// `/api/albums/<id>`.
    public var url: String
    /// `/playlist/album/<id>.m3u8`.
    public var playlist: String
    /// Its tracks in disc, then track number order: in `/api/albums/<id>` only (nil: the member is absent).
    public var tracks: [TrackItem]?
    /// `.title` when its title is every track's folder, not a tag; `.artist` likewise (`DerivedFields`).
    public var derived: DerivedFields

    /// An album whose links (`cover`, `url`, `playlist`) are streamd's for `id`.
    public init(id: Int, title: String, artist: String, artistID: Int, trackCount: Int, durationSeconds: Double,
                year: Int?, folder: String, embeddedCover: Bool, tracks: [TrackItem]? = nil, derived: DerivedFields = []) {
        self.init(id: id, title: title, artist: artist, artistID: artistID, trackCount: trackCount,
                  durationSeconds: durationSeconds, year: year, folder: folder, embeddedCover: embeddedCover,
                  cover: "/api/cover/\(id)", url: "/api/albums/\(id)", playlist: "/playlist/album/\(id).m3u8", tracks: tracks,
                  derived: derived)
    }

    public init(id: Int, title: String, artist: String, artistID: Int, trackCount: Int, durationSeconds: Double,
                year: Int?, folder: String, embeddedCover: Bool, cover: String, url: String, playlist: String,
                tracks: [TrackItem]?, derived: DerivedFields = []) {
        self.id = id
        self.title = title
        self.artist = artist
        self.artistID = artistID
        self.trackCount = trackCount
        self.durationSeconds = durationSeconds
        self.year = year
        self.folder = folder
        self.embeddedCover = embeddedCover
        self.cover = cover
        self.url = url
        self.playlist = playlist
        self.tracks = tracks
        self.derived = derived
    }

    /// Most albums `decodeList` takes, and tracks an album's `tracks`.
    public static let maxListCount = 10_000

    // MARK: writing

    /// The album's JSON text (one object, no newline); `tracks` as `TrackItem` writes them, ",\n" between.
    public func encoded() -> String {
        var w = JSONObjectWriter()
        w.add("id", id)
        w.add("title", title)
        w.add("artist", artist)
        w.add("artist_id", artistID)
        w.add("track_count", trackCount)
        w.add("duration_s", durationSeconds, decimals: 3)
        w.add("year", year)
        w.add("folder", folder)
        w.add("embedded_cover", embeddedCover)
        w.add("cover", cover)
        w.add("url", url)
        w.add("playlist", playlist)
        w.addRaw("derived", derived.json)
        if let tracks { w.addRaw("tracks", "[" + tracks.map { $0.encoded() }.joined(separator: ",\n") + "]") }
        return w.text
    }

    /// A page of albums as `/api/albums` answers: the items, ",\n" between, in an array, then a newline.
    public static func encodeList(_ albums: [AlbumItem]) -> String {
        "[" + albums.map { $0.encoded() }.joined(separator: ",\n") + "]\n"
    }

    // MARK: reading

    /// Reads a JSON array of albums (`/api/albums`): at most `maxListCount`; anything else is a typed error.
    public static func decodeList(_ bytes: [UInt8]) throws(APIDocumentError) -> [AlbumItem] {
        // 14 values an album without tracks, with room for members added later.
        let root = try APIObjectReader.parse(bytes, maxValues: maxListCount * 32 + 1)
        return try decodeArray(root, member: "the document")
    }

    /// Reads one album (`/api/albums/<id>`, `encoded()`'s text).
    public static func decode(_ bytes: [UInt8]) throws(APIDocumentError) -> AlbumItem {
        // An album's tracks are up to 40 values each (`TrackItem`).
        try decode(APIObjectReader.parse(bytes, maxValues: maxListCount * 48 + 64), context: "")
    }

    static func decodeArray(_ value: JSONValue, member: String) throws(APIDocumentError) -> [AlbumItem] {
        guard case .array(let values) = value else { throw .wrongType(member: member, expected: "an array") }
        guard values.count <= maxListCount else { throw .tooMany(member: member, limit: maxListCount) }
        var albums: [AlbumItem] = []
        albums.reserveCapacity(values.count)
        let prefix = member == "the document" ? "" : member
        for (i, value) in values.enumerated() { albums.append(try decode(value, context: "\(prefix)[\(i)]")) }
        return albums
    }

    static func decode(_ value: JSONValue, context: String) throws(APIDocumentError) -> AlbumItem {
        let r = try APIObjectReader(value, context: context)
        var tracks: [TrackItem]?
        if r.members["tracks"] != nil {
            var list: [TrackItem] = []
            for (i, item) in try r.array("tracks", limit: maxListCount).enumerated() {
                list.append(try TrackItem.decode(item, context: r.name("tracks") + "[\(i)]"))
            }
            tracks = list
        }
        return AlbumItem(id: try r.int("id"), title: try r.string("title"), artist: try r.string("artist"),
                         artistID: try r.int("artist_id"), trackCount: try r.int("track_count"),
                         durationSeconds: try r.double("duration_s"), year: try r.optionalInt("year"),
                         folder: try r.string("folder"), embeddedCover: try r.bool("embedded_cover"),
                         cover: try r.string("cover"), url: try r.string("url"), playlist: try r.string("playlist"),
                         tracks: tracks, derived: try DerivedFields.read(r))
    }
}

/// One artist of `/api/artists` (a page of them) and `/api/artists/<id>` (one, with its
/// albums): as streamd writes it (`encoded`) and as a reader decodes it (`decodeList`, `decode`).
public struct ArtistItem: Sendable, Equatable {
    public var id: Int
    public var name: String
    /// Albums filed under the artist.
    public var albumCount: Int
    /// Tracks whose artist it is.
    public var trackCount: Int
    /// `/api/artists/<id>`.
    public var url: String
    /// `/playlist/artist/<id>.m3u8`.
    public var playlist: String
    /// The albums filed under it or holding its tracks: in `/api/artists/<id>` only (nil: the member is absent).
    public var albums: [AlbumItem]?

    /// An artist whose links (`url`, `playlist`) are streamd's for `id`.
    public init(id: Int, name: String, albumCount: Int, trackCount: Int, albums: [AlbumItem]? = nil) {
        self.init(id: id, name: name, albumCount: albumCount, trackCount: trackCount, url: "/api/artists/\(id)",
                  playlist: "/playlist/artist/\(id).m3u8", albums: albums)
    }

    public init(id: Int, name: String, albumCount: Int, trackCount: Int, url: String, playlist: String, albums: [AlbumItem]?) {
        self.id = id
        self.name = name
        self.albumCount = albumCount
        self.trackCount = trackCount
        self.url = url
        self.playlist = playlist
        self.albums = albums
    }

    /// Most artists `decodeList` takes, and albums an artist's `albums`.
    public static let maxListCount = 10_000

    // MARK: writing

    /// The artist's JSON text (one object, no newline); `albums` as `AlbumItem` writes them, ",\n" between.
    public func encoded() -> String {
        var w = JSONObjectWriter()
        w.add("id", id)
        w.add("name", name)
        w.add("album_count", albumCount)
        w.add("track_count", trackCount)
        w.add("url", url)
        w.add("playlist", playlist)
        if let albums { w.addRaw("albums", "[" + albums.map { $0.encoded() }.joined(separator: ",\n") + "]") }
        return w.text
    }

    /// A page of artists as `/api/artists` answers: the items, ",\n" between, in an array, then a newline.
    public static func encodeList(_ artists: [ArtistItem]) -> String {
        "[" + artists.map { $0.encoded() }.joined(separator: ",\n") + "]\n"
    }

    // MARK: reading

    /// Reads a JSON array of artists (`/api/artists`): at most `maxListCount`; anything else is a typed error.
    public static func decodeList(_ bytes: [UInt8]) throws(APIDocumentError) -> [ArtistItem] {
        let root = try APIObjectReader.parse(bytes, maxValues: maxListCount * 16 + 1)
        guard case .array(let values) = root else { throw .wrongType(member: "the document", expected: "an array") }
        guard values.count <= maxListCount else { throw .tooMany(member: "the document", limit: maxListCount) }
        var artists: [ArtistItem] = []
        artists.reserveCapacity(values.count)
        for (i, value) in values.enumerated() { artists.append(try decode(value, context: "[\(i)]")) }
        return artists
    }

    /// Reads one artist (`/api/artists/<id>`, `encoded()`'s text).
    public static func decode(_ bytes: [UInt8]) throws(APIDocumentError) -> ArtistItem {
        try decode(APIObjectReader.parse(bytes, maxValues: AlbumItem.maxListCount * 32 + 64), context: "")
    }

    static func decode(_ value: JSONValue, context: String) throws(APIDocumentError) -> ArtistItem {
        let r = try APIObjectReader(value, context: context)
        var albums: [AlbumItem]?
        if r.members["albums"] != nil {
            albums = try AlbumItem.decodeArray(try r.value("albums"), member: r.name("albums"))
        }
        return ArtistItem(id: try r.int("id"), name: try r.string("name"), albumCount: try r.int("album_count"),
                          trackCount: try r.int("track_count"), url: try r.string("url"), playlist: try r.string("playlist"),
                          albums: albums)
    }
}
