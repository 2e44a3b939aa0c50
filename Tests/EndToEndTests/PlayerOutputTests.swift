import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The ALSA output and the terminal interface.
@Suite(.serialized, .ownThreads) struct PlayerOutputTests {
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

    /// mutagen's 552-byte lame397v9short.mp3 holds one frame whose LAME tag trims every sample:
    /// mpg123 -w writes a WAV with its format and no frames, and so does streamplay (it used to
    /// exit 0 and write no file at all).
    @Test func trackTrimmedToNothing_stillWritesAnEmptyWAV() throws {
        let file = TestPaths.packageRoot.appendingPathComponent("../shared/corpus/realworld/corpus/mutagen__lame397v9short.mp3").standardized
        guard FileManager.default.fileExists(atPath: file.path) else { throw TestFailure("corpus missing: \(file.path)") }
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ours = dir.appendingPathComponent("ours.wav").path, reference = dir.appendingPathComponent("mpg123.wav").path
        #expect(try runCommand(PlayerTests.streamplay, [file.path, "--output", "wav:\(ours)"]).status == 0)
        #expect(try runCommand(try #require(which("mpg123")), ["-q", "-w", reference, file.path]).status == 0)
        #expect(try wavSamples(ours).isEmpty && wavSamples(reference).isEmpty)
        // The same format: rate and channel count from the fmt chunk (bytes 22-27 of both headers).
        let header = { (path: String) in Array(try Data(contentsOf: URL(fileURLWithPath: path)).dropFirst(22).prefix(6)) }
        #expect(try header(ours) == header(reference), "fmt chunk: channels and rate as mpg123 writes them")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func terminal_spacePauses_qQuits() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func position(_ text: String) -> String? {
            text.split(separator: "\n").last { $0.contains(" / ") }.flatMap { line in
                line.split(separator: " ").first { $0.contains(":") }.map(String.init)
            }
        }
        let command = "\(PlayerTests.streamplay) \(server.baseURL)/media/mono-48k.mp3 --output null --realtime; echo EXIT=$?; sleep 30"
        let terminal = try TerminalSession("pause", command: command, width: 120, scratch: dir)
        defer { terminal.stop() }
        let playing = terminal.screen(within: 5, showing: "playing")
        #expect(playing.contains("playing"), "status line: \(playing)")
        terminal.send("' '")
        let paused = terminal.screen(within: 2, showing: "paused")
        #expect(paused.contains("paused"), "\(paused)")
        Thread.sleep(forTimeInterval: 1.5)
        #expect(position(terminal.screen()) == position(paused), "position stops while paused")
        terminal.send("q")
        let final = terminal.screen(within: 2, showing: "EXIT=")
        #expect(final.contains("EXIT=0"), "q quits with status 0: \(final)")
    }
}
