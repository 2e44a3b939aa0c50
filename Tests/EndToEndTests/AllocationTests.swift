import Foundation
import Testing
import TestSupport

/// No heap allocation per decoded frame on streamplay's decode and output path. heaptrack counts
/// every call to an allocation function while streamplay plays the library's 30-second CBR MP3
/// and then ten copies of it back to back: what starting up allocates is the same in both runs,
/// so the calls the longer run adds, divided by the MPEG frames it adds, are what the stream
/// itself costs. One allocation per frame would read 1; the read buffers of the network thread
/// (one per 64 KiB read, were they allocated) would read about 0.01.
@Suite(.ownThreads) struct AllocationTests {
    static var streamplay: String { TestPaths.binDir.appendingPathComponent("streamplay").path }

    /// A sanitizer build brings its own allocator, which heaptrack cannot interpose (`make sanitize`
    /// runs the rest of the suite; `make test` runs this one).
    static var isSanitized: Bool {
        guard let binary = FileManager.default.contents(atPath: streamplay) else { return false }
        return ["__asan_init", "__tsan_init"].contains { binary.range(of: Data($0.utf8)) != nil }
    }

    /// Calls to allocation functions in one play of `file`, and the frames it played.
    private func allocations(playing file: String, in dir: URL) throws -> (calls: Int, frames: Int) {
        let heaptrack = try #require(which("heaptrack"), "heaptrack is installed by scripts/deps.sh")
        let prefix = dir.appendingPathComponent("heap-\((file as NSString).lastPathComponent)").path
        let run = try runCommand(heaptrack, ["-o", prefix, Self.streamplay, file, "--output", "null", "--stats"])
        #expect(run.status == 0, "heaptrack streamplay \(file): \(String(decoding: run.stderr, as: UTF8.self))")
        let statsLine = String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").last { $0.hasPrefix("{") }
        let stats = try AACFormatMatrixTests.json(Data((statsLine ?? "").utf8))
        let frames = try #require(stats["frames_out"] as? Int, "--stats frames_out")
        let recorded = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            .filter { $0.hasPrefix((prefix as NSString).lastPathComponent) }
        let data = dir.appendingPathComponent(try #require(recorded.first, "heaptrack wrote no data file")).path
        let printed = try runCommand(try #require(which("heaptrack_print")), ["-f", data])
        let summary = String(decoding: printed.stdout, as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix("calls to allocation functions:") }
        let calls = try #require(summary?.split(separator: " ").dropFirst(4).first.flatMap { Int($0) },
                                 "heaptrack_print summary: \(summary ?? "none")")
        return (calls, frames)
    }

    @Test(.enabled(if: !AllocationTests.isSanitized, "sanitizers replace malloc, so heaptrack cannot count under them"))
    func mp3Playback_allocatesNothingPerFrame() throws {
        let source = TestPaths.media.appendingPathComponent("cbr-no-tag.mp3")
        let one = try Data(contentsOf: source)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("alloc-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // A CBR stream without tags: ten copies back to back are one valid stream ten times as long.
        let tenPath = dir.appendingPathComponent("ten.mp3").path
        try Data((0..<10).flatMap { _ in one }).write(to: URL(fileURLWithPath: tenPath))
        let short = try allocations(playing: source.path, in: dir)
        let long = try allocations(playing: tenPath, in: dir)
        let addedFrames = Double(long.frames - short.frames) / 1152
        #expect(addedFrames > 9_000, "the long play adds \(addedFrames) MPEG frames")
        let perFrame = Double(long.calls - short.calls) / addedFrames
        print("allocations | mp3 | \(short.calls) calls for \(short.frames / 1152) frames, \(long.calls) for \(long.frames / 1152): \(perFrame) per frame")
        #expect(perFrame < 0.01, "\(perFrame) allocations per decoded frame (\(short.calls) → \(long.calls) calls)")
    }
}
