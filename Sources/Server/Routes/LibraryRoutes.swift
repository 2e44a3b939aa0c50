#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio
import StreamSubsonic
import Logging

/// The browse and search API over the catalog database (`/api/tracks`, `/api/search`,
/// `/api/albums[/<id>]`, `/api/artists[/<id>]`, `/api/cover/<album id>`) and the playlists made
/// from it (`/playlist/album/<id>.m3u8`, `/playlist/artist/<id>.m3u8`, `/playlist/search.m3u8`,
/// `/playlist/all.m3u8`). Every list is paged or bounded; a bad parameter is a 400 with a JSON error.
struct LibraryRoutes: Sendable {
    let catalog: Catalog
    /// Resizes `/api/cover/<id>?size=` through `getCoverArt`'s path (cover worker, thumbnail
    /// cache); nil (a router without Subsonic): the original is sent.
    var sizedCovers: SubsonicService? = nil
    let orders = TrackOrderCache()
    /// Recent JSON answers by target, valid while the catalog is unchanged (16 MiB), kept from
    /// a target's second request on.
    let responses = JSONResponseCache(capacityBytes: 16 << 20, admitOnSecondRequest: true)
    var store: LibraryStore { catalog.store }
    var resolver: PathResolver { catalog.resolver }

    /// Rows one page may hold (also the page of `/api/tracks` without `limit`, which used to list
    /// every track), the page of the other lists without `limit`, the deepest offset, the longest query.
    static let maxLimit = 1000
    static let defaultLimit = 100
    static let maxOffset = 100_000_000
    static let maxQueryBytes = 256
    /// Most entries of a search playlist.
    static let maxSearchPlaylist = 1000

    func handle(_ request: HTTPRequest, path: Substring) -> HTTPResponse? {
        switch path {
        case "/api/tracks": return cached(request) { try tracks(request) }
        case "/api/search": return cached(request) { try search(request) }
        case "/api/albums": return cached(request) { try albums(request) }
        case "/api/artists": return cached(request) { try artists(request) }
        case "/playlist/search.m3u8": return answer { try searchPlaylist(request) }
        case "/playlist/all.m3u8": return answer { try allPlaylist(request) }
        default: break
        }
        if let id = Self.id(path, prefix: "/api/albums/") { return cached(request) { try album(request, id: id) } }
        if let id = Self.id(path, prefix: "/api/artists/") { return cached(request) { try artist(request, id: id) } }
        if let id = Self.id(path, prefix: "/api/cover/") { return answer { try cover(request, id: id) } }
        if let id = Self.id(path, prefix: "/playlist/album/", suffix: ".m3u8") { return answer { try albumPlaylist(request, id: id) } }
        if let id = Self.id(path, prefix: "/playlist/artist/", suffix: ".m3u8") { return answer { try artistPlaylist(request, id: id) } }
        for prefix in ["/api/albums/", "/api/artists/", "/api/cover/", "/playlist/album/", "/playlist/artist/"]
            where path.hasPrefix(prefix) {
            return .error(404, "no such \(prefix.split(separator: "/").last ?? ""): ids are whole numbers")
        }
        return nil
    }

    // MARK: Parameters


    /// The response `body` builds, on the blocking pool (it reads the database or files); a
    /// refused parameter or a database error becomes its error response.
    private func answer(_ body: @escaping @Sendable () throws -> HTTPResponse) -> HTTPResponse {
        .offLoop { answerNow(body) }
    }

    private func answerNow(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do {
            return try body()
        } catch let refusal as HTTPRefusal {
            return refusal.response
        } catch {
            catalog.logger.warning("library: \(error)")
            return .error(503, "library database: \(error)")
        }
    }

    static func bad(_ message: String) -> HTTPRefusal { .badRequest(message) }

    /// A JSON answer of the API: the document and the headers that go with it (`X-Total-Count`, `X-More`).
    struct JSONAnswer {
        var bytes: [UInt8]
        var headers: [(String, String)] = []

        init(bytes: [UInt8], headers: [(String, String)] = []) {
            self.bytes = bytes
            self.headers = headers
        }

        init(text: String, headers: [(String, String)] = []) {
            self.init(bytes: Array(text.utf8), headers: headers)
        }
    }

    /// The answer `body` builds, from `responses` while the catalog has not changed since it was
    /// built for the same target (the same path and query): a hit is sent from the loop, a miss
    /// is built on the blocking pool.
    private func cached(_ request: HTTPRequest, _ body: @escaping @Sendable () throws -> JSONAnswer) -> HTTPResponse {
        if let hit = responses.lookup(request.target, generation: store.generation) {
            return .generated(hit.body, contentType: "application/json", etag: hit.etag, headers: hit.headers, for: request)
        }
        return answer {
            // Read before the database: a change while the answer is built leaves it under the old generation.
            let generation = store.generation
            let json = try body()
            let entry = JSONResponseCache.Entry(body: json.bytes, headers: json.headers)
            responses.insert(request.target, generation: generation, entry)
            return .generated(entry.body, contentType: "application/json", etag: entry.etag, headers: entry.headers, for: request)
        }
    }

    /// `<prefix><digits><suffix>` → the id.
    static func id(_ path: Substring, prefix: String, suffix: String = "") -> Int? {
        guard path.hasPrefix(prefix), path.hasSuffix(suffix) else { return nil }
        let digits = path.dropFirst(prefix.count).dropLast(suffix.count)
        return QueryValue.integer(String(digits), in: 0...Int(Int32.max))
    }

    /// `offset` (0 unless given) and `limit` (`defaultLimit` unless given), each checked.
    static func paging(_ request: HTTPRequest, defaultLimit: Int, offsetAllowed: Bool = true) throws -> (offset: Int, limit: Int) {
        var offset = 0, limit = defaultLimit
        if let text = request.queryValue("offset") {
            guard offsetAllowed else { throw bad("offset is not taken here: results come best first, limit bounds them") }
            guard let value = QueryValue.integer(text, in: 0...maxOffset) else {
                throw bad("offset must be a whole number in 0...\(maxOffset)")
            }
            offset = value
        }
        if let text = request.queryValue("limit") {
            guard let value = QueryValue.integer(text, in: 1...maxLimit) else { throw bad("limit must be a whole number in 1...\(maxLimit)") }
            limit = value
        }
        return (offset, limit)
    }

    /// The decoded `q` parameter: required, 1 to 256 bytes of text.
    static func query(_ request: HTTPRequest) throws -> String {
        guard let raw = request.queryValue("q") else { throw bad("q is required") }
        guard let text = QueryValue.text(raw, maxBytes: maxQueryBytes),
              !text.allSatisfy({ $0 == " " || $0 == "\t" }) else {
            throw bad("q must be 1 to \(maxQueryBytes) bytes of text (UTF-8, percent-encoded)")
        }
        return text
    }

    // MARK: JSON

    /// The size of the whole list a page is of: a header, so that `/api/tracks` stays the array it always was.
    static func total(_ count: Int) -> [(String, String)] { [("X-Total-Count", String(count))] }

    static func notFound(_ what: String) -> HTTPRefusal { .notFound("no such \(what)") }

    // MARK: Routes

    private func tracks(_ request: HTTPRequest) throws -> JSONAnswer {
        let (offset, limit) = try Self.paging(request, defaultLimit: Self.maxLimit)
        var sort = TrackSort.path
        if let text = request.queryValue("sort") {
            guard let value = TrackSort(rawValue: text) else {
                throw Self.bad("sort must be one of \(TrackSort.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            sort = value
        }
        let page = try orders.pageIDs(store, offset: offset, limit: limit, sort: sort)
        let json = try TrackJSON.array(items: .max, reserving: page.ids.count) { each throws(SQLiteError) in
            try store.tracks.forEachJSON(ids: page.ids, each)
        }
        return JSONAnswer(bytes: json.bytes, headers: Self.total(page.total))
    }

    /// At most `limit` tracks, best match first; `X-More: true` when there are more.
    private func search(_ request: HTTPRequest) throws -> JSONAnswer {
        let query = try Self.query(request)
        let (_, limit) = try Self.paging(request, defaultLimit: Self.defaultLimit, offsetAllowed: false)
        // One row more than asked tells whether there are more.
        let json = try TrackJSON.array(items: limit, reserving: limit) { each throws(SQLiteError) in
            try store.search.forEachJSON(query: query, limit: limit + 1, each)
        }
        return JSONAnswer(bytes: json.bytes, headers: [("X-More", json.more ? "true" : "false")])
    }

    private func albums(_ request: HTTPRequest) throws -> JSONAnswer {
        let (offset, limit) = try Self.paging(request, defaultLimit: Self.defaultLimit)
        let page = try store.albums.page(offset: offset, limit: limit)
        return JSONAnswer(text: AlbumItem.encodeList(page.rows.map { $0.item() }), headers: Self.total(page.total))
    }

    private func album(_ request: HTTPRequest, id: Int) throws -> JSONAnswer {
        guard let found = try store.albums.album(id: id) else { throw Self.notFound("album") }
        return JSONAnswer(text: found.album.item(tracks: found.tracks).encoded() + "\n")
    }

    private func artists(_ request: HTTPRequest) throws -> JSONAnswer {
        let (offset, limit) = try Self.paging(request, defaultLimit: Self.defaultLimit)
        let page = try store.artists.page(offset: offset, limit: limit)
        return JSONAnswer(text: ArtistItem.encodeList(page.rows.map { $0.item() }), headers: Self.total(page.total))
    }

    private func artist(_ request: HTTPRequest, id: Int) throws -> JSONAnswer {
        guard let found = try store.artists.artist(id: id) else { throw Self.notFound("artist") }
        return JSONAnswer(text: found.artist.item(albums: found.albums).encoded() + "\n")
    }

    // MARK: Playlists

    private func albumPlaylist(_ request: HTTPRequest, id: Int) throws -> HTTPResponse {
        guard let found = try store.albums.album(id: id) else { return .error(404, "no such album") }
        return PlaylistRoutes.m3u(found.tracks, title: "\(found.album.artistName) - \(found.album.title)",
                                  for: request)
    }

    private func artistPlaylist(_ request: HTTPRequest, id: Int) throws -> HTTPResponse {
        guard let found = try store.artists.artist(id: id) else { return .error(404, "no such artist") }
        let rows = try store.artists.tracks(artistID: id)
        return PlaylistRoutes.m3u(rows, title: found.artist.name, for: request)
    }

    private func searchPlaylist(_ request: HTTPRequest) throws -> HTTPResponse {
        let query = try Self.query(request)
        let rows = try store.search.tracks(query: query, limit: Self.maxSearchPlaylist)
        return PlaylistRoutes.m3u(rows, title: "Search: \(query)", for: request)
    }

    /// Every track, in path order or shuffled by `?shuffle=SEED` (the same seed, the same order,
    /// as long as the library is the same), written a piece at a time as the client takes it
    /// (`LibraryPlaylistBody`: 100,000 entries are 18 MB).
    private func allPlaylist(_ request: HTTPRequest) throws -> HTTPResponse {
        var seed: UInt64?
        if let text = request.queryValue("shuffle") {
            guard let value = QueryValue.integer(text, in: 0...Int(Int64.max)) else {
                throw Self.bad("shuffle must be a whole number in 0...\(Int64.max)")
            }
            seed = UInt64(value)
        }
        // Read before the ids: a change meanwhile leaves the tag older than the list, never newer.
        let generation = store.generation
        var ids = try orders.allIDs(store, sort: .path)
        if let seed {
            // Fisher-Yates with our own generator and bounded draws, not the standard library's
            // shuffle, whose algorithm may change between Swift versions.
            var generator = SplitMix64(seed: seed)
            var i = ids.count - 1
            while i > 0 {
                ids.swapAt(i, Int(generator.next(below: UInt64(i + 1))))
                i -= 1
            }
        }
        let base = PlaylistRoutes.base(of: request)
        // The list is written after the head, so its tag stands for what it is made of: this
        // process's catalog as of `generation`, the order, and the host its URLs name.
        // A signed list differs per user and hour: no validator for it to match.
        let signedPart = request.linkSigner.map { $0.query("/") } ?? ""
        let tag = JSONResponse.etag(of: Array("all \(Self.processTag) \(generation) \(seed.map(String.init) ?? "path") \(base) \(signedPart)".utf8))
        let validators = [("ETag", tag), ("Cache-Control", "no-cache")]
        switch Precondition.evaluate(request, etag: tag, lastModified: nil) {
        case .failed: return .error(412, "precondition failed")
        case .notModified: return HTTPResponse(status: 304, headers: validators)
        case .proceed: break
        }
        // HTTP/1.0 cannot take chunked: the end of the list is the end of the connection.
        let chunked = request.minorVersion != 0
        let body = LibraryPlaylistBody(store: store, ids: ids, title: seed.map { "All tracks, shuffled (\($0))" } ?? "All tracks",
                                       base: base, chunked: chunked, signer: request.linkSigner)
        var response = HTTPResponse(status: 200, headers: [("Content-Type", PlaylistRoutes.contentType)] + validators
                                    + (chunked ? [("Transfer-Encoding", "chunked")] : []), body: body)
        response.closeConnection = !chunked
        return response
    }

    /// Tells this process's generations from another's (the count starts again at each start).
    static let processTag: String = {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return String(UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec), radix: 36) + "-" + String(getpid())
    }()

    // MARK: Cover art

    /// `/api/cover/<id>[?size=N]`: the album's cover, its longer side resized to N pixels
    /// (`SubsonicService.coverSizes`, as `getCoverArt`) when asked, else the original.
    private func cover(_ request: HTTPRequest, id: Int) throws -> HTTPResponse {
        if let text = request.queryValue("size") {
            let sizes = SubsonicService.coverSizes
            guard let size = QueryValue.integer(text, in: sizes) else {
                throw Self.bad("size must be a whole number of pixels in \(sizes.lowerBound)...\(sizes.upperBound)")
            }
            if let sizedCovers {
                guard let response = try sizedCovers.albumCover(request, albumID: id, size: size) else {
                    return .error(404, "no such album, or no cover for it")
                }
                return response
            }
        }
        switch try CoverArt.find(albumID: id, in: catalog) {
        case .failure: return .error(404, "no such album")
        case .success(.embedded(let data, let mimeType, let etag)?):
            return .generated(data, contentType: mimeType, etag: etag, for: request)
        case .success(.file(let path, let mimeType)?):
            if let file = try? OpenFile(path: path) {
                return FileResponder.respond(to: request, file: file, contentType: mimeType, framing: .contentLength)
            }
            return .error(404, "no cover for this album")
        case .success(nil):
            return .error(404, "no cover for this album")
        }
    }
}
