/// The kinds of track playlist `PlaylistParser` reads.
public enum PlaylistFormat: String, Sendable, Equatable {
    /// Plain M3U: one location per line, `#` lines are comments.
    case m3u
    /// Extended M3U: `#EXTM3U` first, `#EXTINF:<seconds>,<title>` before a location.
    case extendedM3U = "extended-m3u"
    /// PLS: an INI-like `[playlist]` section of `FileN`, `TitleN`, `LengthN`.
    case pls
}

/// One entry of a track playlist.
public struct PlaylistEntry: Sendable, Equatable {
    /// The location as written (trimmed): a URL, an absolute path or a path relative to the
    /// playlist's folder. `PlaylistLocation.resolve` turns it into something to open.
    public var location: String
    /// The EXTINF or TitleN title, when there is one.
    public var title: String?
    /// The EXTINF or LengthN duration in seconds; nil when unknown (-1, absent, not a number).
    public var duration: Double?

    public init(location: String, title: String? = nil, duration: Double? = nil) {
        self.location = location
        self.title = title
        self.duration = duration
    }
}

/// A parsed track playlist (M3U, extended M3U or PLS).
public struct PlaylistFile: Sendable, Equatable {
    public var format: PlaylistFormat
    /// `#PLAYLIST:` of an extended M3U.
    public var title: String?
    public var entries: [PlaylistEntry]

    public init(format: PlaylistFormat, title: String? = nil, entries: [PlaylistEntry]) {
        self.format = format
        self.title = title
        self.entries = entries
    }
}

/// Bounds the parser keeps to, so a hostile file costs bounded time and memory.
public struct PlaylistLimits: Sendable {
    /// Largest file accepted (a 100,000-entry playlist of long paths fits).
    public var maxBytes = 16 << 20
    /// Most entries accepted (also the highest PLS entry number).
    public var maxEntries = 100_000
    /// Longest line accepted, in bytes.
    public var maxLineLength = 16 * 1024
    public init() {}
}

/// How the bytes of a playlist are decoded when they carry no byte order mark.
public enum PlaylistTextEncoding: Sendable, Equatable {
    /// UTF-8 only (`.m3u8` says so by its name): invalid UTF-8 is an error.
    case utf8
    /// UTF-8 when the whole file is valid UTF-8, else Windows-1252 (Latin-1 with the C1 range
    /// mapped as Windows does), which is what `.m3u` and `.pls` files written on Windows hold.
    case utf8OrWindows1252

    /// The rule for a file name's extension: `m3u8` is UTF-8, anything else may be legacy text.
    public init(fileExtension: String?) {
        self = fileExtension?.lowercased() == "m3u8" ? .utf8 : .utf8OrWindows1252
    }
}

/// Why a playlist could not be read. Messages name the component (`playlist`) and the line.
public enum PlaylistError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file is larger than `PlaylistLimits.maxBytes`.
    case tooLarge(bytes: Int, limit: Int)
    /// More entries (or a higher PLS entry number) than `PlaylistLimits.maxEntries`.
    case tooManyEntries(line: Int, limit: Int)
    /// A line longer than `PlaylistLimits.maxLineLength` bytes.
    case lineTooLong(line: Int, limit: Int)
    /// Not text: a NUL byte, or a UTF-16 byte order mark over invalid UTF-16.
    case notText(reason: String)
    /// Bytes that are not UTF-8 in a playlist that must be UTF-8 (`.m3u8`, or a UTF-8 BOM).
    case invalidUTF8(line: Int)
    /// An HLS playlist (RFC 8216), not a list of tracks: `tag` is what told it apart.
    /// `M3U8Parser` reads those.
    case hls(tag: String)
    /// A PLS file that breaks the format (entry number 0, a NumberOfEntries that is not a number).
    case invalidPLS(line: Int, reason: String)

    public var description: String {
        switch self {
        case let .tooLarge(bytes, limit):
            return "playlist: file of \(bytes) bytes is larger than the limit of \(limit)"
        case let .tooManyEntries(line, limit):
            return "playlist: line \(line): more than \(limit) entries"
        case let .lineTooLong(line, limit):
            return "playlist: line \(line): longer than \(limit) bytes"
        case let .notText(reason):
            return "playlist: not a text file (\(reason))"
        case let .invalidUTF8(line):
            return "playlist: line \(line): not valid UTF-8"
        case let .hls(tag):
            return "playlist: an HLS playlist (\(tag)), not a list of tracks"
        case let .invalidPLS(line, reason):
            return "playlist: line \(line): \(reason)"
        }
    }
}
