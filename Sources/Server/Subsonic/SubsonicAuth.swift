import StreamShared

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

/// The accounts Subsonic credentials are checked against. nil accounts (`SubsonicAuth.open`)
/// is an open server: no user exists, so any credentials, or none, are taken.
public protocol SubsonicAccounts: Sendable {
    /// Whether any account exists: without one the server is open and every call is the implicit user's.
    var hasUsers: Bool { get }
    /// `u` with the password `p` (already decoded from `enc:` hex).
    func user(named name: String, password: [UInt8]) -> SubsonicUser?
    /// `u` with `t` = md5(app password + `s`) (`token` in lower-case hex).
    func user(named name: String, token: String, salt: String) -> SubsonicUser?
    /// An OpenSubsonic API key.
    func user(apiKey: String) -> SubsonicUser?
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

    func authenticate(_ parameters: SubsonicParameters) -> Result<SubsonicUser, SubsonicError> {
        let name = parameters.string("u")
        let password = parameters.string("p")
        let token = parameters.string("t"), salt = parameters.string("s")
        let apiKey = parameters.string("apiKey")
        guard let accounts, accounts.hasUsers else { return .success(Self.implicitUser(name)) }
        if let apiKey {
            if name != nil || password != nil || token != nil {
                return .failure(SubsonicError(43, "Multiple conflicting authentication mechanisms provided"))
            }
            guard let user = accounts.user(apiKey: apiKey) else { return .failure(SubsonicError(44, "Invalid API key")) }
            return .success(user)
        }
        guard let name, !name.isEmpty else { return .failure(.missing("u")) }
        if let password {
            if token != nil { return .failure(SubsonicError(43, "Multiple conflicting authentication mechanisms provided")) }
            guard let bytes = Self.decodePassword(password) else { return .failure(.wrongCredentials) }
            return accounts.user(named: name, password: bytes).map { .success($0) } ?? .failure(.wrongCredentials)
        }
        if let token {
            guard let salt, !salt.isEmpty else { return .failure(.missing("s")) }
            return accounts.user(named: name, token: token.lowercased(), salt: salt).map { .success($0) } ?? .failure(.wrongCredentials)
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
        let expected = Array(MD5.hex(secret + Array(salt.utf8)).utf8)
        let given = Array(token.lowercased().utf8)
        guard given.count == expected.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<expected.count { difference |= expected[i] ^ given[i] }
        return difference == 0
    }
}
