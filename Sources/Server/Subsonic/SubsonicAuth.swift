import StreamShared
import StreamHTTP

/// Who a Subsonic call is made by.
public struct SubsonicUser: Sendable, Equatable {
    /// The accounts' user id; 0 for the one implicit user of an open server (no accounts).
    public var id: Int
    public var name: String
    public var isAdmin: Bool

    public init(id: Int, name: String, isAdmin: Bool) {
        self.id = id
        self.name = name
        self.isAdmin = isAdmin
    }
}

/// What a request proved before Subsonic looked at it (a session cookie, Basic or Bearer
/// credentials, an apiKey sent as Bearer; or the open server of no accounts), as the composer
/// tells the service.
public struct SubsonicPrincipal: Sendable, Equatable {
    public var user: SubsonicUser?
    /// No accounts exist: every call is the implicit user's.
    public var openServer: Bool

    public init(user: SubsonicUser?, openServer: Bool) {
        self.user = user
        self.openServer = openServer
    }

    /// Nothing proved.
    public static let anonymous = SubsonicPrincipal(user: nil, openServer: false)
}

/// The accounts Subsonic credentials are checked against. nil accounts (`SubsonicAuth.open`)
/// is an open server: no user exists, so any credentials, or none, are taken. Each check is
/// given the request, so the accounts' failed-login back-off counts its address; a check that
/// the back-off refuses answers nil like a wrong password.
public protocol SubsonicAccounts: Sendable {
    /// Whether any account exists: without one the server is open and every call is the implicit user's.
    var hasUsers: Bool { get }
    /// `u` with the password `p` (already decoded from `enc:` hex), compared with the user's app password.
    func user(named name: String, password: [UInt8], request: HTTPRequest) -> SubsonicUser?
    /// `u` with `t` = md5(app password + `s`) (`token` in lower-case hex).
    func user(named name: String, token: String, salt: String, request: HTTPRequest) -> SubsonicUser?
    /// An OpenSubsonic API key.
    func user(apiKey: String, request: HTTPRequest) -> SubsonicUser?
}

/// The one place a Subsonic call's credentials are judged, before anything else about it:
/// `u` + `p` (plain, or `enc:` + hex in either case), `u` + `t` + `s` (token), or `apiKey`
/// (OpenSubsonic: 42 for a mechanism streamd does not take, 43 for two at once, 44 for a key
/// that is not valid). Wrong credentials are error 40 whatever was wrong.
public struct SubsonicAuth: Sendable {
    public let accounts: (any SubsonicAccounts)?

    public init(accounts: (any SubsonicAccounts)?) {
        self.accounts = accounts
    }

    /// An open server: no accounts.
    public static let open = SubsonicAuth(accounts: nil)

    /// The implicit user of an open server, named as the client says (`u`) or `streamd`.
    static func implicitUser(_ name: String?) -> SubsonicUser {
        SubsonicUser(id: 0, name: name.flatMap { $0.isEmpty ? nil : $0 } ?? "streamd", isAdmin: true)
    }

    /// Who makes the call: the protocol's credentials when the call carries any, else what the
    /// request proved otherwise (`principal`: a session, Basic, Bearer), else error 10.
    func authenticate(_ parameters: SubsonicParameters, request: HTTPRequest = HTTPRequest(method: "GET", target: "/", minorVersion: 1, headers: []),
                      principal: SubsonicPrincipal = .anonymous) -> Result<SubsonicUser, SubsonicError> {
        let name = parameters.string("u")
        let password = parameters.string("p")
        let token = parameters.string("t"), salt = parameters.string("s")
        let apiKey = parameters.string("apiKey")
        guard let accounts, accounts.hasUsers, !principal.openServer else { return .success(Self.implicitUser(name)) }
        if let apiKey {
            if name != nil || password != nil || token != nil {
                return .failure(SubsonicError(43, "Multiple conflicting authentication mechanisms provided"))
            }
            guard let user = accounts.user(apiKey: apiKey, request: request) else { return .failure(SubsonicError(44, "Invalid API key")) }
            return .success(user)
        }
        if name == nil, password == nil, token == nil, let user = principal.user { return .success(user) }
        guard let name, !name.isEmpty else { return .failure(.missing("u")) }
        if let password {
            if token != nil { return .failure(SubsonicError(43, "Multiple conflicting authentication mechanisms provided")) }
            guard let bytes = Self.decodePassword(password) else { return .failure(.wrongCredentials) }
            return accounts.user(named: name, password: bytes, request: request).map { .success($0) } ?? .failure(.wrongCredentials)
        }
        if let token {
            guard let salt, !salt.isEmpty else { return .failure(.missing("s")) }
            return accounts.user(named: name, token: token.lowercased(), salt: salt, request: request).map { .success($0) }
                ?? .failure(.wrongCredentials)
        }
        return .failure(.missing("p"))
    }

    /// `p` as bytes: `enc:` followed by hex (upper or lower case) is decoded, anything else is the password itself.
    static func decodePassword(_ text: String) -> [UInt8]? {
        guard text.hasPrefix("enc:") else { return Array(text.utf8) }
        let hex = Array(text.utf8.dropFirst(4))
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var i = 0
        while i < hex.count {
            guard let high = hexValue(hex[i]), let low = hexValue(hex[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
            i += 2
        }
        return bytes
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x61...0x66: return byte - 0x61 + 10
        case 0x41...0x46: return byte - 0x41 + 10
        default: return nil
        }
    }

    /// Whether the token `t` is md5(`secret` + `salt`): compared in constant time (every byte
    /// looked at whatever the first difference), so the answer's timing says nothing of the secret.
    public static func tokenMatches(_ token: String, secret: [UInt8], salt: String) -> Bool {
        constantTimeEquals(Array(MD5.hex(secret + Array(salt.utf8)).utf8), Array(token.lowercased().utf8))
    }

    /// Whether two byte strings are equal, every byte looked at whatever the first difference
    /// (a length differing is told at once: lengths are not the secret).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}
