import StreamShared
import StreamHTTP

/// One album: tracks grouped by album artist (else artist) and album title.
public struct AlbumRow: Sendable, Equatable {
    public var id: Int
    public var title: String
    public var artistID: Int
    public var artistName: String
    public var trackCount: Int
    public var durationSeconds: Double
    public var year: Int?
    /// A track of the album whose file embeds a cover picture (the first such in disc/track order).
    public var coverTrackPath: String?
    /// The folder (relative to the library) of the album's first track, where cover.jpg and the like sit.
    public var folder: String
    /// `.title` / `.artist` when every track took its album / album artist from the path.
    public var derived: DerivedFields = []
}

/// One artist: a track artist or an album artist.
public struct ArtistRow: Sendable, Equatable {
    public var id: Int
    public var name: String
    public var albumCount: Int
    public var trackCount: Int
}

extension AlbumRow {
    /// The album as an API album item, with `tracks` when given (`/api/albums/<id>`).
    public func item(tracks: [Track]? = nil) -> AlbumItem {
        AlbumItem(id: id, title: title, artist: artistName, artistID: artistID, trackCount: trackCount,
                  durationSeconds: durationSeconds, year: year, folder: folder, embeddedCover: coverTrackPath != nil,
                  tracks: tracks?.map(\.item), derived: derived)
    }
}

extension ArtistRow {
    /// The artist as an API artist item, with `albums` when given (`/api/artists/<id>`).
    public func item(albums: [AlbumRow]? = nil) -> ArtistItem {
        ArtistItem(id: id, name: name, albumCount: albumCount, trackCount: trackCount, albums: albums?.map { $0.item() })
    }
}

/// Where an album's cover may come from.
public struct CoverSource: Sendable, Equatable {
    /// Relative path of a track that embeds a picture (ID3 APIC/PIC, MP4 covr), when one does.
    public var embeddedTrackPath: String?
    /// Relative folder of the album's first track ("" for the library root).
    public var folder: String
}

/// The orders `TrackRepository.page(offset:limit:sort:)` can list in; every order ends on the path, so it is total and stable.
public enum TrackSort: String, Sendable, CaseIterable {
    case path
    case title
    case artist
    case album
    case duration
    case year
}

/// A change the scanner writes to the database.
public enum LibraryChange: Sendable {
    /// A track listed or changed (its `id`, `artistID` and `albumID` are the store's to give).
    case track(Track)
    case skipped(path: String, stamp: FileStamp, reason: String, quarantined: Bool)
    case removed(path: String)

    /// The track the file at `path` (relative), read as `analysis`, is listed as.
    public static func track(path: String, stamp: FileStamp, analysis: TrackAnalysis) -> LibraryChange {
        .track(Track(path: path, stamp: stamp, analysis: analysis))
    }
}

/// A file under the folder that is not listed, and why.
public struct SkippedRow: Sendable, Equatable {
    public var path: String
    public var stamp: FileStamp
    public var reason: String
    public var quarantined: Bool
}
