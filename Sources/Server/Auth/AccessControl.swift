import StreamShared
import StreamHTTP
import Logging

/// What a route asks of a request before it runs (docs/DESIGN.md, "Access").
public enum RouteAccess: String, Sendable, CaseIterable {
    /// Anyone: the login page and its assets, the session probe, public Subsonic endpoints.
    case open
    /// Browsing and streaming: a user; anonymous too on a `--public` server.
    case read
    /// A logged-in user, even on a `--public` server (things made for a user, signed links).
    case user
    /// An admin: what shows or changes the server's state (status pages, rescans, radio admin).
    case admin
    /// A radio listener: anonymous unless the channel is private (`,private`), then like `user`.
    case radioListener
    /// A radio source: its handler judges the source password before anything else.
    case radioSource
    /// The handler judges credentials itself (Subsonic's `u`/`p`/`t`/`s`/`apiKey`), through
    /// `AccessControl.judgeSubsonic...` helpers and `LoginLimiter`; the identified principal (if
    /// any) is passed along.
    case selfAuthenticated
}

/// The access settings from the command line.
public struct AccessSettings: Sendable {
    /// `--public`: anonymous listeners may browse and stream (read-only).
    public var publicAccess = false
    /// The server listens on a loopback address: with no accounts it runs open, as before accounts.
    public var loopbackOnly = true
    /// `--trusted-proxy ADDR` (repeatable): peers whose `X-Forwarded-Proto`, `X-Forwarded-Host` and
    /// `X-Forwarded-For` count; anyone else's are dropped before routing.
    public var trustedProxies: Set<String> = []
    /// How long a login session lasts without use, and a signed URL after it is handed out.
    public var sessionIdleSeconds: Double = 7 * 86_400
    public var signedURLSeconds: Int = 24 * 3600

    public init() {}
}

/// The outcome of the access check for one request.
public enum AccessDecision: Sendable {
    /// Go on with the route, acting for this principal.
    case allow(Principal)
    /// Answer this instead (401, 403, 429).
    case refuse(HTTPResponse)
    /// A password must be verified first (argon2id: off the loop); then the decision is made.
    case verifyPassword(@Sendable () -> AccessDecision)
}

/// The access check: who a request is (session cookie, Bearer API key, Basic password, signed
/// URL), whether the route lets them in, the failed-login back-off, sessions and signed links.
public final class AccessControl: Sendable {
    /// The accounts; nil when streamd has none to offer (a test's router without a database).
    public let users: UserStore?
    public let settings: AccessSettings
    public let limiter: LoginLimiter
    public let signer: URLSigner?
    let sessions: SessionTable
    let logger: Logger
    /// Basic credentials verified lately (a keyed hash of name and password → user id and expiry):
    /// players send Basic on every request, and argon2id costs 30-60 ms.
    private let verifiedBasic = Lock([[UInt8]: (id: Int64, stamp: [UInt8], until: UInt64)]())
    private let cacheKey = Sodium.randomBytes(32)

    public static let sessionCookie = "streamd_session"
    public static let csrfHeader = "X-CSRF-Token"
    public static let realm = "Basic realm=\"streamd\", charset=\"UTF-8\""

    public init(users: UserStore?, settings: AccessSettings, limiter: LoginLimiter = LoginLimiter(),
                logger: Logger = Logger(label: "streamd.access")) {
        self.users = users
        self.settings = settings
        self.limiter = limiter
        self.logger = logger
        self.signer = users.map { URLSigner(key: $0.derivedKey("url-signing")) }
        self.sessions = SessionTable(idleSeconds: settings.sessionIdleSeconds, store: users, logger: logger)
    }

    /// Starts the thread that writes the page sessions' last-seen times to the catalog database
    /// in batches, every `interval` seconds (a request never writes).
    public func startSessionFlushing(interval: Double = 30) throws(ThreadError) {
        try sessions.startFlushing(interval: interval)
    }

    /// Writes what the sessions changed since the last flush (at shutdown). Blocking.
    public func flushSessions() {
        sessions.flush()
    }

    /// Whether any account exists: from the store's in-memory snapshot, as is every lookup the
    /// access check makes on the loop (`UserStore.startWatching` keeps it current; `streamd user
    /// add` on a running server takes effect within its interval).
    public func hasUsers() -> Bool {
        guard let users else { return false }
        return !users.isEmpty()
    }

    /// Forgets the verified Basic logins (after an account change in this process).
    public func accountsChanged() {
        verifiedBasic.withLock { $0.removeAll() }
    }

    /// Whether `request` came from a trusted proxy.
    public func isTrustedProxy(_ request: HTTPRequest) -> Bool {
        !settings.trustedProxies.isEmpty && settings.trustedProxies.contains(String(request.peerAddress))
    }

    /// Whether the client reached streamd over TLS (a trusted proxy said `X-Forwarded-Proto: https`).
    public func cameOverTLS(_ request: HTTPRequest) -> Bool {
        isTrustedProxy(request) && request.header("X-Forwarded-Proto")?.lowercased() == "https"
    }

    /// The client's address: the last `X-Forwarded-For` hop a trusted proxy added, else the peer.
    public func clientAddress(_ request: HTTPRequest) -> Substring {
        if isTrustedProxy(request), let forwarded = request.headerValues("X-Forwarded-For").last,
           let last = forwarded.split(separator: ",").last {
            let trimmed = last.trimmingCharacters(in: " \t")
            if !trimmed.isEmpty && trimmed.utf8.count <= 64 { return Substring(trimmed) }
        }
        return request.peerAddress
    }

    /// The request with forwarded headers dropped unless a trusted proxy sent them: what every
    /// route sees, so none can be fooled by a client's own `X-Forwarded-Proto`.
    public func sanitized(_ request: HTTPRequest) -> HTTPRequest {
        guard !isTrustedProxy(request) else { return request }
        var copy = request
        copy.headers.removeAll { field in
            let name = field.name.lowercased()
            return name == "x-forwarded-proto" || name == "x-forwarded-host" || name == "x-forwarded-for" || name == "forwarded"
        }
        return copy
    }

    // MARK: The decision

    /// Decides whether `request` may use a route that needs `access`; `privateChannel` says
    /// whether a radio listener's channel is private.
    public func decide(_ request: HTTPRequest, access: RouteAccess, privateChannel: Bool = false) -> AccessDecision {
        guard hasUsers() else {
            // No accounts: open on loopback (as before accounts); `--public` elsewhere: read-only.
            if settings.loopbackOnly && !settings.publicAccess { return .allow(.openServer) }
            switch access {
            case .open, .read, .radioListener, .radioSource, .selfAuthenticated: return .allow(.anonymous)
            case .user, .admin: return .refuse(unauthorized("no accounts exist: add one with `streamd user add`"))
            }
        }
        let identified = identify(request, access: access)
        switch identified {
        case .refuse(let response):
            // Wrong credentials do not close a route that asks for none.
            if access == .open || access == .radioSource { return .allow(.anonymous) }
            return .refuse(response)
        case .verifyPassword(let verify):
            return .verifyPassword { [self] in
                switch verify() {
                case .allow(let principal): return judge(principal, access: access, privateChannel: privateChannel)
                case let other: return access == .open ? .allow(.anonymous) : other
                }
            }
        case .allow(let principal):
            return judge(principal, access: access, privateChannel: privateChannel)
        }
    }

    /// Whether `principal` may use a route of `access`.
    func judge(_ principal: Principal, access: RouteAccess, privateChannel: Bool) -> AccessDecision {
        switch access {
        case .open, .radioSource, .selfAuthenticated:
            return .allow(principal)
        case .read:
            if principal.isAuthenticated || settings.publicAccess { return .allow(principal) }
        case .radioListener:
            if principal.isAuthenticated || !privateChannel { return .allow(principal) }
        case .user:
            if principal.user != nil { return .allow(principal) }
        case .admin:
            if principal.isAdmin { return .allow(principal) }
            if principal.user != nil { return .refuse(.error(403, "this needs an admin")) }
        }
        return .refuse(unauthorized("authentication required"))
    }

    /// 401 with the Basic challenge (players and curl answer it with the credentials they hold).
    func unauthorized(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.error(401, message)
        response.headers.append(("WWW-Authenticate", Self.realm))
        return response
    }

    /// 429 for an address or name in its back-off.
    func tooManyAttempts(_ wait: Double) -> HTTPResponse {
        var response = HTTPResponse.error(429, "too many failed logins: try again later")
        response.headers.append(("Retry-After", String(Int(wait.rounded(.up)))))
        return response
    }

    /// Whether a radio-source request's credentials are an account's: a metadata update with a
    /// Bearer token or with Basic credentials whose name is an account's (Icecast's `source`
    /// user, and any other name that is no account, goes on to the source password).
    static func namesAccount(_ request: HTTPRequest, users: UserStore) -> Bool {
        guard request.path.hasPrefix("/admin/metadata"), let authorization = request.header("Authorization") else { return false }
        let trimmed = authorization.trimmingCharacters(in: " \t")
        if trimmed.utf8.count > 7, trimmed.prefix(7).lowercased() == "bearer " { return true }
        guard let credentials = BasicCredentials.parse(authorization) else { return false }
        return users.cachedUser(named: credentials.user) != nil
    }

    /// Who the request says it is. A credential that fails is a refusal (401), never anonymous.
    func identify(_ request: HTTPRequest, access: RouteAccess) -> AccessDecision {
        guard let users else { return .allow(.anonymous) }
        // A radio source's `source:<password>` is the source password, not an account; an open
        // route (the login page, its script, /api/login itself) judges no credential here.
        // `/admin/metadata` also takes an admin account's Basic (a name of an account) or Bearer
        // credentials in place of the source password.
        let judgesAuthorization = access == .radioSource ? Self.namesAccount(request, users: users) : access != .open
        if judgesAuthorization, let authorization = request.header("Authorization") {
            let trimmed = authorization.trimmingCharacters(in: " \t")
            if trimmed.utf8.count > 7, trimmed.prefix(7).lowercased() == "bearer " {
                return bearer(String(trimmed.dropFirst(7)).trimmingCharacters(in: " \t"), request: request, users: users)
            }
            if let credentials = BasicCredentials.parse(authorization) {
                return basic(credentials, request: request, users: users)
            }
            return .refuse(unauthorized("unsupported Authorization scheme"))
        }
        if let token = Self.cookie(Self.sessionCookie, in: request) {
            // A changed password or a deleted account ends the session.
            guard let session = sessions.lookup(token), let (user, stamp) = users.userAndStamp(id: session.userID),
                  stamp == session.stamp else {
                return .refuse(unauthorized("session expired: log in again"))
            }
            if !["GET", "HEAD", "OPTIONS"].contains(request.method) {
                // Every state change from a page carries the session's CSRF token (SameSite=Strict too).
                guard let sent = request.header(Self.csrfHeader),
                      Sodium.constantTimeEquals(Array(sent.utf8), Array(session.csrf.utf8)) else {
                    return .refuse(.error(403, "missing or wrong CSRF token"))
                }
            }
            return .allow(Principal(user: user, method: .session))
        }
        if request.queryValue("sig") != nil, let signer {
            guard ["GET", "HEAD"].contains(request.method), access == .read || access == .radioListener,
                  let id = signer.verify(request), let user = users.user(id: id) else {
                return .refuse(unauthorized("link expired or not valid: ask for a new one"))
            }
            return .allow(Principal(user: user, method: .signedURL))
        }
        return .allow(.anonymous)
    }

    private func bearer(_ token: String, request: HTTPRequest, users: UserStore) -> AccessDecision {
        let address = clientAddress(request)
        if let wait = limiter.waitBeforeAttempt(address: address, user: nil) { return .refuse(tooManyAttempts(wait)) }
        if let user = users.user(forAPIKey: token) { return .allow(Principal(user: user, method: .bearer)) }
        if let session = sessions.lookup(token), let (user, stamp) = users.userAndStamp(id: session.userID), stamp == session.stamp {
            return .allow(Principal(user: user, method: .bearer))
        }
        let wait = limiter.recordFailure(address: address, user: nil)
        logger.warning("access: failed bearer token from \(address)\(wait > 0 ? ", next attempt in \(Int(wait)) s" : "")")
        return .refuse(unauthorized("authentication required"))
    }

    private func basic(_ credentials: BasicCredentials, request: HTTPRequest, users: UserStore) -> AccessDecision {
        let address = clientAddress(request)
        if let wait = limiter.waitBeforeAttempt(address: address, user: credentials.user) {
            if limiter.shouldLogRefusal(address: address) {
                logger.warning("access: login as '\(Self.loggable(credentials.user))' from \(address) refused: back-off, \(Int(wait.rounded(.up))) s left")
            }
            return .refuse(tooManyAttempts(wait))
        }
        let key = Sodium.hash(Array(credentials.user.lowercased().utf8) + [0] + Array(credentials.password.utf8), key: cacheKey)
        let now = Monotonic.now.nanoseconds
        if let hit = verifiedBasic.withLock({ $0[key] }), hit.until > now, let (user, stamp) = users.userAndStamp(id: hit.id),
           stamp == hit.stamp {
            return .allow(Principal(user: user, method: .basic))
        }
        return .verifyPassword { [self] in
            guard let user = verify(name: credentials.user, password: credentials.password, address: address) else {
                return .refuse(unauthorized("authentication required"))
            }
            if let (_, stamp) = users.userAndStamp(id: user.id) {
                verifiedBasic.withLock { cache in
                    if cache.count > 1000 { cache.removeAll() }
                    cache[key] = (user.id, stamp, Monotonic.now.nanoseconds + 300_000_000_000)
                }
            }
            return .allow(Principal(user: user, method: .basic))
        }
    }

    /// Verifies a web password (argon2id, off the loop), with the back-off's bookkeeping and
    /// a log line for each failure. The same answer and cost for a missing user as for a wrong
    /// password. Callers check `limiter.waitBeforeAttempt` first.
    public func verify(name: String, password: String, address: Substring) -> User? {
        guard let users else { return nil }
        if let user = users.verifyPassword(name: name, password: password) {
            limiter.recordSuccess(address: address, user: name)
            return user
        }
        let wait = limiter.recordFailure(address: address, user: name)
        logger.warning("access: failed login as '\(Self.loggable(name))' from \(address)\(wait > 0 ? ", next attempt in \(Int(wait)) s" : "")")
        return nil
    }

    /// A name as logs may show it: printable ASCII, at most 64 characters.
    static func loggable(_ name: String) -> String {
        String(String(decoding: name.utf8.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self).prefix(64))
    }

    /// The value of cookie `name` in the request's Cookie headers.
    static func cookie(_ name: String, in request: HTTPRequest) -> String? {
        HTTPCookies.value(named: name, in: request.headerValues("Cookie"))
    }

    // MARK: Sessions (the page's login)

    /// The login of the page: `POST /api/login` with Basic credentials. Answers a JSON
    /// `{"user", "role", "csrf"}` and the session cookie, or 401 / 429 (the same for a missing user
    /// as for a wrong password). Runs the password check off the loop.
    public func login(_ request: HTTPRequest) -> HTTPResponse {
        guard users != nil else { return .error(404, "accounts are not enabled") }
        if let origin = request.header("Origin"), let host = request.header("X-Forwarded-Host") ?? request.header("Host"),
           !(origin.hasSuffix("//" + host)) {
            return .error(403, "login from another site refused")
        }
        guard let credentials = BasicCredentials.parse(request.header("Authorization")) else {
            return unauthorizedWithoutChallenge("send the user name and password as Basic credentials")
        }
        let address = clientAddress(request)
        if let wait = limiter.waitBeforeAttempt(address: address, user: credentials.user) {
            if limiter.shouldLogRefusal(address: address) {
                logger.warning("access: login as '\(Self.loggable(credentials.user))' from \(address) refused: back-off, \(Int(wait.rounded(.up))) s left")
            }
            return tooManyAttempts(wait)
        }
        let secure = cameOverTLS(request)
        return .offLoop { [self] in
            guard let user = verify(name: credentials.user, password: credentials.password, address: address) else {
                return unauthorizedWithoutChallenge("wrong user name or password")
            }
            guard let (_, stamp) = users?.userAndStamp(id: user.id) else { return unauthorizedWithoutChallenge("wrong user name or password") }
            let (token, session) = sessions.create(userID: user.id, stamp: stamp)
            logger.info("access: '\(user.name)' logged in from \(address)")
            var w = JSONObjectWriter()
            w.add("user", user.name)
            w.add("role", user.role.rawValue)
            w.add("csrf", session.csrf)
            var response = HTTPResponse.json(w.text, for: request)
            response.headers.append(("Set-Cookie", Self.cookieHeader(token, maxAge: Int(settings.sessionIdleSeconds), secure: secure)))
            response.headers.append(("Cache-Control", "no-store"))
            return response
        }
    }

    /// 401 without a challenge: the page's own form asks, not the browser's dialog.
    func unauthorizedWithoutChallenge(_ message: String) -> HTTPResponse { .error(401, message) }

    /// `POST /api/logout`: ends the session (its CSRF token was checked by `decide`), in the
    /// database too, so on the blocking pool.
    public func logout(_ request: HTTPRequest) -> HTTPResponse {
        let token = Self.cookie(Self.sessionCookie, in: request)
        let secure = cameOverTLS(request)
        return .offLoop { [self] in
            if let token { sessions.remove(token) }
            var response = HTTPResponse.json("{\"user\":null}", for: request)
            response.headers.append(("Set-Cookie", Self.cookieHeader("", maxAge: 0, secure: secure)))
            return response
        }
    }

    /// `GET /api/session`: who the page is logged in as, its CSRF token, and whether a login is needed.
    public func sessionDocument(_ request: HTTPRequest, principal: Principal) -> HTTPResponse {
        var w = JSONObjectWriter()
        w.add("user", principal.user?.name)
        w.add("role", principal.user?.role.rawValue ?? (principal.method == .openServer ? "admin" : nil))
        w.add("accounts", hasUsers())
        w.add("public", settings.publicAccess)
        if principal.method == .session, let token = Self.cookie(Self.sessionCookie, in: request), let session = sessions.lookup(token) {
            w.add("csrf", session.csrf)
        }
        var response = HTTPResponse.json(w.text, for: request)
        response.headers.append(("Cache-Control", "no-store"))
        return response
    }

    static func cookieHeader(_ token: String, maxAge: Int, secure: Bool) -> String {
        "\(sessionCookie)=\(token); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }
}
