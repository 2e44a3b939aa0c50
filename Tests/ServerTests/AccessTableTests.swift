import Foundation
import Testing
@testable import StreamServer
@testable import StreamHTTP
@testable import StreamLibrary
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamAuth
import StreamSubsonic

/// Every route x role x expected status, through the real router and access check (accounts in
/// a real catalog database). The table must list every route `Router.routes` declares: a new
/// route without a row here fails `everyDeclaredRouteHasARow`.
@Suite struct AccessTableTests {
    /// The roles a request is made as: no credentials, a normal user, an admin, a wrong password.
    enum Caller: CaseIterable { case anonymous, user, admin, wrongPassword }

    /// One row: a request and the status each caller gets.
    struct Row: CustomStringConvertible {
        var method: String
        var target: String
        var route: String
        var anonymous: Int, user: Int, admin: Int, wrongPassword: Int
        var description: String { "\(method) \(target) (\(route))" }

        func expected(_ caller: Caller) -> Int {
            switch caller {
            case .anonymous: return anonymous
            case .user: return user
            case .admin: return admin
            case .wrongPassword: return wrongPassword
            }
        }
    }

    // anonymous / user / admin / wrong password. 401 answers carry the Basic challenge; 404s
    // past the check are "nothing there" (the fixture has no albums, channels or HLS tracks).
    static let table: [Row] = [
        Row(method: "GET", target: "/", route: "web page", anonymous: 303, user: 200, admin: 200, wrongPassword: 401),
        // Subsonic answers HTTP 200 with its own envelope (a refusal is status="failed", code 10
        // or 40, which SubsonicClientTests checks); the license and extensions are public; Basic
        // credentials that are wrong are refused by the access check before the service.
        Row(method: "GET", target: "/rest/getLicense", route: "subsonic public", anonymous: 200, user: 200, admin: 200, wrongPassword: 200),
        Row(method: "POST", target: "/rest/getOpenSubsonicExtensions.view", route: "subsonic public",
            anonymous: 200, user: 200, admin: 200, wrongPassword: 200),
        Row(method: "GET", target: "/rest/ping", route: "subsonic", anonymous: 200, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "POST", target: "/rest/getAlbumList2.view?type=newest", route: "subsonic",
            anonymous: 200, user: 200, admin: 200, wrongPassword: 401),
        // OpenSubsonic transcoding, the rule of stream: a decision is the envelope (here error 10,
        // no ClientInfo body); the stream's refusals are HTTP statuses (401 no credentials, 400 a
        // transcodeParams token this server did not give this user).
        Row(method: "POST", target: "/rest/getTranscodeDecision.view?mediaId=tr-1&mediaType=song", route: "subsonic transcoding",
            anonymous: 200, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/rest/getTranscodeStream?mediaId=tr-1&mediaType=song&transcodeParams=st1forged",
            route: "subsonic transcoding", anonymous: 401, user: 400, admin: 400, wrongPassword: 401),
        Row(method: "GET", target: "/index.html", route: "web page", anonymous: 303, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/login", route: "login page", anonymous: 200, user: 200, admin: 200, wrongPassword: 200),
        Row(method: "GET", target: "/login.js", route: "login script", anonymous: 200, user: 200, admin: 200, wrongPassword: 200),
        // No page files on this branch yet (issue 26's page serves /web/app.js etc.: 200 for all once merged).
        Row(method: "GET", target: "/web/none.js", route: "page files", anonymous: 404, user: 404, admin: 404, wrongPassword: 404),
        Row(method: "GET", target: "/api/session", route: "session", anonymous: 200, user: 200, admin: 200, wrongPassword: 200),
        Row(method: "POST", target: "/api/login", route: "login", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "POST", target: "/api/logout", route: "logout", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/api/sign?path=/playlist/album/1.m3u8", route: "signed link",
            anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/media/bytes.bin", route: "media file", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "HEAD", target: "/media/bytes.bin", route: "media file", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/api/tracks", route: "library API", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/api/search?q=a", route: "library API", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/api/albums", route: "library API", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/api/artists", route: "library API", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/api/albums/1", route: "album", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/api/artists/1", route: "artist", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/api/cover/1", route: "cover", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/playlist/all.m3u8", route: "library playlist", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/playlist/search.m3u8?q=a", route: "library playlist", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/playlist/album/1.m3u8", route: "album playlist", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/playlist/artist/1.m3u8", route: "artist playlist", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/api/playlists", route: "playlist files", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/playlist/file/none.m3u", route: "playlist file", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/api/index/none.mp3", route: "seek index", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/api/waveform/none", route: "waveform", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/hls/none.mp3/index.m3u8", route: "HLS", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/live/none/index.m3u8", route: "live HLS", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/api/channels", route: "channel list", anonymous: 401, user: 200, admin: 200, wrongPassword: 401),
        // Public channel (anyone listens; a wrong password is still refused) and a private one.
        Row(method: "GET", target: "/radio/open", route: "radio listener", anonymous: 404, user: 404, admin: 404, wrongPassword: 401),
        Row(method: "GET", target: "/radio/members", route: "radio listener", anonymous: 401, user: 404, admin: 404, wrongPassword: 401),
        // Sources prove the source password, not an account: every caller here lacks it.
        Row(method: "PUT", target: "/radio/live", route: "radio source", anonymous: 401, user: 401, admin: 401, wrongPassword: 401),
        Row(method: "SOURCE", target: "/radio/live", route: "radio source", anonymous: 401, user: 401, admin: 401, wrongPassword: 401),
        // The metadata update takes the source password or an admin account (past the check, the
        // admin gets Icecast's 400: no source is on /radio/live in the fixture).
        Row(method: "GET", target: "/admin/metadata?mount=/radio/live&mode=updinfo&song=x", route: "radio metadata",
            anonymous: 401, user: 401, admin: 400, wrongPassword: 401),
        Row(method: "GET", target: "/api/status", route: "status", anonymous: 401, user: 403, admin: 200, wrongPassword: 401),
        Row(method: "GET", target: "/status-json.xsl", route: "Icecast status", anonymous: 401, user: 403, admin: 200, wrongPassword: 401),
        // Not routes: refused before any handler, whoever asks.
        Row(method: "GET", target: "/nothing", route: "-", anonymous: 404, user: 404, admin: 404, wrongPassword: 404),
        Row(method: "DELETE", target: "/media/bytes.bin", route: "-", anonymous: 405, user: 405, admin: 405, wrongPassword: 405),
    ]

    /// A router over a one-file folder, with HLS, radio (channel `members` private) and two
    /// accounts (`user`, `admin`) in a catalog database of its own.
    static func makeRouter(publicAccess: Bool = false, withUsers: Bool = true) throws -> (Router, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("access-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((0..<1000).map { UInt8(truncatingIfNeeded: $0) }).write(to: folder.appendingPathComponent("bytes.bin"))
        let resolver = try #require(PathResolver(folder: folder.path))
        let databasePath = folder.appendingPathComponent("catalog.db").path
        let library = try LibraryStore(path: databasePath, folder: folder.path)
        let catalog = Catalog(resolver: resolver, store: library)
        let users = try UserStore(databasePath: databasePath, keyFile: UserStore.keyFilePath(forDatabase: databasePath))
        if withUsers {
            try users.add(name: "user", password: "user-pw", role: .user)
            try users.add(name: "admin", password: "admin-pw", role: .admin)
        }
        var settings = AccessSettings()
        settings.publicAccess = publicAccess
        // The table makes many wrong-password requests from one address: no back-off here
        // (`LoginLimiterTests` has its own).
        let access = AccessControl(users: users, settings: settings,
                                   limiter: LoginLimiter(freeFailuresPerAddress: 1_000_000, freeFailuresPerUser: 1_000_000))
        let radio = RadioService(settings: { var s = RadioSettings(); s.sourcePassword = "source-pw"; return s }())
        radio.markPrivate("members")
        let hls = HLSService(catalog: catalog, cacheBytes: 1 << 20, live: [])
        let subsonic = try SubsonicService(catalog: catalog, auth: SubsonicAuth(accounts: SubsonicAccountsAdapter(access)))
        return (Router(resolver: resolver, catalog: catalog, hls: hls, radio: radio, access: access, subsonic: subsonic), folder)
    }

    static func request(_ row: Row, as caller: Caller) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [("Host", "x")]
        let credentials: String? = switch caller {
        case .anonymous: nil
        case .user: "user:user-pw"
        case .admin: "admin:admin-pw"
        case .wrongPassword: "admin:not-the-password"
        }
        if let credentials { headers.append(("Authorization", "Basic " + Data(credentials.utf8).base64EncodedString())) }
        var request = HTTPRequest(method: row.method, target: row.target, minorVersion: 1, headers: headers)
        request.peer = "127.0.0.1:40000"
        return request
    }

    @Test func everyDeclaredRouteHasARow() {
        for route in Router.routes {
            let rows = Self.table.filter { $0.route == route.name }
            #expect(!rows.isEmpty, "route \(route) has no row in AccessTableTests.table: add one with its expected statuses")
            for row in rows {
                #expect(Router.route(method: row.method, path: HTTPRequest(method: row.method, target: row.target, minorVersion: 1, headers: []).path)?.name == route.name,
                        "row \(row) does not reach route '\(route.name)'")
            }
        }
        for row in Self.table where row.route != "-" {
            #expect(Router.routes.contains { $0.name == row.route }, "row \(row) names no declared route")
        }
    }

    @Test func everyRouteAnswersEachRoleAsTheTableSays() throws {
        let (router, folder) = try Self.makeRouter()
        defer { try? FileManager.default.removeItem(at: folder) }
        for row in Self.table {
            for caller in Caller.allCases {
                let answer = RouterTests.answer(router, Self.request(row, as: caller))
                #expect(answer.status == row.expected(caller), "\(row) as \(caller): \(answer.status), table says \(row.expected(caller))")
                if answer.status == 401 && row.route != "login" && row.route != "logout" && !row.route.hasPrefix("radio") {
                    #expect(answer.headers.contains { $0.0 == "WWW-Authenticate" }, "\(row) as \(caller): 401 without a challenge")
                }
            }
        }
    }

    @Test func publicServerLetsAnonymousReadButNotAdminister() throws {
        let (router, folder) = try Self.makeRouter(publicAccess: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for row in Self.table {
            let status = RouterTests.answer(router, Self.request(row, as: .anonymous)).status
            let route = Router.routes.first { $0.name == row.route }
            switch route?.access {
            case .read?: #expect(status == row.user, "\(row) on a --public server: \(status) for anonymous")
            case .admin?, .user?: #expect(status == 401, "\(row) on a --public server: \(status) for anonymous")
            default: break
            }
        }
    }

    @Test func withoutAccountsEverythingIsOpenOnLoopback() throws {
        let (router, folder) = try Self.makeRouter(withUsers: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        for target in ["/", "/api/tracks", "/media/bytes.bin", "/api/status", "/status-json.xsl"] {
            let row = Row(method: "GET", target: target, route: "-", anonymous: 0, user: 0, admin: 0, wrongPassword: 0)
            #expect(RouterTests.answer(router, Self.request(row, as: .anonymous)).status == 200, "\(target)")
        }
    }

    @Test func missingUserAndWrongPasswordAnswerAlike() throws {
        let (router, folder) = try Self.makeRouter()
        defer { try? FileManager.default.removeItem(at: folder) }
        func answer(_ credentials: String, _ target: String, _ method: String = "GET") -> (Int, [UInt8]) {
            var request = HTTPRequest(method: method, target: target, minorVersion: 1,
                                      headers: [("Host", "x"), ("Authorization", "Basic " + Data(credentials.utf8).base64EncodedString())])
            request.peer = "127.0.0.1:40000"
            do throws(HTTPRefusal) {
                var response = try router.handle(request)
                if let make = response.offLoop { response = try make() }
                var body: [UInt8] = []
                while let part = response.body?.nextPart() { if case .bytes(let b) = part { body += b } else { break } }
                return (response.status, body)
            } catch {
                return (error.status, [])
            }
        }
        for (target, method) in [("/api/tracks", "GET"), ("/api/login", "POST")] {
            let wrong = answer("admin:nope", target, method), missing = answer("nobody:nope", target, method)
            #expect(wrong.0 == missing.0 && wrong.1 == missing.1, "\(target): \(wrong) vs \(missing)")
        }
    }

    @Test func sessionCookieNeedsItsCSRFTokenForStateChanges() throws {
        let (router, folder) = try Self.makeRouter()
        defer { try? FileManager.default.removeItem(at: folder) }
        var login = HTTPRequest(method: "POST", target: "/api/login", minorVersion: 1,
                                headers: [("Host", "x"), ("Authorization", "Basic " + Data("user:user-pw".utf8).base64EncodedString())])
        login.peer = "127.0.0.1:1"
        var response = try router.handle(login)
        if let make = response.offLoop { response = try make() }
        let cookie = try #require(response.headers.first { $0.0 == "Set-Cookie" }?.1)
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && !cookie.contains("Secure"))
        let token = String(cookie.split(separator: ";")[0])
        func send(_ method: String, _ target: String, _ extra: [(name: String, value: String)] = []) -> Int {
            var request = HTTPRequest(method: method, target: target, minorVersion: 1, headers: [("Host", "x"), ("Cookie", token)] + extra)
            request.peer = "127.0.0.1:1"
            return RouterTests.answer(router, request).status
        }
        #expect(send("GET", "/api/tracks") == 200)
        #expect(send("POST", "/api/logout") == 403)
        #expect(send("POST", "/api/logout", [("X-CSRF-Token", "0000")]) == 403)
        let session = router.access.sessions.lookup(String(token.dropFirst("streamd_session=".count)))
        let csrf = try #require(session?.csrf)
        #expect(send("POST", "/api/logout", [("X-CSRF-Token", csrf)]) == 200)
        #expect(send("GET", "/api/tracks") == 401)
    }

    /// A password change ends the user's sessions and cached Basic logins at once.
    @Test func passwordChangeEndsSessionsAndCachedLogins() throws {
        let (router, folder) = try Self.makeRouter()
        defer { try? FileManager.default.removeItem(at: folder) }
        func send(_ method: String, _ target: String, _ headers: [(name: String, value: String)]) -> (status: Int, headers: [(String, String)]) {
            var request = HTTPRequest(method: method, target: target, minorVersion: 1, headers: [("Host", "x")] + headers)
            request.peer = "127.0.0.1:1"
            let answer = RouterTests.answer(router, request)
            return (answer.status, answer.headers)
        }
        let basic = ("Authorization", "Basic " + Data("user:user-pw".utf8).base64EncodedString())
        let login = send("POST", "/api/login", [basic])
        let cookie = try #require(login.headers.first { $0.0 == "Set-Cookie" }?.1.split(separator: ";").first.map(String.init))
        #expect(send("GET", "/api/tracks", [("Cookie", cookie)]).status == 200)
        #expect(send("GET", "/api/tracks", [basic]).status == 200)
        try #require(router.access.users).setPassword(name: "user", password: "new-pw")
        #expect(send("GET", "/api/tracks", [("Cookie", cookie)]).status == 401)
        #expect(send("GET", "/api/tracks", [basic]).status == 401)
    }

    @Test func htmlCarriesTheSecurityHeaders() throws {
        let (router, folder) = try Self.makeRouter(withUsers: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        for target in ["/", "/login"] {
            let row = Row(method: "GET", target: target, route: "-", anonymous: 0, user: 0, admin: 0, wrongPassword: 0)
            let headers = RouterTests.answer(router, Self.request(row, as: .anonymous)).headers
            let csp = try #require(headers.first { $0.0 == "Content-Security-Policy" }?.1)
            #expect(csp.contains("frame-ancestors 'none'") && !csp.contains("script-src 'self' 'unsafe-inline'"))
            #expect(headers.contains { $0 == ("X-Content-Type-Options", "nosniff") })
        }
        // The main page has no inline script or style (its files are under /web/), so the policy
        // needs no hash and no 'unsafe-inline'; its MediaSource player needs blob: media.
        #expect(WebLogin.mainPagePolicy.contains("script-src 'self';") && !WebLogin.mainPagePolicy.contains("unsafe-inline"))
        #expect(WebLogin.mainPagePolicy.contains("media-src 'self' blob:"))
    }
}
