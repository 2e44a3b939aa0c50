import Foundation
import Testing
import TestSupport

/// streamplay's own command-line parser (no ArgumentParser): the help text, both option
/// spellings, `--` and the usage errors, as a user meets them.
@Suite(.ownThreads) struct CommandLineTests {
    static var streamplay: String { TestPaths.binDir.appendingPathComponent("streamplay").path }
    static let options = ["--info", "--output <output>", "--start <start>", "--duration <duration>", "--volume <volume>",
                          "--rate <rate>", "--pitch <pitch>", "--eq <eq>", "--output-rate <output-rate>",
                          "--buffer-bytes <buffer-bytes>", "--realtime", "--stats", "--verbose", "--retry-for <retry-for>",
                          "--stall-timeout <stall-timeout>", "--max-bitrate <max-bitrate>", "--crossfade <crossfade>", "-h, --help"]

    @Test func help_listsEveryOptionWithDefaults_under80Columns() throws {
        for flag in ["--help", "-h"] {
            let run = try runCommand(Self.streamplay, ["x.mp3", flag])
            let help = String(decoding: run.stdout, as: UTF8.self)
            #expect(run.status == 0, "\(flag): exit \(run.status)")
            #expect(help.hasPrefix("OVERVIEW: Stream and play audio"), "\(flag): \(help)")
            #expect(help.contains("USAGE: streamplay [<options>] <source>"))
            for option in Self.options { #expect(help.contains("  \(option)"), "\(option) listed") }
            #expect(help.contains("(default: alsa)") && help.contains("(default: 1048576)") && help.contains("(default: 30.0)"))
            #expect(!help.contains("stretch-engine"), "the hidden option stays hidden")
            for line in help.split(separator: "\n") { #expect(line.count < 80, "wrapped: \(line)") }
        }
    }

    @Test func equalsSpelling_andNegativeValues_areAccepted() throws {
        let file = TestPaths.media.appendingPathComponent("pcm16.wav").path
        let run = try runCommand(Self.streamplay, [file, "--output=null", "--duration=0.5", "--pitch", "-2", "--stats"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        #expect(String(decoding: run.stdout, as: UTF8.self).contains("\"frames_out\""), "--stats printed")
    }

    @Test func usageErrors_exit2_sayingWhat() throws {
        let cases: [([String], String)] = [
            ([], "Missing expected argument '<source>'"),
            (["x", "--bogus"], "Unknown option '--bogus'"),
            (["x", "--output"], "Missing value for '--output <output>'"),
            (["x", "--start", "abc"], "The value 'abc' is invalid for '--start <start>'"),
            (["x", "--stats=1"], "The option '--stats' does not take any value, but '1' was specified."),
            (["x", "y", "--info"], "--info takes one URL or path"),      // several sources are a queue, not for --info
            (["x", "--volume", "3"], "--volume must be within 0...2"),
        ]
        for (arguments, message) in cases {
            let run = try runCommand(Self.streamplay, arguments)
            let stderr = String(decoding: run.stderr, as: UTF8.self)
            #expect(run.status == 2, "\(arguments): exit \(run.status)")
            #expect(stderr.hasPrefix("Error: \(message)"), "\(arguments): \(stderr)")
        }
    }

    @Test func doubleDash_endsTheOptions() throws {
        let run = try runCommand(Self.streamplay, ["--output", "null", "--", "--help"])
        #expect(run.status == 1, "'--help' after '--' is the source, a missing file: exit \(run.status)")
        #expect(String(decoding: run.stderr, as: UTF8.self).contains("--help"))
    }
}
