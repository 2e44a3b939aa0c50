/// Bounds the parser keeps to, so a hostile playlist costs bounded time and memory.
public struct M3U8Limits: Sendable {
    /// Longest line accepted (URIs with long query strings fit easily).
    public var maxLineLength = 16 * 1024
    /// Most segments a media playlist may list (about a week of 6-second segments).
    public var maxSegments = 100_000
    /// Most variants and renditions a master playlist may list.
    public var maxVariants = 1_000
    /// Longest segment or target duration accepted, in seconds.
    public var maxDuration: Double = 3_600
    /// How far (seconds) an EXTINF may exceed EXT-X-TARGETDURATION after rounding; RFC 8216
    /// allows none, one second forgives encoders that round the other way.
    public var targetDurationTolerance: Double = 1
    public init() {}
}

/// A byte range of a resource (EXT-X-BYTERANGE, EXT-X-MAP BYTERANGE), resolved to absolute offsets.
public typealias M3U8ByteRange = Range<Int>

/// The init section of fMP4 segments (EXT-X-MAP).
public struct M3U8Map: Sendable, Equatable {
    public var uri: String
    public var byteRange: M3U8ByteRange?
}

/// One media segment of a media playlist.
public struct M3U8Segment: Sendable, Equatable {
    public var uri: String
    /// EXTINF duration in seconds.
    public var duration: Double
    /// Media sequence number (EXT-X-MEDIA-SEQUENCE + position).
    public var sequence: Int
    /// Discontinuity sequence number (EXT-X-DISCONTINUITY-SEQUENCE + discontinuities so far).
    public var discontinuitySequence: Int
    /// EXT-X-DISCONTINUITY precedes this segment.
    public var discontinuity: Bool
    public var byteRange: M3U8ByteRange?
    /// The EXT-X-MAP in effect for this segment.
    public var map: M3U8Map?
}

/// A media playlist: the segments of one rendition.
public struct M3U8MediaPlaylist: Sendable, Equatable {
    public enum PlaylistType: String, Sendable { case vod = "VOD", event = "EVENT" }
    public var version = 1
    /// EXT-X-TARGETDURATION in seconds.
    public var targetDuration = 0
    public var mediaSequence = 0
    public var discontinuitySequence = 0
    public var playlistType: PlaylistType?
    /// EXT-X-ENDLIST: no segment will be added.
    public var endList = false
    public var segments: [M3U8Segment] = []

    /// Sum of the EXTINF durations.
    public var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }
    /// Live (or event) playlists grow: the client must reload them.
    public var isLive: Bool { !endList && playlistType != .vod }
}

/// A variant stream of a master playlist (EXT-X-STREAM-INF and the URI after it).
public struct M3U8Variant: Sendable, Equatable {
    public var uri: String
    /// Peak bits per second.
    public var bandwidth: Int
    public var averageBandwidth: Int?
    /// RFC 6381 codec strings, e.g. "mp4a.40.2".
    public var codecs: [String]
    /// GROUP-ID of the EXT-X-MEDIA audio renditions this variant plays with.
    public var audioGroup: String?
}

/// An alternative rendition (EXT-X-MEDIA).
public struct M3U8Rendition: Sendable, Equatable {
    /// AUDIO, VIDEO, SUBTITLES or CLOSED-CAPTIONS.
    public var type: String
    public var groupID: String
    public var name: String
    public var uri: String?
    public var isDefault: Bool
    public var language: String?
}

/// A master playlist: the variants to choose from.
public struct M3U8MasterPlaylist: Sendable, Equatable {
    public var variants: [M3U8Variant] = []
    public var renditions: [M3U8Rendition] = []
}

/// A parsed playlist: a master playlist or a media playlist.
public enum M3U8Playlist: Sendable, Equatable {
    case master(M3U8MasterPlaylist)
    case media(M3U8MediaPlaylist)
}

/// Reads RFC 8216 playlists (master and media) with hard limits on line length, segment
/// and variant counts and durations. Errors are `FormatError`s from component "m3u8" whose
/// reason names the line.
public enum M3U8Parser {
    static let component = "m3u8"

    public static func parse(_ bytes: ArraySlice<UInt8>, limits: M3U8Limits = M3U8Limits()) throws -> M3U8Playlist {
        var state = State(limits: limits)
        var lineNumber = 0
        var start = bytes.startIndex
        // A UTF-8 byte order mark is not allowed by RFC 8216 but harmless: skip it.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start += 3 }
        guard bytes[start...].starts(with: Array("#EXTM3U".utf8)) else {
            let shown = String(decoding: bytes[start...].prefix(24).map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: ".") },
                               as: UTF8.self)
            throw FormatError.invalid(component: component, reason: "not an M3U8 playlist (starts with '\(shown)')", offset: 0)
        }
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            lineNumber += 1
            var line = bytes[start..<end]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard line.count <= limits.maxLineLength else {
                throw state.error(lineNumber, start - bytes.startIndex, "line longer than \(limits.maxLineLength) bytes")
            }
            try state.take(bytes: line, line: lineNumber, offset: start - bytes.startIndex)
            start = end == bytes.endIndex ? end : end + 1
        }
        return try state.finish()
    }

    /// The parser's progress through the lines.
    private struct State {
        let limits: M3U8Limits
        var isMaster = false
        var isMedia = false
        var media = M3U8MediaPlaylist()
        var master = M3U8MasterPlaylist()
        var sawTargetDuration = false
        // Tags that apply to the next URI line.
        var pendingDuration: Double?
        var pendingDiscontinuity = false
        var pendingRange: (length: Int, offset: Int?)?
        var pendingVariant: M3U8Variant?
        var map: M3U8Map?
        var discontinuities = 0
        /// End of the last byte range and its URI, where an offset-less EXT-X-BYTERANGE continues.
        var lastRange: (uri: String, end: Int)?
        var line = 0
        var offset = 0

        init(limits: M3U8Limits) { self.limits = limits }

        func error(_ line: Int, _ offset: Int, _ reason: String) -> FormatError {
            .invalid(component: M3U8Parser.component, reason: "line \(line): \(reason)", offset: offset)
        }

        func fail(_ reason: String) -> FormatError { error(line, offset, reason) }

        mutating func markMedia() throws {
            if isMaster { throw fail("media playlist tag in a master playlist") }
            isMedia = true
        }

        mutating func markMaster() throws {
            if isMedia { throw fail("master playlist tag in a media playlist") }
            isMaster = true
        }

        static let extinf = Array("#EXTINF:".utf8)

        /// One line as bytes: segment URIs and EXTINF (nearly every line of a long playlist) are
        /// read straight from the bytes; other tags go through `take(_:)`.
        mutating func take(bytes raw: ArraySlice<UInt8>, line: Int, offset: Int) throws {
            var text = raw
            while let first = text.first, first == 0x20 || first == 0x09 { text = text.dropFirst() }
            while let last = text.last, last == 0x20 || last == 0x09 { text = text.dropLast() }
            guard let first = text.first else { return }
            if first != UInt8(ascii: "#") {
                self.line = line
                self.offset = offset
                return try takeURI(String(decoding: text, as: UTF8.self))
            }
            if text.starts(with: Self.extinf) {
                self.line = line
                self.offset = offset
                try markMedia()
                var number = text.dropFirst(Self.extinf.count).prefix { $0 != UInt8(ascii: ",") }
                while let last = number.last, last == 0x20 || last == 0x09 { number = number.dropLast() }
                while let head = number.first, head == 0x20 || head == 0x09 { number = number.dropFirst() }
                pendingDuration = try duration(bytes: number, "EXTINF")
                return
            }
            try take(Substring(String(decoding: text, as: UTF8.self)), line: line, offset: offset)
        }

        mutating func take(_ text: Substring, line: Int, offset: Int) throws {
            self.line = line
            self.offset = offset
            if text.isEmpty { return }
            if !text.hasPrefix("#") { return try takeURI(String(text)) }
            guard text.hasPrefix("#EXT") else { return }      // a comment
            let colon = text.firstIndex(of: ":")
            let name = colon.map { text[..<$0] } ?? text
            let value = colon.map { text[text.index(after: $0)...] } ?? ""
            switch name {
            case "#EXTM3U":
                break
            case "#EXT-X-VERSION":
                media.version = try integer(value, "EXT-X-VERSION", max: 100)
            case "#EXTINF":
                try markMedia()
                let number = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                pendingDuration = try duration(number.trimmingWhitespace(), "EXTINF")
            case "#EXT-X-TARGETDURATION":
                try markMedia()
                media.targetDuration = try integer(value, "EXT-X-TARGETDURATION", max: Int(limits.maxDuration))
                sawTargetDuration = true
            case "#EXT-X-MEDIA-SEQUENCE":
                try markMedia()
                guard media.segments.isEmpty else { throw fail("EXT-X-MEDIA-SEQUENCE after the first segment") }
                media.mediaSequence = try integer(value, "EXT-X-MEDIA-SEQUENCE", max: 1 << 52)
            case "#EXT-X-DISCONTINUITY-SEQUENCE":
                try markMedia()
                guard media.segments.isEmpty else { throw fail("EXT-X-DISCONTINUITY-SEQUENCE after the first segment") }
                media.discontinuitySequence = try integer(value, "EXT-X-DISCONTINUITY-SEQUENCE", max: 1 << 52)
            case "#EXT-X-DISCONTINUITY":
                try markMedia()
                pendingDiscontinuity = true
            case "#EXT-X-ENDLIST":
                try markMedia()
                media.endList = true
            case "#EXT-X-PLAYLIST-TYPE":
                try markMedia()
                guard let type = M3U8MediaPlaylist.PlaylistType(rawValue: String(value)) else {
                    throw fail("EXT-X-PLAYLIST-TYPE '\(value)' is neither VOD nor EVENT")
                }
                media.playlistType = type
            case "#EXT-X-BYTERANGE":
                try markMedia()
                pendingRange = try byteRange(value, "EXT-X-BYTERANGE")
            case "#EXT-X-MAP":
                try markMedia()
                let attributes = try M3U8Parser.attributes(value, line: line, offset: offset)
                guard let uri = attributes["URI"], !uri.isEmpty else { throw fail("EXT-X-MAP without a URI") }
                var range: M3U8ByteRange?
                if let text = attributes["BYTERANGE"] {
                    let parsed = try byteRange(Substring(text), "EXT-X-MAP BYTERANGE")
                    let start = parsed.offset ?? 0
                    range = start..<(start + parsed.length)
                }
                map = M3U8Map(uri: uri, byteRange: range)
            case "#EXT-X-KEY":
                try markMedia()
                let attributes = try M3U8Parser.attributes(value, line: line, offset: offset)
                let method = attributes["METHOD"] ?? ""
                guard method == "NONE" else {
                    throw FormatError.unsupported(component: M3U8Parser.component,
                                                  reason: "encrypted segments (EXT-X-KEY METHOD=\(method), line \(line))")
                }
            case "#EXT-X-STREAM-INF":
                try markMaster()
                let attributes = try M3U8Parser.attributes(value, line: line, offset: offset)
                guard let text = attributes["BANDWIDTH"], let bandwidth = Int(text), bandwidth >= 0 else {
                    throw fail("EXT-X-STREAM-INF without a valid BANDWIDTH")
                }
                let codecs = (attributes["CODECS"] ?? "").split(separator: ",").map { String($0.trimmingWhitespace()) }
                pendingVariant = M3U8Variant(uri: "", bandwidth: bandwidth,
                                             averageBandwidth: attributes["AVERAGE-BANDWIDTH"].flatMap { Int($0) },
                                             codecs: codecs.filter { !$0.isEmpty }, audioGroup: attributes["AUDIO"])
            case "#EXT-X-MEDIA":
                try markMaster()
                let attributes = try M3U8Parser.attributes(value, line: line, offset: offset)
                guard let type = attributes["TYPE"], let group = attributes["GROUP-ID"], let name = attributes["NAME"] else {
                    throw fail("EXT-X-MEDIA without TYPE, GROUP-ID and NAME")
                }
                guard master.renditions.count < limits.maxVariants else {
                    throw fail("more than \(limits.maxVariants) renditions")
                }
                master.renditions.append(M3U8Rendition(type: type, groupID: group, name: name, uri: attributes["URI"],
                                                       isDefault: attributes["DEFAULT"] == "YES",
                                                       language: attributes["LANGUAGE"]))
            case "#EXT-X-I-FRAME-STREAM-INF", "#EXT-X-SESSION-DATA", "#EXT-X-SESSION-KEY":
                try markMaster()
            default:
                break       // tags this player does not need (PROGRAM-DATE-TIME, INDEPENDENT-SEGMENTS, ...)
            }
        }

        mutating func takeURI(_ uri: String) throws {
            if var variant = pendingVariant {
                guard master.variants.count < limits.maxVariants else { throw fail("more than \(limits.maxVariants) variants") }
                variant.uri = uri
                master.variants.append(variant)
                pendingVariant = nil
                return
            }
            if isMaster { throw fail("URI '\(uri.prefix(80))' without EXT-X-STREAM-INF") }
            isMedia = true
            guard let duration = pendingDuration else { throw fail("segment '\(uri.prefix(80))' without an EXTINF duration") }
            guard media.segments.count < limits.maxSegments else {
                throw fail("more than \(limits.maxSegments) segments")
            }
            if sawTargetDuration, duration.rounded() > Double(media.targetDuration) + limits.targetDurationTolerance {
                throw fail("EXTINF \(duration) exceeds EXT-X-TARGETDURATION \(media.targetDuration)")
            }
            var range: M3U8ByteRange?
            if let pending = pendingRange {
                let start: Int
                if let offset = pending.offset {
                    start = offset
                } else {
                    guard let last = lastRange, last.uri == uri else {
                        throw fail("EXT-X-BYTERANGE without an offset does not follow a range of the same resource")
                    }
                    start = last.end
                }
                guard start <= Int.max - pending.length else { throw fail("EXT-X-BYTERANGE out of bounds") }
                range = start..<(start + pending.length)
                lastRange = (uri, start + pending.length)
            } else {
                lastRange = nil
            }
            if pendingDiscontinuity { discontinuities += 1 }
            media.segments.append(M3U8Segment(uri: uri, duration: duration,
                                              sequence: media.mediaSequence + media.segments.count,
                                              discontinuitySequence: media.discontinuitySequence + discontinuities,
                                              discontinuity: pendingDiscontinuity, byteRange: range, map: map))
            pendingDuration = nil
            pendingDiscontinuity = false
            pendingRange = nil
        }

        func finish() throws -> M3U8Playlist {
            if isMaster {
                if pendingVariant != nil { throw fail("EXT-X-STREAM-INF without a URI after it") }
                guard !master.variants.isEmpty else { throw fail("master playlist without variants") }
                return .master(master)
            }
            guard sawTargetDuration else {
                throw FormatError.invalid(component: M3U8Parser.component, reason: "media playlist without EXT-X-TARGETDURATION",
                                          offset: 0)
            }
            return .media(media)
        }

        func integer(_ text: Substring, _ tag: String, max: Int) throws -> Int {
            let trimmed = text.trimmingWhitespace()
            guard !trimmed.isEmpty, trimmed.allSatisfy({ $0.isASCII && $0.isNumber }), trimmed.count <= 18,
                  let value = Int(trimmed) else {
                throw fail("\(tag) '\(trimmed.prefix(40))' is not a decimal integer")
            }
            guard value <= max else { throw fail("\(tag) \(value) exceeds the limit of \(max)") }
            return value
        }

        func duration(bytes: ArraySlice<UInt8>, _ tag: String) throws -> Double {
            try duration(Substring(String(decoding: bytes, as: UTF8.self)), tag)
        }

        func duration(_ text: Substring, _ tag: String) throws -> Double {
            guard !text.isEmpty else { throw fail("\(tag) without a duration") }
            guard text.utf8.count <= 32,
                  text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D || $0 == 0x2B }),
                  let value = Double(text), value.isFinite else {
                throw fail("\(tag) duration '\(text.prefix(40))' is not a number")
            }
            guard value >= 0 else { throw fail("\(tag) duration \(text) is negative") }
            guard value <= limits.maxDuration else {
                throw fail("\(tag) duration \(text) exceeds the limit of \(Int(limits.maxDuration)) s")
            }
            return value
        }

        /// "LENGTH[@OFFSET]".
        func byteRange(_ text: Substring, _ tag: String) throws -> (length: Int, offset: Int?) {
            let parts = text.trimmingWhitespace().split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
            let length = try integer(parts[0], tag, max: 1 << 40)
            let offset = parts.count > 1 ? try integer(parts[1], tag, max: 1 << 50) : nil
            return (length, offset)
        }
    }

    /// Parses an attribute list: `NAME=VALUE` pairs, values decimal, enumerated or quoted.
    static func attributes(_ text: Substring, line: Int, offset: Int) throws -> [String: String] {
        var result: [String: String] = [:]
        var i = text.startIndex
        while i < text.endIndex {
            guard let equals = text[i...].firstIndex(of: "=") else {
                throw FormatError.invalid(component: component, reason: "line \(line): attribute without a value", offset: offset)
            }
            let name = String(text[i..<equals].trimmingWhitespace())
            var j = text.index(after: equals)
            let value: String
            if j < text.endIndex, text[j] == "\"" {
                let open = text.index(after: j)
                guard let close = text[open...].firstIndex(of: "\"") else {
                    throw FormatError.invalid(component: component, reason: "line \(line): unterminated quoted string",
                                              offset: offset)
                }
                value = String(text[open..<close])
                j = text.index(after: close)
            } else {
                let end = text[j...].firstIndex(of: ",") ?? text.endIndex
                value = String(text[j..<end].trimmingWhitespace())
                j = end
            }
            guard result.count < 64 else {
                throw FormatError.invalid(component: component, reason: "line \(line): more than 64 attributes", offset: offset)
            }
            result[name] = value
            // Skip to after the next comma.
            while j < text.endIndex, text[j] != "," { j = text.index(after: j) }
            i = j < text.endIndex ? text.index(after: j) : j
        }
        return result
    }
}

extension Substring {
    /// The text without leading and trailing spaces and tabs.
    func trimmingWhitespace() -> Substring {
        var s = self
        while let first = s.first, first == " " || first == "\t" { s = s.dropFirst() }
        while let last = s.last, last == " " || last == "\t" { s = s.dropLast() }
        return s
    }
}
