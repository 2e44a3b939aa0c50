/// One track of `/api/tracks`, `/api/search` and an album's `tracks`: as streamd writes it
/// (from a catalog row, `TrackItem.append`) and as streamplay reads it (`decodeList`).
public struct TrackItem: Sendable, Equatable {
    /// Path relative to the library folder.
    public var path: String
    /// The percent-encoded `/media/` URL path (`APIRoutes.mediaPath(forLibraryPath:)` of `path`).
    public var url: String
    public var title: String?
    public var artist: String?
    public var album: String?
    /// Nil is written as null (and so is a non-finite duration).
    public var durationSeconds: Double?
    public var codec: String
    public var container: String
    public var sampleRate: Int
    public var channels: Int
    public var bitrate: Int
    /// File size in bytes.
    public var size: Int
    /// The file's validator, quotes included.
    public var etag: String
    public var id: Int
    public var albumID: Int?
    public var artistID: Int?
    public var albumArtist: String?
    public var trackNumber: Int?
    public var discNumber: Int?
    public var year: Int?
    public var genre: String?
    /// The members the catalog took from the file's path, not its tags (`DerivedFields`).
    public var derived: DerivedFields
    /// Bits per sample of lossless and PCM audio (FLAC, ALAC, AIFF, WAV); nil for lossy codecs.
    public var bitsPerSample: Int?
    /// ReplayGain values (dB against ReplayGain's reference; R128 tags already moved there by +5 dB).
    public var replayGain: ReplayGain?
    /// The gapless values (`/api/index`'s, from the catalog row), so a player can trim and place
    /// the track without asking for its index first: where the audio frames start in the file,
    /// the encoder's delay and padding, and the samples per channel before that trim. Nil when
    /// the item came from a server that does not write them.
    public var gapless: Gapless?

    /// A track's gapless values (`gapless`).
    public struct Gapless: Sendable, Equatable {
        public var firstFrameOffset: Int
        public var encoderDelay: Int
        public var encoderPadding: Int
        public var totalSamples: Int
        public init(firstFrameOffset: Int, encoderDelay: Int, encoderPadding: Int, totalSamples: Int) {
            self.firstFrameOffset = firstFrameOffset
            self.encoderDelay = encoderDelay
            self.encoderPadding = encoderPadding
            self.totalSamples = totalSamples
        }
    }

    public init(path: String, url: String, title: String?, artist: String?, album: String?, durationSeconds: Double?,
                codec: String, container: String, sampleRate: Int, channels: Int, bitrate: Int, size: Int, etag: String,
                id: Int, albumID: Int?, artistID: Int?, albumArtist: String?, trackNumber: Int?, discNumber: Int?,
                year: Int?, genre: String?, derived: DerivedFields = [], bitsPerSample: Int? = nil,
                replayGain: ReplayGain? = nil, gapless: Gapless? = nil) {
        self.path = path
        self.url = url
        self.title = title
        self.artist = artist
        self.album = album
        self.durationSeconds = durationSeconds
        self.codec = codec
        self.container = container
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = bitrate
        self.size = size
        self.etag = etag
        self.id = id
        self.albumID = albumID
        self.artistID = artistID
        self.albumArtist = albumArtist
        self.trackNumber = trackNumber
        self.discNumber = discNumber
        self.year = year
        self.genre = genre
        self.derived = derived
        self.bitsPerSample = bitsPerSample
        self.replayGain = replayGain.flatMap { $0.isEmpty ? nil : $0 }
        self.gapless = gapless
    }

    /// The text members, for `TrackItemFields`.
    public enum TextMember: Sendable {
        case path, url, title, artist, album, codec, container, etag, albumArtist, genre
    }

    /// The whole-number members, for `TrackItemFields`.
    public enum IntegerMember: Sendable {
        case sampleRate, channels, bitrate, size, id, albumID, artistID, trackNumber, discNumber, year, bitsPerSample
        case firstFrameOffset, encoderDelay, encoderPadding, totalSamples
    }

    /// The fractional members, for `TrackItemFields`.
    public enum NumberMember: Sendable {
        case trackGain, trackPeak, albumGain, albumPeak
    }

    /// Most items `decodeList` takes (an API page holds at most 1000).
    public static let maxListCount = 10_000

    // MARK: writing

    /// The item's JSON text (one object, no newline).
    public func encoded() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        Self.append(self, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Writes one item from `fields` into `out`: the only writer of the item's JSON, for a
    /// `TrackItem` and for a catalog row read in place alike. Bytes, not Strings: streamd writes
    /// an item for every track it lists or stores (built through Strings, a page of 100 cost 1 ms).
    /// Inlinable, so that streamd's call is specialised for its row type (no dynamic call per member).
    @inlinable
    public static func append(_ fields: some TrackItemFields, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        text("path", .path, fields, &out, first: true)
        if fields.urlIsMediaPathOfPath {
            // Percent-encoded bytes need no JSON escape: written in place, with no url buffer.
            JSONBytes.key("url", &out)
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: APIRoutes.mediaPrefix.utf8)
            fields.withText(.path) { path in
                if let path { APIRoutes.appendPercentEncoded(path, to: &out) }
            }
            out.append(UInt8(ascii: "\""))
        } else {
            text("url", .url, fields, &out)
        }
        text("title", .title, fields, &out)
        text("artist", .artist, fields, &out)
        text("album", .album, fields, &out)
        JSONBytes.key("duration_s", &out)
        if let seconds = fields.durationSeconds {
            out.append(contentsOf: JSONObjectWriter.number(seconds).utf8)
        } else {
            JSONBytes.null(&out)
        }
        text("codec", .codec, fields, &out)
        text("container", .container, fields, &out)
        integer("sample_rate", .sampleRate, fields, &out)
        integer("channels", .channels, fields, &out)
        integer("bitrate", .bitrate, fields, &out)
        integer("bits_per_sample", .bitsPerSample, fields, &out)
        integer("first_frame_offset", .firstFrameOffset, fields, &out)
        integer("encoder_delay", .encoderDelay, fields, &out)
        integer("encoder_padding", .encoderPadding, fields, &out)
        integer("total_samples", .totalSamples, fields, &out)
        integer("size", .size, fields, &out)
        text("etag", .etag, fields, &out)
        integer("id", .id, fields, &out)
        integer("album_id", .albumID, fields, &out)
        integer("artist_id", .artistID, fields, &out)
        text("album_artist", .albumArtist, fields, &out)
        integer("track", .trackNumber, fields, &out)
        integer("disc", .discNumber, fields, &out)
        integer("year", .year, fields, &out)
        text("genre", .genre, fields, &out)
        number("rg_track_gain", .trackGain, fields, &out)
        number("rg_track_peak", .trackPeak, fields, &out)
        number("rg_album_gain", .albumGain, fields, &out)
        number("rg_album_peak", .albumPeak, fields, &out)
        JSONBytes.key("derived", &out)
        fields.derived.append(to: &out)
        out.append(UInt8(ascii: "}"))
    }

    @inlinable @inline(__always)
    static func text(_ key: StaticString, _ member: TextMember, _ fields: some TrackItemFields,
                             _ out: inout [UInt8], first: Bool = false) {
        JSONBytes.key(key, &out, first: first)
        fields.withText(member) { bytes in
            if let bytes { JSONBytes.string(bytes, &out) } else { JSONBytes.null(&out) }
        }
    }

    @inlinable @inline(__always)
    static func integer(_ key: StaticString, _ member: IntegerMember, _ fields: some TrackItemFields,
                                _ out: inout [UInt8]) {
        JSONBytes.key(key, &out)
        if let value = fields.integer(member) { JSONBytes.integer(value, &out) } else { JSONBytes.null(&out) }
    }

    @inlinable @inline(__always)
    static func number(_ key: StaticString, _ member: NumberMember, _ fields: some TrackItemFields, _ out: inout [UInt8]) {
        JSONBytes.key(key, &out)
        if let value = fields.number(member), value.isFinite {
            out.append(contentsOf: JSONObjectWriter.number(value).utf8)
        } else {
            JSONBytes.null(&out)
        }
    }

    // MARK: reading

    /// Reads a JSON array of items (as `/api/tracks` and `/api/search` answer): at most
    /// `maxListCount`; anything else is a typed error.
    public static func decodeList(_ bytes: [UInt8]) throws(APIDocumentError) -> [TrackItem] {
        // 32 values an item (the object and its 31 members) and up to 6 derived names, with room for members added later.
        let root = try APIObjectReader.parse(bytes, maxValues: maxListCount * 48 + 1)
        guard case .array(let values) = root else { throw .wrongType(member: "the document", expected: "an array") }
        guard values.count <= maxListCount else { throw .tooMany(member: "the document", limit: maxListCount) }
        var items: [TrackItem] = []
        items.reserveCapacity(values.count)
        for (i, value) in values.enumerated() { items.append(try decode(value, context: "[\(i)]")) }
        return items
    }

    /// Reads one item (`encoded()`'s text).
    public static func decode(_ bytes: [UInt8]) throws(APIDocumentError) -> TrackItem {
        try decode(APIObjectReader.parse(bytes, maxValues: 96), context: "")
    }

    static func decode(_ value: JSONValue, context: String) throws(APIDocumentError) -> TrackItem {
        let r = try APIObjectReader(value, context: context)
        let gain = ReplayGain(trackGain: try r.doubleIfPresent("rg_track_gain"), trackPeak: try r.doubleIfPresent("rg_track_peak"),
                              albumGain: try r.doubleIfPresent("rg_album_gain"), albumPeak: try r.doubleIfPresent("rg_album_peak"))
        return TrackItem(path: try r.string("path"), url: try r.string("url"), title: try r.optionalString("title"),
                         artist: try r.optionalString("artist"), album: try r.optionalString("album"),
                         durationSeconds: try r.optionalDouble("duration_s"), codec: try r.string("codec"),
                         container: try r.string("container"), sampleRate: try r.int("sample_rate"),
                         channels: try r.int("channels"), bitrate: try r.int("bitrate"), size: try r.int("size"),
                         etag: try r.string("etag"), id: try r.int("id"), albumID: try r.optionalInt("album_id"),
                         artistID: try r.optionalInt("artist_id"), albumArtist: try r.optionalString("album_artist"),
                         trackNumber: try r.optionalInt("track"), discNumber: try r.optionalInt("disc"),
                         year: try r.optionalInt("year"), genre: try r.optionalString("genre"),
                         derived: try DerivedFields.read(r), bitsPerSample: try r.intIfPresent("bits_per_sample"),
                         replayGain: gain, gapless: try gapless(r))
    }

    /// The four gapless members when all are numbers (an older server writes none).
    static func gapless(_ r: APIObjectReader) throws(APIDocumentError) -> Gapless? {
        guard let first = try r.intIfPresent("first_frame_offset"), let delay = try r.intIfPresent("encoder_delay"),
              let padding = try r.intIfPresent("encoder_padding"), let total = try r.intIfPresent("total_samples") else { return nil }
        return Gapless(firstFrameOffset: first, encoderDelay: delay, encoderPadding: padding, totalSamples: total)
    }
}

/// The members of one track item where they are kept: a `TrackItem`, or a catalog row that
/// streamd reads in place from its database statement. `TrackItem.append` writes either.
public protocol TrackItemFields {
    /// Calls `body` with the member's UTF-8 bytes, or nil when it is null.
    func withText(_ member: TrackItem.TextMember, _ body: (UnsafeBufferPointer<UInt8>?) -> Void)
    /// The member's value, or nil when it is null.
    func integer(_ member: TrackItem.IntegerMember) -> Int?
    /// The duration, or nil when it is null.
    var durationSeconds: Double? { get }
    /// The member's value, or nil when it is null.
    func number(_ member: TrackItem.NumberMember) -> Double?
    /// The members taken from the file's path (written as the `derived` list).
    var derived: DerivedFields { get }
    /// True when the url is `APIRoutes.mediaPath(forLibraryPath:)` of the path (a catalog row):
    /// the writer then writes it from the path, and `withText(.url)` is not asked.
    var urlIsMediaPathOfPath: Bool { get }
}

extension TrackItemFields {
    public var urlIsMediaPathOfPath: Bool { false }
}

extension TrackItem: TrackItemFields {
    public func withText(_ member: TextMember, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        let value: String?
        switch member {
        case .path: value = path
        case .url: value = url
        case .title: value = title
        case .artist: value = artist
        case .album: value = album
        case .codec: value = codec
        case .container: value = container
        case .etag: value = etag
        case .albumArtist: value = albumArtist
        case .genre: value = genre
        }
        guard var text = value else { return body(nil) }
        text.withUTF8 { body($0) }
    }

    public func integer(_ member: IntegerMember) -> Int? {
        switch member {
        case .sampleRate: return sampleRate
        case .channels: return channels
        case .bitrate: return bitrate
        case .size: return size
        case .id: return id
        case .albumID: return albumID
        case .artistID: return artistID
        case .trackNumber: return trackNumber
        case .discNumber: return discNumber
        case .year: return year
        case .bitsPerSample: return bitsPerSample
        case .firstFrameOffset: return gapless?.firstFrameOffset
        case .encoderDelay: return gapless?.encoderDelay
        case .encoderPadding: return gapless?.encoderPadding
        case .totalSamples: return gapless?.totalSamples
        }
    }

    public func number(_ member: NumberMember) -> Double? {
        switch member {
        case .trackGain: return replayGain?.trackGain
        case .trackPeak: return replayGain?.trackPeak
        case .albumGain: return replayGain?.albumGain
        case .albumPeak: return replayGain?.albumPeak
        }
    }
}
