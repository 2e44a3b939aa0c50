import Foundation
import Testing
@testable import StreamHTTP
@testable import StreamLibrary
@testable import StreamAuth
@testable import StreamSubsonic
#if canImport(Glibc)
import Glibc
#endif

/// The account store, the failed-login back-off, signed links and log redaction.
@Suite struct AccountTests {
    static func makeStore() throws -> (UserStore, String, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("accounts-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("catalog.db").path
        _ = try LibraryStore(path: path, folder: folder.path)
        return (try UserStore(databasePath: path, keyFile: UserStore.keyFilePath(forDatabase: path)), path, folder)
    }

    /// The lookups the access check makes on the event loop answer from memory; a change made by
    /// another connection (`streamd user` in another process) shows once the store checks
    /// `PRAGMA data_version` (its watcher thread does, every 250 ms), and not before.
    @Test func loopLookupsAnswerFromTheSnapshot_reloadedWhenAnotherConnectionCommits() throws {
        let (server, path, folder) = try Self.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let command = try UserStore(databasePath: path, keyFile: UserStore.keyFilePath(forDatabase: path))
        #expect(try server.reloadSnapshotIfChanged() == false, "nothing changed yet")
        let (user, _) = try command.add(name: "bob", password: "pw", role: .user)
        let key = try command.addAPIKey(name: "bob", label: "t").key
        #expect(server.isEmpty() && server.userAndStamp(id: user.id) == nil && server.user(forAPIKey: key) == nil,
                "not yet reloaded: no database read behind a lookup")
        let generation = server.currentSnapshot.generation
        #expect(try server.reloadSnapshotIfChanged())
        #expect(server.currentSnapshot.generation == generation + 1)
        #expect(!server.isEmpty() && server.user(forAPIKey: key)?.id == user.id && server.cachedUser(named: "BOB")?.id == user.id)
        let stamp = try #require(server.userAndStamp(id: user.id)).stamp
        try command.setPassword(name: "bob", password: "new")
        try server.reloadSnapshotIfChanged()
        #expect(server.userAndStamp(id: user.id)?.stamp != stamp, "a new password ends sessions made under the old one")
        try command.delete(name: "bob")
        try server.reloadSnapshotIfChanged()
        #expect(server.isEmpty() && server.user(forAPIKey: key) == nil && server.user(id: user.id) == nil)
    }

    @Test func passwordsAreArgon2idAndVerify() throws {
        let (store, path, folder) = try Self.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (user, appPassword) = try store.add(name: "Alice", password: "correct horse", role: .admin)
        #expect(user.isAdmin && user.name == "Alice")
        #expect(store.verifyPassword(name: "alice", password: "correct horse")?.id == user.id)
        #expect(store.verifyPassword(name: "alice", password: "wrong") == nil)
        #expect(store.verifyPassword(name: "nobody", password: "correct horse") == nil)
        #expect(throws: UserStoreError.duplicateName("ALICE")) { try store.add(name: "ALICE", password: "x", role: .user) }
        #expect(throws: UserStoreError.invalidName("a b")) { try store.add(name: "a b", password: "x", role: .user) }
        // Stored as an argon2id string, never in clear; the app password sealed, not in clear either.
        let db = try SQLiteDatabase(path: path, readOnly: true)
        let hash = try #require(try db.queryOne("SELECT password_hash FROM users") { $0.text(0) })
        #expect(hash.hasPrefix("$argon2id$"))
        let sealed = try #require(try db.queryOne("SELECT subsonic_password FROM users") { $0.blob(0) })
        #expect(!String(decoding: sealed, as: UTF8.self).contains(appPassword))
        #expect(try store.subsonicPassword(of: user) == appPassword)
        try store.setSubsonicPassword(name: "alice", password: "sesame")
        #expect(try store.subsonicPassword(of: user) == "sesame")
        try store.setPassword(name: "alice", password: "new one")
        #expect(store.verifyPassword(name: "alice", password: "new one") != nil)
        #expect(store.verifyPassword(name: "alice", password: "correct horse") == nil)
    }

    @Test func keyFileIsPrivateAndTheSameAcrossOpenings() throws {
        let (store, path, folder) = try Self.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (user, appPassword) = try store.add(name: "bob", password: "pw", role: .user)
        var info = stat()
        #expect(stat(UserStore.keyFilePath(forDatabase: path), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let again = try UserStore(databasePath: path, keyFile: UserStore.keyFilePath(forDatabase: path))
        #expect(try again.subsonicPassword(of: user) == appPassword)
        // A key file others may read is refused rather than used.
        chmod(UserStore.keyFilePath(forDatabase: path), 0o644)
        #expect(throws: UserStoreError.self) { try UserStore(databasePath: path, keyFile: UserStore.keyFilePath(forDatabase: path)) }
        // Another key cannot open the sealed password.
        let otherKey = folder.appendingPathComponent("other.key").path
        let other = try UserStore(databasePath: path, keyFile: otherKey)
        #expect(throws: UserStoreError.self) { try other.subsonicPassword(of: user) }
    }

    @Test func apiKeysAreStoredHashedListedAndRevoked() throws {
        let (store, path, folder) = try Self.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        try store.add(name: "carol", password: "pw", role: .user)
        let (key, record) = try store.addAPIKey(name: "carol", label: "phone")
        #expect(store.user(forAPIKey: key)?.name == "carol")
        #expect(store.user(forAPIKey: key + "x") == nil)
        #expect(try store.apiKeys(name: "carol") == [record])
        let db = try SQLiteDatabase(path: path, readOnly: true)
        let stored = try #require(try db.queryOne("SELECT key_hash FROM api_keys") { $0.blob(0) })
        #expect(stored != Array(key.utf8) && stored.count == 32)
        try store.revokeAPIKey(name: "carol", id: record.id)
        #expect(store.user(forAPIKey: key) == nil)
        try store.addAPIKey(name: "carol", label: "laptop")
        try store.delete(name: "carol")
        #expect(try store.users().isEmpty)
        #expect(try db.queryOne("SELECT count(*) FROM api_keys") { $0.int(0) } == 0)
    }

    /// A deleted account takes what it kept through Subsonic with it, and its id is never given
    /// again (the row id was: the next account after the newest one's deletion got its id, and
    /// with it the stars, playlists, play queue, sessions and signed links of the deleted one).
    @Test func deletedUsersDataGoes_andTheirIDIsNeverGivenAgain() throws {
        let (store, path, folder) = try Self.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (dave, _) = try store.add(name: "dave", password: "pw", role: .user)
        let db = try SQLiteDatabase(path: path)
        try db.execute(SubsonicSchema.migrations[0])
        try db.run("INSERT INTO subsonic_annotations(user_id, sid, starred_at, rating, play_count) VALUES (?, 'tr-1', 1, 5, 3)", [.int(dave.id)])
        try db.run("INSERT INTO subsonic_playlists(id, user_id, name, created, changed) VALUES (7, ?, 'mine', 1, 1)", [.int(dave.id)])
        try db.run("INSERT INTO subsonic_playlist_entries(playlist_id, position, sid) VALUES (7, 0, 'tr-1')")
        try db.run("INSERT INTO subsonic_play_queues(user_id, changed, changed_by, entries) VALUES (?, 1, 'app', '[]')", [.int(dave.id)])
        try store.delete(name: "dave")
        for table in ["subsonic_annotations", "subsonic_playlists", "subsonic_playlist_entries", "subsonic_play_queues"] {
            #expect(try db.queryOne("SELECT count(*) FROM \(table)") { $0.int(0) } == 0, "\(table) keeps the deleted user's rows")
        }
        let (erin, _) = try store.add(name: "erin", password: "pw", role: .user)
        #expect(erin.id > dave.id, "erin got id \(erin.id), dave had \(dave.id)")
        try store.delete(name: "erin")
        let (again, _) = try store.add(name: "dave", password: "pw", role: .user)
        #expect(again.id > erin.id, "a new dave got id \(again.id), erin had \(erin.id)")
        // A store opened afresh (another `streamd user` process) knows the ids given too.
        let other = try UserStore(databasePath: path, keyFile: UserStore.keyFilePath(forDatabase: path))
        try other.delete(name: "dave")
        let (frank, _) = try other.add(name: "frank", password: "pw", role: .admin)
        #expect(frank.id > again.id)
    }

    /// A clock the test moves.
    final class FakeClock: @unchecked Sendable {
        var nanos: UInt64 = 1_000_000_000
    }

    /// The figure: an attacker holding on to one address gets at most 10 guesses a
    /// minute, minute after minute, while the user they guess at logs in from their own address.
    @Test func backOffHoldsAnAttackerToTenTriesAMinute() {
        let clock = FakeClock()
        let limiter = LoginLimiter(now: { clock.nanos })
        limiter.recordSuccess(address: "10.0.0.2", user: "alice")
        var judged: [UInt64] = []
        // The attacker tries every 100 ms for 10 minutes (6,000 attempts).
        for _ in 0..<6_000 {
            if limiter.waitBeforeAttempt(address: "10.0.0.66", user: "alice") == nil {
                judged.append(clock.nanos)
                limiter.recordFailure(address: "10.0.0.66", user: "alice")
            }
            // The real user, from their usual address, is never held back.
            #expect(limiter.waitBeforeAttempt(address: "10.0.0.2", user: "alice") == nil)
            clock.nanos += 100_000_000
        }
        for minute in 0..<10 {
            let start = 1_000_000_000 + UInt64(minute) * 60_000_000_000
            let inMinute = judged.filter { $0 >= start && $0 < start + 60_000_000_000 }.count
            #expect(inMinute <= 10, "minute \(minute): \(inMinute) guesses judged")
        }
        // 3 free guesses, then one per doubling wait (1 s, 2 s, ... 512 s): about 13 in 10 minutes.
        #expect(judged.count <= 14)
    }

    /// Many addresses guessing at one name: past the per-user allowance a new address waits,
    /// the user's own known address does not, and other names are not held back.
    @Test func backOffPerUserSparesTheUsersKnownAddresses() {
        let clock = FakeClock()
        let limiter = LoginLimiter(now: { clock.nanos })
        limiter.recordSuccess(address: "10.0.0.2", user: "alice")
        for i in 0..<(limiter.freeFailuresPerUser + 1) {
            limiter.recordFailure(address: Substring("10.1.0.\(i)"), user: "alice")
        }
        #expect(limiter.waitBeforeAttempt(address: "10.0.0.77", user: "alice") != nil)
        #expect(limiter.waitBeforeAttempt(address: "10.0.0.77", user: "ALICE") != nil)
        #expect(limiter.waitBeforeAttempt(address: "10.0.0.2", user: "alice") == nil)
        #expect(limiter.waitBeforeAttempt(address: "10.0.0.77", user: "bob") == nil)
    }

    @Test func signedLinksAreBoundToPathUserAndTime() {
        let signer = URLSigner(key: Sodium.randomBytes(32))
        let query = signer.query(forPath: "/playlist/album/3.m3u8", userID: 7, seconds: 60, now: 1000)
        func request(_ target: String) -> HTTPRequest { HTTPRequest(method: "GET", target: target, minorVersion: 1, headers: []) }
        #expect(signer.verify(request("/playlist/album/3.m3u8?" + query), now: 1000) == 7)
        #expect(signer.verify(request("/playlist/album/3.m3u8?" + query), now: 1061) == nil)
        #expect(signer.verify(request("/playlist/album/4.m3u8?" + query), now: 1000) == nil)
        #expect(signer.verify(request("/playlist/album/3.m3u8?" + query.replacingOccurrences(of: "uid=7", with: "uid=8")), now: 1000) == nil)
        #expect(signer.verify(request("/playlist/album/3.m3u8?" + query.replacingOccurrences(of: "exp=1060", with: "exp=9999")), now: 1000) == nil)
        #expect(URLSigner(key: Sodium.randomBytes(32)).verify(request("/playlist/album/3.m3u8?" + query), now: 1000) == nil)
    }

    @Test func loggedTargetsLoseTheirSecrets() {
        #expect(LoggedTarget.redact("/media/a.mp3?exp=1&uid=2&sig=abcdef") == "/media/a.mp3?exp=1&uid=2&sig=-")
        #expect(LoggedTarget.redact("/rest/ping.view?u=al&t=0123&s=salt&p=enc:41&apiKey=K&v=1.16") == "/rest/ping.view?u=al&t=-&s=-&p=-&apiKey=-&v=1.16")
        #expect(LoggedTarget.redact("/api/index/a.mp3?t=12.5") == "/api/index/a.mp3?t=12.5")
        #expect(LoggedTarget.redact("/api/tracks") == "/api/tracks")
    }
}
