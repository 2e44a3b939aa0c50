import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio
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
    /// The Subsonic API at `/rest/`; nil when streamd runs without it.
    public let subsonic: SubsonicService?
    /// Wall-clock start in seconds since 1970, for the Icecast status page's `server_start`.
    let startedWall: Int
    /// The background scanner, whose watches `/api/status` reports; nil when none runs.
    public let scanner: CatalogScanner?
    /// The server whose connections `/api/status` counts: set by the composer once the server
    /// is made (from this router's handler).
    private let countedServer = Lock(CountedServer())
    private struct CountedServer { weak var server: HTTPServer? }

    /// `startedAt` is the server's start as the status page shows it: now, unless a test fixes it.
    public init(resolver: PathResolver, catalog: Catalog, hls: HLSService? = nil, framing: WholeFileFraming = .chunked,
                radio: RadioService? = nil, scanner: CatalogScanner? = nil, subsonic: SubsonicService? = nil,
                startedAt: Date = Date()) {
        self.startedWall = Int(startedAt.timeIntervalSince1970)
        self.scanner = scanner
        self.resolver = resolver
        self.catalog = catalog
        self.hls = hls
        self.framing = framing
        self.library = LibraryRoutes(catalog: catalog)
        self.playlists = PlaylistRoutes(folder: PlaylistFolder(resolver: resolver), describe: { [catalog] path in
            try? catalog.store.tracks.track(path: path)
        })
        self.radio = radio
        self.subsonic = subsonic
    }

    /// `server`'s connections are counted in `/api/status`.
    public func countConnections(of server: HTTPServer) {
        countedServer.withLock { $0.server = server }
    }

    /// The `/api/status` document: the catalog's, the scanner's watches and the connections.
    public func status() -> StatusDocument {
        var status = catalog.status()
        status.watcher = scanner?.watcherStatus
        if let server = countedServer.withLock({ $0.server }) {
            status.connections = StatusDocument.Connections(total: server.connectionCount, perLoop: server.loopConnectionCounts)
        }
        return status
    }

    /// The methods streamd serves, as the Allow header lists them.
    static let allowed = "GET, HEAD, OPTIONS"
    /// Standard methods streamd knows but does not serve: 405, not 501 (RFC 9110 section 15.5.6).
    static let knownMethods: Set<String> = ["POST", "PUT", "DELETE", "PATCH", "CONNECT", "TRACE"]

    /// The request handler for `HTTPServer`: called on an event loop, so anything that may wait
    /// (a worker, the disk, a query that is not a point lookup) is returned as `.offLoop` work.
    public func handle(_ request: HTTPRequest) throws(HTTPRefusal) -> HTTPResponse {
        // Icecast sources: PUT, or the legacy SOURCE method, on a channel's mount.
        if let radio, request.method == "PUT" || request.method == "SOURCE", request.path.hasPrefix("/radio/") {
            return radio.source(request, name: request.path.dropFirst("/radio/".count))
        }
        // Subsonic clients GET and POST forms; every answer there is the protocol's envelope.
        if let subsonic, SubsonicService.handles(request.path) {
            return subsonic.handle(request)
        }
        switch request.method {
        case "GET", "HEAD":
            break
        case "OPTIONS":
            return HTTPResponse(status: 204, headers: [("Allow", Self.allowed)])
        case let method where Self.knownMethods.contains(method):
            throw HTTPRefusal(405, "method \(method) not allowed", headers: [("Allow", Self.allowed)])
        default:
            throw HTTPRefusal(501, "method \(request.method) not implemented")
        }
        let path = request.path
        if path == "/" || path == "/index.html" {
            return .generated(WebPage.bytes, contentType: "text/html; charset=utf-8", for: request)
        }
        if path.hasPrefix(APIRoutes.mediaPrefix) {
            return try media(request, relative: path.dropFirst(APIRoutes.mediaPrefix.count))
        }
        if path == APIRoutes.status {
            return .offLoop { [self] in .json(status().encoded(), for: request) }
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
                return radio.adminMetadata(request)
            }
            if path == "/status-json.xsl" {
                let host = request.authority ?? request.header("Host") ?? "127.0.0.1"
                return .json(RadioStatus.icecastJSON(radio.allChannels(), host: host, serverStart: startedWall), for: request)
            }
        }
        throw .notFound()
    }

    private func media(_ request: HTTPRequest, relative: Substring) throws(HTTPRefusal) -> HTTPResponse {
        let absolute: String, file: OpenFile
        do {
            (absolute, file) = try resolver.open(encoded: relative)
        } catch {
            throw error.refusal
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
