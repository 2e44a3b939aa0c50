import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// OpenSubsonic's `transcoding` extension on the real streamd, run by
/// Tests/subsonic/check_transcoding.py: decisions validated against the OpenAPI schema and read
/// by py-opensonic; direct play, an MP3-only client with a 128 kbit/s cap, an Opus-first client,
/// offsets (exact, measured by opusdec), malformed bodies, and transcodeParams that are forged,
/// altered, another user's or another song's, refused.
@Suite(.ownThreads) struct SubsonicTranscodingTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("Tests/subsonic/check_transcoding.py").path

    @Test(.timeLimit(.scaledMinutes(3))) func decisionsAndStreams_againstTheSchemaAndDecoders() throws {
        let library = try TranscodeEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try TranscodeEndToEndTests.server(library)
        defer { server.stop() }
        let ids = try SubsonicStreamTests.songIDs(server)
        let tone = try #require(ids["tone.flac"], "\(ids)"), marker = try #require(ids["marker.flac"], "\(ids)")
        let python = try #require(which("python3"))
        let result = try runCommand(python, [Self.script, server.baseURL, "--tone", tone, "--marker", marker,
                                             "--tone-file", library.appendingPathComponent("music/tone.flac").path], timeout: 150)
        let output = String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self)
        print(output)
        #expect(result.status == 0, "\(output)")
        #expect(output.contains(" passed, 0 failed"), "\(output)")
    }

    /// With accounts: a token streams only for the account it was given to (another account:
    /// 400; no credentials or a wrong password: 401).
    @Test(.timeLimit(.scaledMinutes(3))) func tokens_boundToTheirAccount() throws {
        let library = try TranscodeEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let db = library.appendingPathComponent("catalog.db").path
        _ = try SubsonicClientTests.userCommand(["add", "ann"], db: db, input: "ann web password\n")
        _ = try SubsonicClientTests.userCommand(["add", "bob"], db: db, input: "bob web password\n")
        _ = try SubsonicClientTests.userCommand(["passwd", "ann", "--subsonic"], db: db, input: "ann-app\n")
        _ = try SubsonicClientTests.userCommand(["passwd", "bob", "--subsonic"], db: db, input: "bob-app\n")
        let server = try StreamdProcess(folder: library.appendingPathComponent("music"),
                                        extraArguments: ["--quiet", "--db", db, "--transcode-cache", library.appendingPathComponent("cache").path],
                                        waitForScan: false)
        defer { _ = server.stop() }
        // With accounts /api/status is an admin's: the song is looked for until the scan has found it.
        var id: String?
        let deadline = Date().addingTimeInterval(30)
        while id == nil && Date() < deadline {
            let answer = try TranscodeEndToEndTests.curl(server.baseURL + "/rest/search3?u=ann&p=ann-app&v=1.16.1&c=e2e&f=json&query=tone&songCount=5")
            let object = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
            let found = (object?["subsonic-response"] as? [String: Any])?["searchResult3"] as? [String: Any]
            id = (found?["song"] as? [[String: Any]])?.first?["id"] as? String
            if id == nil { usleep(100_000) }
        }
        let tone = try #require(id, "the scan found no tone.flac within 30 s")
        let python = try #require(which("python3"))
        let result = try runCommand(python, [Self.script, server.baseURL, "--tone", tone, "--marker", tone, "--tone-file", "-",
                                             "--accounts", "ann", "ann-app", "bob", "bob-app"], timeout: 60)
        let output = String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self)
        print(output)
        #expect(result.status == 0 && output.contains(" passed, 0 failed"), "\(output)")
    }
}
