import Foundation
import Testing
import TestSupport

/// A listed track whose full walk is rejected (its headers read well, its frames do not) on the
/// real streamd: the rejection is remembered for that version of the file, so seek index
/// requests and the indexer after every scan do not start a worker to walk it again.
@Suite(.timeLimit(.scaledMinutes(2)), .ownThreads) struct SeekIndexRejectionTests {
    typealias Isolation = AnalyzerIsolationTests

    @Test func rejectedWalk_ofAListedTrack_isNotRetried_untilTheFileChanges() throws {
        let library = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-reject-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: library) }
        // A VBR MP3 with 3 MiB of zeros after its first 32 KiB: the quick scan lists it (Xing
        // frame count, tags), the full walk loses sync for more than 1 MiB and is rejected.
        let source = Array(try Data(contentsOf: TestPaths.media.appendingPathComponent("vbr-v2.mp3")))
        let broken = library.appendingPathComponent("broken.mp3")
        try Data(source[..<32_768] + [UInt8](repeating: 0, count: 3 << 20) + source[32_768...]).write(to: broken)
        let server = try StreamdProcess(folder: library, extraArguments: ["--db", TestPaths.temporaryDatabase(),
                                                                           "--index-ahead", "1"])
        #expect(try LibraryEndToEndTests.tracks(server)["broken.mp3"] != nil, "listed by the quick scan")
        let line = ["broken.mp3: no exact seek index", "not tried again until the file changes"]
        let deadline = Date().addingTimeInterval(TestTiming.seconds(10))
        while Isolation.lines(server.log, containing: line).isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(Isolation.lines(server.log, containing: line).count == 1, "the indexer's walk was rejected: \(server.log)")
        // Asked again, and scans (inotify's) that wake the indexer: the same answer, no new walk.
        for n in 0..<3 {
            #expect(try Isolation.get(server, "/api/index/broken.mp3").status == 422)
            try Data("not audio".utf8).write(to: library.appendingPathComponent("junk-\(n).mp3"))
            try LibraryEndToEndTests.waitForStatus(server, within: 5, "junk-\(n).mp3 skipped") {
                $0["skipped_count"] as? Int == n + 1
            }
        }
        Thread.sleep(forTimeInterval: TestTiming.seconds(0.5))
        #expect(Isolation.lines(server.log, containing: line).count == 1, "walked once, not once per request or scan: \(server.log)")
        // A changed file is walked again.
        let handle = try FileHandle(forWritingTo: broken)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(source[32_768...]))
        try handle.close()
        let again = Date().addingTimeInterval(TestTiming.seconds(10))
        while Isolation.lines(server.log, containing: line).count < 2 && Date() < again { Thread.sleep(forTimeInterval: 0.05) }
        #expect(Isolation.lines(server.log, containing: line).count == 2, "the changed file was walked again: \(server.log)")
    }
}
