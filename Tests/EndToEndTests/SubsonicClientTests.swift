import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// streamd's Subsonic API (`/rest/`) against clients this project did not write, run by
/// Tests/subsonic/check_subsonic.py: py-sonic (token and legacy auth, GET and POST), py-opensonic
/// (typed responses), every JSON answer validated against the OpenSubsonic OpenAPI description
/// (../shared/specs), and the protocol's corners. Ids survive a rescan, a restart, a rebuilt
/// database and a moved album folder.
@Suite(.ownThreads) struct SubsonicClientTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("Tests/subsonic/check_subsonic.py").path

    /// The API test library (tagged MP3s with a folder cover) plus lyrics beside one track.
    static func makeLibrary() throws -> URL {
        let library = try LibraryAPITests.makeLibrary()
        let album = library.appendingPathComponent("Ordered Artist/Ordered Album")
        try Data("[ar:Ordered Artist]\n[ti:First Xenops]\n[00:00.50]First line\n[00:01.00]Second line\n".utf8)
            .write(to: album.appendingPathComponent("c.lrc"))
        return library
    }

    static func runScript(_ arguments: [String], timeout: Double = 150) throws -> (status: Int32, output: String) {
        let python = try #require(which("python3"))
        let result = try runCommand(python, [script] + arguments, timeout: timeout)
        return (result.status, String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self))
    }

    @Test(.timeLimit(.scaledMinutes(3))) func clientsAndSchema_againstAnOpenServer() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"])
        defer { _ = server.stop() }
        setenv("SUBSONIC_OPEN", "1", 1)
        let result = try Self.runScript([server.baseURL, "--user", "anyone", "--password", "anything"])
        print(result.output)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains(" passed, 0 failed"), "\(result.output)")
    }

    static func ids(_ server: StreamdProcess, _ file: URL) throws -> [String: [String: String]] {
        let result = try runScript([server.baseURL, "--ids-out", file.path, "--ids-only"], timeout: 60)
        try #require(result.status == 0, "\(result.output)")
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: [String: String]])
    }

    @Test(.timeLimit(.scaledMinutes(3))) func ids_sameAfterRescanRestartRebuiltDatabaseAndMovedFolder() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-subsonic-ids-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let db = scratch.appendingPathComponent("catalog.db").path
        let dump = scratch.appendingPathComponent("ids.json")

        var server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db])
        let first = try Self.ids(server, dump)
        #expect((first["songs"]?.count ?? 0) >= 4, "\(first)")
        #expect(first["albums"]?["Ordered Artist|Ordered Album"] != nil, "\(first)")
        // A full rescan (SIGHUP).
        kill(server.process.processIdentifier, SIGHUP)
        try server.waitForScan(atLeast: 2)
        #expect(try Self.ids(server, dump) == first, "after a rescan")
        _ = server.stop()
        // A restart on the same database.
        server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db])
        #expect(try Self.ids(server, dump) == first, "after a restart")
        _ = server.stop()
        // The album folder moved (tags unchanged), seen by a restart's scan.
        try FileManager.default.moveItem(at: library.appendingPathComponent("Ordered Artist/Ordered Album"),
                                         to: library.appendingPathComponent("Ordered Artist/Renamed Folder"))
        server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db])
        #expect(try Self.ids(server, dump) == first, "after the album folder moved")
        _ = server.stop()
        // A new database (an upgrade that rebuilds the catalog): the same ids from the same files.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db])
        #expect(try Self.ids(server, dump) == first, "after the database was rebuilt")
        _ = server.stop()
    }

    /// `streamd user ARGS --db DB` with `input` on stdin (passwords are never taken from argv).
    static func userCommand(_ arguments: [String], db: String, input: String) throws -> String {
        let run = try runUserCommand(arguments, db: db, input: input)
        try #require(run.status == 0, "streamd user \(arguments): \(run.output) \(run.errors)")
        return run.output
    }

    /// `streamd user ARGUMENTS --db DB` with `input` on stdin: its exit status, stdout and stderr.
    static func runUserCommand(_ arguments: [String], db: String, input: String) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.streamd)
        process.arguments = ["user"] + arguments + ["--db", db]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// With accounts: token and legacy auth with the app password, apiKey, a wrong password
    /// refused (40, HTTP 200), and two users' stars, playlists and plays kept apart.
    @Test(.timeLimit(.scaledMinutes(3))) func clientsWithAccounts_andTwoUsersKeptApart() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-subsonic-users-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let db = scratch.appendingPathComponent("catalog.db").path
        _ = try Self.userCommand(["add", "ann"], db: db, input: "ann web password\n")
        _ = try Self.userCommand(["add", "bob"], db: db, input: "bob web password\n")
        _ = try Self.userCommand(["passwd", "ann", "--subsonic"], db: db, input: "ann-app\n")
        _ = try Self.userCommand(["passwd", "bob", "--subsonic"], db: db, input: "bob-app\n")
        let keyLine = try Self.userCommand(["apikey", "add", "ann", "--label", "test"], db: db, input: "")
        let key = try #require(keyLine.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }, "\(keyLine)")
        // With accounts /api/status is an admin's: the script waits for the scan through getScanStatus.
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db], waitForScan: false)
        defer { _ = server.stop() }
        unsetenv("SUBSONIC_OPEN")
        let result = try Self.runScript([server.baseURL, "--user", "ann", "--password", "ann-app", "--api-key", key,
                                         "--other-user", "bob", "--other-password", "bob-app"])
        print(result.output)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains(" passed, 0 failed"), "\(result.output)")
        #expect(result.output.contains("ok   apart: the second user sees none of them"), "\(result.output)")
        #expect(result.output.contains("ok   py-opensonic (apiKey): ping"), "\(result.output)")
    }

    /// Kept answers (search3, getAlbum, getAlbumList2: by the call without its credentials) are
    /// each user's own: two users asking the same things with new salts and tokens each call see
    /// only their own stars, ratings and play counts, before and after each change, in JSON and XML.
    @Test(.timeLimit(.scaledMinutes(3))) func keptAnswers_showEachUserOnlyTheirOwnMarks() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-subsonic-kept-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let db = scratch.appendingPathComponent("catalog.db").path
        for name in ["ann", "bob"] {
            _ = try Self.userCommand(["add", name], db: db, input: "\(name) web password\n")
            _ = try Self.userCommand(["passwd", name, "--subsonic"], db: db, input: "\(name)-app\n")
        }
        // Two salts a user, taken in turn: every call's credentials differ from the last one's.
        var tokens: [String: [(salt: String, token: String)]] = [:]
        for name in ["ann", "bob"] {
            tokens[name] = try ["k1", "k2"].map { salt in (salt, try LoopNeverBlocksTests.md5Hex("\(name)-app" + salt)) }
        }
        var calls = 0
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--db", db], waitForScan: false)
        defer { _ = server.stop() }
        func rest(_ user: String, _ call: String, _ query: String = "", format: String = "json") throws -> String {
            calls += 1
            let (salt, token) = tokens[user]![calls % 2]
            let response = try RawConnection(port: server.port).request(
                "GET", "/rest/\(call)?u=\(user)&t=\(token)&s=\(salt)&v=1.16.1&c=test-\(calls)&f=\(format)" + (query.isEmpty ? "" : "&" + query))
            #expect(response.status == 200)
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(text.contains("status\":\"ok") || text.contains("status=\"ok\""), "\(call): \(text)")
            return text
        }
        let deadline = Date().addingTimeInterval(TestTiming.seconds(60))
        func scanned() throws -> Bool {
            try rest("ann", "getScanStatus").contains("\"scanning\":false") && rest("ann", "search3", "query=xenops").contains("First Xenops")
        }
        while try !scanned() {
            guard Date() < deadline else { throw TestFailure("the scan did not finish") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let found = try #require(try JSONSerialization.jsonObject(with: Data(try rest("ann", "search3", "query=xenops").utf8)) as? [String: Any])
        let result = try #require((found["subsonic-response"] as? [String: Any])?["searchResult3"] as? [String: Any])
        let song = try #require((result["song"] as? [[String: Any]])?.first)
        let songID = try #require(song["id"] as? String), albumID = try #require(song["albumId"] as? String)
        let asked = [("search3", "query=xenops"), ("getAlbum", "id=\(albumID)"), ("getAlbumList2", "type=alphabeticalByName&size=500")]

        // Each question three times a user (the second is kept, the third answered from what was kept).
        func marks(_ user: String, format: String = "json") throws -> [String] {
            var seen: [String] = []
            for (call, query) in asked {
                let answers = try (0..<3).map { _ in try rest(user, call, query, format: format) }
                #expect(answers[1] == answers[2], "\(user) \(call): the kept answer differs from the one made")
                seen.append(answers[2])
            }
            return seen
        }
        func has(_ answers: [String], _ text: String) -> Bool { answers.contains { $0.contains(text) } }
        for user in ["ann", "bob"] {
            let answers = try marks(user)
            #expect(!has(answers, "\"starred\"") && !has(answers, "\"userRating\""), "\(user) before any mark: \(answers)")
        }
        _ = try rest("ann", "star", "id=\(songID)&albumId=\(albumID)")
        _ = try rest("bob", "setRating", "id=\(songID)&rating=4")
        var ann = try marks("ann"), bob = try marks("bob")
        #expect(ann.allSatisfy { $0.contains("\"starred\":\"") }, "ann's star in every answer: \(ann)")
        #expect(!has(ann, "\"userRating\""), "ann sees bob's rating: \(ann)")
        #expect(!has(bob, "\"starred\""), "bob sees ann's star: \(bob)")
        #expect(has(bob, "\"userRating\":4"), "bob's rating: \(bob)")
        let annXML = try marks("ann", format: "xml"), bobXML = try marks("bob", format: "xml")
        #expect(has(annXML, " starred=\"") && !has(annXML, "userRating="), "\(annXML)")
        #expect(!has(bobXML, " starred=\"") && has(bobXML, "userRating=\"4\""), "\(bobXML)")
        // A play counts for the one who played; an unstar takes the star out of ann's kept answers.
        _ = try rest("ann", "scrobble", "id=\(songID)")
        _ = try rest("ann", "unstar", "id=\(songID)&albumId=\(albumID)")
        ann = try marks("ann")
        bob = try marks("bob")
        #expect(!has(ann, "\"starred\""), "ann unstarred: \(ann)")
        #expect(has(ann, "\"playCount\":1"), "ann's play: \(ann)")
        #expect(!has(bob, "\"playCount\":1"), "bob sees ann's play: \(bob)")
    }
}
