import Foundation

/// RFC 8216 rules, checked on playlist text in the tests (an independent reading of the spec,
/// not the writer's code): each problem found is one line.
enum M3U8Rules {
    struct Segment {
        var duration: Double
        var uri: String
        var byteRange: (length: Int, offset: Int?)?
        var discontinuity: Bool
    }

    struct Media {
        var version: Int?
        var targetDuration: Int?
        var mediaSequence = 0
        var discontinuitySequence = 0
        var playlistType: String?
        var map: String?
        var endList = false
        var segments: [Segment] = []
    }

    /// Value after the first ':' of a tag line.
    static func value(_ line: String) -> String { line.split(separator: ":", maxSplits: 1).dropFirst().first.map(String.init) ?? "" }

    /// Parses a media playlist and lists every rule it breaks.
    static func checkMedia(_ text: String, vod: Bool) -> (Media, [String]) {
        var problems: [String] = []
        var media = Media()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { String($0) }
        if lines.first != "#EXTM3U" { problems.append("4.3.1.1: the first line must be #EXTM3U") }
        if text.contains("\r") { problems.append("lines end in LF here (CR found)") }
        var pendingDuration: Double?
        var pendingRange: (Int, Int?)?
        var pendingDiscontinuity = false
        var counts: [String: Int] = [:]
        var previousRange: (uri: String, end: Int)?
        var needVersion = 1
        for line in lines.dropFirst() where !line.isEmpty {
            if line.hasPrefix("#EXT") {
                let name = String(line.prefix { $0 != ":" })
                counts[name, default: 0] += 1
                switch name {
                case "#EXT-X-VERSION": media.version = Int(value(line))
                case "#EXT-X-TARGETDURATION":
                    media.targetDuration = Int(value(line))
                    if media.targetDuration == nil { problems.append("4.3.3.1: TARGETDURATION is a decimal-integer") }
                case "#EXT-X-MEDIA-SEQUENCE":
                    media.mediaSequence = Int(value(line)) ?? -1
                    if !media.segments.isEmpty || pendingDuration != nil { problems.append("4.3.3.2: MEDIA-SEQUENCE after a segment") }
                case "#EXT-X-DISCONTINUITY-SEQUENCE":
                    media.discontinuitySequence = Int(value(line)) ?? -1
                    if !media.segments.isEmpty { problems.append("4.3.3.3: DISCONTINUITY-SEQUENCE after a segment") }
                case "#EXT-X-PLAYLIST-TYPE": media.playlistType = value(line)
                case "#EXT-X-ENDLIST": media.endList = true
                case "#EXT-X-INDEPENDENT-SEGMENTS": break
                case "#EXT-X-MAP":
                    let attr = value(line)
                    guard attr.hasPrefix("URI=\""), attr.hasSuffix("\""), attr.count > 6 else {
                        problems.append("4.3.2.5: EXT-X-MAP needs a quoted URI"); continue
                    }
                    media.map = String(attr.dropFirst(5).dropLast())
                    needVersion = max(needVersion, 6)
                case "#EXTINF":
                    let durationText = value(line).split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                    guard let d = Double(durationText), d.isFinite, d > 0 else {
                        problems.append("4.3.2.1: EXTINF duration '\(durationText)' is not a positive number"); continue
                    }
                    if durationText.contains(".") { needVersion = max(needVersion, 3) }
                    if pendingDuration != nil { problems.append("4.3.2.1: two EXTINF without a URI between them") }
                    pendingDuration = d
                case "#EXT-X-BYTERANGE":
                    let parts = value(line).split(separator: "@")
                    guard let length = parts.first.flatMap({ Int($0) }), length > 0 else {
                        problems.append("4.3.2.2: bad BYTERANGE '\(line)'"); continue
                    }
                    pendingRange = (length, parts.count > 1 ? Int(parts[1]) : nil)
                    needVersion = max(needVersion, 4)
                case "#EXT-X-DISCONTINUITY": pendingDiscontinuity = true
                case "#EXT-X-STREAM-INF", "#EXT-X-MEDIA", "#EXT-X-I-FRAME-STREAM-INF":
                    problems.append("4.1: master playlist tag \(name) in a media playlist")
                default: break
                }
            } else if line.hasPrefix("#") {
                continue   // a comment
            } else {
                guard let duration = pendingDuration else {
                    problems.append("4.3.2.1: URI '\(line)' without EXTINF"); continue
                }
                var range: (Int, Int?)? = nil
                if let (length, offset) = pendingRange {
                    if offset == nil, previousRange?.uri != line {
                        problems.append("4.3.2.2: BYTERANGE without an offset must follow a range of the same resource")
                    }
                    let start = offset ?? previousRange?.end ?? 0
                    previousRange = (line, start + length)
                    range = (length, start)
                } else {
                    previousRange = nil
                }
                media.segments.append(Segment(duration: duration, uri: line, byteRange: range, discontinuity: pendingDiscontinuity))
                pendingDuration = nil
                pendingRange = nil
                pendingDiscontinuity = false
            }
        }
        if pendingDuration != nil { problems.append("4.3.2.1: EXTINF at the end without a URI") }
        for (tag, n) in counts where n > 1 && !["#EXTINF", "#EXT-X-BYTERANGE", "#EXT-X-DISCONTINUITY", "#EXT-X-PROGRAM-DATE-TIME"].contains(tag) {
            problems.append("4.3: \(tag) appears \(n) times")
        }
        if media.version == nil { problems.append("EXT-X-VERSION missing") }
        if let version = media.version, version < needVersion {
            problems.append("7: features in use need EXT-X-VERSION \(needVersion), found \(version)")
        }
        if let target = media.targetDuration {
            for s in media.segments where Int(s.duration.rounded()) > target {
                problems.append("4.3.3.1: EXTINF \(s.duration) rounds above TARGETDURATION \(target)")
            }
        } else {
            problems.append("4.3.3.1: EXT-X-TARGETDURATION is required")
        }
        if media.segments.isEmpty { problems.append("no segments") }
        if vod {
            if media.playlistType != "VOD" { problems.append("PLAYLIST-TYPE:VOD expected") }
            if !media.endList { problems.append("4.3.3.4: a VOD playlist ends with EXT-X-ENDLIST") }
        } else {
            if media.endList || media.playlistType == "VOD" { problems.append("a live playlist has no ENDLIST and is not VOD") }
        }
        return (media, problems)
    }

    /// Checks a master playlist; returns the variants' attribute maps and URIs.
    static func checkMaster(_ text: String) -> ([(attributes: [String: String], uri: String)], [String]) {
        var problems: [String] = []
        var variants: [(attributes: [String: String], uri: String)] = []
        let lines = text.split(separator: "\n").map(String.init)
        if lines.first != "#EXTM3U" { problems.append("4.3.1.1: the first line must be #EXTM3U") }
        var pending: [String: String]?
        for line in lines.dropFirst() {
            if line.hasPrefix("#EXT-X-STREAM-INF:") {
                var attributes: [String: String] = [:]
                // attribute-list: NAME=value, values may be quoted strings holding commas.
                var rest = Substring(value(line))
                while !rest.isEmpty {
                    guard let eq = rest.firstIndex(of: "=") else { problems.append("bad attribute list"); break }
                    let name = String(rest[..<eq])
                    rest = rest[rest.index(after: eq)...]
                    var v: String
                    if rest.first == "\"" {
                        let body = rest.dropFirst()
                        guard let close = body.firstIndex(of: "\"") else { problems.append("unterminated quote"); break }
                        v = String(body[..<close])
                        rest = body[body.index(after: close)...]
                    } else {
                        let end = rest.firstIndex(of: ",") ?? rest.endIndex
                        v = String(rest[..<end])
                        rest = rest[end...]
                    }
                    attributes[name] = v
                    if rest.first == "," { rest = rest.dropFirst() }
                }
                if Int(attributes["BANDWIDTH"] ?? "") == nil { problems.append("4.3.4.2: BANDWIDTH is required") }
                pending = attributes
            } else if line.hasPrefix("#EXTINF") || line.hasPrefix("#EXT-X-TARGETDURATION") || line.hasPrefix("#EXT-X-ENDLIST") {
                problems.append("4.1: media playlist tag in a master playlist: \(line)")
            } else if !line.hasPrefix("#") {
                guard let attributes = pending else { problems.append("URI without EXT-X-STREAM-INF"); continue }
                variants.append((attributes, line))
                pending = nil
            }
        }
        if variants.isEmpty { problems.append("no variants") }
        return (variants, problems)
    }
}
