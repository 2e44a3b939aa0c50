/// The `/api/index/<path>` document: a track's exact time ↔ byte table and the facts a player
/// needs to seek in it, as streamd writes it and streamplay reads it.
public struct SeekIndexDocument: Sendable, Equatable {
    /// The file's path relative to the library folder.
    public var path: String
    /// Duration of all frames, in seconds, before gapless trimming.
    public var durationSeconds: Double
    public var firstFrameOffset: Int
    /// Offset just past the last audio byte.
    public var audioEndOffset: Int
    public var encoderDelay: Int
    public var encoderPadding: Int
    public var sampleRate: Int
    /// The file's validator, quotes included (as its `/media/` ETag header).
    public var etag: String
    /// All points, or with `?t=` only those around that time; in increasing time. FLAC, Ogg and
    /// AIFF points also carry the exact sample they start at (Ogg: within `link`).
    public var points: [SeekPoint]

    /// Most points a document may list: what one index holds at most.
    public static let maxPoints = SeekIndexBuilder.maxPoints

    public init(path: String, durationSeconds: Double, firstFrameOffset: Int, audioEndOffset: Int, encoderDelay: Int,
                encoderPadding: Int, sampleRate: Int, etag: String, points: [SeekPoint]) {
        self.path = path
        self.durationSeconds = durationSeconds
        self.firstFrameOffset = firstFrameOffset
        self.audioEndOffset = audioEndOffset
        self.encoderDelay = encoderDelay
        self.encoderPadding = encoderPadding
        self.sampleRate = sampleRate
        self.etag = etag
        self.points = points
    }

    /// The JSON text streamd sends, newline-terminated; members in this order. Times have at
    /// most 6 decimals; a non-finite time or duration is written as null (which `decode` refuses).
    public func encoded() -> String {
        var w = JSONObjectWriter()
        w.add("path", path)
        w.add("duration_s", durationSeconds)
        w.add("first_frame_offset", firstFrameOffset)
        w.add("audio_end_offset", audioEndOffset)
        w.add("encoder_delay", encoderDelay)
        w.add("encoder_padding", encoderPadding)
        w.add("sample_rate", sampleRate)
        w.add("etag", etag)
        // One string for the whole table (an index may hold 65536 points).
        var list = "["
        list.reserveCapacity(2 + points.count * 32)
        for (i, point) in points.enumerated() {
            if i > 0 { list += "," }
            list += "{\"t\":" + JSONObjectWriter.number(point.t) + ",\"byte\":" + String(point.byte)
            if let sample = point.sample { list += ",\"sample\":" + String(sample) }
            if let link = point.link { list += ",\"link\":" + String(link) }
            list += "}"
        }
        list += "]"
        w.addRaw("points", list)
        return w.text + "\n"
    }

    /// Reads a document as `encoded()` writes it (members in any order, unknown ones ignored).
    /// Anything else is a typed error: bytes that are not JSON, a member missing or of another
    /// type, more than `maxPoints` points.
    public static func decode(_ bytes: [UInt8]) throws(APIDocumentError) -> SeekIndexDocument {
        // Each point is up to five values (object, t, byte, sample, link); the rest is a handful of
        // members, with room for new ones.
        let root = try APIObjectReader(APIObjectReader.parse(bytes, maxValues: 5 * maxPoints + 4096), context: "")
        let items = try root.array("points", limit: maxPoints)
        var points: [SeekPoint] = []
        points.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            let point = try APIObjectReader(item, context: "points[\(i)]")
            points.append(SeekPoint(t: try point.double("t"), byte: try point.int("byte"), sample: try point.intIfPresent("sample"),
                                    link: try point.intIfPresent("link")))
        }
        return SeekIndexDocument(path: try root.string("path"), durationSeconds: try root.double("duration_s"),
                                 firstFrameOffset: try root.int("first_frame_offset"),
                                 audioEndOffset: try root.int("audio_end_offset"),
                                 encoderDelay: try root.int("encoder_delay"), encoderPadding: try root.int("encoder_padding"),
                                 sampleRate: try root.int("sample_rate"), etag: try root.string("etag"), points: points)
    }
}
