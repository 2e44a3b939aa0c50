import StreamShared
import StreamHTTP

/// One track of the library: a row of the catalog's `tracks` table, the one model the store,
/// the routes, the playlists and the radio channels share (a playlist line or a channel's item
/// holds one). It carries what the quick scan read; the exact seek index is not part of it
/// (`Catalog.analysis(forAbsolutePath:file:)` builds or reads that when a client needs it).
public struct Track: Sendable, Equatable {
    /// The row's id (0 for a track not yet written).
    public var id: Int
    /// Path relative to the library folder.
    public var path: String
    /// Size, mtime and inode of the version of the file that was read.
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
    /// `Container.rawValue` of the probed container.
    public var container: String
    public var sampleRate: Int
    public var channels: Int
    public var bitrate: Int
    public var frames: Int
    /// Samples per channel before the gapless trim.
    public var totalSamples: Int
    /// Where the audio frames start (tags before it); they run at most to the end of the file.
    public var firstFrameOffset: Int
    public var encoderDelay: Int
    public var encoderPadding: Int
    public var replayGain: ReplayGain?
    /// Size of the embedded cover picture; nil when the file has none.
    public var coverArtBytes: Int?
    public var artistID: Int?
    public var albumID: Int?
    /// The fields taken from the file's path because the tags said nothing (`PathDerivedTags`).
    public var derived: DerivedFields
    /// Bits per sample of lossless and PCM audio; nil for lossy codecs.
    public var bitsPerSample: Int?

    public init(id: Int, path: String, stamp: FileStamp, title: String?, artist: String?, album: String?,
                albumArtist: String?, trackNumber: Int?, trackTotal: Int?, discNumber: Int?, discTotal: Int?, year: Int?,
                genre: String?, durationSeconds: Double, codec: String, container: String, sampleRate: Int, channels: Int,
                bitrate: Int, frames: Int, totalSamples: Int, firstFrameOffset: Int, encoderDelay: Int, encoderPadding: Int,
                replayGain: ReplayGain?, coverArtBytes: Int?, artistID: Int?, albumID: Int?, derived: DerivedFields = [],
                bitsPerSample: Int? = nil) {
        self.id = id
        self.path = path
        self.stamp = stamp
        self.title = title
        self.artist = artist
        self.album = album
        self.albumArtist = albumArtist
        self.trackNumber = trackNumber
        self.trackTotal = trackTotal
        self.discNumber = discNumber
        self.discTotal = discTotal
        self.year = year
        self.genre = genre
        self.durationSeconds = durationSeconds
        self.codec = codec
        self.container = container
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = bitrate
        self.frames = frames
        self.totalSamples = totalSamples
        self.firstFrameOffset = firstFrameOffset
        self.encoderDelay = encoderDelay
        self.encoderPadding = encoderPadding
        self.replayGain = replayGain
        self.coverArtBytes = coverArtBytes
        self.artistID = artistID
        self.albumID = albumID
        self.derived = derived
        self.bitsPerSample = bitsPerSample
    }

    /// The track as the catalog writes it for the file at `path` (relative) read as `analysis`:
    /// numbers out of the "3/12" tags, a duration that is not finite as 0; no ids yet. What the
    /// tags leave empty is taken from the path (`deriveFromPath()`).
    public init(id: Int = 0, path: String, stamp: FileStamp, analysis a: TrackAnalysis) {
        let tags = a.tags
        let gain = tags.replayGain
        self.init(id: id, path: path, stamp: stamp, title: Self.said(tags.title), artist: Self.said(tags.artist),
                  album: Self.said(tags.album), albumArtist: Self.said(tags.albumArtist),
                  trackNumber: TrackTags.leadingNumber(tags.track),
                  trackTotal: TrackTags.total(tags.track), discNumber: TrackTags.leadingNumber(tags.disc),
                  discTotal: TrackTags.total(tags.disc), year: tags.year, genre: tags.genre,
                  durationSeconds: a.durationSeconds.isFinite ? a.durationSeconds : 0, codec: a.codec,
                  container: a.container.rawValue, sampleRate: a.sampleRate, channels: a.channels, bitrate: a.bitrate,
                  frames: a.frames, totalSamples: a.totalSamples, firstFrameOffset: a.firstFrameOffset,
                  encoderDelay: a.encoderDelay, encoderPadding: a.encoderPadding,
                  replayGain: gain.flatMap { $0.isEmpty ? nil : $0 }, coverArtBytes: tags.coverArtBytes,
                  artistID: nil, albumID: nil, bitsPerSample: a.bitsPerSample)
        deriveFromPath()
    }

    /// A tag's text, nil when it says nothing (absent, empty or only ASCII whitespace).
    static func said(_ tag: String?) -> String? {
        guard let tag, tag.utf8.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else { return nil }
        return tag
    }

    /// Fills the fields the tags left empty from the path (`PathDerivedTags`) and notes them in
    /// `derived`: title, track and disc number, album, artist. The album artist only when the
    /// tags name no artist either (then it is the derived artist): a file tagged with an artist
    /// and no album artist stays filed under its artist, as before.
    mutating func deriveFromPath() {
        guard title == nil || artist == nil || album == nil || trackNumber == nil || discNumber == nil else { return }
        let fromPath = PathDerivedTags(path: path)
        if title == nil {
            title = fromPath.title
            derived.insert(.title)
        }
        if trackNumber == nil, let number = fromPath.trackNumber {
            trackNumber = number
            derived.insert(.track)
        }
        if discNumber == nil, let number = fromPath.discNumber {
            discNumber = number
            derived.insert(.disc)
        }
        if album == nil, let name = fromPath.album {
            album = name
            derived.insert(.album)
        }
        if artist == nil, let name = fromPath.artist {
            artist = name
            derived.insert(.artist)
            if albumArtist == nil {
                albumArtist = name
                derived.insert(.albumArtist)
            }
        }
    }

    /// The title, or the file name when the track has no title tag.
    public var displayTitle: String { title ?? Self.fileName(path) }
    /// `<artist> - <title>` as a playlist line shows it (the title alone without an artist).
    public var label: String { Self.label(title: displayTitle, artist: artist) }
    public var etag: String { stamp.etag }
    /// The percent-encoded `/media/` URL path.
    public var url: String { APIRoutes.mediaPath(forLibraryPath: path) }

    /// The track as an API track item.
    public var item: TrackItem {
        TrackItem(path: path, url: url, title: title, artist: artist, album: album, durationSeconds: durationSeconds,
                  codec: codec, container: container, sampleRate: sampleRate, channels: channels, bitrate: bitrate,
                  size: stamp.size, etag: etag, id: id, albumID: albumID, artistID: artistID, albumArtist: albumArtist,
                  trackNumber: trackNumber, discNumber: discNumber, year: year, genre: genre, derived: derived,
                  bitsPerSample: bitsPerSample, replayGain: replayGain,
                  gapless: TrackItem.Gapless(firstFrameOffset: firstFrameOffset, encoderDelay: encoderDelay,
                                             encoderPadding: encoderPadding, totalSamples: totalSamples))
    }

    /// `<artist> - <title>`, or the title alone when the artist is absent or empty.
    public static func label(title: String, artist: String?) -> String {
        guard let artist, !artist.isEmpty else { return title }
        return "\(artist) - \(title)"
    }

    /// The last component of a relative path.
    public static func fileName(_ path: String) -> String {
        String(path.split(separator: "/").last ?? Substring(path))
    }
}
