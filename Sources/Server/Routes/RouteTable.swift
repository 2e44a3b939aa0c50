import StreamShared
import StreamHTTP
import StreamAuth

/// One route of streamd: the methods it takes, the paths it matches and what it asks of a
/// request before it runs (`RouteAccess`). Every route is declared in `Router.routes`; a request
/// no declared route matches is answered before any handler runs, so a handler cannot be
/// reached without an access rule (and the route x role test table lists every route).
public struct Route: Sendable, CustomStringConvertible {
    /// Which paths a route matches.
    public enum Pattern: Sendable, Equatable {
        /// Exactly these paths.
        case exact([String])
        /// Paths that start with this prefix.
        case prefix(String)
        /// Subsonic endpoints: `/rest/NAME` and `/rest/NAME.view` for each name.
        case subsonic([String])

        func matches(_ path: Substring) -> Bool {
            switch self {
            case .exact(let paths): return paths.contains { path == $0 }
            case .prefix(let prefix): return path.hasPrefix(prefix)
            case .subsonic(let names):
                guard path.hasPrefix("/rest/") else { return false }
                var name = path.dropFirst("/rest/".count)
                if name.hasSuffix(".view") { name = name.dropLast(".view".count) }
                return names.contains { name == $0 }
            }
        }

        /// One path this pattern matches (what the access test requests).
        public var example: String {
            switch self {
            case .exact(let paths): return paths.first ?? "/"
            case .prefix(let prefix): return prefix
            case .subsonic(let names): return "/rest/" + (names.first ?? "ping")
            }
        }
    }

    /// A short name for tests and docs ("library API", "radio source").
    public let name: String
    public let methods: Set<String>
    public let pattern: Pattern
    public let access: RouteAccess

    public init(_ name: String, methods: Set<String> = ["GET", "HEAD"], _ pattern: Pattern, _ access: RouteAccess) {
        self.name = name
        self.methods = methods
        self.pattern = pattern
        self.access = access
    }

    public var description: String { "\(methods.sorted().joined(separator: ",")) \(pattern.example) (\(name)): \(access.rawValue)" }
}

extension Router {
    /// Every route streamd serves, first match wins (docs/DESIGN.md, "Access"). A new route
    /// goes here with its rule, and into the access table test (`AccessTableTests`).
    public static let routes: [Route] = [
        // The page and its login: the page itself needs the read right (a browser without it is
        // sent to /login); the login page, its script and the session probe are open.
        Route("web page", .exact(["/", "/index.html"]), .read),
        Route("login page", .exact([WebLogin.pagePath]), .open),
        // The page's own script, style and images (files under /web/):
        // code, no library data, so open like the login page's.
        Route("page files", .prefix("/web/"), .open),
        Route("login script", .exact([WebLogin.scriptPath]), .open),
        Route("session", .exact(["/api/session"]), .open),
        Route("login", methods: ["POST"], .exact(["/api/login"]), .open),
        Route("logout", methods: ["POST"], .exact(["/api/logout"]), .user),
        Route("signed link", .exact(["/api/sign"]), .user),
        // Browsing and streaming.
        Route("media file", .prefix(APIRoutes.mediaPrefix), .read),
        Route("library API", .exact(["/api/tracks", "/api/search", "/api/albums", "/api/artists"]), .read),
        Route("album", .prefix("/api/albums/"), .read),
        Route("artist", .prefix("/api/artists/"), .read),
        Route("cover", .prefix("/api/cover/"), .read),
        Route("library playlist", .exact(["/playlist/search.m3u8", "/playlist/all.m3u8"]), .read),
        Route("album playlist", .prefix("/playlist/album/"), .read),
        Route("artist playlist", .prefix("/playlist/artist/"), .read),
        Route("playlist files", .exact(["/api/playlists"]), .read),
        Route("playlist file", .prefix("/playlist/file/"), .read),
        Route("seek index", .prefix(APIRoutes.seekIndexPrefix), .read),
        Route("waveform", .prefix(WaveformService.pathPrefix), .read),
        Route("HLS", .prefix("/hls/"), .read),
        Route("live HLS", .prefix("/live/"), .read),
        Route("channel list", .exact(["/api/channels"]), .read),
        // Radio: listeners are public unless the channel is private; a source proves the source
        // password (as Icecast's `source` user), which also updates the title (Icecast's admin URL).
        Route("radio listener", .prefix("/radio/"), .radioListener),
        Route("radio source", methods: ["PUT", "SOURCE"], .prefix("/radio/"), .radioSource),
        Route("radio metadata", .exact(["/admin/metadata", "/admin/metadata.xsl"]), .radioSource),
        // Subsonic (/rest/, GET and form POST): the license and the extensions are public
        // (OpenSubsonic asks that of getOpenSubsonicExtensions); every other call proves its
        // user with the protocol's own credentials (u/p, u/t/s, apiKey), judged by the service.
        Route("subsonic public", methods: ["GET", "POST"], .subsonic(["getLicense", "getOpenSubsonicExtensions"]), .open),
        // OpenSubsonic's transcoding extension: the same rule as stream (the service judges the
        // credentials; getTranscodeDecision POSTs a JSON body, getTranscodeStream is a GET).
        Route("subsonic transcoding", methods: ["GET", "POST"], .subsonic(["getTranscodeDecision", "getTranscodeStream"]), .selfAuthenticated),
        Route("subsonic", methods: ["GET", "POST"], .prefix("/rest/"), .selfAuthenticated),
        // The server's state: admins only.
        Route("status", .exact([APIRoutes.status]), .admin),
        Route("Icecast status", .exact(["/status-json.xsl"]), .admin),
    ]

    /// The declared route for `method` and `path`; nil when none matches.
    public static func route(method: String, path: Substring) -> Route? {
        let method = method == "HEAD" ? "GET" : method
        return routes.first { $0.methods.contains(method) && $0.pattern.matches(path) }
    }

    /// Whether some declared route takes `path` with another method (405 rather than 404).
    static func pathIsRouted(_ path: Substring) -> Bool {
        routes.contains { $0.pattern.matches(path) }
    }
}
