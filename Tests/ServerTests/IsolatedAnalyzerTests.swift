import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
import StreamShared

/// Analysis in worker processes (the real `streamd analyze-worker`): same results as in
/// process, and a file that traps or hangs the analyzer costs that file only.
@Suite(.ownThreads) struct IsolatedAnalyzerTests {
    /// The streamd binary SwiftPM built beside this test bundle.
    static var streamd: String? {
        let candidate = TestPaths.streamd
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        Issue.record("no streamd binary beside the tests: build with `swift build --build-tests`")
        return nil
    }

    static var media: URL { TestPaths.media }

    static func settings(_ streamd: String, faults: String? = nil, timeout: Double = 10, workers: Int = 2) -> IsolatedAnalyzer.Settings {
        var settings = IsolatedAnalyzer.Settings()
        settings.executable = streamd
        settings.timeoutSeconds = timeout
        settings.workers = workers
        if let faults { settings.arguments += [AnalyzerWorker.faultOption, faults] }
        return settings
    }

    /// Both kinds of worker make themselves the OOM killer's first choice and leave no core
    /// file when a crafted file crashes them (read from /proc once each has said hello).
    @Test(arguments: [AnalyzerWorker.subcommand, DecodeWorker.subcommand])
    func workers_areExpendable_andDumpNoCore(subcommand: String) throws {
        let streamd = try #require(Self.streamd)
        let child = try ChildProcess(executable: streamd, arguments: [subcommand], environment: ["SWIFT_BACKTRACE=enable=no"])
        defer { child.stop() }
        var hello: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        let deadline = Date().addingTimeInterval(20)
        while hello.count < 8, Date() < deadline {
            var ready = [pollfd(fd: child.output, events: Int16(POLLIN), revents: 0)]
            guard poll(&ready, 1, 200) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(child.output, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            hello += buffer[0..<n]
        }
        #expect(hello.count >= 8, "no hello from \(subcommand)")
        let adjust = try String(contentsOfFile: "/proc/\(child.pid)/oom_score_adj", encoding: .utf8)
        #expect(adjust.trimmingCharacters(in: .whitespacesAndNewlines) == "1000")
        let limits = try String(contentsOfFile: "/proc/\(child.pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map(String.init) ?? ""
        #expect(core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"], "\(core)")
    }

    static func files(_ paths: [String]) -> [(path: String, size: Int)] {
        paths.map { ($0, (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0) }
    }

    /// A temporary folder with copies of library tracks under new names.
    static func folder(_ copies: [(from: String, to: String)]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("isolated-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for copy in copies {
            try FileManager.default.copyItem(at: media.appendingPathComponent(copy.from), to: dir.appendingPathComponent(copy.to))
        }
        return dir
    }

    @Test func libraryTracks_matchTheInProcessAnalysis() throws {
        guard let streamd = Self.streamd else { return }
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.media.path).filter { !$0.hasPrefix(".") }.sorted()
        let paths = names.map { Self.media.appendingPathComponent($0).path }
            .filter { (try? FileManager.default.attributesOfItem(atPath: $0)[.type] as? FileAttributeType) == .typeRegular }
        #expect(paths.count >= 10, "the generated library is there")
        let outcomes = IsolatedAnalyzer(settings: Self.settings(streamd)).analyze(Self.files(paths))
        #expect(outcomes.count == paths.count)
        for (path, outcome) in zip(paths, outcomes) {
            let file = try OpenFile(path: path)
            do {
                let local = try TrackAnalyzer.analyze(file)
                #expect(outcome == .analyzed(local), "\(path): tags, seek index and all")
            } catch {
                #expect(outcome == .rejected("\(error)"), "\(path)")
            }
        }
    }

    @Test(arguments: [1, 2])
    func trapAndHang_areQuarantined_theOthersStillAnalyzed(workers: Int) throws {
        guard let streamd = Self.streamd else { return }
        let dir = try Self.folder([("vbr-v2.mp3", "a.mp3"), ("vbr-v2.mp3", "trap.mp3"), ("vbr-v2.mp3", "hang.mp3"),
                                   ("adts.aac", "b.aac")])
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = IsolatedAnalyzer(settings: Self.settings(streamd, faults: "trap:trap.mp3,hang:hang.mp3", timeout: 1,
                                                                workers: workers))
        let names = ["a.mp3", "trap.mp3", "hang.mp3", "b.aac"]
        let started = Date()
        let outcomes = analyzer.analyze(Self.files(names.map { dir.appendingPathComponent($0).path }))
        let elapsed = Date().timeIntervalSince(started)
        guard outcomes.count == 4 else {
            Issue.record("\(outcomes.count) outcomes")
            return
        }
        if case .analyzed(let a) = outcomes[0] { #expect(a.codec == "mp3") } else { Issue.record("a.mp3: \(outcomes[0])") }
        if case .analyzed(let b) = outcomes[3] { #expect(b.container == .adts) } else { Issue.record("b.aac: \(outcomes[3])") }
        // A debug build's runtime says why it trapped; an optimised one traps without a message.
        #expect(outcomes[1] == .quarantined("analyzer crashed (signal 4): Fatal error: Double value cannot be converted to Int because the result would be greater than Int.max")
                || outcomes[1] == .quarantined("analyzer crashed (signal 4)"), "\(outcomes[1])")
        #expect(outcomes[2] == .quarantined("analysis timed out after 1 s"))
        #expect(elapsed < 8, "the hang cost its timeout, not more (\(elapsed) s)")
    }

    @Test func programThatIsNotAWorker_isUnavailable_notQuarantined() throws {
        var settings = IsolatedAnalyzer.Settings()
        settings.executable = "/bin/true"
        settings.arguments = []
        let silent = IsolatedAnalyzer(settings: settings).analyze(Self.files([Self.media.appendingPathComponent("vbr-v2.mp3").path]))
        guard case .unavailable(let why) = silent.first else {
            Issue.record("\(silent)")
            return
        }
        #expect(why.contains("/bin/true"), "\(why)")

        settings.executable = "/bin/cat"   // never says hello
        settings.startSeconds = 0.3
        let mute = IsolatedAnalyzer(settings: settings).analyze(Self.files(["/a.mp3", "/b.mp3", "/c.mp3"]))
        #expect(mute.count == 3)
        for outcome in mute {
            guard case .unavailable = outcome else {
                Issue.record("\(outcome)")
                continue
            }
        }

        settings.executable = "/nonexistent/streamd"
        let missing = IsolatedAnalyzer(settings: settings).analyze(Self.files(["/a.mp3"]))
        #expect(missing.first.map { if case .unavailable(let why) = $0 { why.contains("posix_spawn") } else { false } } == true,
                "\(missing)")
    }

    @Test func missingFile_isRejected_withTheSystemError() throws {
        guard let streamd = Self.streamd else { return }
        let outcomes = IsolatedAnalyzer(settings: Self.settings(streamd)).analyze([("/nonexistent/x.mp3", 0)])
        #expect(outcomes == [.rejected("open: No such file or directory")])
    }

    @Test func timeout_growsWithTheFileSize() {
        var settings = IsolatedAnalyzer.Settings()
        settings.timeoutSeconds = 10
        #expect(settings.timeout(forSize: 0) == 10)
        #expect(settings.timeout(forSize: 1 << 30) == 70, "one GiB adds a minute")
        #expect(settings.timeout(forSize: -5) == 10)
        #expect(WorkerHandle.format(10.0004) == "10" && WorkerHandle.format(2.46) == "2.5")
    }
}
