import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio
import StreamAuth
import StreamSubsonic

/// Maps requests to responses: the HTTP contract of streamd (docs/DESIGN.md).
public final class Router: Sendable {
    public let resolver: PathResolver
    public let catalog: Catalog
    /// The HLS routes; nil when streamd runs with `--no-hls`.
    public let hls: HLSService?
    /// How whole files go out on HTTP/1.1 (`--content-length` picks `.contentLength`).
    public let framing: WholeFileFraming
    /// The playlist files of the music folder and the playlists made from the catalog.
    let playlists: PlaylistRoutes
    /// The browse, search and cover API over the catalog database, and its playlists.
    let library: LibraryRoutes
    /// The playlist files found in the music folder (its `logger` takes dropped entries).
    public var playlistFolder: PlaylistFolder { playlists.folder }
    /// The radio channels; nil when none is configured.
    public let radio: RadioService?
    /// Track waveforms (`/api/waveform/<id>`), computed in decode workers.
    public let waveforms: WaveformService
    /// `/media/<path>?format=opus|mp3` transcodes; nil: only `format=raw`.
    public let transcoder: TranscodeService?
    /// The Subsonic API at `/rest/`; nil when streamd runs without it.
    public let subsonic: SubsonicService?
    /// Wall-clock start in seconds since 1970, for the Icecast status page's `server_start`.
    let startedWall: Int
    /// The background scanner, whose watches `/api/status` reports; nil when none runs.
    public let scanner: CatalogScanner?
    /// Who may use which route (docs/DESIGN.md, "Access"): accounts, sessions, signed links.
    public let access: AccessControl
    /// The server whose connections `/api/status` counts: set by the composer once the server
    /// is made (from this router's handler).
    private let countedServer = Lock(CountedServer())
    private struct CountedServer { weak var server: HTTPServer? }

    /// `startedAt` is the server's start as the status page shows it: now, unless a test fixes it.
    public init(resolver: PathResolver, catalog: Catalog, hls: HLSService? = nil, framing: WholeFileFraming = .chunked,
                radio: RadioService? = nil, scanner: CatalogScanner? = nil, access: AccessControl? = nil,
                startedAt: Date = Date(), waveforms: WaveformSettings = WaveformSettings(),
                transcoder: TranscodeService? = nil, subsonic: SubsonicService? = nil) {
        // Without an access control (tests of routes): no accounts, open as on loopback.
        self.access = access ?? AccessControl(users: nil, settings: AccessSettings())
        self.transcoder = transcoder
        self.startedWall = Int(startedAt.timeIntervalSince1970)
        self.scanner = scanner
        self.resolver = resolver
        self.catalog = catalog
        self.hls = hls
        self.framing = framing
        self.library = LibraryRoutes(catalog: catalog, sizedCovers: subsonic)
        self.playlists = PlaylistRoutes(folder: PlaylistFolder(resolver: resolver), describe: { [catalog] path in
            try? catalog.store.tracks.track(path: path)
        })
        self.radio = radio
        self.waveforms = WaveformService(catalog: catalog, settings: waveforms)
        self.subsonic = subsonic
    }

    /// `server`'s connections are counted in `/api/status`.
    public func countConnections(of server: HTTPServer) {
        countedServer.withLock { $0.server = server }
    }

    /// The `/api/status` document: the catalog's, the scanner's watches, the connections and the
    /// transcoder's counters.
    public func status() -> StatusDocument {
        var status = catalog.status()
        status.watcher = scanner?.watcherStatus
        if let server = countedServer.withLock({ $0.server }) {
            status.connections = StatusDocument.Connections(total: server.connectionCount, perLoop: server.loopConnectionCounts)
        }
        status.transcodes = transcoder?.counters
        return status
    }

    /// The methods streamd serves, as the Allow header lists them.
    static let allowed = "GET, HEAD, OPTIONS"
    /// Standard methods streamd knows but does not serve: 405, not 501 (RFC 9110 section 15.5.6).
    static let knownMethods: Set<String> = ["POST", "PUT", "DELETE", "PATCH", "CONNECT", "TRACE"]

    /// The request handler for `HTTPServer`: called on an event loop, so anything that may wait
    /// (a worker, the disk, a query that is not a point lookup) is returned as `.offLoop` work.
    /// The request's route is found in `routes` and its access judged before anything else
    /// about it (its body included); a request no route declares is refused here.
    public func handle(_ request: HTTPRequest) throws(HTTPRefusal) -> HTTPResponse {
        if request.method == "OPTIONS" {
            return HTTPResponse(status: 204, headers: [("Allow", Self.allowed)])
        }
        guard let route = Self.route(method: request.method, path: request.path) else {
            if Self.knownMethods.contains(request.method) || (request.method == "SOURCE" && Self.pathIsRouted(request.path)) {
                throw HTTPRefusal(405, "method \(request.method) not allowed", headers: [("Allow", Self.allowed)])
            }
            if request.method != "GET" && request.method != "HEAD" {
                throw HTTPRefusal(501, "method \(request.method) not implemented")
            }
            throw .notFound()
        }
        let request = access.sanitized(request)
        let privateChannel = route.access == .radioListener && (radio?.isPrivate(path: request.path) ?? false)
        switch access.decide(request, access: route.access, privateChannel: privateChannel) {
        case .allow(let principal):
            return try secured(dispatch(request, route: route, principal: principal), route: route)
        case .refuse(let response):
            return secured(refused(response, request: request, route: route), route: route)
        case .verifyPassword(let verify):
            // argon2id takes tens of milliseconds: judged on the blocking pool, then routed there.
            return .offLoop { [self] () throws(HTTPRefusal) -> HTTPResponse in
                var response: HTTPResponse
                switch verify() {
                case .allow(let principal): response = try dispatch(request, route: route, principal: principal)
                case .refuse(let refusal): response = refused(refusal, request: request, route: route)
                case .verifyPassword: response = .error(500, "password verified twice")
                }
                if let make = response.offLoop { response = try make() }
                return secured(response, route: route)
            }
        }
    }

    /// A refusal as the client should see it: a browser asking for the page without a login is
    /// sent to the login page; everyone else gets the status (401 with the Basic challenge).
    private func refused(_ response: HTTPResponse, request: HTTPRequest, route: Route) -> HTTPResponse {
        if route.name == "web page", response.status == 401, request.header("Authorization") == nil {
            return HTTPResponse(status: 303, headers: [("Location", WebLogin.pagePath), ("Cache-Control", "no-store")])
        }
        return response
    }

    /// `response` with the headers every answer carries, and the CSP of HTML pages; made later
    /// when the response is (off the loop).
    private func secured(_ response: HTTPResponse, route: Route) -> HTTPResponse {
        if let make = response.offLoop {
            return .offLoop { () throws(HTTPRefusal) -> HTTPResponse in
                var made = try make()
                made.headers += WebLogin.commonHeaders
                return made
            }
        }
        var response = response
        response.headers += WebLogin.commonHeaders
        return response
    }

    /// Runs the route for a request its access rule let in, acting for `principal`.
    func dispatch(_ incoming: HTTPRequest, route: Route, principal: Principal) throws(HTTPRefusal) -> HTTPResponse {
        let request = withLinkSigner(incoming, principal: principal)
        let path = request.path
        // Icecast sources: PUT, or the legacy SOURCE method, on a channel's mount.
        if route.access == .radioSource && (request.method == "PUT" || request.method == "SOURCE") {
            guard let radio else { throw HTTPRefusal(405, "method \(request.method) not allowed", headers: [("Allow", Self.allowed)]) }
            return radio.source(request, name: path.dropFirst("/radio/".count))
        }
        // Subsonic clients GET and POST forms and prove who they are with the protocol's own
        // credentials (u/p, u/t/s, apiKey), which the service judges; `principal` is what the
        // request proved otherwise (a session, Basic, Bearer; the open server).
        if let subsonic, SubsonicService.handles(path) {
            return subsonic.handle(request, principal: SubsonicPrincipal(principal))
        }
        switch path {
        case WebLogin.pagePath:
            var page = HTTPResponse.generated(WebLogin.pageBytes, contentType: "text/html; charset=utf-8", for: request)
            page.headers += WebLogin.htmlHeaders(csp: WebLogin.pagePolicy)
            return page
        case WebLogin.scriptPath:
            return .generated(WebLogin.scriptBytes, contentType: "text/javascript; charset=utf-8", for: request)
        case "/api/session":
            return access.sessionDocument(request, principal: principal)
        case "/api/login":
            return access.login(request)
        case "/api/logout":
            return access.logout(request)
        case "/api/sign":
            return try signedLink(request, principal: principal)
        default:
            break
        }
        if var page = WebPage.response(path: path, for: request) {
            if path == "/" || path == "/index.html" { page.headers += WebLogin.htmlHeaders(csp: WebLogin.mainPagePolicy) }
            return page
        }
        if path.hasPrefix(APIRoutes.mediaPrefix) {
            return try media(request, relative: path.dropFirst(APIRoutes.mediaPrefix.count))
        }
        if path == APIRoutes.status {
            return .offLoop { [self] in .json(status().encoded(), for: request) }
        }
        if path.hasPrefix(WaveformService.pathPrefix) {
            return try waveforms.handle(request, path: path)
        }
        if let response = library.handle(request, path: path) ?? playlists.handle(request, path: path) {
            return response
        }
        if path.hasPrefix(APIRoutes.seekIndexPrefix) {
            // ?t=SECONDS narrows the table to the points just around that time (a client seeking).
            var around: Double?
            if let text = request.queryValue(APIRoutes.seekTimeQuery) {
                guard let seconds = QueryValue.decimal(text, in: Self.seekTimeRange) else {
                    throw .badRequest("t must be a number of seconds in 0...\(Int(Self.seekTimeRange.upperBound))")
                }
                around = seconds
            }
            let relative = path.dropFirst(APIRoutes.seekIndexPrefix.count)
            return .offLoop { [self, around] () throws(HTTPRefusal) in try index(request, relative: relative, around: around) }
        }
        if let hls, path.hasPrefix("/hls/") {
            // Planning walks the file in a worker; a segment reads it: both on the blocking pool.
            let rest = path.dropFirst("/hls/".count)
            return .offLoop { () throws(HTTPRefusal) in try hls.vod(request, rest: rest) }
        }
        if let hls, path.hasPrefix("/live/") {
            return hls.live(request, rest: path.dropFirst("/live/".count))
        }
        if let radio {
            if path.hasPrefix("/radio/") {
                return radio.listen(request, name: path.dropFirst("/radio/".count))
            }
            if path == "/api/channels" {
                return .json(RadioStatus.channelsJSON(radio.allChannels()), for: request)
            }
            if path == "/admin/metadata" || path == "/admin/metadata.xsl" {
                // An admin account's Basic or Bearer credentials stand for the source password
                // (a session cookie does not: this GET changes what listeners see).
                let admin = principal.user?.isAdmin == true && (principal.method == .basic || principal.method == .bearer)
                return radio.adminMetadata(request, byAdmin: admin)
            }
            if path == "/status-json.xsl" {
                let host = request.authority ?? request.header("Host") ?? "127.0.0.1"
                return .json(RadioStatus.icecastJSON(radio.allChannels(), host: host, serverStart: startedWall), for: request)
            }
        }
        throw .notFound()
    }

    /// A user's playlists hand out signed links, so a player given one can follow them; so do
    /// HLS playlists asked for through a signed link (their segments, for the player that had it).
    private func withLinkSigner(_ request: HTTPRequest, principal: Principal) -> HTTPRequest {
        guard let user = principal.user, let signer = access.signer,
              request.path.hasPrefix("/playlist/") || (request.path.hasPrefix("/hls/") && principal.method == .signedURL) else { return request }
        var signed = request
        signed.linkSigner = signer.linkSigner(userID: user.id, seconds: access.settings.signedURLSeconds)
        return signed
    }

    /// `GET /api/sign?path=/playlist/album/3.m3u8`: that path's signed, expiring URL for this
    /// user, for a player that cannot log in (`{"url": ...}`); only paths of read routes.
    private func signedLink(_ request: HTTPRequest, principal: Principal) throws(HTTPRefusal) -> HTTPResponse {
        guard let text = request.queryValue("path"), let path = PathResolver.percentDecode(text),
              path.hasPrefix("/"), !path.contains("?"), path.utf8.count <= 4096 else {
            throw .badRequest("path must be a path of this server, like /playlist/album/3.m3u8")
        }
        guard let route = Self.route(method: "GET", path: path[...]), route.access == .read || route.access == .radioListener else {
            throw .badRequest("only paths of the library and radio can be signed")
        }
        guard let user = principal.user, let signer = access.signer else {
            throw HTTPRefusal(409, "no accounts: links need no signature")
        }
        let base = PlaylistRoutes.base(of: request)
        var w = JSONObjectWriter()
        w.add("url", base + path + "?" + signer.query(forPath: path, userID: user.id, seconds: access.settings.signedURLSeconds))
        w.add("expiresIn", access.settings.signedURLSeconds)
        return .json(w.text, for: request, headers: [("Cache-Control", "no-store")])
    }

    private func media(_ request: HTTPRequest, relative: Substring) throws(HTTPRefusal) -> HTTPResponse {
        let absolute: String, file: OpenFile
        do {
            (absolute, file) = try resolver.open(encoded: relative)
        } catch {
            throw error.refusal
        }
        if let format = request.queryValue("format"), format != "raw" {
            guard let transcoder else { throw HTTPRefusal(400, "transcoding is off: format must be raw") }
            // The catalog, a seek index or the cache may wait: off the loop; the encode itself
            // runs on its own thread and the response reads it from the loop without waiting.
            return .offLoop { () throws(HTTPRefusal) in try transcoder.respond(request, absolute: absolute, file: file) }
        }
        // The client may seek next: its exact index is built meanwhile (once per track and run).
        let contentType = catalog.mediaContentType(forAbsolutePath: absolute)
        return FileResponder.respond(to: request, file: file, contentType: contentType, framing: framing)
    }

    /// Seek times a client may ask about: up to a week, the longest track streamd takes.
    static let seekTimeRange = 0.0...604_800.0

    private func index(_ request: HTTPRequest, relative: Substring, around: Double?) throws(HTTPRefusal) -> HTTPResponse {
        let absolute: String
        do {
            absolute = try resolver.resolve(encoded: relative)
        } catch {
            throw error.refusal
        }
        switch catalog.seekIndexJSON(forAbsolutePath: absolute, around: around) {
        case .success(let json):
            return .json(json, for: request)
        case .failure(let error):
            throw HTTPRefusal(422, "\(error)")
        }
    }
}
