import StreamShared
import StreamHTTP

/// One track row of the catalog database.
public struct TrackRow: Sendable, Equatable {
    public var id: Int
    /// Path relative to the library folder.
    public var path: String
    public var stamp: FileStamp
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var trackNumber: Int?
    public var trackTotal: Int?
    public var discNumber: Int?
    public var discTotal: Int?
    public var year: Int?
    public var genre: String?
    public var durationSeconds: Double
    public var codec: String
    public var container: String
    public var sampleRate: Int
    public var channels: Int
    public var bitrate: Int
    public var frames: Int
    public var totalSamples: Int
    public var firstFrameOffset: Int
    public var encoderDelay: Int
    public var encoderPadding: Int
    public var replayGain: ReplayGain?
    /// Size of the embedded cover picture; nil when the file has none.
    public var coverArtBytes: Int?
    public var artistID: Int?
    public var albumID: Int?

    /// The title, or the file name when the track has no title tag.
    public var displayTitle: String { title ?? Self.fileName(path) }
    public var etag: String { stamp.etag }
    /// The percent-encoded `/media/` URL path.
    public var url: String { APIRoutes.mediaPath(forLibraryPath: path) }

    /// The row as an API track item.
    public var item: TrackItem {
        TrackItem(path: path, url: url, title: title, artist: artist, album: album, durationSeconds: durationSeconds,
                  codec: codec, container: container, sampleRate: sampleRate, channels: channels, bitrate: bitrate,
                  size: stamp.size, etag: etag, id: id, albumID: albumID, artistID: artistID, albumArtist: albumArtist,
                  trackNumber: trackNumber, discNumber: discNumber, year: year, genre: genre)
    }

    static func fileName(_ path: String) -> String {
        String(path.split(separator: "/").last ?? Substring(path))
    }
}

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
}

/// One artist: a track artist or an album artist.
public struct ArtistRow: Sendable, Equatable {
    public var id: Int
    public var name: String
    public var albumCount: Int
    public var trackCount: Int
}

/// Where an album's cover may come from.
public struct CoverSource: Sendable, Equatable {
    /// Relative path of a track that embeds a picture (ID3 APIC/PIC, MP4 covr), when one does.
    public var embeddedTrackPath: String?
    /// Relative folder of the album's first track ("" for the library root).
    public var folder: String
}

/// The orders `tracks(offset:limit:sort:)` can list in; every order ends on the path, so it is total and stable.
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
    case track(path: String, stamp: FileStamp, analysis: TrackAnalysis)
    case skipped(path: String, stamp: FileStamp, reason: String, quarantined: Bool)
    case removed(path: String)
}

/// A file under the folder that is not listed, and why.
public struct SkippedRow: Sendable, Equatable {
    public var path: String
    public var stamp: FileStamp
    public var reason: String
    public var quarantined: Bool
}
