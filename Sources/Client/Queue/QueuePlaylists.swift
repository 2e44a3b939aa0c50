import StreamShared

/// Track playlists among a queue's sources: M3U, extended M3U and PLS files or URLs, told apart
/// from HLS playlists by their content (`PlaylistParser`): an HLS playlist stays one track for
/// the HLS layer; a track playlist becomes its entries, resolved against the playlist's own
/// location (its folder for a file, its URL for a URL, RFC 3986).
public enum QueuePlaylists {
    /// Longest playlist read (the parser's own bound).
    static let maxBytes = PlaylistLimits().maxBytes
    /// Playlists that list playlists are followed this deep.
    static let maxDepth = 4

    /// True when the name says the source may be a playlist (the content decides).
    public static func mayBePlaylist(_ location: String) -> Bool {
        let ext = fileExtension(location)
        return ext == "m3u" || ext == "m3u8" || ext == "pls"
    }

    /// What a playlist source holds.
    public enum Contents: Sendable, Equatable {
        /// An RFC 8216 playlist, or text that is no track playlist: one stream for the HLS layer.
        case hls
        /// The entries of a track playlist, resolved, and one warning per entry left out.
        case tracks([String], warnings: [String])
    }

    /// Reads and parses the playlist at `location` (a path or an http(s) URL).
    public static func read(_ location: String, http: HTTPSourceOptions = HTTPSourceOptions()) throws -> Contents {
        // The first 64 KiB tell an HLS playlist (its tags open it) without reading a long one
        // twice: the HLS layer reads it again, under its own bounds.
        let prefixLength = 64 * 1024
        if location.contains("://") {
            let source = HTTPSource(url: location, options: http)
            if let prefix = try? source.readRange(0..<prefixLength), looksLikeHLS(prefix) { return .hls }
            return try contents(try source.fetch(limit: maxBytes), of: location)
        }
        let file = try LocalFile(path: location)
        if looksLikeHLS(try file.read(at: 0, count: min(file.size, prefixLength))) { return .hls }
        guard file.size <= maxBytes else { throw SourceError.tooLarge(url: location, limit: maxBytes) }
        return try contents(try file.read(at: 0, count: file.size), of: location)
    }

    /// True when the bytes hold a tag only HLS playlists carry.
    static func looksLikeHLS(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.contains("#EXT-X-TARGETDURATION") || text.contains("#EXT-X-STREAM-INF")
    }

    /// The contents of playlist bytes read from `location`.
    public static func contents(_ bytes: [UInt8], of location: String) throws -> Contents {
        let playlist: PlaylistFile
        do {
            playlist = try PlaylistParser.parse(bytes[...], encoding: PlaylistTextEncoding(fileExtension: fileExtension(location)))
        } catch .hls {
            return .hls
        } catch {
            throw QueueError(message: "\(location): \(error)")
        }
        // A plain list of lines is taken for a playlist only under a name that promises one
        // (.m3u, .pls) and when it does not open like markup: an .m3u8 without #EXTM3U, or an
        // HTML page, goes to the HLS layer, whose error names what it is.
        if playlist.format == .m3u {
            let opening = bytes.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D && $0 != 0xEF && $0 != 0xBB && $0 != 0xBF }
            if fileExtension(location) == "m3u8" || opening == UInt8(ascii: "<") { return .hls }
        }
        var tracks: [String] = []
        var warnings: [String] = []
        for entry in playlist.entries {
            if location.contains("://") {
                tracks.append(HLSFetcher.resolve(entry.location, against: location))
                continue
            }
            switch PlaylistLocation.resolve(entry.location, relativeTo: directory(of: location)) {
            case .remote(let url): tracks.append(url)
            case .local(let path): tracks.append(path)
            case .unresolvable(let why): warnings.append("queue: \(location): entry '\(entry.location.prefix(200))' skipped: \(why)")
            }
        }
        return .tracks(tracks, warnings: warnings)
    }

    /// The folder a local playlist's relative entries are in.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The lower-cased extension of a path or URL (query and fragment ignored).
    static func fileExtension(_ location: String) -> String {
        var path = Substring(location)
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<cut] }
        let name = path.split(separator: "/").last ?? path
        guard let dot = name.lastIndex(of: ".") else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }
}

/// Why a queue source could not be used.
public struct QueueError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { "queue: \(message)" }
}
