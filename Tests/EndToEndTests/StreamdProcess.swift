import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A running `streamd` on 127.0.0.1 with `--port 0`, stopped when the test ends.
final class StreamdProcess {
    let process = Process()
    let port: Int
    let stderrPipe = Pipe()
    private let logBox = LockedData()
    /// Signalled when the stderr reader has read to EOF (streamd and its children have exited).
    private let logDrained = DispatchSemaphore(value: 0)
    private var waitedForLog = false

    /// Everything streamd wrote to stderr so far (the access log).
    var log: String { logBox.withLock { String(decoding: $0, as: UTF8.self) } }
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The catalog database of this server (a fresh temporary one unless `--db` is passed).
    let databasePath: String
    /// Accounts made before the server starts (`streamd user add`, password on stdin): name,
    /// password, admin. The first admin's Basic credentials are used for `/api/status`.
    let accounts: [(name: String, password: String, admin: Bool)]
    /// `Authorization` for the test's own status polling, when accounts exist.
    var adminAuthorization: String? {
        accounts.first { $0.admin }.map { "Basic " + Data("\($0.name):\($0.password)".utf8).base64EncodedString() }
    }

    /// Starts streamd on FOLDER. Without `--db` in `extraArguments` it gets a new database in a
    /// temporary folder (never the user's state folder). With `waitForScan`, returns once the
    /// first background scan has finished, so the catalog lists the folder. `analyzerFault` and
    /// `decoderFault` are fault drills for the workers (`streamd analyze-worker --fault SPEC`),
    /// started through a wrapper named by `--analyze-worker` / `--decode-worker`.
    init(folder: URL, extraArguments: [String] = [], analyzerFault: String? = nil, decoderFault: String? = nil,
         waitForScan: Bool = true, accounts: [(name: String, password: String, admin: Bool)] = [],
         environment: [String: String] = [:]) throws {
        self.accounts = accounts
        let streamd = TestPaths.streamd
        process.executableURL = URL(fileURLWithPath: streamd)
        var extra = extraArguments
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-test-db-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        if let at = extra.firstIndex(of: "--db"), at + 1 < extra.count {
            databasePath = extra[at + 1]
        } else {
            databasePath = scratch.appendingPathComponent("catalog.db").path
            extra += ["--db", databasePath]
        }
        // Transcodes go to a folder of this server's own, not the user's cache (which every test
        // server would share, each trimming it to its own bound).
        if !extra.contains("--transcode-cache") {
            let folder = scratch.appendingPathComponent("transcode")
            ownTranscodeCache = folder
            extra += ["--transcode-cache", folder.path]
        }
        for account in accounts {
            try Self.addAccount(account, folder: folder, databasePath: databasePath)
        }
        if let analyzerFault {
            extra += ["--analyze-worker", try FaultDrillWorker.write(in: scratch, streamd: streamd, fault: analyzerFault)]
        }
        if let decoderFault {
            extra += ["--decode-worker", try FaultDrillWorker.write(in: scratch, streamd: streamd, fault: decoderFault)]
        }
        process.arguments = [folder.path, "--host", "127.0.0.1", "--port", "0"] + extra
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = stderrPipe
        // Drain the access log as it comes, or a full pipe would block the server. A thread doing
        // blocking reads, not `readabilityHandler`: tearing down FileHandle's dispatch read sources
        // while other tests set theirs up races in libdispatch's epoll bookkeeping on Linux and
        // crashed the test process in `_dispatch_event_loop_drain` (swift-corelibs-libdispatch #949).
        let log = self.logBox
        let pipe = stderrPipe
        let drained = logDrained
        let reader = Thread {
            // The thread holds the pipe, so its descriptor stays open until the read ends at EOF.
            let fd = pipe.fileHandleForReading.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    log.withLock { $0.append(contentsOf: buffer[0..<n]) }
                } else if n < 0, errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            drained.signal()
        }
        reader.name = "streamd-stderr"
        try process.run()
        reader.start()
        // The first stdout line names the port: "listening on http://127.0.0.1:PORT/".
        var line = Data()
        let handle = out.fileHandleForReading
        let deadline = Date().addingTimeInterval(TestTiming.seconds(30))
        while !line.contains(0x0A), Date() < deadline {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("listening on http://127.0.0.1:"),
              let portText = text.split(separator: ":").last?.split(separator: "/").first, let port = Int(portText) else {
            process.terminate()
            Thread.sleep(forTimeInterval: 0.2)
            throw TestFailure("streamd did not report its port: '\(text)'; stderr: \(String(decoding: logBox.withLock { $0 }, as: UTF8.self).suffix(2000))")
        }
        self.port = port
        if waitForScan { try self.waitForScan(atLeast: 1) }
    }

    /// `streamd user add NAME [--admin]` with the password on stdin.
    static func addAccount(_ account: (name: String, password: String, admin: Bool), folder: URL, databasePath: String) throws {
        let add = Process()
        add.executableURL = URL(fileURLWithPath: TestPaths.streamd)
        add.arguments = ["user", "add", account.name, "--folder", folder.path, "--db", databasePath] + (account.admin ? ["--admin"] : [])
        let input = Pipe(), output = Pipe()
        add.standardInput = input
        add.standardOutput = output
        add.standardError = output
        try add.run()
        input.fileHandleForWriting.write(Data((account.password + "\n").utf8))
        try input.fileHandleForWriting.close()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        add.waitUntilExit()
        guard add.terminationStatus == 0 else {
            throw TestFailure("streamd user add \(account.name): \(String(decoding: text, as: UTF8.self))")
        }
    }

    /// `/api/status` as an object.
    func status() throws -> [String: Any] {
        let response = try RawConnection(port: port).request("GET", "/api/status",
                                                              headers: adminAuthorization.map { ["Authorization": $0] } ?? [:])
        guard response.status == 200,
              let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw TestFailure("/api/status answered \(response.status)")
        }
        return object
    }

    /// Waits until `scans` in /api/status reaches `count` (full scans finished) and none is running.
    func waitForScan(atLeast count: Int, timeout: Double = 60) throws {
        let deadline = Date().addingTimeInterval(TestTiming.seconds(timeout))
        while Date() < deadline {
            let now = try status()
            if (now["scans"] as? Int ?? 0) >= count, now["scanning"] as? Bool == false { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw TestFailure("streamd's scan \(count) did not finish in \(Int(timeout)) s")
    }

    /// Sends SIGTERM and waits for exit; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        } else if !waitedForLog, process.terminationReason == .uncaughtSignal || process.terminationStatus != 0 {
            reportUnexpectedExit()
        }
        // The whole log is read once stderr reaches EOF; a child that outlives streamd holding
        // the pipe must not hang the test, so the wait is bounded.
        if !waitedForLog {
            waitedForLog = true
            _ = logDrained.wait(timeout: .now() + 5)
        }
        return process.terminationStatus
    }

    /// A server that failed before the test stopped it is what a client sees as "connection
    /// refused"; its status and the end of its stderr (a crash's backtrace) go to the test log,
    /// so such a failure names its cause instead of only the client's symptom.
    private func reportUnexpectedExit() {
        waitedForLog = true
        _ = logDrained.wait(timeout: .now() + 2)
        let how = process.terminationReason == .uncaughtSignal ? "signal" : "status"
        let tail = String(log.suffix(4000))
        FileHandle.standardError.write(Data("StreamdProcess: streamd (port \(port)) exited by itself with \(how) \(process.terminationStatus) before the test stopped it; its stderr ends:\n\(tail)\n".utf8))
    }

    /// The transcode cache made for this server alone (removed with it); nil when the test named one.
    private var ownTranscodeCache: URL?

    deinit {
        stop()
        if let ownTranscodeCache { try? FileManager.default.removeItem(at: ownTranscodeCache) }
    }
}
