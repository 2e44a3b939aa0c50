import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Paths of the built products and the generated media, for end-to-end tests.
enum TestPaths {
    /// The folder holding the test binary, which is where SwiftPM puts the executables too.
    static var binDir: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // Inside an .xctest bundle on some layouts the binary sits one level deeper.
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("streamd").path), url.path != "/" {
            url = url.deletingLastPathComponent()
        }
        return url
    }

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The generated library; tests that need it fail clearly when it is missing. Resolved, since
    /// FileManager's enumerator does not descend into a root that is a symlink (a worktree's
    /// `media/out` pointing at another checkout's media found no files at all).
    static var media: URL {
        if let dir = ProcessInfo.processInfo.environment["STREAM_MEDIA_DIR"] { return URL(fileURLWithPath: dir).resolvingSymlinksInPath() }
        return packageRoot.appendingPathComponent("media/out").resolvingSymlinksInPath()
    }

    /// ../shared/tools/pcm-compare beside the checkout, when present.
    static var pcmCompare: String? {
        let candidates = [packageRoot.appendingPathComponent("../shared/tools/pcm-compare").standardized.path,
                          "/work/shared/tools/pcm-compare"]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// A catalog database path in a new temporary folder: tests never touch the user's state folder.
    static func temporaryDatabase() -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-test-db-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent("catalog.db").path
    }

    static func mediaFiles() -> [URL] {
        guard let walker = FileManager.default.enumerator(at: media, includingPropertiesForKeys: [.isRegularFileKey]) else {
            return []
        }
        return walker.compactMap { $0 as? URL }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.path < $1.path }
    }
}

/// Wall-clock allowances of the tests (timeouts, "finished within" bounds), multiplied by
/// STREAM_TEST_TIME_SCALE when set: `make sanitize` sets it, since sanitized code runs several
/// times slower, which is not what these tests measure. Unset, every bound is as written.
enum TestTiming {
    static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["STREAM_TEST_TIME_SCALE"], let value = Double(text),
              value.isFinite else { return 1 }
        return min(100, max(1, value))
    }()

    /// `seconds` stretched by the scale.
    static func seconds(_ seconds: Double) -> Double { seconds * scale }

    /// Minutes a test may wait for one of Swift Testing's threads before it starts: the budget
    /// of the whole `make test` run, since a synchronous test can wait behind all the others.
    static let queueAllowanceMinutes = 15

    /// False under a sanitizer (`make sanitize` sets STREAM_TEST_SANITIZER): AddressSanitizer keeps
    /// up to 256 MiB of freed memory resident in its quarantine and adds shadow memory, so a
    /// process's peak RSS there says nothing about the program's own memory. Memory bounds are
    /// checked by the plain `make test` run.
    static let memoryBoundsApply: Bool = ProcessInfo.processInfo.environment["STREAM_TEST_SANITIZER"] == nil
}

/// Runs a command to completion and returns its exit status, stdout and stderr; a command still
/// running after `timeout` seconds (times `TestTiming.scale`) is terminated.
@discardableResult
func runCommand(_ executable: String, _ arguments: [String], timeout: TimeInterval = 120) throws
    -> (status: Int32, stdout: Data, stderr: Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes concurrently so a chatty child cannot block on a full pipe.
    nonisolated(unsafe) var outData = Data()
    nonisolated(unsafe) var errData = Data()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    group.enter()
    DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    if group.wait(timeout: .now() + TestTiming.seconds(timeout)) == .timedOut {
        process.terminate()
        group.wait()
    }
    process.waitUntilExit()
    return (process.terminationStatus, outData, errData)
}

/// Finds a command on the PATH.
func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

extension TimeLimitTrait.Duration {
    /// `.minutes(n)` stretched by `TestTiming.scale` (sanitizer runs).
    /// These limits are hang guards, not speed checks: a test's clock runs while it waits for one
    /// of Swift Testing's threads, which long real-time end-to-end tests (radio relays, 150 s)
    /// can hold in a full run on 2 cores (a fresh CI machine saw eleven radio tests "exceed" 2 minutes
    /// after waiting 6 for a thread). So each limit is the test's own allowance plus
    /// `TestTiming.queueAllowanceMinutes`, the whole suite's budget; the tests' own waits are bounded
    /// and are what catches a hang early.
    static func scaledMinutes(_ minutes: Int) -> Self {
        .minutes(Int((Double(minutes) * TestTiming.scale).rounded(.up)) + TestTiming.queueAllowanceMinutes)
    }
}
