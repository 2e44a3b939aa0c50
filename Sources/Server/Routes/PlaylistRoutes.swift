import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio

/// `/api/playlists` and `/playlist/file/<path>`: the playlist files of the music folder, served
/// as extended M3U whose entries are absolute `/media/` URLs of this server.
struct PlaylistRoutes: Sendable {
    let folder: PlaylistFolder
    /// The catalog's track at a relative path (nil when it is not listed).
    let describe: @Sendable (String) -> Track?

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
            let base = Self.base(of: request)
            let entries = read.entries.map { entry -> PlaylistEntry in
                let known = describe(entry.path)
                return Self.entry(path: entry.path, title: entry.written.title ?? known?.label ?? Track.fileName(entry.path),
                                  duration: entry.written.duration ?? known?.durationSeconds, base: base,
                                  signer: request.linkSigner)
            }
            return Self.m3u(entries: entries, title: read.playlist.title, for: request)
        }
        return .error(404, "no such playlist")
    }

    /// `http://<Host>` of the request (its absolute-form authority first), or "" without one
    /// (HTTP/1.0 without Host): the URLs are then absolute paths, which players resolve against
    /// the playlist's own URL.
    /// Behind a trusted proxy (the only one whose `X-Forwarded-*` headers reach here, see
    /// `AccessControl.sanitized`) the scheme and host are the ones the client used.
    static func base(of request: HTTPRequest) -> String {
        let forwardedHost = request.header("X-Forwarded-Host").flatMap { $0.split(separator: ",").first.map(String.init) }
        guard let host = forwardedHost ?? request.authority ?? request.header("Host"), !host.isEmpty,
              !host.contains(where: { $0 == "/" || $0 == " " || $0 == "\r" || $0 == "\n" }) else { return "" }
        let scheme = request.header("X-Forwarded-Proto")?.lowercased() == "https" ? "https" : "http"
        return scheme + "://" + host
    }

    /// The extended M3U of `tracks`: `#EXTINF:<seconds>,<artist> - <title>` (`Track.label`) and
    /// the absolute `/media/` URL of each, with the generated-document validators.
    static func m3u(_ tracks: [Track], title: String? = nil, for request: HTTPRequest) -> HTTPResponse {
        let base = base(of: request)
        let entries = tracks.map { entry(path: $0.path, title: $0.label, duration: $0.durationSeconds, base: base,
                                         signer: request.linkSigner) }
        return m3u(entries: entries, title: title, for: request)
    }

    /// The extended M3U of `entries`, with the generated-document validators.
    static func m3u(entries: [PlaylistEntry], title: String?, for request: HTTPRequest) -> HTTPResponse {
        .generated(Array(M3UWriter.render(entries, title: title).utf8), contentType: contentType, for: request)
    }

    /// The entry of the library file at `path` (relative): its absolute `/media/` URL on `base`,
    /// signed for the user the playlist is for when `signer` is given.
    static func entry(path: String, title: String, duration: Double?, base: String, signer: LinkSigner? = nil) -> PlaylistEntry {
        let link = "/media/" + PathResolver.percentEncode(path)
        return PlaylistEntry(location: base + (signer?.sign(link) ?? link), title: title, duration: duration)
    }
}
