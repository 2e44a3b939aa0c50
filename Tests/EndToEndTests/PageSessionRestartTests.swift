import Foundation
import Testing
import TestSupport

/// The page's login sessions on the real streamd across restarts on one catalog database: a
/// cookie keeps working after a restart (its CSRF token too, and still checked); a logout, a
/// `streamd user passwd` and a `streamd user del` made between runs end it for good; the file
/// holds only hashes of the tokens.
@Suite(.serialized, .ownThreads) struct PageSessionRestartTests {
    static let accounts: [(name: String, password: String, admin: Bool)] = [("alice", "alice-pw", true), ("bob", "bob-pw", false), ("carol", "carol-pw", false)]

    static func send(_ server: StreamdProcess, _ method: String, _ target: String, _ headers: [String: String] = [:]) throws -> RawResponse {
        try RawConnection(port: server.port).request(method, target, headers: headers)
    }

    /// Logs `name` in: the cookie header to send back and the CSRF token.
    static func login(_ server: StreamdProcess, _ name: String, _ password: String) throws -> (cookie: [String: String], csrf: String, token: String) {
        let answer = try send(server, "POST", "/api/login", ["Authorization": "Basic " + Data("\(name):\(password)".utf8).base64EncodedString()])
        try #require(answer.status == 200, "login of \(name): \(answer.status)")
        let pair = String(try #require(answer.header("Set-Cookie")).split(separator: ";")[0])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        return (["Cookie": pair], try #require(document["csrf"] as? String), String(pair.dropFirst("streamd_session=".count)))
    }

    /// `streamd user ARGUMENTS --db DB` with `input` on stdin; its exit status.
    static func user(_ arguments: [String], db: String, folder: URL, input: String = "") throws -> Int32 {
        try SubsonicClientTests.runUserCommand(arguments + ["--folder", folder.path], db: db, input: input).status
    }

    @Test(.timeLimit(.scaledMinutes(3))) func sessionsSurviveRestarts_untilLogoutPasswdOrDel() throws {
        let library = try LibraryAPITests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        var server = try StreamdProcess(folder: library, extraArguments: ["--quiet"], waitForScan: false, accounts: Self.accounts)
        let db = server.databasePath
        let bob = try Self.login(server, "bob", "bob-pw")
        let bobLater = try Self.login(server, "bob", "bob-pw")
        let carol = try Self.login(server, "carol", "carol-pw")
        let alice = try Self.login(server, "alice", "alice-pw")
        #expect(try Self.send(server, "GET", "/api/tracks", bob.cookie).status == 200)
        #expect(server.stop() == 0)

        // The database holds hashes only: no token, in hex or otherwise, in the file or its journal.
        for suffix in ["", "-wal"] {
            guard let bytes = FileManager.default.contents(atPath: db + suffix) else { continue }
            for token in [bob.token, bobLater.token, carol.token, alice.token] {
                #expect(bytes.range(of: Data(token.utf8)) == nil, "token in \(db + suffix)")
                #expect(bytes.range(of: Data(token.prefix(16).utf8)) == nil, "part of a token in \(db + suffix)")
            }
        }

        server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db], waitForScan: false, accounts: [])
        #expect(try Self.send(server, "GET", "/api/tracks", bob.cookie).status == 200, "the cookie works after a restart")
        let session = try Self.send(server, "GET", "/api/session", bob.cookie)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(session.body)) as? [String: Any])
        #expect(document["user"] as? String == "bob")
        #expect(document["csrf"] as? String == bob.csrf, "the CSRF token is the one given at login")
        #expect(try Self.send(server, "POST", "/api/logout", bob.cookie).status == 403, "CSRF still checked after a restart")
        let wrong = (bob.csrf.hasPrefix("0") ? "1" : "0") + bob.csrf.dropFirst()
        #expect(try Self.send(server, "POST", "/api/logout", bob.cookie.merging(["X-CSRF-Token": wrong]) { $1 }).status == 403)
        #expect(try Self.send(server, "POST", "/api/logout", bob.cookie.merging(["X-CSRF-Token": bob.csrf]) { $1 }).status == 200)
        #expect(try Self.send(server, "GET", "/api/tracks", bob.cookie).status == 401, "logged out")
        #expect(try Self.send(server, "GET", "/api/tracks", bobLater.cookie).status == 200, "bob's other session goes on")
        #expect(server.stop() == 0)

        // Between runs: bob's password changes, carol is deleted; alice is untouched.
        #expect(try Self.user(["passwd", "bob"], db: db, folder: library, input: "bob-new-pw\n") == 0)
        #expect(try Self.user(["del", "carol"], db: db, folder: library) == 0)
        server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db], waitForScan: false, accounts: [])
        defer { _ = server.stop() }
        #expect(try Self.send(server, "GET", "/api/tracks", bob.cookie).status == 401, "a logout is kept across a restart")
        #expect(try Self.send(server, "GET", "/api/tracks", bobLater.cookie).status == 401, "user passwd ended bob's sessions")
        #expect(try Self.send(server, "GET", "/api/tracks", carol.cookie).status == 401, "user del ended carol's sessions")
        #expect(try Self.send(server, "GET", "/api/tracks", alice.cookie).status == 200, "alice's session is kept")
        // A password changed while the server runs ends the session at once, too.
        #expect(try Self.user(["passwd", "alice"], db: db, folder: library, input: "alice-new-pw\n") == 0)
        let deadline = Date().addingTimeInterval(TestTiming.seconds(10))
        var status = 200
        while status == 200, Date() < deadline {
            status = try Self.send(server, "GET", "/api/tracks", alice.cookie).status
            if status == 200 { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(status == 401, "passwd on a running server")
    }
}
