import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The ALSA output and the terminal interface.
@Suite(.serialized) struct PlayerOutputTests {
    @Test func alsa_throughTheFilePlugin_writesTheSameSamples() throws {
        let home = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let raw = home.appendingPathComponent("out.raw").path
        // The default PCM becomes ALSA's file plugin over the null device: whatever streamplay
        // writes to the "sound card" lands in out.raw.
        try Data("""
        pcm.!default {
            type file
            slave.pcm "null"
            file "\(raw)"
            format "raw"
        }
        """.utf8).write(to: home.appendingPathComponent(".asoundrc"))
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let url = "\(server.baseURL)/media/speech-22k.mp3"
        let wav = home.appendingPathComponent("ref.wav").path
        #expect(try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(wav)"]).status == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PlayerTests.streamplay)
        process.arguments = [url, "--output", "alsa"]
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home.path
        process.environment = environment
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        let samples = stride(from: 0, to: written.count - 1, by: 2).map {
            Int16(bitPattern: UInt16(written[$0]) | UInt16(written[$0 + 1]) << 8)
        }
        #expect(samples == (try wavSamples(wav)), "ALSA received exactly the WAV output's samples")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func terminal_spacePauses_qQuits() throws {
        let tmux = try #require(which("tmux"), "tmux is installed by make deps")
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let session = "streamplay-\(getpid())"
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = dir.appendingPathComponent("screen.txt").path
        // tmux's server outlives the client that starts it, so it is driven through system(3):
        // only the shell is waited for, never the server's inherited descriptors.
        func tmuxCommand(_ arguments: String) { _ = system("\(tmux) \(arguments) </dev/null >/dev/null 2>&1") }
        func screen() throws -> String {
            _ = system("\(tmux) capture-pane -p -t \(session) > \(capture) 2>/dev/null </dev/null")
            return (try? String(contentsOfFile: capture, encoding: .utf8)) ?? ""
        }
        func position(_ text: String) -> String? {
            text.split(separator: "\n").last { $0.contains(" / ") }.flatMap { line in
                line.split(separator: " ").first { $0.contains(":") }.map(String.init)
            }
        }
        let command = "\(PlayerTests.streamplay) \(server.baseURL)/media/mono-48k.mp3 --output null --realtime; echo EXIT=$?; sleep 30"
        tmuxCommand("new-session -d -s \(session) -x 120 -y 10 '\(command)'")
        defer { tmuxCommand("kill-session -t \(session)") }
        // The screen is polled, not read after fixed sleeps: a sanitized build starts and answers
        // keys several times slower (the waits stretch with STREAM_TEST_TIME_SCALE).
        func screen(within seconds: Double, showing text: String) throws -> String {
            let deadline = Date().addingTimeInterval(TestTiming.seconds(seconds))
            var shown = try screen()
            while !shown.contains(text) && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
                shown = try screen()
            }
            return shown
        }
        let playing = try screen(within: 5, showing: "playing")
        #expect(playing.contains("playing"), "status line: \(playing)")
        tmuxCommand("send-keys -t \(session) ' '")
        let paused = try screen(within: 2, showing: "paused")
        #expect(paused.contains("paused"), "\(paused)")
        Thread.sleep(forTimeInterval: 1.5)
        #expect(position(try screen()) == position(paused), "position stops while paused")
        tmuxCommand("send-keys -t \(session) q")
        let final = try screen(within: 2, showing: "EXIT=")
        #expect(final.contains("EXIT=0"), "q quits with status 0: \(final)")
    }
}
