import StreamShared
import StreamHTTP
import StreamLibrary
import Logging

/// What a call answers: the content of an ok envelope, or an HTTP response of its own (a
/// stream, a picture).
enum SubsonicAnswer {
    case element(SubsonicElement)
    case http(HTTPResponse)

    static let empty = SubsonicAnswer.element(SubsonicElement())
}

/// One Subsonic call being answered: who asks, with what.
struct SubsonicCall {
    var request: HTTPRequest
    var parameters: SubsonicParameters
    var user: SubsonicUser
}

/// The Subsonic/OpenSubsonic API at `/rest/` (docs/DESIGN.md, "Subsonic"): `/rest/<name>` and
/// `/rest/<name>.view`, GET query or POST form, answered as XML (`f=xml`, the default), JSON or
/// JSONP from one model (`SubsonicElement`). Every call's credentials are judged first
/// (`SubsonicAuth`); the calls that read the catalog run on the blocking pool.
public final class SubsonicService: Sendable {
    let catalog: Catalog
    let auth: SubsonicAuth
    let ids: SubsonicIDs
    let nowPlaying = Lock<[NowPlayingEntry]>([])
    let logger: Logger
    /// How whole files go out (`streamd --content-length`).
    let framing: WholeFileFraming
    /// Resized covers (`getCoverArt?size=`), kept by the source's validator and size.
    let covers: SubsonicCoverCache
    /// The lists' orders (albums by name, artist, date; songs, albums and artists by id).
    let orders = SubsonicOrderCache()
    /// Every album and artist without marks, and album list items written once (getAlbumList/2, search).
    let tables = SubsonicTables()
    /// Album titles' and album artists' words, for search's albums and artists.
    let names = SubsonicNameIndexes()
    /// `stream`'s transcodes: `/media/`'s transcoder (streamd passes `TranscodeService.respond`);
    /// nil: `stream` always sends the original.
    let transcode: SubsonicTranscode?
    /// The documents of the calls that only read the catalog and the caller's marks (search,
    /// album lists, albums, artists), by the call's parameters without its credentials, its
    /// format and its user with the version of that user's marks; each valid for the catalog
    /// generation it was built from. Kept from a key's second request on (16 MiB).
    let answers = JSONResponseCache(capacityBytes: 16 << 20, admitOnSecondRequest: true)
    /// Each user's marks version (a number from one counter, taken anew by every write to the
    /// user's stars, ratings or plays): part of a kept answer's key, so no answer shows marks
    /// older than the user's last change.
    let marksVersions = Lock<(next: UInt64, byUser: [Int: UInt64])>((1, [:]))

    public static let prefix = "/rest/"

    public init(catalog: Catalog, auth: SubsonicAuth = .open, framing: WholeFileFraming = .chunked,
                transcode: SubsonicTranscode? = nil, coverResizer: CoverResizerSettings? = nil,
                logger: Logger = Logger(label: "streamd.subsonic")) throws(SQLiteError) {
        self.catalog = catalog
        self.transcode = transcode
        self.auth = auth
        self.framing = framing
        self.logger = logger
        self.ids = SubsonicIDs(store: catalog.store)
        // nil: no resizer (the original is sent); resized covers are kept beside the database.
        let disk = catalog.store.path == ":memory:" ? nil : SubsonicCoverDiskCache(directory: catalog.store.path + ".covers")
        self.covers = SubsonicCoverCache(resizer: coverResizer.map { CoverResizer(settings: $0) }, disk: disk, logger: logger)
        try SubsonicSchema.migrate(catalog.store)
    }

    var store: LibraryStore { catalog.store }
    var library: SubsonicLibrary { SubsonicLibrary(store: catalog.store) }

    /// A call: which may run on the loop, whether it needs credentials, and what it does.
    struct Endpoint {
        /// Answered without credentials (OpenSubsonic: getOpenSubsonicExtensions must be).
        var isPublic = false
        /// Answered on the event loop: no database, no file.
        var onLoop = false
        /// Its document depends only on its parameters, the catalog and the caller's marks: kept
        /// in `answers` (getAlbumList's `random` is not: `cacheKey` leaves it out).
        var cacheable = false
        var run: @Sendable (SubsonicService, SubsonicCall) throws -> SubsonicAnswer
    }

    /// The calls streamd answers, by name.
    static let endpoints: [String: Endpoint] = {
        var table: [String: Endpoint] = [:]
        table["ping"] = Endpoint(onLoop: true) { _, _ in .empty }
        table["getLicense"] = Endpoint(isPublic: true, onLoop: true) { _, _ in
            var body = SubsonicElement()
            body.add("license", SubsonicElement([("valid", .bool(true))]))
            return .element(body)
        }
        table["getOpenSubsonicExtensions"] = Endpoint(isPublic: true, onLoop: true) { service, _ in .element(service.extensions()) }
        table["getMusicFolders"] = Endpoint(onLoop: true) { service, _ in .element(service.musicFolders()) }
        table["getUser"] = Endpoint(onLoop: true) { service, call in try service.getUser(call) }
        table["getScanStatus"] = Endpoint { service, _ in try service.scanStatus() }
        table["getIndexes"] = Endpoint { service, call in try service.getIndexes(call) }
        table["getMusicDirectory"] = Endpoint(cacheable: true) { service, call in try service.getMusicDirectory(call) }
        table["getArtists"] = Endpoint(cacheable: true) { service, call in try service.getArtists(call) }
        table["getArtist"] = Endpoint(cacheable: true) { service, call in try service.getArtist(call) }
        table["getAlbum"] = Endpoint(cacheable: true) { service, call in try service.getAlbum(call) }
        table["getSong"] = Endpoint(cacheable: true) { service, call in try service.getSong(call) }
        table["getGenres"] = Endpoint(cacheable: true) { service, call in try service.getGenres(call) }
        table["getAlbumList"] = Endpoint(cacheable: true) { service, call in try service.getAlbumList(call, id3: false) }
        table["getAlbumList2"] = Endpoint(cacheable: true) { service, call in try service.getAlbumList(call, id3: true) }
        table["getRandomSongs"] = Endpoint { service, call in try service.getRandomSongs(call) }
        table["getSongsByGenre"] = Endpoint { service, call in try service.getSongsByGenre(call) }
        table["search2"] = Endpoint(cacheable: true) { service, call in try service.search(call, id3: false) }
        table["search3"] = Endpoint(cacheable: true) { service, call in try service.search(call, id3: true) }
        table["stream"] = Endpoint { service, call in try service.stream(call, download: false) }
        table["download"] = Endpoint { service, call in try service.stream(call, download: true) }
        table["getCoverArt"] = Endpoint { service, call in try service.getCoverArt(call) }
        table["getLyrics"] = Endpoint { service, call in try service.getLyrics(call) }
        table["getLyricsBySongId"] = Endpoint { service, call in try service.getLyricsBySongId(call) }
        table["getPlaylists"] = Endpoint { service, call in try service.getPlaylists(call) }
        table["getPlaylist"] = Endpoint { service, call in try service.getPlaylist(call) }
        table["createPlaylist"] = Endpoint { service, call in try service.createPlaylist(call) }
        table["updatePlaylist"] = Endpoint { service, call in try service.updatePlaylist(call) }
        table["deletePlaylist"] = Endpoint { service, call in try service.deletePlaylist(call) }
        table["star"] = Endpoint { service, call in try service.star(call, on: true) }
        table["unstar"] = Endpoint { service, call in try service.star(call, on: false) }
        table["getStarred"] = Endpoint { service, call in try service.getStarred(call, id3: false) }
        table["getStarred2"] = Endpoint { service, call in try service.getStarred(call, id3: true) }
        table["setRating"] = Endpoint { service, call in try service.setRating(call) }
        table["scrobble"] = Endpoint { service, call in try service.scrobble(call) }
        table["getNowPlaying"] = Endpoint { service, call in try service.getNowPlaying(call) }
        table["getPlayQueue"] = Endpoint { service, call in try service.getPlayQueue(call) }
        table["savePlayQueue"] = Endpoint { service, call in try service.savePlayQueue(call) }
        return table
    }()

    /// The calls that must not be refused for their method: everything under `/rest/`.
    public static func handles(_ path: Substring) -> Bool { path.hasPrefix(prefix) }

    /// Answers a request for `/rest/...`: GET, HEAD or a form POST. Never a bare 404: an unknown
    /// call is the error envelope (code 0), like every refusal, with HTTP 200.
    public func handle(_ request: HTTPRequest, principal: SubsonicPrincipal = .anonymous) -> HTTPResponse {
        var name = request.path.dropFirst(Self.prefix.count)
        if name.hasSuffix(".view") { name = name.dropLast(5) }
        let parameters: SubsonicParameters
        do {
            parameters = try SubsonicParameters(query: request.query, form: request.formBody)
        } catch {
            return Self.render(.failure(error), format: .xml, request: request)
        }
        let format: SubsonicFormat
        switch parameters.format() {
        case .success(let value): format = value
        case .failure(let error): return Self.render(.failure(error), format: .json, request: request)
        }
        var response = respond(request, name: String(name), parameters: parameters, format: format, principal: principal)
        response.takesRequestBody = request.formBody != nil
        return response
    }

    private func respond(_ request: HTTPRequest, name: String, parameters: SubsonicParameters, format: SubsonicFormat,
                         principal: SubsonicPrincipal) -> HTTPResponse {
        switch request.method {
        case "GET", "HEAD", "POST": break
        default:
            return Self.render(.failure(.generic("method \(request.method) is not taken by /rest/")), format: format, request: request)
        }
        guard let endpoint = Self.endpoints[name] else {
            return Self.render(.failure(.generic("\(name) is not implemented by streamd")), format: format, request: request)
        }
        // Credentials are judged from memory (the accounts' snapshot, the back-off's counts), so
        // a call that reads nothing else is answered on the loop, without a trip to the pool.
        if endpoint.onLoop {
            return Self.render(authenticated(endpoint, request, name: name, parameters: parameters, principal: principal),
                               format: format, request: request)
        }
        if endpoint.cacheable {
            return cached(endpoint, request, name: name, parameters: parameters, format: format, principal: principal)
        }
        return .offLoop { [self] in
            do {
                try ids.ensureCurrent()
            } catch {
                logger.warning("subsonic: ids: \(error)")
                return Self.render(.failure(.generic("library database: \(error)")), format: format, request: request)
            }
            return Self.render(authenticated(endpoint, request, name: name, parameters: parameters, principal: principal),
                               format: format, request: request)
        }
    }

    /// A call whose document may be kept: credentials judged and a kept document sent on the
    /// loop; otherwise built on the pool and kept under the catalog generation and the user's
    /// marks version read before it was built (a change meanwhile leaves it under the old ones).
    private func cached(_ endpoint: Endpoint, _ request: HTTPRequest, name: String, parameters: SubsonicParameters,
                        format: SubsonicFormat, principal: SubsonicPrincipal) -> HTTPResponse {
        let user: SubsonicUser
        switch auth.authenticate(parameters, request: request, principal: principal) {
        case .success(let who): user = who
        case .failure(let error):
            logger.info("subsonic: \(name) refused: \(error.message)")
            return Self.render(.failure(error), format: format, request: request)
        }
        let key = Self.cacheKey(name: name, parameters: parameters, format: format, user: user, marks: marksVersion(of: user.id))
        if let key, let hit = answers.lookup(key, generation: store.generation) {
            return Self.document(hit.body, format: format)
        }
        let call = SubsonicCall(request: request, parameters: parameters, user: user)
        return .offLoop { [self] in
            let generation = store.generation
            do {
                try ids.ensureCurrent()
            } catch {
                logger.warning("subsonic: ids: \(error)")
                return Self.render(.failure(.generic("library database: \(error)")), format: format, request: request)
            }
            let outcome = run(endpoint, call)
            guard let key, case .success(.element(let body)) = outcome else { return Self.render(outcome, format: format, request: request) }
            let bytes = Self.bytes(ok: true, body: body, format: format)
            answers.insert(key, generation: generation, JSONResponseCache.Entry(body: bytes, headers: []))
            return Self.document(bytes, format: format)
        }
    }

    /// The version of `user`'s marks now (0 before their first change in this process).
    func marksVersion(of user: Int) -> UInt64 {
        marksVersions.withLock { $0.byUser[user] ?? 0 }
    }

    /// Called after every write to `user`'s marks: their kept answers are not used again.
    func marksChanged(of user: Int) {
        marksVersions.withLock { versions in
            versions.byUser[user] = versions.next
            versions.next += 1
        }
    }

    /// Parameters that say who asks, not what: they are left out of a kept answer's key (the
    /// user is in it by id and name).
    static let credentialParameters: Set<String> = ["u", "p", "t", "s", "apiKey", "c", "f", "callback"]

    /// The key a call's document is kept under: the call, the format, the user and their marks
    /// version, and the other parameters in order; nil for a call whose answer must be made anew
    /// each time (getAlbumList's `random`).
    static func cacheKey(name: String, parameters: SubsonicParameters, format: SubsonicFormat, user: SubsonicUser,
                         marks: UInt64) -> String? {
        if name.hasPrefix("getAlbumList"), parameters.string("type") == "random" { return nil }
        var key = name + "\u{0}" + String(user.id) + "\u{0}" + user.name + "\u{0}" + String(marks) + "\u{0}"
        switch format {
        case .xml: key += "xml"
        case .json: key += "json"
        case .jsonp(let callback): key += "jsonp:" + callback
        }
        for (parameter, value) in parameters.pairs where !credentialParameters.contains(parameter) {
            key += "\u{0}" + parameter + "=" + value
        }
        return key
    }

    /// The call's answer once its credentials are judged (first, before anything else about it).
    private func authenticated(_ endpoint: Endpoint, _ request: HTTPRequest, name: String, parameters: SubsonicParameters,
                               principal: SubsonicPrincipal) -> Result<SubsonicAnswer, SubsonicError> {
        let user: SubsonicUser
        switch auth.authenticate(parameters, request: request, principal: principal) {
        case .success(let who): user = who
        case .failure(let error):
            guard endpoint.isPublic else {
                logger.info("subsonic: \(name) refused: \(error.message)")
                return .failure(error)
            }
            // A public call answered to someone not signed in: no one's data is read.
            user = SubsonicUser(id: -1, name: "", isAdmin: false)
        }
        return run(endpoint, SubsonicCall(request: request, parameters: parameters, user: user))
    }

    private func run(_ endpoint: Endpoint, _ call: SubsonicCall) -> Result<SubsonicAnswer, SubsonicError> {
        do {
            return .success(try endpoint.run(self, call))
        } catch let error as SubsonicError {
            return .failure(error)
        } catch {
            logger.warning("subsonic: \(error)")
            return .failure(.generic("\(error)"))
        }
    }

    /// The answer on the wire: HTTP 200 in every case but a call's own response (stream, cover).
    static func render(_ outcome: Result<SubsonicAnswer, SubsonicError>, format: SubsonicFormat, request: HTTPRequest) -> HTTPResponse {
        let ok: Bool, body: SubsonicElement
        switch outcome {
        case .success(.http(let response)): return response
        case .success(.element(let element)): ok = true; body = element
        case .failure(let error): ok = false; body = error.element
        }
        return document(bytes(ok: ok, body: body, format: format), format: format)
    }

    /// The ok envelope with nothing in it (ping's answer), in XML and JSON, written once.
    static let emptyOK = (xml: SubsonicWriter.xmlBytes(ok: true, body: SubsonicElement()),
                          json: SubsonicWriter.jsonBytes(ok: true, body: SubsonicElement()))

    /// The envelope around `body` in the wire form asked for.
    static func bytes(ok: Bool, body: SubsonicElement, format: SubsonicFormat) -> [UInt8] {
        if ok, body.attributes.isEmpty, body.children.isEmpty, body.text == nil {
            switch format {
            case .xml: return emptyOK.xml
            case .json: return emptyOK.json
            case .jsonp: break
            }
        }
        switch format {
        case .xml: return SubsonicWriter.xmlBytes(ok: ok, body: body)
        case .json: return SubsonicWriter.jsonBytes(ok: ok, body: body)
        case .jsonp(let callback): return Array((callback + "(").utf8) + SubsonicWriter.jsonBytes(ok: ok, body: body) + Array(");".utf8)
        }
    }

    /// A written document as the response: HTTP 200, its format's type.
    static func document(_ bytes: [UInt8], format: SubsonicFormat) -> HTTPResponse {
        let contentType: String
        switch format {
        case .xml: contentType = "text/xml; charset=utf-8"
        case .json: contentType = "application/json"
        case .jsonp: contentType = "application/javascript"
        }
        return .bytes(200, bytes, contentType: contentType,
                      extraHeaders: [("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff")])
    }

    // MARK: System

    func extensions() -> SubsonicElement {
        // transcodeOffset: `stream`'s timeOffset is honoured (by transcoding from there).
        let names = ["formPost", "apiKeyAuthentication", "songLyrics"] + (transcode == nil ? [] : ["transcodeOffset"])
        var body = SubsonicElement()
        body.add("openSubsonicExtensions", list: names.map { name in
            var e = SubsonicElement([("name", .string(name))])
            e.add("versions", values: [.int(1)])
            return e
        })
        return body
    }

    /// The one folder: the library.
    static let folderID = 1

    func musicFolders() -> SubsonicElement {
        let name = catalog.resolver.root.split(separator: "/").last.map(String.init) ?? "Music"
        var folders = SubsonicElement()
        folders.add("musicFolder", list: [SubsonicElement([("id", .int(Self.folderID)), ("name", .string(name))])])
        var body = SubsonicElement()
        body.add("musicFolders", folders)
        return body
    }

    func getUser(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let name = call.parameters.string("username") ?? call.user.name
        guard name == call.user.name || call.user.isAdmin else { throw SubsonicError.notAuthorized("other users' details") }
        let admin = name == call.user.name ? call.user.isAdmin : false
        var user = SubsonicElement([
            ("username", .string(name)), ("scrobblingEnabled", .bool(true)), ("adminRole", .bool(admin)),
            ("settingsRole", .bool(false)), ("downloadRole", .bool(true)), ("uploadRole", .bool(false)),
            ("playlistRole", .bool(true)), ("coverArtRole", .bool(false)), ("commentRole", .bool(false)),
            ("podcastRole", .bool(false)), ("streamRole", .bool(true)), ("jukeboxRole", .bool(false)),
            ("shareRole", .bool(false)), ("videoConversionRole", .bool(false)),
        ])
        user.add("folder", values: [.int(Self.folderID)])
        var body = SubsonicElement()
        body.add("user", user)
        return .element(body)
    }

    func scanStatus() throws -> SubsonicAnswer {
        let status = catalog.status()
        var body = SubsonicElement()
        body.add("scanStatus", SubsonicElement([("scanning", .bool(status.scanning)), ("count", .int(status.tracks))]))
        return .element(body)
    }
}

/// A song someone is playing (`scrobble` with `submission=false`), kept in memory.
struct NowPlayingEntry: Sendable {
    var userID: Int
    var userName: String
    var sid: String
    var player: String
    var at: Int
}
