import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio

/// What a playlist line says about a track of the library.
public struct PlaylistTrack: Sendable, Equatable {
    /// Path relative to the music folder.
    public var path: String
    public var title: String?
    public var artist: String?
    public var duration: Double?

    public init(path: String, title: String?, artist: String?, duration: Double?) {
        self.path = path
        self.title = title
        self.artist = artist
        self.duration = duration
    }

    /// `<artist> - <title>` (the title alone without an artist; the file name without a title).
    public var label: String {
        let name = title ?? String(path.split(separator: "/").last ?? Substring(path))
        guard let artist, !artist.isEmpty else { return name }
        return "\(artist) - \(name)"
    }
}

/// `/api/playlists` and `/playlist/file/<path>`: the playlist files of the music folder, served
/// as extended M3U whose entries are absolute `/media/` URLs of this server.
struct PlaylistRoutes: Sendable {
    let folder: PlaylistFolder
    /// The catalog's facts about a track, by relative path (nil when it is not listed).
    let describe: @Sendable (String) -> PlaylistTrack?

    /// The Content-Type of every playlist streamd serves: a list of tracks in M3U, which players
    /// (mpv, VLC) open as such. `application/vnd.apple.mpegurl` would send them to their HLS reader.
    static let contentType = "audio/x-mpegurl; charset=utf-8"

    func handle(_ request: HTTPRequest, path: Substring) -> HTTPResponse? {
        // Both read the folder's playlist files and the catalog: made on the blocking pool.
        if path == "/api/playlists" {
            return .offLoop { .json(listJSON(), for: request) }
        }
        if path.hasPrefix("/playlist/file/") {
            let encoded = path.dropFirst("/playlist/file/".count)
            return .offLoop { file(request, encoded: encoded) }
        }
        return nil
    }

    func listJSON() -> String {
        let items = folder.list().map { playlist -> String in
            var w = JSONObjectWriter()
            w.add("path", playlist.path)
            w.add("url", playlist.url)
            w.add("format", playlist.format.rawValue)
            w.add("title", playlist.title)
            w.add("entries", playlist.entries)
            w.add("dropped", playlist.dropped)
            w.add("size", playlist.size)
            w.add("mtime", playlist.mtime)
            return w.text
        }
        return "[" + items.joined(separator: ",\n") + "]\n"
    }

    private func file(_ request: HTTPRequest, encoded: Substring) -> HTTPResponse {
        guard let decoded = PathResolver.percentDecode(encoded), PathResolver.isSafeRelativePath(decoded) else {
            return .error(400, "bad path")
        }
        // `<path>.m3u8` serves `<path>` when that is a .m3u or .pls (see FolderPlaylist.url).
        var candidates = [decoded]
        if decoded.lowercased().hasSuffix(".m3u8") { candidates.append(String(decoded.dropLast(".m3u8".count))) }
        for candidate in candidates {
            let read: (playlist: PlaylistFile, entries: [LibraryPlaylistEntry])
            do {
                read = try folder.entries(relative: candidate)
            } catch .notFound {
                continue
            } catch {
                return .error(422, "\(error)")
            }
            // The playlist's own title and length first: that is what its author wrote.
            let tracks = read.entries.map { entry -> PlaylistTrack in
                let known = describe(entry.path)
                return PlaylistTrack(path: entry.path, title: entry.title ?? known?.label, artist: nil,
                                     duration: entry.duration ?? known?.duration)
            }
            return Self.m3u(tracks, title: read.playlist.title, for: request)
        }
        return .error(404, "no such playlist")
    }

    /// `http://<Host>` of the request (its absolute-form authority first), or "" without one
    /// (HTTP/1.0 without Host): the URLs are then absolute paths, which players resolve against
    /// the playlist's own URL.
    static func base(of request: HTTPRequest) -> String {
        guard let host = request.authority ?? request.header("Host"), !host.isEmpty else { return "" }
        return "http://" + host
    }

    /// The extended M3U of `tracks`: `#EXTINF:<seconds>,<artist> - <title>` and the absolute
    /// `/media/` URL of each, with the generated-document validators.
    static func m3u(_ tracks: [PlaylistTrack], title: String? = nil, for request: HTTPRequest) -> HTTPResponse {
        let base = base(of: request)
        let entries = tracks.map { track in
            PlaylistEntry(location: base + "/media/" + PathResolver.percentEncode(track.path), title: track.label,
                          duration: track.duration)
        }
        return .generated(Array(M3UWriter.render(entries, title: title).utf8), contentType: contentType, for: request)
    }
}
