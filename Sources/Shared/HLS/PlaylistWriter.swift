/// One segment line of a media playlist (RFC 8216 section 4.3.2).
public struct HLSSegmentEntry: Sendable, Equatable {
    /// EXTINF duration in seconds (the exact duration of the segment's frames).
    public var duration: Double
    public var uri: String
    /// EXT-X-BYTERANGE: a piece of the resource at `uri` (length, offset).
    public var byteRange: (length: Int, offset: Int)?
    /// EXT-X-DISCONTINUITY before this segment.
    public var discontinuity: Bool
    /// EXT-X-PROGRAM-DATE-TIME: the wall-clock time of the segment's first sample, in seconds
    /// since 1970-01-01 UTC (live radio; players use it to line streams up).
    public var programDateTime: Double?

    public init(duration: Double, uri: String, byteRange: (length: Int, offset: Int)? = nil, discontinuity: Bool = false,
                programDateTime: Double? = nil) {
        self.duration = duration
        self.uri = uri
        self.byteRange = byteRange
        self.discontinuity = discontinuity
        self.programDateTime = programDateTime
    }

    public static func == (a: HLSSegmentEntry, b: HLSSegmentEntry) -> Bool {
        a.duration == b.duration && a.uri == b.uri && a.discontinuity == b.discontinuity && a.programDateTime == b.programDateTime
            && a.byteRange?.length == b.byteRange?.length && a.byteRange?.offset == b.byteRange?.offset
    }
}

/// An RFC 8216 media playlist, rendered as text by `render()`.
public struct HLSMediaPlaylist: Sendable, Equatable {
    /// EXT-X-PLAYLIST-TYPE.
    public enum PlaylistType: String, Sendable { case vod = "VOD", event = "EVENT" }

    public var targetDuration: Int
    public var mediaSequence: Int = 0
    public var discontinuitySequence: Int = 0
    public var playlistType: PlaylistType?
    /// EXT-X-MAP URI of the fMP4 initialization section.
    public var mapURI: String?
    public var segments: [HLSSegmentEntry] = []
    /// EXT-X-ENDLIST: no more segments will be added.
    public var endList: Bool
    /// EXT-X-INDEPENDENT-SEGMENTS (every audio segment starts at a frame boundary).
    public var independentSegments = true
    /// EXT-X-START TIME-OFFSET: where a player starts (an EVENT playlist says 0, so players start
    /// at the beginning rather than near its live end).
    public var startOffset: Double?

    public init(targetDuration: Int, playlistType: PlaylistType? = nil, endList: Bool) {
        self.targetDuration = targetDuration
        self.playlistType = playlistType
        self.endList = endList
    }

    /// The lowest EXT-X-VERSION the features in use need (RFC 8216 section 7).
    public var version: Int {
        if mapURI != nil { return 6 }              // EXT-X-MAP in a playlist without I-frames only
        if segments.contains(where: { $0.byteRange != nil }) { return 4 }
        return 3                                    // decimal-floating-point EXTINF
    }

    /// The playlist text, lines ending in LF.
    public func render() -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-TARGETDURATION:\(targetDuration)"]
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        if let playlistType { lines.append("#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)") }
        if let startOffset { lines.append("#EXT-X-START:TIME-OFFSET=\(HLSAttributes.decimal(startOffset)),PRECISE=YES") }
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)")
        if discontinuitySequence > 0 { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }
        if let mapURI { lines.append("#EXT-X-MAP:URI=\(HLSAttributes.quoted(mapURI))") }
        // Byte ranges may leave out the offset only when they follow the previous range of the same URI.
        var previous: (uri: String, end: Int)?
        for segment in segments {
            if segment.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if let date = segment.programDateTime { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(HLSAttributes.dateTime(date))") }
            lines.append("#EXTINF:\(HLSAttributes.decimal(segment.duration)),")
            if let range = segment.byteRange {
                if let previous, previous.uri == segment.uri, previous.end == range.offset {
                    lines.append("#EXT-X-BYTERANGE:\(range.length)")
                } else {
                    lines.append("#EXT-X-BYTERANGE:\(range.length)@\(range.offset)")
                }
                previous = (segment.uri, range.offset + range.length)
            } else {
                previous = nil
            }
            lines.append(segment.uri)
        }
        if endList { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// One EXT-X-STREAM-INF variant of a master playlist.
public struct HLSVariant: Sendable, Equatable {
    /// Peak segment bit rate in bit/s (BANDWIDTH).
    public var bandwidth: Int
    /// Average segment bit rate in bit/s (AVERAGE-BANDWIDTH).
    public var averageBandwidth: Int?
    /// RFC 6381 codec strings, e.g. "mp4a.40.2".
    public var codecs: [String]
    public var uri: String

    public init(bandwidth: Int, averageBandwidth: Int? = nil, codecs: [String], uri: String) {
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.codecs = codecs
        self.uri = uri
    }
}

/// An RFC 8216 master playlist (section 4.3.4).
public struct HLSMasterPlaylist: Sendable, Equatable {
    public var variants: [HLSVariant]

    public init(variants: [HLSVariant]) { self.variants = variants }

    public func render() -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-INDEPENDENT-SEGMENTS"]
        for variant in variants {
            var attributes = ["BANDWIDTH=\(max(1, variant.bandwidth))"]
            if let average = variant.averageBandwidth { attributes.append("AVERAGE-BANDWIDTH=\(max(1, average))") }
            if !variant.codecs.isEmpty { attributes.append("CODECS=" + HLSAttributes.quoted(variant.codecs.joined(separator: ","))) }
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(variant.uri)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Formatting of attribute values (RFC 8216 section 4.2).
public enum HLSAttributes {
    /// A quoted-string; the characters it may not hold (quote, CR, LF) are dropped.
    public static func quoted(_ text: String) -> String {
        "\"" + text.filter { $0 != "\"" && $0 != "\r" && $0 != "\n" } + "\""
    }

    /// An ISO 8601 date-time in UTC with milliseconds ("2026-11-23T19:25:00.123Z"), as
    /// EXT-X-PROGRAM-DATE-TIME takes it; times before 1970 or after 9999 are clamped to those.
    public static func dateTime(_ secondsSince1970: Double) -> String {
        let limit = 253_402_300_799.0   // 9999-12-31T23:59:59Z
        let seconds = secondsSince1970.isFinite ? min(max(0, secondsSince1970), limit) : 0
        let millis = Int((seconds * 1000).rounded(.down))
        let days = millis / 86_400_000
        let inDay = millis % 86_400_000
        // Days since the epoch to a proleptic Gregorian date, counted in 400-year eras from March 1st.
        let shifted = days + 719_468
        let era = shifted / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(inDay / 3_600_000, 2)):\(pad(inDay / 60_000 % 60, 2)):"
            + "\(pad(inDay / 1000 % 60, 2)).\(pad(inDay % 1000, 3))Z"
    }

    /// A decimal-floating-point with up to 6 fraction digits, no exponent (e.g. "5.98458").
    public static func decimal(_ value: Double) -> String {
        guard value.isFinite, value > 0 else { return "0" }
        let micros = Int((value * 1_000_000).rounded())
        let whole = micros / 1_000_000
        var fraction = String(micros % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return fraction.isEmpty ? "\(whole)" : "\(whole).\(fraction)"
    }
}
