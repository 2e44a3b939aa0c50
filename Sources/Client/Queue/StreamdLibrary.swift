import StreamShared

/// A streamd server's library as a queue, through its API: the base URL (`http://HOST:PORT/`)
/// plays everything in path order (`/playlist/all.m3u8`), `--album NAME` the album of that name
/// (`/api/albums`, then `/playlist/album/<id>.m3u8`), `--search QUERY` the search's tracks
/// (`/api/search`), best first.
public enum StreamdLibrary {
    /// Largest API answer read (a page of 1000 albums is about 400 KB).
    static let maxBody = 16 << 20
    /// Album pages read at most (1000 albums each).
    static let maxAlbumPages = 1000

    /// True for `http(s)://host[:port]` with no path but `/` (and no query): a server, not a file.
    public static func isServerRoot(_ location: String) -> Bool {
        let lower = location.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lower.hasPrefix($0) }) else { return false }
        let rest = location.dropFirst(scheme.count)
        guard let slash = rest.firstIndex(of: "/") else { return !rest.isEmpty && !rest.contains("?") && !rest.contains("#") }
        return rest[slash...] == "/" && slash > rest.startIndex
    }

    /// The root of `location` with one trailing slash, for building API URLs.
    static func root(_ location: String) -> String { location.hasSuffix("/") ? location : location + "/" }

    /// `/playlist/all.m3u8` of the server: every track, in path order.
    public static func allTracksPlaylist(of base: String) -> String { root(base) + "playlist/all.m3u8" }

    /// The tracks of the album named `name` (exact title, case folded, first; else the one album
    /// whose title contains it), as the album playlist's URL. Throws `QueueError` naming the
    /// closest titles when none or several match.
    public static func albumPlaylist(named name: String, base: String, http: HTTPSourceOptions) throws -> String {
        let wanted = name.lowercased()
        var exact: [(id: Int, title: String)] = [], partial: [(id: Int, title: String)] = []
        var offset = 0
        for _ in 0..<maxAlbumPages {
            let albums = try albumPage(root(base) + "api/albums?offset=\(offset)&limit=1000", http: http)
            for album in albums {
                let title = album.title
                if title.lowercased() == wanted { exact.append((album.id, title)) }
                else if title.lowercased().contains(wanted) { partial.append((album.id, title)) }
            }
            if albums.count < 1000 { break }
            offset += albums.count
        }
        let matches = exact.isEmpty ? partial : exact
        guard let album = matches.first else {
            throw QueueError(message: "\(base): no album named '\(name)'")
        }
        guard matches.count == 1 else {
            let names = matches.prefix(5).map { "'\($0.title)'" }.joined(separator: ", ")
            throw QueueError(message: "\(base): \(matches.count) albums match '\(name)' (\(names)\(matches.count > 5 ? ", …" : "")); name one")
        }
        return root(base) + "playlist/album/\(album.id).m3u8"
    }

    /// The URLs of the tracks `/api/search` finds for `query` (at most 1000, best first).
    public static func searchTracks(_ query: String, base: String, http: HTTPSourceOptions) throws -> [String] {
        let url = root(base) + "api/search?q=\(formEncoded(query))&limit=1000"
        let tracks: [TrackItem]
        do { tracks = try TrackItem.decodeList(try body(url, http: http)) } catch let error as APIDocumentError {
            throw QueueError(message: "\(base): /api/search did not answer a list of tracks (\(error))")
        }
        let urls = tracks.compactMap { HLSFetcher.resolve($0.url, against: root(base)) }
        guard !urls.isEmpty else { throw QueueError(message: "\(base): nothing found for '\(query)'") }
        return urls
    }

    /// GETs and reads a page of `/api/albums`; an answer that is not one means the server is not streamd.
    static func albumPage(_ url: String, http: HTTPSourceOptions) throws -> [AlbumItem] {
        let body = try body(url, http: http)
        do { return try AlbumItem.decodeList(body) } catch {
            throw QueueError(message: "\(url): not streamd's API: /api/albums did not answer a list of albums (\(error))")
        }
    }

    /// GETs an API answer's bytes; a 404 means the server is not streamd.
    static func body(_ url: String, http: HTTPSourceOptions) throws -> [UInt8] {
        do { return try HTTPSource(url: url, options: http).fetch(limit: maxBody) } catch let error as SourceError {
            if case .httpStatus(404, _) = error { throw QueueError(message: "\(url): HTTP 404 (not a streamd server?)") }
            throw error
        }
    }

    /// `application/x-www-form-urlencoded` text for a query value (UTF-8, spaces as %20).
    static func formEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return out
    }
}
