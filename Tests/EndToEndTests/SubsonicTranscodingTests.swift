import Foundation
import Testing
import TestSupport

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
}
