/// The descriptive metadata a track carries, whichever tag format it came from.
public struct TrackTags: Sendable, Equatable, Codable {
    public var title: String?
    public var artist: String?
    public var album: String?
    /// Track number as written ("3" or "3/12").
    public var track: String?
    /// Size in bytes of the embedded cover picture, if any (the picture itself is not kept).
    public var coverArtBytes: Int?
    /// ReplayGain values, when the file carries them.
    public var replayGain: ReplayGain?

    public init(title: String? = nil, artist: String? = nil, album: String? = nil,
                track: String? = nil, coverArtBytes: Int? = nil, replayGain: ReplayGain? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
        self.track = track
        self.coverArtBytes = coverArtBytes
        self.replayGain = replayGain
    }

    /// True when no field is set.
    public var isEmpty: Bool {
        title == nil && artist == nil && album == nil && track == nil && coverArtBytes == nil && replayGain == nil
    }

    /// Fills fields that are nil here from `other` (the earlier/better tag wins).
    public func merged(with other: TrackTags?) -> TrackTags {
        guard let other else { return self }
        return TrackTags(title: title ?? other.title, artist: artist ?? other.artist,
                         album: album ?? other.album, track: track ?? other.track,
                         coverArtBytes: coverArtBytes ?? other.coverArtBytes,
                         replayGain: ReplayGain.merged(replayGain, other.replayGain))
    }
}
