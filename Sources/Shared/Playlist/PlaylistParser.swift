/// Reads track playlists: M3U, extended M3U (`.m3u`, `.m3u8`) and PLS. The format is told by
/// the content, not the name: `[playlist]` first is PLS; an M3U8 holding `#EXT-X-TARGETDURATION`
/// or `#EXT-X-STREAM-INF` is an HLS playlist and refused with `PlaylistError.hls` (for
/// `M3U8Parser`); anything else is M3U. The name only picks the text encoding
/// (`PlaylistTextEncoding(fileExtension:)`).
///
/// Lenient where players are (comments, unknown tags, blank lines, an EXTINF without a
/// location, a PLS entry without `FileN`, a NumberOfEntries that does not match are all
/// ignored; an EXTINF or LengthN duration that is not a number, negative or over a week counts
/// as unknown) and strict on what bounds the cost: size, line length, entry count.
public enum PlaylistParser {
    /// Tags only an HLS playlist holds: a media playlist must carry the first, a master playlist the second.
    static let hlsTags = ["#EXT-X-TARGETDURATION", "#EXT-X-STREAM-INF"]

    public static func parse(_ bytes: ArraySlice<UInt8>, encoding: PlaylistTextEncoding = .utf8OrWindows1252,
                             limits: PlaylistLimits = PlaylistLimits()) throws(PlaylistError) -> PlaylistFile {
        let lines = try PlaylistText.lines(bytes, encoding: encoding, limits: limits)
        if let first = lines.first(where: { !$0.text.isEmpty }), first.text.lowercased() == "[playlist]" {
            return try parsePLS(lines, limits: limits)
        }
        for line in lines where line.text.hasPrefix("#EXT-X-") {
            if let tag = hlsTags.first(where: { line.text.hasPrefix($0) }) { throw .hls(tag: tag) }
        }
        return try parseM3U(lines, limits: limits)
    }

    /// The kind of playlist the bytes hold, without parsing the entries: `.hls` for an RFC 8216
    /// playlist, a track format otherwise, nil when they are not playlist text at all.
    public enum Kind: Sendable, Equatable { case hls, tracks(PlaylistFormat) }

    public static func kind(of bytes: ArraySlice<UInt8>, encoding: PlaylistTextEncoding = .utf8OrWindows1252,
                            limits: PlaylistLimits = PlaylistLimits()) -> Kind? {
        do {
            return .tracks(try parse(bytes, encoding: encoding, limits: limits).format)
        } catch .hls {
            return .hls
        } catch {
            return nil
        }
    }

    // MARK: M3U

    static func parseM3U(_ lines: [PlaylistText.Line], limits: PlaylistLimits) throws(PlaylistError) -> PlaylistFile {
        var playlist = PlaylistFile(format: .m3u, entries: [])
        var pending: (title: String?, duration: Double?)?
        for line in lines {
            let text = line.text
            if text.isEmpty { continue }
            guard text.first == "#" else {
                guard playlist.entries.count < limits.maxEntries else {
                    throw .tooManyEntries(line: line.number, limit: limits.maxEntries)
                }
                playlist.entries.append(PlaylistEntry(location: String(text), title: pending?.title,
                                                      duration: pending?.duration))
                pending = nil
                continue
            }
            if text == "#EXTM3U" || text.hasPrefix("#EXTM3U ") {
                if playlist.entries.isEmpty { playlist.format = .extendedM3U }
            } else if text.hasPrefix("#EXTINF:") {
                pending = extinf(text.dropFirst("#EXTINF:".count))
            } else if text.hasPrefix("#PLAYLIST:") {
                let title = PlaylistText.trimmed(text.dropFirst("#PLAYLIST:".count))
                playlist.title = title.isEmpty ? nil : String(title)
            }
            // Any other # line is a comment or a tag a track list does not need (#EXTGRP, #EXTALB, ...).
        }
        return playlist
    }

    /// `<duration>[ attributes],<title>`. The title starts after the first comma that is not
    /// inside a quoted attribute value (IPTV lists write `-1 tvg-name="a, b",Title`).
    static func extinf(_ value: Substring) -> (title: String?, duration: Double?) {
        var inQuotes = false
        var comma: Substring.Index?
        for index in value.indices {
            let c = value[index]
            if c == "\"" { inQuotes.toggle() } else if c == ",", !inQuotes { comma = index; break }
        }
        let head = comma.map { value[..<$0] } ?? value
        let number = PlaylistText.trimmed(head).prefix { $0 != " " && $0 != "\t" }
        let title = comma.map { PlaylistText.trimmed(value[value.index(after: $0)...]) }
        return (title.flatMap { $0.isEmpty ? nil : String($0) }, seconds(number))
    }

    /// A duration in seconds, or nil when it is not one: -1 (the usual "unknown"), any negative
    /// value, text that is not a decimal number, or more than `InputLimits.maxDurationSeconds`.
    static func seconds(_ text: Substring) -> Double? {
        guard !text.isEmpty, text.utf8.count <= 32,
              text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D || $0 == 0x2B }),
              let value = Double(text), value.isFinite, value >= 0, value <= InputLimits.maxDurationSeconds else { return nil }
        return value
    }

    // MARK: PLS

    static func parsePLS(_ lines: [PlaylistText.Line], limits: PlaylistLimits) throws(PlaylistError) -> PlaylistFile {
        var files: [Int: String] = [:], titles: [Int: String] = [:], lengths: [Int: Double] = [:]
        var inPlaylist = false
        for line in lines {
            let text = line.text
            if text.isEmpty || text.first == ";" || text.first == "#" { continue }
            if text.first == "[" {
                inPlaylist = text.lowercased() == "[playlist]"
                continue
            }
            guard inPlaylist, let equals = text.firstIndex(of: "=") else { continue }
            let key = PlaylistText.trimmed(text[..<equals]).lowercased()
            let value = PlaylistText.trimmed(text[text.index(after: equals)...])
            if key == "numberofentries" {
                guard let count = decimal(value) else {
                    throw .invalidPLS(line: line.number, reason: "NumberOfEntries '\(value.prefix(40))' is not a number")
                }
                guard count <= limits.maxEntries else { throw .tooManyEntries(line: line.number, limit: limits.maxEntries) }
                continue
            }
            guard let field = ["file", "title", "length"].first(where: { key.hasPrefix($0) }) else { continue }
            let suffix = key.dropFirst(field.count)
            // Keys that merely start like one (a "FileSize" some tool adds) are not entries.
            guard !suffix.isEmpty, suffix.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { continue }
            guard let index = decimal(Substring(suffix)), index <= limits.maxEntries else {
                throw .tooManyEntries(line: line.number, limit: limits.maxEntries)
            }
            guard index >= 1 else { throw .invalidPLS(line: line.number, reason: "entry number 0 in '\(key.prefix(40))'") }
            switch field {
            case "file":
                if !value.isEmpty { files[index] = String(value) }
            case "title":
                if !value.isEmpty { titles[index] = String(value) }
            default:
                if let seconds = seconds(value) { lengths[index] = seconds }
            }
        }
        let entries = files.keys.sorted().compactMap { index in
            files[index].map { PlaylistEntry(location: $0, title: titles[index], duration: lengths[index]) }
        }
        return PlaylistFile(format: .pls, entries: entries)
    }

    /// A non-negative decimal integer of at most 9 digits.
    static func decimal(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 9, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }
}
