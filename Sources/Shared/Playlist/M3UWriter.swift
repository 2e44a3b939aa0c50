/// Writes extended M3U playlists (`#EXTM3U`, `#EXTINF:<seconds>,<title>`, one location a line)
/// that `PlaylistParser` and every player read back as written.
public enum M3UWriter {
    /// The playlist text, lines ending in LF. Durations are whole seconds (`-1` when unknown), the
    /// form every player takes; titles and locations are escaped so that each stays on its line.
    public static func render(_ entries: [PlaylistEntry], title: String? = nil) -> String {
        var text = "#EXTM3U\n"
        if let title, case let clean = escapeTitle(title), !clean.isEmpty { text += "#PLAYLIST:\(clean)\n" }
        for entry in entries {
            text += "#EXTINF:\(seconds(entry.duration)),\(escapeTitle(entry.title ?? ""))\n"
            text += escapeLocation(entry.location) + "\n"
        }
        return text
    }

    /// Whole seconds, rounded; -1 for unknown, negative, not finite or over a week.
    public static func seconds(_ duration: Double?) -> Int {
        guard let duration, duration.isFinite, duration >= 0, duration <= InputLimits.maxDurationSeconds else { return -1 }
        return Int(duration.rounded())
    }

    /// A title on one line: control characters and every Unicode line or paragraph separator
    /// become spaces, and leading/trailing spaces go (a reader trims them anyway).
    public static func escapeTitle(_ title: String) -> String {
        // Printable ASCII with no space at either end (nearly every title) is written as it is.
        if isPrintableASCII(title, spaceAllowed: true), title.utf8.first != 0x20, title.utf8.last != 0x20 { return title }
        var out = ""
        out.unicodeScalars.reserveCapacity(title.unicodeScalars.count)
        for scalar in title.unicodeScalars {
            switch scalar.value {
            case 0..<0x20, 0x7F, 0x80..<0xA0, 0x2028, 0x2029:
                out.unicodeScalars.append(" ")
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return String(PlaylistText.trimmed(out[...]))
    }

    /// A location as a URI reference on one line: control characters and spaces would end or
    /// be trimmed from the line, so they are percent-encoded (as in a URL; `%` is left alone,
    /// since a URL's own escapes must stay as they are); a leading `#` would make the line a
    /// comment, so it is encoded too. Other text is kept as written.
    public static func escapeLocation(_ location: String) -> String {
        if isPrintableASCII(location, spaceAllowed: false), location.utf8.first != UInt8(ascii: "#") { return location }
        var out = ""
        out.reserveCapacity(location.utf8.count)
        for (offset, scalar) in location.unicodeScalars.enumerated() {
            let value = scalar.value
            let encode = value < 0x21 || value == 0x7F || (0x80..<0xA0).contains(value) || value == 0x2028 || value == 0x2029
                || (offset == 0 && scalar == "#")
            if encode {
                for byte in String(scalar).utf8 { out += percent(byte) }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Bytes 0x21-0x7E only (and 0x20 when `spaceAllowed`): nothing to escape.
    static func isPrintableASCII(_ text: String, spaceAllowed: Bool) -> Bool {
        let lowest: UInt8 = spaceAllowed ? 0x20 : 0x21
        for byte in text.utf8 where byte < lowest || byte > 0x7E { return false }
        return true
    }

    static func percent(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
    }
}
