import StreamShared

/// The page's login sessions, in memory: a random token (the cookie) → its user, its CSRF token
/// and when it was last used. Only a hash of each token is kept, so a memory dump does not hand
/// out live cookies. A restart ends every session (the page logs in again).
final class SessionTable: Sendable {
    struct Session: Sendable {
        var userID: Int64
        /// The user's password stamp at login (`UserStore.userAndStamp`).
        var stamp: [UInt8]
        var csrf: String
        var lastUsed: UInt64
    }

    /// Most sessions at once; past it the least recently used goes.
    static let maxSessions = 10_000
    private let idleNanos: UInt64
    private let table = Lock([[UInt8]: Session]())

    init(idleSeconds: Double) {
        idleNanos = UInt64(max(60, idleSeconds) * 1e9)
    }

    /// A new session for `userID`: its token (for the cookie) and the session.
    func create(userID: Int64, stamp: [UInt8]) -> (token: String, session: Session) {
        let token = Hex.string(Sodium.randomBytes(32))
        let session = Session(userID: userID, stamp: stamp, csrf: Hex.string(Sodium.randomBytes(16)), lastUsed: Monotonic.now.nanoseconds)
        table.withLock { table in
            if table.count >= Self.maxSessions, let oldest = table.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                table[oldest.key] = nil
            }
            table[Sodium.hash(Array(token.utf8))] = session
        }
        return (token, session)
    }

    /// The live session of `token` (its idle time restarts), or nil.
    func lookup(_ token: String) -> Session? {
        guard token.utf8.count == 64 else { return nil }
        let key = Sodium.hash(Array(token.utf8))
        let now = Monotonic.now.nanoseconds
        return table.withLock { table in
            guard var session = table[key] else { return nil }
            guard now - session.lastUsed < idleNanos else {
                table[key] = nil
                return nil
            }
            session.lastUsed = now
            table[key] = session
            return session
        }
    }

    func remove(_ token: String) {
        let key = Sodium.hash(Array(token.utf8))
        table.withLock { $0[key] = nil }
    }

    /// Ends every session of `userID` (the account was deleted or its password changed).
    func removeAll(userID: Int64) {
        table.withLock { table in table = table.filter { $0.value.userID != userID } }
    }
}

/// Lower-case hexadecimal.
enum Hex {
    static func string(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
