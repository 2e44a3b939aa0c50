#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamLibrary

/// A user's role: a normal user browses, streams and keeps their own things; an admin also
/// drives what changes the server (radio admin, status pages, rescans).
public enum Role: String, Sendable, Equatable, CaseIterable {
    case user
    case admin
}

/// One account of the catalog database (`users` table).
public struct User: Sendable, Equatable {
    /// Stable for the account's life (the row id): what per-user data refers to.
    public var id: Int64
    /// The login name, unique without regard to case.
    public var name: String
    public var role: Role
    public var isAdmin: Bool { role == .admin }
}

/// One OpenSubsonic API key as listed: never the key itself, which is shown once at creation.
public struct APIKeyRecord: Sendable, Equatable {
    public var id: Int64
    public var userID: Int64
    public var label: String
    public var createdSeconds: Int64
}

/// Why an account change was refused.
public enum UserStoreError: Error, Equatable, CustomStringConvertible {
    case duplicateName(String)
    case noSuchUser(String)
    case noSuchKey(Int64)
    case invalidName(String)
    case emptyPassword
    case keyFile(String)
    case database(String)
    case sodium(SodiumError)

    public var description: String {
        switch self {
        case .duplicateName(let name): return "user '\(name)' exists already"
        case .noSuchUser(let name): return "no user '\(name)'"
        case .noSuchKey(let id): return "no API key \(id) for that user"
        case .invalidName(let name): return "'\(name)' is not a user name: 1-64 letters, digits, '.', '-', '_' or '@'"
        case .emptyPassword: return "the password must not be empty"
        case .keyFile(let why): return "key file: \(why)"
        case .database(let why): return "accounts: \(why)"
        case .sodium(let error): return "\(error)"
        }
    }
}

/// What the access check needs of the accounts on every request, kept in memory so that an
/// event loop never reads SQLite (issue 22's rule): a database that another process holds
/// locked, or a slow disk, must not stall the loop.
public struct AccountSnapshot: Sendable {
    /// One account: who it is, the stamp of its web password (see `UserStore.userAndStamp`)
    /// and its sealed Subsonic app password.
    struct Entry: Sendable {
        var user: User
        var stamp: [UInt8]
        var sealedSubsonicPassword: [UInt8]?
    }
    var byID: [Int64: Entry] = [:]
    /// Lower-cased names (names are ASCII and compared case-insensitively, as the table does).
    var idByName: [String: Int64] = [:]
    /// API key hashes → user ids.
    var userIDByAPIKeyHash: [[UInt8]: Int64] = [:]
    /// Counts the loads: tests and logs can tell a refresh happened.
    public internal(set) var generation = 0

    /// Whether no account exists.
    public var isEmpty: Bool { byID.isEmpty }
}

/// The accounts of the catalog database: users with their argon2id web password, their sealed
/// Subsonic app password and their API keys. Thread-safe (one connection under a lock). The
/// lookups made on an event loop (`userAndStamp`, `user(id:)`, `user(forAPIKey:)`, `isEmpty`,
/// `subsonicAccount`) answer from an in-memory `AccountSnapshot`; it is reloaded after every
/// change made through this store and, in streamd, by `startWatching` on its own thread when
/// another process (`streamd user`) commits to the database.
public final class UserStore: Sendable {
    private let database: Lock<SQLiteDatabase>
    /// Held only to read or swap the snapshot, never across database I/O: the loop never waits
    /// for SQLite through it.
    private let snapshot = Lock(AccountSnapshot())
    /// `PRAGMA data_version` when the snapshot was last loaded (it changes when another
    /// connection commits); only the refreshing threads touch it, under `database`'s lock.
    private let loadedDataVersion = Lock(Int64(-1))
    /// The 32-byte server secret from the key file (0600 beside the database).
    private let masterKey: [UInt8]
    /// The hash verified for a name that has no account, so that a missing user costs the same
    /// argon2id work as a wrong password.
    private let dummyHash: String

    /// Opens the accounts in the catalog database at `databasePath` (its schema made current by
    /// `LibraryStore` first) and the key file at `keyFile`, created 0600 when missing.
    public init(databasePath: String, keyFile: String) throws(UserStoreError) {
        do {
            try Sodium.ensureInitialized()
            dummyHash = try Sodium.hashPassword(String(decoding: Sodium.randomBytes(16).map { 0x61 + $0 % 26 }, as: UTF8.self))
        } catch {
            throw .sodium(error)
        }
        masterKey = try Self.loadOrCreateKey(at: keyFile)
        do {
            let db = try SQLiteDatabase(path: databasePath)
            _ = try db.queryOne("SELECT count(*) FROM users") { $0.int(0) }
            database = Lock(db)
        } catch {
            throw .database("\(error)")
        }
        try reloadSnapshot()
    }

    // MARK: The in-memory snapshot

    /// The accounts as last loaded.
    public var currentSnapshot: AccountSnapshot { snapshot.withLock { $0 } }

    /// Reads the accounts from the database into the snapshot (a blocking call: never on a loop).
    public func reloadSnapshot() throws(UserStoreError) {
        try withDatabase { db throws(SQLiteError) in
            // The version is read first: a commit landing between it and the rows is loaded
            // again on the next check (no transaction: BEGIN IMMEDIATE would take the write lock).
            let version = Int64(try db.queryOne("PRAGMA data_version") { $0.int(0) } ?? 0)
            var next = AccountSnapshot()
            let rows = try db.query("SELECT id, name, admin, password_hash, subsonic_password FROM users") { row in
                AccountSnapshot.Entry(user: Self.user(row), stamp: Sodium.hash(Array(row.text(3).utf8)),
                                      sealedSubsonicPassword: row.isNull(4) ? nil : row.blob(4))
            }
            for entry in rows {
                next.byID[entry.user.id] = entry
                next.idByName[entry.user.name.lowercased()] = entry.user.id
            }
            let keys = try db.query("SELECT key_hash, user_id FROM api_keys") { ($0.blob(0), Int64($0.int(1))) }
            for (hash, id) in keys where next.byID[id] != nil { next.userIDByAPIKeyHash[hash] = id }
            // Swapped while the database lock is held, so two reloads cannot land out of order.
            loadedDataVersion.withLock { $0 = version }
            snapshot.withLock { current in
                next.generation = current.generation + 1
                current = next
            }
        }
    }

    /// Reloads the snapshot if another connection committed to the database since the last load
    /// (`PRAGMA data_version`, a cheap check); returns whether it did. Blocking: never on a loop.
    @discardableResult
    public func reloadSnapshotIfChanged() throws(UserStoreError) -> Bool {
        let version = try withDatabase { db throws(SQLiteError) in Int64(try db.queryOne("PRAGMA data_version") { $0.int(0) } ?? 0) }
        guard version != loadedDataVersion.withLock({ $0 }) else { return false }
        try reloadSnapshot()
        return true
    }

    /// Starts a thread that keeps the snapshot current: every `interval` seconds it asks whether
    /// the database changed (`streamd user` in another process) and reloads it then. A database
    /// another process holds locked delays only this thread. It ends when the store is gone.
    public func startWatching(interval: Double = 0.25, onReload: @escaping @Sendable () -> Void = {}) throws(ThreadError) {
        try NativeThread.detach(name: "streamd-accounts") { [weak self] in
            var pause = timespec(tv_sec: Int(interval), tv_nsec: Int((interval - interval.rounded(.down)) * 1e9))
            while true {
                nanosleep(&pause, nil)
                guard let store = self else { return }
                if (try? store.reloadSnapshotIfChanged()) == true { onReload() }
            }
        }
    }

    /// The key file of the database at `databasePath`: the same path with `.key` added.
    public static func keyFilePath(forDatabase databasePath: String) -> String { databasePath + ".key" }

    /// A subkey of the server secret for one purpose ("subsonic-password", "url-signing", ...).
    public func derivedKey(_ purpose: String) -> [UInt8] {
        Sodium.hash(Array(("streamd:" + purpose).utf8), key: masterKey)
    }

    func withDatabase<T>(_ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(UserStoreError) -> T {
        do {
            return try database.withLock { (db: inout SQLiteDatabase) throws(SQLiteError) -> T in try body(db) }
        } catch {
            throw .database("\(error)")
        }
    }

    // MARK: Lookups

    /// Whether no account exists (the server then runs open on loopback, see `AccessPolicy`).
    /// From the snapshot: no database read.
    public func isEmpty() -> Bool {
        snapshot.withLock { $0.isEmpty }
    }

    /// The account named `name` (case-insensitive), or nil.
    public func user(named name: String) throws(UserStoreError) -> User? {
        try withDatabase { db throws(SQLiteError) in
            try db.queryOne("SELECT id, name, admin FROM users WHERE name = ?", [.text(name)], row: Self.user)
        }
    }

    /// The account with row id `id`, or nil.
    /// From the snapshot: no database read.
    public func user(id: Int64) -> User? {
        snapshot.withLock { $0.byID[id]?.user }
    }

    /// The account with row id `id` and a stamp of its current web password (a hash of its
    /// argon2id string): a session or a cached Basic login made under another stamp is over
    /// (the password changed since).
    /// From the snapshot: no database read.
    public func userAndStamp(id: Int64) -> (user: User, stamp: [UInt8])? {
        snapshot.withLock { $0.byID[id].map { ($0.user, $0.stamp) } }
    }

    /// Every account, by name.
    public func users() throws(UserStoreError) -> [User] {
        try withDatabase { db throws(SQLiteError) in
            try db.query("SELECT id, name, admin FROM users ORDER BY name COLLATE NOCASE", row: Self.user)
        }
    }

    private static func user(_ row: SQLiteDatabase.Statement) -> User {
        User(id: Int64(row.int(0)), name: row.text(1), role: row.int(2) != 0 ? .admin : .user)
    }

    // MARK: Credentials

    /// The account if `password` is its web password. A name without an account verifies a
    /// dummy hash, so both refusals cost the same argon2id work (30-60 ms: call off the loop).
    public func verifyPassword(name: String, password: String) -> User? {
        let found = try? withDatabase { db throws(SQLiteError) in
            try db.queryOne("SELECT id, name, admin, password_hash FROM users WHERE name = ?", [.text(name)]) {
                (Self.user($0), $0.text(3))
            }
        }
        guard let (user, hash) = found ?? nil else {
            _ = Sodium.verifyPassword(password, hash: dummyHash)
            return nil
        }
        return Sodium.verifyPassword(password, hash: hash) ? user : nil
    }

    /// The Subsonic app password of `user` in clear, for `t`+`s` token auth (md5(password + salt),
    /// compared in constant time by the caller) and legacy `p=` auth; nil without an account.
    /// From the snapshot: no database read (opening the seal is microseconds).
    public func subsonicPassword(of user: User) throws(UserStoreError) -> String? {
        guard let sealed = snapshot.withLock({ $0.byID[user.id]?.sealedSubsonicPassword }) else { return nil }
        do {
            return String(decoding: try Sodium.open(sealed, key: derivedKey("subsonic-password")), as: UTF8.self)
        } catch {
            throw .sodium(error)
        }
    }

    /// The account an OpenSubsonic API key (or a `streamplay` bearer token) belongs to, or nil.
    public func user(forAPIKey key: String) -> User? {
        guard key.utf8.count <= 256 else { return nil }
        let hash = Self.apiKeyHash(key)
        return snapshot.withLock { snapshot in snapshot.userIDByAPIKeyHash[hash].flatMap { snapshot.byID[$0]?.user } }
    }

    /// The account named `name` (case-insensitive) from the snapshot: no database read.
    public func cachedUser(named name: String) -> User? {
        snapshot.withLock { snapshot in snapshot.idByName[name.lowercased()].flatMap { snapshot.byID[$0]?.user } }
    }

    static func apiKeyHash(_ key: String) -> [UInt8] { Sodium.hash(Array(key.utf8)) }

    // MARK: Changes (the `streamd user` command)

    /// Adds an account; returns it and its generated Subsonic app password (shown once).
    @discardableResult
    public func add(name: String, password: String, role: Role) throws(UserStoreError) -> (user: User, subsonicPassword: String) {
        guard Self.isValidName(name) else { throw .invalidName(name) }
        guard !password.isEmpty else { throw .emptyPassword }
        if try user(named: name) != nil { throw .duplicateName(name) }
        let appPassword = Self.randomText(20)
        let hash: String, sealed: [UInt8]
        do {
            hash = try Sodium.hashPassword(password)
            sealed = try Sodium.seal(Array(appPassword.utf8), key: derivedKey("subsonic-password"))
        } catch {
            throw .sodium(error)
        }
        try withDatabase { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                // An id no account ever had: a deleted user's stars, playlists, sessions and
                // signed links name its id, and must never pass to a newcomer.
                let id = try Self.highestUserID(db) + 1
                try db.run("INSERT INTO users(id, name, admin, password_hash, subsonic_password, created_s) VALUES (?, ?, ?, ?, ?, ?)",
                           [.int(id), .text(name), .int(role == .admin ? 1 : 0), .text(hash), .blob(sealed), .int(Int64(time(nil)))])
                try Self.recordUserID(id, db)
            }
        }
        try reloadSnapshot()
        guard let user = try user(named: name) else { throw .noSuchUser(name) }
        return (user, appPassword)
    }

    /// Sets the web password of `name`.
    public func setPassword(name: String, password: String) throws(UserStoreError) {
        guard !password.isEmpty else { throw .emptyPassword }
        guard let user = try user(named: name) else { throw .noSuchUser(name) }
        let hash: String
        do { hash = try Sodium.hashPassword(password) } catch { throw .sodium(error) }
        try withDatabase { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                try db.run("UPDATE users SET password_hash = ? WHERE id = ?", [.text(hash), .int(user.id)])
                // A new password ends the page's sessions (a running server also refuses them by stamp).
                try db.run("DELETE FROM web_sessions WHERE user_id = ?", [.int(user.id)])
            }
        }
        try reloadSnapshot()
    }

    /// Sets the Subsonic app password of `name` (nil: a new random one); returns it.
    @discardableResult
    public func setSubsonicPassword(name: String, password: String? = nil) throws(UserStoreError) -> String {
        if let password, password.isEmpty { throw .emptyPassword }
        guard let user = try user(named: name) else { throw .noSuchUser(name) }
        let clear = password ?? Self.randomText(20)
        let sealed: [UInt8]
        do { sealed = try Sodium.seal(Array(clear.utf8), key: derivedKey("subsonic-password")) } catch { throw .sodium(error) }
        try withDatabase { db throws(SQLiteError) in
            try db.run("UPDATE users SET subsonic_password = ? WHERE id = ?", [.blob(sealed), .int(user.id)])
        }
        try reloadSnapshot()
        return clear
    }

    /// Makes `name` an admin or a normal user.
    public func setRole(name: String, role: Role) throws(UserStoreError) {
        guard let user = try user(named: name) else { throw .noSuchUser(name) }
        try withDatabase { db throws(SQLiteError) in
            try db.run("UPDATE users SET admin = ? WHERE id = ?", [.int(role == .admin ? 1 : 0), .int(user.id)])
        }
        try reloadSnapshot()
    }

    /// Deletes `name`, its API keys, its page sessions and what it kept through Subsonic (stars, ratings, plays,
    /// playlists, play queue); its id is never given again.
    public func delete(name: String) throws(UserStoreError) {
        guard let user = try user(named: name) else { throw .noSuchUser(name) }
        try withDatabase { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                try Self.recordUserID(user.id, db)
                try db.run("DELETE FROM api_keys WHERE user_id = ?", [.int(user.id)])
                try db.run("DELETE FROM web_sessions WHERE user_id = ?", [.int(user.id)])
                // The Subsonic tables exist once /rest/ has been served from this database.
                let subsonic = try db.queryOne("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'subsonic_annotations'") { _ in true } ?? false
                if subsonic {
                    try db.run("DELETE FROM subsonic_annotations WHERE user_id = ?", [.int(user.id)])
                    try db.run("DELETE FROM subsonic_playlist_entries WHERE playlist_id IN (SELECT id FROM subsonic_playlists WHERE user_id = ?)",
                               [.int(user.id)])
                    try db.run("DELETE FROM subsonic_playlists WHERE user_id = ?", [.int(user.id)])
                    try db.run("DELETE FROM subsonic_play_queues WHERE user_id = ?", [.int(user.id)])
                }
                try db.run("DELETE FROM users WHERE id = ?", [.int(user.id)])
            }
        }
        try reloadSnapshot()
    }

    /// The highest user id ever given: the table's, or a deleted one's kept in `meta`.
    private static func highestUserID(_ db: SQLiteDatabase) throws(SQLiteError) -> Int64 {
        let kept = try db.queryOne("SELECT value FROM meta WHERE key = 'user_id_high_water'") { Int64($0.text(0)) ?? 0 } ?? 0
        let present = try db.queryOne("SELECT COALESCE(MAX(id), 0) FROM users") { Int64($0.int(0)) } ?? 0
        return max(kept, present)
    }

    /// Remembers `id` as given, so it is never given again.
    private static func recordUserID(_ id: Int64, _ db: SQLiteDatabase) throws(SQLiteError) {
        let high = max(id, try highestUserID(db))
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('user_id_high_water', ?)", [.text(String(high))])
    }

    /// A new API key for `name`: the key (shown once, stored only as its hash) and its record.
    public func addAPIKey(name: String, label: String) throws(UserStoreError) -> (key: String, record: APIKeyRecord) {
        guard let user = try user(named: name) else { throw .noSuchUser(name) }
        let key = "sdk_" + Self.randomText(40)
        let now = Int64(time(nil))
        let cleanLabel = String(label.filter { !$0.isASCII || ($0.asciiValue ?? 0) >= 0x20 }.prefix(100))
        let id = try withDatabase { db throws(SQLiteError) -> Int64 in
            try db.run("INSERT INTO api_keys(user_id, key_hash, label, created_s) VALUES (?, ?, ?, ?)",
                       [.int(user.id), .blob(Self.apiKeyHash(key)), .text(cleanLabel), .int(now)])
            return Int64(try db.queryOne("SELECT last_insert_rowid()") { $0.int(0) } ?? 0)
        }
        try reloadSnapshot()
        return (key, APIKeyRecord(id: id, userID: user.id, label: cleanLabel, createdSeconds: now))
    }

    /// The API keys of `name`, oldest first.
    public func apiKeys(name: String) throws(UserStoreError) -> [APIKeyRecord] {
        guard let user = try user(named: name) else { throw .noSuchUser(name) }
        return try withDatabase { db throws(SQLiteError) in
            try db.query("SELECT id, user_id, label, created_s FROM api_keys WHERE user_id = ? ORDER BY id", [.int(user.id)]) {
                APIKeyRecord(id: Int64($0.int(0)), userID: Int64($0.int(1)), label: $0.text(2), createdSeconds: Int64($0.int(3)))
            }
        }
    }

    /// Revokes API key `id` of `name`.
    public func revokeAPIKey(name: String, id: Int64) throws(UserStoreError) {
        let keys = try apiKeys(name: name)
        guard let key = keys.first(where: { $0.id == id }) else { throw .noSuchKey(id) }
        try withDatabase { db throws(SQLiteError) in
            try db.run("DELETE FROM api_keys WHERE id = ?", [.int(key.id)])
        }
        try reloadSnapshot()
    }

    // MARK: Helpers

    /// 1-64 ASCII letters, digits, `.`, `-`, `_`, `@`: names appear in logs and URLs.
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "@")
        }
    }

    /// `count` random characters from 56 unambiguous letters and digits (no 0/O, 1/l/I).
    public static func randomText(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789".utf8)
        var out: [UInt8] = []
        while out.count < count {
            // Rejection sampling: bytes past the largest multiple of the alphabet would bias it.
            for byte in Sodium.randomBytes(count * 2) where Int(byte) < 256 - 256 % alphabet.count && out.count < count {
                out.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The key file's 32 bytes; a missing file is created 0600 (O_EXCL: two processes starting
    /// at once do not both write one). A file others may read is refused.
    static func loadOrCreateKey(at path: String) throws(UserStoreError) -> [UInt8] {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            let key = Sodium.randomBytes(Sodium.keyBytes)
            let written = key.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd)
            close(fd)
            guard written == key.count, synced == 0 else {
                unlink(path)
                throw .keyFile("cannot write \(path)")
            }
            return key
        }
        guard errno == EEXIST else { throw .keyFile("cannot create \(path): \(String(cString: strerror(errno)))") }
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else { throw .keyFile("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(reader) }
        var info = stat()
        guard fstat(reader, &info) == 0 else { throw .keyFile("cannot stat \(path)") }
        guard info.st_mode & 0o077 == 0 else {
            throw .keyFile("\(path) may be read by others (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 it")
        }
        var key = [UInt8](repeating: 0, count: Sodium.keyBytes + 1)
        let n = key.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
        guard n == Sodium.keyBytes else { throw .keyFile("\(path) is not a 32-byte key") }
        return Array(key.prefix(Sodium.keyBytes))
    }
}
