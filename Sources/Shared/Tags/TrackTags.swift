/// The descriptive metadata a track carries, whichever tag format it came from.
public struct TrackTags: Sendable, Equatable, Codable {
    public var title: String?
    public var artist: String?
    public var album: String?
    /// Track number as written ("3" or "3/12").
    public var track: String?
    /// Size in bytes of the embedded cover picture, if any (the picture itself is not kept).
    public var coverArtBytes: Int?
    /// The album's artist (ID3 TPE2, MP4 aART), when it differs from or stands in for the track's.
    public var albumArtist: String?
    /// Disc number as written ("1" or "1/2").
    public var disc: String?
    /// Release date as written ("2004", "2004-05-01"); `year` reads its first four digits.
    public var date: String?
    public var genre: String?
    /// ReplayGain values, when the file carries them.
    public var replayGain: ReplayGain?

    public init(title: String? = nil, artist: String? = nil, album: String? = nil,
                track: String? = nil, coverArtBytes: Int? = nil, albumArtist: String? = nil,
                disc: String? = nil, date: String? = nil, genre: String? = nil, replayGain: ReplayGain? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
        self.track = track
        self.coverArtBytes = coverArtBytes
        self.albumArtist = albumArtist
        self.disc = disc
        self.date = date
        self.genre = genre
        self.replayGain = replayGain
    }

    /// True when no field is set.
    public var isEmpty: Bool {
        title == nil && artist == nil && album == nil && track == nil && coverArtBytes == nil
            && albumArtist == nil && disc == nil && date == nil && genre == nil && replayGain == nil
    }

    /// Fills fields that are nil here from `other` (the earlier/better tag wins).
    public func merged(with other: TrackTags?) -> TrackTags {
        guard let other else { return self }
        return TrackTags(title: title ?? other.title, artist: artist ?? other.artist,
                         album: album ?? other.album, track: track ?? other.track,
                         coverArtBytes: coverArtBytes ?? other.coverArtBytes,
                         albumArtist: albumArtist ?? other.albumArtist, disc: disc ?? other.disc,
                         date: date ?? other.date, genre: genre ?? other.genre,
                         replayGain: ReplayGain.merged(replayGain, other.replayGain))
    }

    /// "3/12" → 3; nil when the text does not start with a positive number.
    public static func leadingNumber(_ text: String?) -> Int? {
        guard let text else { return nil }
        let digits = text.drop { $0 == " " }.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 6, let value = Int(digits), value > 0 else { return nil }
        return value
    }

    /// "3/12" → 12; nil without a total.
    public static func total(_ text: String?) -> Int? {
        guard let text, let slash = text.firstIndex(of: "/") else { return nil }
        return leadingNumber(String(text[text.index(after: slash)...]))
    }

    /// The year of `date` ("2004-05-01" → 2004), when it starts with four digits in 1…9999.
    public var year: Int? {
        guard let date else { return nil }
        let digits = date.drop { $0 == " " }.prefix(4)
        guard digits.count == 4, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(digits), value > 0 else {
            return nil
        }
        return value
    }
}
