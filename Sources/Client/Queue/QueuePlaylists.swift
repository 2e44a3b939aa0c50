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
        /// An RFC 8216 playlist: played as one HLS stream.
        case hls
        /// The entries of a track playlist, resolved, and one warning per entry left out.
        case tracks([String], warnings: [String])
    }

    /// Reads and parses the playlist at `location` (a path or an http(s) URL).
    public static func read(_ location: String, http: HTTPSourceOptions = HTTPSourceOptions()) throws -> Contents {
        let bytes: [UInt8]
        if location.contains("://") {
            bytes = try HTTPSource(url: location, options: http).fetch(limit: maxBytes)
        } else {
            let file = try LocalFile(path: location)
            guard file.size <= maxBytes else { throw SourceError.tooLarge(url: location, limit: maxBytes) }
            bytes = try file.read(at: 0, count: file.size)
        }
        return try contents(bytes, of: location)
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
