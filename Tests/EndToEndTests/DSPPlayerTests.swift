import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// streamplay's --rate, --pitch, --eq and --output-rate end to end, against the real streamd.
@Suite(.ownThreads) struct DSPPlayerTests {
    /// Neutral settings given explicitly: the chain is bypassed and the output is the plain
    /// decode, sample for sample (mpg123's for MP3, the file's own for WAV).
    @Test func neutralSettings_areBitExactWithThePlainDecode() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let neutral = [["--rate", "1", "--pitch", "0", "--eq", "flat", "--output-rate", "44100"],
                       ["--eq", "31:0,1k:0,hs8k:0,preamp:0", "--volume", "1"]]
        for name in ["cbr-128k-44k.mp3", "vbr-v2.mp3"] {
            let url = "\(server.baseURL)/media/\(name)"
            let reference = dir.appendingPathComponent("ref-\(name).wav").path
            try runCommand(try #require(which("mpg123")), ["-q", "-w", reference, url])
            for (i, arguments) in neutral.enumerated() {
                let ours = dir.appendingPathComponent("ours-\(i)-\(name).wav").path
                let run = try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(ours)"] + arguments)
                #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
                #expect(try wavSamples(ours) == wavSamples(reference), "\(name) \(arguments): differs from mpg123")
            }
        }
        for name in ["pcm16.wav", "float32.wav"] {
            let ours = dir.appendingPathComponent("ours-\(name)").path
            let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/\(name)", "--output", "wav:\(ours)"] + neutral[0])
            #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
            #expect(try PlayerFormatTests.dataChunk(ours) == PlayerFormatTests.dataChunk(TestPaths.media.appendingPathComponent(name).path),
                    "\(name) is bit-exact")
        }
    }

    /// Rate, pitch, EQ and resampling together on a tone: duration, pitch and rate of the file.
    @Test func rateAndPitch_onATone_throughStreamplay() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try runCommand(try #require(which("sox")), ["-n", "-r", "44100", "-c", "2", "-b", "16",
                                                    dir.appendingPathComponent("tone.wav").path, "synth", "6", "sine", "440", "gain", "-6"])
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let out = dir.appendingPathComponent("out.wav").path
        let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/tone.wav", "--output", "wav:\(out)",
                                                          "--rate", "1.5", "--pitch", "-12", "--eq", "1k:+3,preamp:-3",
                                                          "--output-rate", "48000"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let samples = try wavSamples(out)
        let frames = samples.count / 2
        #expect(abs(Double(frames) - 4 * 48_000) <= 4 * 48_000 * 0.01, "\(frames) frames: 6 s at 1.5× is 4 s")
        // Zero crossings of the left channel in the middle 2 s: 220 Hz has 440 a second.
        let left = stride(from: 2 * 48_000, to: 2 * 3 * 48_000, by: 2).map { samples[$0] }
        var crossings = 0
        for i in 1..<left.count where (left[i - 1] < 0) != (left[i] < 0) { crossings += 1 }
        let frequency = Double(crossings) / 2 / 2
        #expect(abs(frequency - 220) <= 2.2, "\(frequency) Hz")
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)).prefix(28))
        #expect(Int(header[24]) | Int(header[25]) << 8 | Int(header[26]) << 16 == 48_000)
    }

    @Test func badDSPOptions_areUsageErrors() throws {
        for arguments in [["--rate", "20"], ["--rate", "0.05"], ["--pitch", "13"], ["--eq", "loud"], ["--eq", "1k:+40"],
                          ["--output-rate", "100"]] {
            let run = try runCommand(PlayerTests.streamplay, [TestPaths.media.appendingPathComponent("pcm16.wav").path,
                                                              "--output", "null"] + arguments)
            #expect(run.status == 2, "\(arguments): exit \(run.status) (usage errors exit 2)")
            #expect(!run.stderr.isEmpty, "\(arguments): says why")
        }
    }

    /// `]` and `}` on the terminal: rate up a step, pitch up a semitone, shown on the status line.
    @Test(.timeLimit(.scaledMinutes(5))) func terminal_rateAndPitchKeys() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let command = "\(PlayerTests.streamplay) \(server.baseURL)/media/mono-48k.mp3 --output null --realtime --eq bass; echo EXIT=$?; sleep 30"
        let terminal = try TerminalSession("dsp", command: command, width: 160, scratch: dir)
        defer { terminal.stop() }
        let before = terminal.screen(within: 2, showing: "eq 31:+6")
        #expect(before.contains("rate 1×") && before.contains("pitch 0") && before.contains("eq 31:+6"), "status line: \(before)")
        terminal.send("']' ']' '}' '}' '{'")
        let after = terminal.screen(within: 0.8, showing: "pitch +1 st")
        #expect(after.contains("rate 1.25×"), "two steps up from 1×: \(after)")
        #expect(after.contains("pitch +1 st"), "up two, down one: \(after)")
        terminal.send("q")
        // q drains what is queued (up to 64 Ki samples, 1.4 s of this mono track) before exiting.
        let end = terminal.screen(within: 5, showing: "EXIT=")
        #expect(end.contains("EXIT=0"), "\(end)")
    }
}
