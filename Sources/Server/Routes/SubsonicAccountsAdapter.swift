import Logging
import StreamShared
import StreamHTTP
import StreamAuth
import StreamSubsonic

/// The accounts (StreamAuth's store and back-off) as the Subsonic service checks credentials
/// against them: the per-user app password for `p` and `t`+`s` (reversible by necessity: the
/// token is md5(password + salt), which only the password in clear can be checked against),
/// API keys for `apiKey`. Every check is refused while the back-off holds the client's address
/// or the name, and counted as a failure or a success after.
public struct SubsonicAccountsAdapter: SubsonicAccounts {
    let access: AccessControl
    let logger = Logger(label: "streamd.access")

    public init(_ access: AccessControl) {
        self.access = access
    }

    public var hasUsers: Bool { access.hasUsers() }

    /// Runs `check` unless the back-off refuses the address or name now; records the outcome.
    private func judged(_ name: String?, _ request: HTTPRequest, _ check: () -> User?) -> SubsonicUser? {
        let address = access.clientAddress(request)
        if access.limiter.waitBeforeAttempt(address: address, user: name) != nil { return nil }
        guard let user = check() else {
            let wait = access.limiter.recordFailure(address: address, user: name)
            logger.warning("access: failed Subsonic login as '\(Self.loggable(name ?? "(api key)"))' from \(address)\(wait > 0 ? ", next attempt in \(Int(wait)) s" : "")")
            return nil
        }
        access.limiter.recordSuccess(address: address, user: user.name)
        return SubsonicUser(id: Int(user.id), name: user.name, isAdmin: user.isAdmin)
    }

    /// The app password of `name`, or a stand-in for a name without one, so a missing user costs
    /// the same digest and comparison as a wrong password.
    private func appPassword(_ name: String) -> (User?, [UInt8]) {
        guard let users = access.users, let user = users.cachedUser(named: name),
              let password = try? users.subsonicPassword(of: user) else { return (nil, Array("\u{0}no such user\u{0}".utf8)) }
        return (user, Array(password.utf8))
    }

    public func user(named name: String, password: [UInt8], request: HTTPRequest) -> SubsonicUser? {
        judged(name, request) {
            let (user, secret) = appPassword(name)
            return SubsonicAuth.constantTimeEquals(secret, password) ? user : nil
        }
    }

    public func user(named name: String, token: String, salt: String, request: HTTPRequest) -> SubsonicUser? {
        judged(name, request) {
            let (user, secret) = appPassword(name)
            return SubsonicAuth.tokenMatches(token, secret: secret, salt: salt) ? user : nil
        }
    }

    public func user(apiKey: String, request: HTTPRequest) -> SubsonicUser? {
        judged(nil, request) { access.users?.user(forAPIKey: apiKey) }
    }

    /// A name as logs may show it: printable ASCII, at most 64 characters.
    static func loggable(_ name: String) -> String {
        String(String(decoding: name.utf8.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self).prefix(64))
    }
}

extension SubsonicPrincipal {
    /// What the access check found the request proved.
    init(_ principal: Principal) {
        self.init(user: principal.user.map { SubsonicUser(id: Int($0.id), name: $0.name, isAdmin: $0.isAdmin) },
                  openServer: principal.method == .openServer)
    }
}
