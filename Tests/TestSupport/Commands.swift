import Foundation
import Glibc

/// A test's own failure with a message (setup that did not work, an answer that made no sense).
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Bytes shared between a pipe's reader thread and the test.
public final class LockedData: @unchecked Sendable {
    // @unchecked: every access goes through the lock.
    private let lock = NSLock()
    private var data = Data()

    public init() {}

    /// Runs `body` on the bytes with the lock held.
    public func withLock<T>(_ body: (inout Data) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&data)
    }
}

/// Runs a command to completion and returns its exit status, stdout and stderr; a command still
/// running after `timeout` seconds (times `TestTiming.scale`) is terminated.
@discardableResult
public func runCommand(_ executable: String, _ arguments: [String], timeout: TimeInterval = 120) throws
    -> (status: Int32, stdout: Data, stderr: Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes concurrently so a chatty child cannot block on a full pipe.
    let outData = LockedData(), errData = LockedData()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        let bytes = out.fileHandleForReading.readDataToEndOfFile()
        outData.withLock { $0 = bytes }
        group.leave()
    }
    group.enter()
    DispatchQueue.global().async {
        let bytes = err.fileHandleForReading.readDataToEndOfFile()
        errData.withLock { $0 = bytes }
        group.leave()
    }
    if group.wait(timeout: .now() + TestTiming.seconds(timeout)) == .timedOut {
        process.terminate()
        // A hung player may not die of SIGTERM (gst-launch stuck in a stalled pipeline did not,
        // and held a full suite for 14 minutes): it gets 5 s, then SIGKILL.
        if group.wait(timeout: .now() + 5) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            group.wait()
        }
    }
    process.waitUntilExit()
    return (process.terminationStatus, outData.withLock { $0 }, errData.withLock { $0 })
}

/// Finds a command on the PATH.
public func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// A worker program for fault drills: a shell script that runs `streamd WORKER-SUBCOMMAND
/// --fault SPEC`, for streamd's hidden `--analyze-worker` / `--decode-worker` options (or a
/// worker pool's `Settings.executable`). streamd starts it with the worker subcommand as its
/// argument; `exec` keeps the worker's process id, so a trap or a kill reaches the worker itself.
public enum FaultDrillWorker {
    /// Writes the script into `folder` (created when missing) and returns its path.
    public static func write(in folder: URL, streamd: String, fault: String) throws -> String {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let script = folder.appendingPathComponent("fault-drill-worker-\(UUID().uuidString.prefix(8)).sh")
        let text = "#!/bin/sh\nexec \(shellQuoted(streamd)) \"$@\" --fault \(shellQuoted(fault))\n"
        try Data(text.utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        return script.path
    }

    /// `text` in single quotes for /bin/sh.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
