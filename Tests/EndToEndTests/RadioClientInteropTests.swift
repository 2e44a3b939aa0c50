import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real icecast2 (Debian's package) on a free loopback port, from a generated config; run as
/// root (the test machine) it drops to nobody, as icecast2 requires.
final class IcecastProcess {
    private(set) var process = Process()
    let port: Int
    let dir: URL
    let password = "hackme"

    init() throws {
        let icecast = try #require(which("icecast2"), "icecast2 is installed by make deps")
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("icecast-\(getpid())-\(UUID().uuidString.prefix(8))")
        let logs = dir.appendingPathComponent("log")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        chmod(dir.path, 0o755)
        chmod(logs.path, 0o777)
        // icecast2 cannot be given port 0, so the port is picked free first; another test's server
        // may take it before icecast2 binds it (the suites run side by side). Then icecast2 exits
        // while the readiness check reaches the other server: it is icecast2 only when its own
        // status page answers, and a lost port is picked again.
        var lastPort = 0
        for _ in 0..<3 {
            lastPort = try freeLoopbackPort()
            let attempt = Process()
            process = attempt
            if try Self.start(attempt, icecast: icecast, port: lastPort, dir: dir, password: password) {
                port = lastPort
                return
            }
        }
        port = lastPort
        stop()
        throw TestFailure("icecast2 did not listen on a port of its own (last \(lastPort)): \(errorLog)")
    }

    /// Starts `process` as icecast2 on `port`; true once its status page answers there, false
    /// when it exited (the port was taken) or did not answer in 10 s (then it is stopped).
    private static func start(_ process: Process, icecast: String, port: Int, dir: URL, password: String) throws -> Bool {
        let logs = dir.appendingPathComponent("log")
        let owner = getuid() == 0 ? "<changeowner><user>nobody</user><group>nogroup</group></changeowner>" : ""
        let config = """
        <icecast>
          <limits><clients>100</clients><sources>4</sources><burst-on-connect>1</burst-on-connect><burst-size>65536</burst-size>
            <source-timeout>10</source-timeout></limits>
          <authentication><source-password>\(password)</source-password><admin-user>admin</admin-user>
            <admin-password>\(password)</admin-password></authentication>
          <hostname>127.0.0.1</hostname>
          <listen-socket><port>\(port)</port><bind-address>127.0.0.1</bind-address></listen-socket>
          <paths><basedir>/usr/share/icecast2</basedir><logdir>\(logs.path)</logdir><webroot>/usr/share/icecast2/web</webroot>
            <adminroot>/usr/share/icecast2/admin</adminroot></paths>
          <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog><loglevel>3</loglevel></logging>
          <security><chroot>0</chroot>\(owner)</security>
        </icecast>
        """
        let file = dir.appendingPathComponent("icecast-\(port).xml")
        try config.write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o644)
        process.executableURL = URL(fileURLWithPath: icecast)
        process.arguments = ["-c", file.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(TestTiming.seconds(10))
        while Date() < deadline, process.isRunning {
            if let answer = try? RawConnection(port: port).request("GET", "/status-json.xsl"),
               String(decoding: answer.body, as: UTF8.self).contains("icestats") {
                return true
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        return false
    }

    var errorLog: String { (try? String(contentsOf: dir.appendingPathComponent("log/error.log"), encoding: .utf8)) ?? "" }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: dir)
    }
}

/// An ffmpeg source looping a track in real time to an icecast:// URL (streamd or icecast2).
final class FFmpegSource {
    let process = Process()

    init(file: URL, url: String, name: String) throws {
        let ffmpeg = try #require(which("ffmpeg"))
        process.executableURL = URL(fileURLWithPath: ffmpeg)
        process.arguments = ["-nostdin", "-v", "error", "-re", "-stream_loop", "-1", "-i", file.path, "-c", "copy", "-f", "mp3",
                             "-content_type", "audio/mpeg", "-ice_name", name, url]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// SIGKILL: ffmpeg started from a test thread inherits that thread's blocked signals, SIGTERM
    /// among them, and would never see a terminate().
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}

/// streamplay and mpv as radio clients of real servers: an icecast2 mount fed by ffmpeg (titles
/// set through icecast's admin URL), and mpv's title updates from streamd.
@Suite(.ownThreads) struct RadioClientInteropTests {
    static func setTitle(port: Int, mount: String, user: String, password: String, song: String) throws -> Int {
        let auth = Data("\(user):\(password)".utf8).base64EncodedString()
        let encoded = song.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? song
        return try RawConnection(port: port).request("GET", "/admin/metadata?mount=\(mount)&mode=updinfo&song=\(encoded)",
                                                     headers: ["Authorization": "Basic \(auth)"]).status
    }

    @Test(.timeLimit(.scaledMinutes(3))) func icecast2Mount_fedByFFmpeg_playsInStreamplay_withTitles() throws {
        let icecast = try IcecastProcess()
        let file = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        let source = try FFmpegSource(file: file, url: "icecast://source:\(icecast.password)@127.0.0.1:\(icecast.port)/live.mp3",
                                      name: "Ice Test")
        defer { source.stop() }
        // The mount exists once ffmpeg is connected.
        let deadline = Date().addingTimeInterval(TestTiming.seconds(10))
        var mounted = false
        while !mounted && Date() < deadline {
            let status = try RawConnection(port: icecast.port).request("GET", "/status-json.xsl")
            mounted = String(decoding: status.body, as: UTF8.self).contains("/live.mp3")
            if !mounted { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(mounted, "ffmpeg's source did not appear: \(icecast.errorLog.suffix(2000))")
        #expect(try Self.setTitle(port: icecast.port, mount: "/live.mp3", user: "admin", password: icecast.password,
                                  song: "First Artist - First Song") == 200)
        let player = try PlayerRun(["http://127.0.0.1:\(icecast.port)/live.mp3", "--output", "null", "--realtime",
                                    "--duration", "10", "--stats", "--verbose"])
        #expect(player.waitForLine(containing: "icy: title 'First Artist - First Song'", seconds: 10) != nil, "\(player.stderr)")
        let sent = Date()
        #expect(try Self.setTitle(port: icecast.port, mount: "/live.mp3", user: "admin", password: icecast.password,
                                  song: "Ice Artist - Ice Song") == 200)
        let heard = player.waitForLine(containing: "icy: title 'Ice Artist - Ice Song'", seconds: 9)
        let (status, stats) = try player.finish(within: 40)
        #expect(status == 0, "\(player.stderr)")
        #expect(player.stderr.contains("player: live stream 'Ice Test', ICY metadata every 16000 bytes"), "\(player.stderr)")
        #expect(stats["duration_s"] is NSNull, "\(stats)")
        #expect(stats["frames_out"] as? Int == 10 * 44_100, "\(stats)")
        let titles = RadioPlayerTests.titles(stats)
        #expect(titles == ["First Artist - First Song", "Ice Artist - Ice Song"], "\(stats)")
        let delay = try #require(heard, "\(player.stderr)").timeIntervalSince(sent)
        // icecast2 puts the title where its source is; a listener hears it a burst (64 KiB, 4 s) later.
        print("radio: icecast2 /admin/metadata → streamplay title in \(Int(delay * 1000)) ms")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func mpv_getsATitleUpdate_fromStreamd_within2s() throws {
        let mpv = try #require(which("mpv"), "mpv is installed by make deps")
        try RadioSourceTests.withServer { server, file in
            let source = try PacedSource(port: server.port, mount: "/radio/live", password: RadioSourceTests.password, file: file)
            defer { source.drop() }
            #expect(source.isStreaming, "\(source.answer)")
            try RadioSourceTests.waitForSource(server, "live")
            // ffmpeg's http layer in mpv logs each ICY block as it reads it (debug level); mpv shows
            // the title ("File tags") when playback reaches it, about 0.9 s later.
            let player = try PlayerRun(executable: mpv, ["--no-config", "--ao=null", "--vo=null", "--no-video", "--term-status-msg=",
                                                         "--msg-level=all=info,ffmpeg=debug", "--length=8",
                                                         "\(server.baseURL)/radio/live"])
            #expect(player.waitForLine(containing: "AO: [null]", seconds: 10) != nil, "\(player.stderr)")
            Thread.sleep(forTimeInterval: 1)
            let sent = Date()
            #expect(try Self.setTitle(port: server.port, mount: "/radio/live", user: "source", password: RadioSourceTests.password,
                                      song: "Live Artist - Live Song") == 200)
            let received = player.waitForLine(containing: "http: Metadata update for StreamTitle: Live Artist - Live Song", seconds: 5)
            let shown = player.waitForLine(containing: "icy-title: Live Artist - Live Song", seconds: 5)
            _ = try player.finish(within: 30)
            let delay = try #require(received, "mpv read no title: \(player.stderr)").timeIntervalSince(sent)
            #expect(delay < TestTiming.seconds(2), "mpv read the title after \(delay) s")
            let display = try #require(shown, "mpv showed no title: \(player.stderr)").timeIntervalSince(sent)
            print("radio: /admin/metadata → mpv reads the title in \(Int(delay * 1000)) ms, shows it in \(Int(display * 1000)) ms")
        }
    }
}
