import Foundation
import Testing
@testable import StreamHTTP
@testable import StreamLibrary
@testable import StreamAuth
#if canImport(Glibc)
import Glibc
#endif

/// The page's sessions kept in the catalog database (`web_sessions`): what a "restart" (a new
/// `UserStore` and `AccessControl` on the same file) finds, expiry, batched last-seen writes,
/// and revocation by a password change or an account's deletion.
@Suite struct SessionPersistenceTests {
    /// A catalog with user "bob" (password "pw"); its path and folder.
    static func makeDatabase() throws -> (path: String, folder: URL) {
        let (store, path, folder) = try AccountTests.makeStore()
        try store.add(name: "bob", password: "pw", role: .user)
        return (path, folder)
    }

    /// What a start of streamd makes of the database: the accounts and the access check.
    static func start(_ path: String) throws -> AccessControl {
        let users = try UserStore(databasePath: path, keyFile: UserStore.keyFilePath(forDatabase: path))
        return AccessControl(users: users, settings: AccessSettings())
    }

    static func request(_ method: String, _ target: String, _ headers: [(name: String, value: String)]) -> HTTPRequest {
        var request = HTTPRequest(method: method, target: target, minorVersion: 1, headers: [("Host", "x")] + headers)
        request.peer = "127.0.0.1:1"
        return request
    }

    /// Logs bob in: the token and the CSRF token.
    static func login(_ access: AccessControl) throws -> (token: String, csrf: String) {
        var response = access.login(request("POST", "/api/login", [("Authorization", "Basic " + Data("bob:pw".utf8).base64EncodedString())]))
        if let make = response.offLoop { response = try make() }
        try #require(response.status == 200)
        let pair = try #require(response.headers.first { $0.0 == "Set-Cookie" }?.1.split(separator: ";").first)
        var body: [UInt8] = []
        while let part = response.body?.nextPart() { if case .bytes(let b) = part { body += b } else { break } }
        let document = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        return (String(pair.dropFirst("streamd_session=".count)), try #require(document["csrf"] as? String))
    }

    static func allowed(_ access: AccessControl, _ token: String, method: String = "GET", csrf: String? = nil) -> Bool {
        var headers: [(name: String, value: String)] = [("Cookie", "streamd_session=" + token)]
        if let csrf { headers.append(("X-CSRF-Token", csrf)) }
        if case .allow(let principal) = access.decide(request(method, "/api/tracks", headers), access: .read) {
            return principal.user?.name == "bob"
        }
        return false
    }

    static func rows(_ path: String, _ sql: String = "SELECT count(*) FROM web_sessions") throws -> Int {
        try SQLiteDatabase(path: path).queryOne(sql) { $0.int(0) } ?? -1
    }

    @Test func aSessionOutlivesARestart_withItsCSRFToken() throws {
        let (path, folder) = try Self.makeDatabase()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (token, csrf) = try Self.login(Self.start(path))
        let restarted = try Self.start(path)
        #expect(Self.allowed(restarted, token))
        #expect(!Self.allowed(restarted, token, method: "POST"), "no CSRF token")
        #expect(Self.allowed(restarted, token, method: "POST", csrf: csrf), "the login's CSRF token still holds")
        #expect(!Self.allowed(restarted, String(token.reversed())))
        // Only the hash is kept.
        let stored = try SQLiteDatabase(path: path).queryOne("SELECT token_hash FROM web_sessions") { $0.blob(0) }
        #expect(stored == Sodium.hash(Array(token.utf8)) && stored != Array(token.utf8))
    }

    @Test func anExpiredSessionIsRefusedAfterARestart_andDeleted() throws {
        let (path, folder) = try Self.makeDatabase()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try Self.start(path)
        let (expired, _) = try Self.login(first)
        let (idle, _) = try Self.login(first)
        let (fresh, _) = try Self.login(first)
        let now = Int64(time(nil))
        let db = try SQLiteDatabase(path: path)
        // Past its expiry; and one whose expiry is ahead but last seen longer ago than the idle time.
        try db.run("UPDATE web_sessions SET last_seen_s = ?, expires_s = ? WHERE token_hash = ?",
                   [.int(now - 8 * 86_400), .int(now - 86_400), .blob(Sodium.hash(Array(expired.utf8)))])
        try db.run("UPDATE web_sessions SET last_seen_s = ? WHERE token_hash = ?",
                   [.int(now - 8 * 86_400), .blob(Sodium.hash(Array(idle.utf8)))])
        // Damaged rows (times at the ends of Int64) are loaded without a trap.
        for (index, seen) in [Int64.max, Int64.min, -1].enumerated() {
            try db.run("INSERT INTO web_sessions VALUES (?, 1, x'00', 0, ?, ?)", [.blob([UInt8(index)]), .int(seen), .int(Int64.max)])
        }
        let restarted = try Self.start(path)
        #expect(!Self.allowed(restarted, expired))
        #expect(!Self.allowed(restarted, idle))
        #expect(Self.allowed(restarted, fresh))
        #expect(try Self.rows(path, "SELECT count(*) FROM web_sessions WHERE length(token_hash) = 32") == 2, "the expired row is deleted at start")
    }

    @Test func requestsDoNotWrite_theFlushWritesLastSeen() throws {
        let (path, folder) = try Self.makeDatabase()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (token, _) = try Self.login(Self.start(path))
        let old = Int64(time(nil)) - 3600
        try SQLiteDatabase(path: path).run("UPDATE web_sessions SET last_seen_s = ?", [.int(old)])
        let restarted = try Self.start(path)
        for _ in 0..<20 { #expect(Self.allowed(restarted, token)) }
        #expect(try Self.rows(path, "SELECT last_seen_s FROM web_sessions") == Int(old), "no write per request")
        restarted.flushSessions()
        let seen = try Self.rows(path, "SELECT last_seen_s FROM web_sessions")
        #expect(seen >= Int(time(nil)) - 5, "written by the flush: \(seen)")
        #expect(try Self.rows(path, "SELECT expires_s - last_seen_s FROM web_sessions") == 7 * 86_400)
    }

    @Test func logoutPasswdAndDelete_deleteTheRows() throws {
        let (path, folder) = try Self.makeDatabase()
        defer { try? FileManager.default.removeItem(at: folder) }
        let access = try Self.start(path)
        let users = try #require(access.users)
        let (token, csrf) = try Self.login(access)
        _ = try Self.login(access)
        #expect(try Self.rows(path) == 2)
        var response = access.logout(Self.request("POST", "/api/logout", [("Cookie", "streamd_session=" + token), ("X-CSRF-Token", csrf)]))
        if let make = response.offLoop { response = try make() }
        #expect(response.status == 200)
        #expect(try Self.rows(path) == 1, "logout deletes its row at once")
        try users.setPassword(name: "bob", password: "new")
        #expect(try Self.rows(path) == 0, "a new password deletes the user's sessions")
        try users.setPassword(name: "bob", password: "pw")
        _ = try Self.login(access)
        try users.delete(name: "bob")
        #expect(try Self.rows(path) == 0, "deleting the user deletes its sessions")
    }
}
