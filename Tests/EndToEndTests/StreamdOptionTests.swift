import Foundation
import Testing
import TestSupport

/// streamd's option errors, as a user meets them: each bad value or combination is refused
/// before anything starts, with exit status 64 (usage) and one line saying which option and why.
@Suite(.ownThreads) struct StreamdOptionTests {
    static let cases: [([String], String)] = [
        (["--port", "70000"], "--port must be 0...65535"),
        (["--threads", "0"], "--threads must be at least 1"),
        (["--hls-cache-mb", "70000"], "--hls-cache-mb must be 0...65536"),
        (["--hls-ladder", "abc"], "--hls-ladder must be bitrates in 32...320 kbit/s separated by commas, or none"),
        (["--write-timeout", "0"], "--write-timeout must be 0.1...86400 seconds"),
        (["--head-timeout", "0"], "--head-timeout must be 0.1...86400 seconds"),
        (["--idle-timeout", "100000"], "--idle-timeout must be 0.1...86400 seconds"),
        (["--live", "bad"], "--live takes NAME=PATH with a NAME of letters, digits, '-' and '_'"),
        (["--live", "a=b", "--no-hls"], "--live needs HLS: drop --no-hls"),
        (["--channel", "x=y", "--channel", "x=z"], "--channel x given twice"),
        (["--channel", "bad"], "--channel: expected NAME=PATH, got 'bad'"),
        (["--fallback", "bad"], "--channel: --fallback takes NAME=OTHER with two different channel names, got 'bad'"),
        (["--source-password", "a", "--source-password-file", "b"], "give --source-password or --source-password-file, not both"),
        (["--source-timeout", "0"], "--source-timeout must be 0.1...86400 seconds"),
        (["--burst-kb", "5000"], "--burst-kb must be 0...4096"),
        (["--listener-lag", "4000"], "--listener-lag must be 0...3600 seconds"),
        (["--analyze-timeout", "0"], "--analyze-timeout must be 0.1...3600 seconds"),
        (["--index-ahead", "700000"], "--index-ahead must be 0...604800 seconds (a week)"),
        (["--rescan-interval", "0.1"], "--rescan-interval must be 0.5...86400 seconds"),
        (["--db", ""], "--db needs a path"),
        (["--private-channel", "a b"], "--private-channel: 'a b' is not a channel name"),
        (["--analyze-worker", ""], "--analyze-worker needs a program"),
        (["--decode-worker", ""], "--decode-worker needs a program"),
        (["--cover-worker", ""], "--cover-worker needs a program"),
        (["--cover-timeout", "0"], "--cover-timeout must be between 0.1 and 3600 seconds"),
        (["--waveform-timeout", "0"], "--waveform-timeout must be 0.1...3600 seconds"),
        (["--decode-timeout", "0"], "--decode-timeout must be 0.1...3600 seconds"),
        (["--scan-chunk", "0"], "--scan-chunk must be 1...1000000"),
        (["--max-watches", "0"], "--max-watches must be at least 1"),
        (["--quiet", "--verbose"], "--quiet and --verbose exclude each other"),
        (["--transcode-cache-mb", "2000000"], "--transcode-cache-mb must be 0...1048576"),
        (["--transcode-jobs", "0"], "--transcode-jobs must be 1...1024"),
        (["--transcode-cache", ""], "--transcode-cache needs a folder"),
        (["--listener-lag", "nan"], "--listener-lag must be 0...3600 seconds"),
        (["--port", "abc"], "The value 'abc' is invalid for '--port <port>'"),
    ]

    @Test func badOptions_exit64_sayingWhich() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-options-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (arguments, message) in Self.cases {
            // --port 0 first: a case that wrongly passed would serve on a free port, not a taken one.
            let run = try runCommand(TestPaths.streamd, [folder.path, "--port", "0"] + arguments, timeout: 30)
            let stderr = String(decoding: run.stderr, as: UTF8.self)
            #expect(run.status == 64, "\(arguments): exit \(run.status)")
            #expect(stderr.hasPrefix("Error: \(message)\n"), "\(arguments): \(stderr)")
        }
    }
}
