import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// streamplay (or mpv) running in the background: its output lines, stderr and stdout, with the
/// time each arrived (for "within 2 s" checks), its stdout, its exit status.
final class PlayerRun: @unchecked Sendable {
    // @unchecked: `lines` and `out` are guarded by `lock`; the pipes' handlers append to them.
    let process = Process()
    private let lock = NSLock()
    private var lines: [(time: Date, text: String)] = []
    private var partial: [[UInt8]] = [[], []]
    private var out: [UInt8] = []
    private let finished = DispatchGroup()

    init(executable: String = PlayerTests.streamplay, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let outPipe = Pipe(), errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = FileHandle.nullDevice
        for (pipe, isError) in [(outPipe, false), (errPipe, true)] {
            finished.enter()
            let fd = pipe.fileHandleForReading.fileDescriptor
            Thread.detachNewThread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n <= 0 { break }
                    let now = Date()
                    let stream = isError ? 1 : 0
                    lock.withLock {
                        if !isError { out += buffer[0..<n] }
                        partial[stream] += buffer[0..<n]
                        while let newline = partial[stream].firstIndex(of: 0x0A) {
                            lines.append((now, String(decoding: partial[stream][..<newline], as: UTF8.self)))
                            partial[stream].removeSubrange(...newline)
                        }
                    }
                }
                finished.leave()
            }
        }
        try process.run()
    }

    /// The output lines so far (stderr and stdout, as they arrived).
    var stderrLines: [(time: Date, text: String)] { lock.withLock { lines } }
    var stderr: String { stderrLines.map(\.text).joined(separator: "\n") }

    /// When the first stderr line containing `text` arrived, waiting up to `seconds` for it.
    func waitForLine(containing text: String, seconds: Double) -> Date? {
        let deadline = Date().addingTimeInterval(TestTiming.seconds(seconds))
        while true {
            if let line = stderrLines.first(where: { $0.text.contains(text) }) { return line.time }
            if Date() > deadline || !process.isRunning { return stderrLines.first { $0.text.contains(text) }?.time }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Waits for the exit (terminating after `seconds`); returns the status and the `--stats` object.
    func finish(within seconds: Double) throws -> (status: Int32, stats: [String: Any]) {
        let deadline = Date().addingTimeInterval(TestTiming.seconds(seconds))
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        finished.wait()
        let stdout = lock.withLock { Data(out) }
        let stats = (try? PlayerTests.stats(stdout)) ?? [:]
        return (process.terminationStatus, stats)
    }
}

/// streamplay as a radio client on the real streamd: endless streams (no length, no seek),
/// ICY titles (stripped from the audio, shown, counted in --stats, updated live), SHOUTcast's
/// `ICY 200 OK`, a dropped stream joined again live, and .pls/.m3u files naming a stream.
@Suite(.ownThreads) struct RadioPlayerTests {
    static let password = "hackme"

    static func titles(_ stats: [String: Any]) -> [String] {
        (stats["titles"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func channel_playsEndlessly_withTitles_andNoSeeking() throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch"])
        defer { server.stop() }
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let wav = dir.appendingPathComponent("radio.wav").path
        // 7 s of a channel of 3-second tracks: at least two titles; --start is ignored.
        let result = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/radio/main", "--output", "wav:\(wav)", "--realtime",
                                                             "--duration", "7", "--start", "30", "--stats", "--verbose"], timeout: 60)
        let stderr = String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status == 0, "\(stderr)")
        let stats = try PlayerTests.stats(result.stdout)
        #expect(stats["duration_s"] is NSNull, "a live stream has no length: \(stats)")
        #expect(stats["frames_out"] as? Int == 7 * 44_100, "plays on to --duration: \(stats)")
        let titles = Self.titles(stats)
        #expect(titles.count >= 2, "\(stats)")
        #expect(titles.allSatisfy { ["Alpha - One", "Beta - Two"].contains($0) }, "\(titles)")
        #expect(stderr.contains("player: live stream 'main', ICY metadata every 16000 bytes: no length, no seeking"), "\(stderr)")
        #expect(stderr.contains("--start ignored: a live stream starts at its live edge"), "\(stderr)")
        #expect(stderr.contains("icy: title 'Alpha - One'") || stderr.contains("icy: title 'Beta - Two'"), "\(stderr)")
        // The metadata blocks were taken out: the output is two clean tones, no clicks from text
        // decoded as audio. Each 4096-sample block stays near one tone's level.
        let samples = try wavSamples(wav)
        let peak = samples.map { Int(abs(Int32($0))) }.max() ?? 0
        #expect(peak > 1000 && peak < 32_000, "peak \(peak)")
    }

    /// The stream itself, and a .pls naming it (a queue of one: `1/1  Title  0:03/live`).
    @Test(.timeLimit(.scaledMinutes(5)), arguments: [false, true])
    func terminal_showsLiveAndTheTitle_andTheSeekKeySaysItCannot(throughPlaylist: Bool) throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch"])
        defer { server.stop() }
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pls = dir.appendingPathComponent("station.pls")
        try "[playlist]\nNumberOfEntries=1\nFile1=\(server.baseURL)/radio/main\n".write(to: pls, atomically: true, encoding: .utf8)
        let source = throughPlaylist ? pls.path : "\(server.baseURL)/radio/main"
        let command = "\(PlayerTests.streamplay) \(source) --output null --realtime; echo EXIT=$?; sleep 30"
        let terminal = try TerminalSession("radio-\(throughPlaylist ? "pls" : "url")", command: command, width: 200, scratch: dir)
        defer { terminal.stop() }
        if throughPlaylist {
            // The status line names the URL until the first ICY title arrives.
            let playing = terminal.screen(within: 10) { $0.contains("1/1  Alpha - One") || $0.contains("1/1  Beta - Two") }
            let line = playing.split(separator: "\n").first { $0.contains("1/1  ") }.map(String.init) ?? playing
            #expect(line.hasPrefix("1/1  Alpha - One  0:") || line.hasPrefix("1/1  Beta - Two  0:"), "\(playing)")
            #expect(line.contains("/live  playing"), "\(playing)")
        } else {
            let playing = terminal.screen(within: 10, showing: "main: ")
            #expect(playing.contains(" / live  main: Alpha - One") || playing.contains(" / live  main: Beta - Two"), "\(playing)")
        }
        terminal.send("Right")
        let refused = terminal.screen(within: 3, showing: "[live stream: cannot seek]")
        #expect(refused.contains("[live stream: cannot seek]"), "\(refused)")
        terminal.send("q")
        let final = terminal.screen(within: 3, showing: "EXIT=")
        #expect(final.contains("EXIT=0"), "q quits with status 0: \(final)")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func liveSource_titleUpdate_reachesStreamplay_within2s() throws {
        try RadioSourceTests.withServer { server, file in
            let source = try PacedSource(port: server.port, mount: "/radio/live", password: Self.password, file: file)
            defer { source.drop() }
            #expect(source.isStreaming, "\(source.answer)")
            try RadioSourceTests.waitForSource(server, "live")
            let player = try PlayerRun(["\(server.baseURL)/radio/live", "--output", "null", "--realtime", "--duration", "8",
                                        "--stats", "--verbose"])
            #expect(player.waitForLine(containing: "output: opening", seconds: 10) != nil, "\(player.stderr)")
            Thread.sleep(forTimeInterval: 2)
            let auth = Data("source:\(Self.password)".utf8).base64EncodedString()
            let sent = Date()
            let update = try RawConnection(port: server.port).request(
                "GET", "/admin/metadata?mount=/radio/live&mode=updinfo&song=Live%20Artist%20-%20Live%20Song",
                headers: ["Authorization": "Basic \(auth)"])
            #expect(update.status == 200)
            let heard = player.waitForLine(containing: "icy: title 'Live Artist - Live Song'", seconds: 5)
            let (status, stats) = try player.finish(within: 30)
            #expect(status == 0, "\(player.stderr)")
            let delay = try #require(heard, "no title line: \(player.stderr)").timeIntervalSince(sent)
            #expect(delay < TestTiming.seconds(2), "the title reached streamplay after \(delay) s")
            #expect(Self.titles(stats).last == "Live Artist - Live Song", "\(stats)")
            print("radio: /admin/metadata → streamplay title in \(Int(delay * 1000)) ms")
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func droppedStream_isJoinedAgainLive_andTheGapLogged() throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let first = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch"])
        let port = first.port
        let player = try PlayerRun(["http://127.0.0.1:\(port)/radio/main", "--output", "null", "--realtime", "--duration", "12",
                                    "--stats", "--verbose"])
        #expect(player.waitForLine(containing: "output: opening", seconds: 10) != nil, "\(player.stderr)")
        Thread.sleep(forTimeInterval: 2)
        first.stop()                                   // the server drops every listener
        Thread.sleep(forTimeInterval: 0.5)
        let second = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch", "--port", "\(port)"])
        defer { second.stop() }
        #expect(second.port == port)
        let rejoined = player.waitForLine(containing: "source: rejoined the live stream:", seconds: 10)
        let (status, stats) = try player.finish(within: 40)
        #expect(rejoined != nil, "\(player.stderr)")
        #expect(status == 0, "\(player.stderr)")
        #expect(player.stderr.contains("rejoining the live stream (no Range)"), "\(player.stderr)")
        let gaps = stats["live_gaps_ms"] as? [Double] ?? []
        #expect(gaps.count == 1 && gaps[0] >= 400 && gaps[0] < TestTiming.seconds(10_000), "\(stats)")
        #expect((stats["reconnects"] as? Int ?? 0) >= 1, "\(stats)")
        #expect(stats["frames_out"] as? Int == 12 * 44_100, "played on after the drop: \(stats)")
        print("radio: streamd restarted under streamplay: \(gaps.first.map { Int($0) } ?? -1) ms without audio")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func shoutcastStatusLine_isAccepted() throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch"])
        defer { server.stop() }
        // SHOUTcast 1 answers `ICY 200 OK` and closes the connection at the end (no chunks).
        let proxy = try FaultProxy(upstreamPort: server.port, faults: [.init(shoutcast: true)])
        defer { proxy.stop() }
        let result = try runCommand(PlayerTests.streamplay, ["http://127.0.0.1:\(proxy.port)/radio/main", "--output", "null",
                                                             "--duration", "3", "--stats", "--verbose"], timeout: 60)
        let stderr = String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status == 0, "\(stderr)")
        let stats = try PlayerTests.stats(result.stdout)
        #expect(stats["frames_out"] as? Int == 3 * 44_100, "\(stats)")
        #expect(!Self.titles(stats).isEmpty, "\(stats)")
        #expect(stderr.contains("live stream 'main'"), "\(stderr)")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func plsAndM3UFiles_namingAStream_playIt() throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch"])
        defer { server.stop() }
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stream = "\(server.baseURL)/radio/main"
        let pls = dir.appendingPathComponent("station.pls")
        try "[playlist]\nNumberOfEntries=1\nFile1=\(stream)\nTitle1=Test Radio\nLength1=-1\nVersion=2\n"
            .write(to: pls, atomically: true, encoding: .utf8)
        let m3u = dir.appendingPathComponent("station.m3u")
        try "#EXTM3U\n#EXTINF:-1,Test Radio\n\(stream)\n".write(to: m3u, atomically: true, encoding: .utf8)
        for playlist in [pls, m3u] {
            let result = try runCommand(PlayerTests.streamplay, [playlist.path, "--output", "null", "--duration", "2", "--stats"],
                                        timeout: 60)
            let stderr = String(decoding: result.stderr, as: UTF8.self)
            #expect(result.status == 0, "\(playlist.lastPathComponent): \(stderr)")
            let stats = try PlayerTests.stats(result.stdout)
            let tracks = stats["tracks"] as? [[String: Any]] ?? []
            #expect(tracks.count == 1 && tracks.first?["url"] as? String == stream, "\(stats)")
            let trackStats = tracks.first?["stats"] as? [String: Any] ?? [:]
            #expect(trackStats["frames_out"] as? Int == 2 * 44_100, "\(playlist.lastPathComponent): \(stats)")
            #expect(!Self.titles(trackStats).isEmpty, "\(playlist.lastPathComponent): \(stats)")
        }
    }
}
