import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// streamplay on a streamd server's root URL: the whole library, `--album NAME` and
/// `--search QUERY` through streamd's API; and the queue's n/p keys on a terminal.
@Suite(.ownThreads) struct LibraryQueueTests {
    /// Three 6-second tracks of one format: "First Album" (two tracks, numbered 2 and 1, so the
    /// album's order differs from the path order) and "Second Album".
    static func makeLibrary() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-queue-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let ffmpeg = try #require(which("ffmpeg"))
        for (name, title, album, track, frequency) in [("a.mp3", "Alpha", "First Album", 2, 440), ("b.mp3", "Beta", "First Album", 1, 550),
                                                       ("c.mp3", "Gamma Ray", "Second Album", 1, 660)] {
            let result = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(frequency):duration=6",
                                                 "-ac", "2", "-ar", "44100", "-c:a", "libmp3lame", "-b:a", "128k",
                                                 "-metadata", "artist=Queue Band", "-metadata", "title=\(title)",
                                                 "-metadata", "album=\(album)", "-metadata", "track=\(track)",
                                                 dir.appendingPathComponent(name).path])
            guard result.status == 0 else { throw TestFailure("ffmpeg could not make \(name)") }
        }
        return dir
    }

    static func withServer<T>(_ body: (StreamdProcess) throws -> T) throws -> T {
        let library = try makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"])
        defer { server.stop() }
        return try body(server)
    }

    /// The URLs of the tracks a queue played, in order, and the exit status and stderr.
    static func play(_ arguments: [String]) throws -> (status: Int32, urls: [String], stderr: String) {
        let result = try runCommand(PlayerTests.streamplay, arguments + ["--output", "null", "--stats"], timeout: 60)
        let stderr = String(decoding: result.stderr, as: UTF8.self)
        guard result.status == 0 else { return (result.status, [], stderr) }
        let stats = try PlayerTests.stats(result.stdout)
        let tracks = stats["tracks"] as? [[String: Any]] ?? []
        return (result.status, tracks.filter { $0["status"] as? String == "played" }.compactMap { $0["url"] as? String }, stderr)
    }

    @Test(.timeLimit(.scaledMinutes(3))) func serverRoot_playsTheWholeLibrary_inPathOrder() throws {
        try Self.withServer { server in
            for root in [server.baseURL + "/", server.baseURL] {
                let played = try Self.play([root])
                #expect(played.status == 0, "\(played.stderr)")
                #expect(played.urls == ["a", "b", "c"].map { "\(server.baseURL)/media/\($0).mp3" }, "\(root): \(played.urls)")
            }
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func album_playsThatAlbum_inTrackOrder() throws {
        try Self.withServer { server in
            let played = try Self.play([server.baseURL + "/", "--album", "first album"])
            #expect(played.status == 0, "\(played.stderr)")
            #expect(played.urls == ["b", "a"].map { "\(server.baseURL)/media/\($0).mp3" }, "\(played.urls)")
            // A part of one album's title is enough; a part of two names them.
            let second = try Self.play([server.baseURL + "/", "--album", "Second"])
            #expect(second.urls == ["\(server.baseURL)/media/c.mp3"], "\(second.stderr)")
            let both = try Self.play([server.baseURL + "/", "--album", "Album"])
            #expect(both.status == 1 && both.stderr.contains("2 albums match 'Album' ('First Album', 'Second Album'); name one"),
                    "\(both.stderr)")
            let none = try Self.play([server.baseURL + "/", "--album", "Third"])
            #expect(none.status == 1 && none.stderr.contains("no album named 'Third'"), "\(none.stderr)")
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func search_playsWhatTheServerFinds() throws {
        try Self.withServer { server in
            let played = try Self.play([server.baseURL + "/", "--search", "gamma r"])
            #expect(played.status == 0, "\(played.stderr)")
            #expect(played.urls == ["\(server.baseURL)/media/c.mp3"], "\(played.urls)")
            let band = try Self.play([server.baseURL, "--search", "Queue Band"])
            #expect(Set(band.urls) == Set(["a", "b", "c"].map { "\(server.baseURL)/media/\($0).mp3" }), "\(band.stderr)")
            let none = try Self.play([server.baseURL + "/", "--search", "zzz"])
            #expect(none.status == 1 && none.stderr.contains("nothing found for 'zzz'"), "\(none.stderr)")
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func rootOfAnotherServer_isSaidToBeNoStreamd() throws {
        try Self.withServer { server in
            // A server without streamd's playlists (the proxy answers 404 for them).
            let proxy = try FaultProxy(upstreamPort: server.port, faults: [], refusingPathsStartingWith: "/playlist")
            defer { proxy.stop() }
            let played = try Self.play(["http://127.0.0.1:\(proxy.port)/"])
            #expect(played.status == 1, "\(played.stderr)")
            #expect(played.stderr.contains("not a streamd server"), "\(played.stderr)")
            let usage = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/a.mp3", "--album", "x"])
            #expect(usage.status == 2, "--album needs a server's root")
        }
    }

    @Test(.timeLimit(.scaledMinutes(5))) func terminal_nAndP_moveThroughTheQueue() throws {
        try Self.withServer { server in
            let dir = try PlayerTests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            // Each track loops (--loop track), so the queue stays where the keys put it.
            let command = "\(PlayerTests.streamplay) \(server.baseURL)/ --loop track --output null --realtime; echo EXIT=$?; sleep 30"
            let terminal = try TerminalSession("queue", command: command, width: 160, scratch: dir)
            defer { terminal.stop() }
            func screen() -> String { terminal.screen() }
            func statusLine(_ shown: String) -> String { shown.split(separator: "\n").last { $0.contains("/3  ") }.map(String.init) ?? "" }
            func waitFor(_ text: String, seconds: Double, or other: String? = nil) -> String {
                statusLine(terminal.screen(within: seconds) { shown in
                    let line = statusLine(shown)
                    return line.contains(text) || (other.map(line.contains) ?? false)
                })
            }
            let first = waitFor("1/3  Queue Band - Alpha", seconds: 10)
            #expect(first.contains("1/3  Queue Band - Alpha"), "\(screen())")
            terminal.send("n")
            #expect(waitFor("2/3  Queue Band - Beta", seconds: 5).contains("2/3  Queue Band - Beta"), "n: \(screen())")
            terminal.send("n")
            #expect(waitFor("3/3  Queue Band - Gamma Ray", seconds: 5).contains("3/3"), "n: \(screen())")
            terminal.send("p")
            #expect(waitFor("2/3  Queue Band - Beta", seconds: 5).contains("2/3"), "p within 3 s goes back: \(screen())")
            // More than 3 s into the track (it loops, the position keeps growing), p restarts it.
            Thread.sleep(forTimeInterval: 3.5)
            terminal.send("p")
            let restarted = waitFor("2/3  Queue Band - Beta  0:00", seconds: 5, or: "2/3  Queue Band - Beta  0:01")
            #expect(restarted.contains("2/3  Queue Band - Beta  0:00") || restarted.contains("2/3  Queue Band - Beta  0:01"),
                    "p after 3 s restarts: \(screen())")
            terminal.send("q")
            let final = terminal.screen(within: 5, showing: "EXIT=")
            #expect(final.contains("EXIT=0"), "q quits with status 0: \(final)")
        }
    }
}
