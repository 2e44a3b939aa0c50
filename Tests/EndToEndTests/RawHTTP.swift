import Foundation
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

    /// Starts streamd on FOLDER. Without `--db` in `extraArguments` it gets a new database in a
    /// temporary folder (never the user's state folder). With `waitForScan`, returns once the
    /// first background scan has finished, so the catalog lists the folder.
    init(folder: URL, extraArguments: [String] = [], environment: [String: String] = [:], waitForScan: Bool = true) throws {
        let streamd = TestPaths.binDir.appendingPathComponent("streamd").path
        process.executableURL = URL(fileURLWithPath: streamd)
        var extra = extraArguments
        if let at = extra.firstIndex(of: "--db"), at + 1 < extra.count {
            databasePath = extra[at + 1]
        } else {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-test-db-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            databasePath = dir.appendingPathComponent("catalog.db").path
            extra += ["--db", databasePath]
        }
        process.arguments = [folder.path, "--host", "127.0.0.1", "--port", "0"] + extra
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
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

    /// `/api/status` as an object.
    func status() throws -> [String: Any] {
        let response = try RawConnection(port: port).request("GET", "/api/status")
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
        }
        // The whole log is read once stderr reaches EOF; a child that outlives streamd holding
        // the pipe must not hang the test, so the wait is bounded.
        if !waitedForLog {
            waitedForLog = true
            _ = logDrained.wait(timeout: .now() + 5)
        }
        return process.terminationStatus
    }

    deinit { stop() }
}

/// Bytes shared between a pipe's reader thread and the test.
final class LockedData: @unchecked Sendable {
    // @unchecked: every access goes through the lock.
    private let lock = NSLock()
    private var data = Data()

    func withLock<T>(_ body: (inout Data) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&data)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One HTTP response as received on the wire.
struct RawResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    /// The body as sent (chunk framing included), for checking the framing itself.
    var rawBody: [UInt8]
    /// The status line as sent ("HTTP/1.1 200 OK").
    var statusLine = ""

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// A blocking loopback HTTP/1.1 client over a plain socket, for tests that need to see or
/// send exactly what goes over the wire (chunk framing, hostile requests, pipelining).
final class RawConnection {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeout: Double = 10) throws {
        fd = try connectLoopback(port: port) { fd in
            var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send failed: errno \(errno)") }
            sent += n
        }
    }

    /// Reads more bytes; false at EOF or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }

    /// True when the server has closed the connection (EOF) within the timeout.
    func isClosedByPeer() -> Bool {
        if !buffer.isEmpty { return false }
        var chunk = [UInt8](repeating: 0, count: 1)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 1, 0) }
        if n > 0 { buffer += chunk[0..<1] }
        return n == 0
    }

    private func readLine() throws -> String {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = buffer[..<nl]
                buffer.removeFirst(nl + 1)
                return String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
            }
            guard fill() else { throw TestFailure("connection ended while reading a line") }
        }
    }

    private func readExactly(_ n: Int) throws -> [UInt8] {
        while buffer.count < n {
            guard fill() else { throw TestFailure("connection ended after \(buffer.count) of \(n) bytes") }
        }
        let out = Array(buffer[..<n])
        buffer.removeFirst(n)
        return out
    }

    /// Reads one response; `head` says no body follows (HEAD request, 304).
    func readResponse(head: Bool = false) throws -> RawResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw TestFailure("bad status line '\(statusLine)'") }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw TestFailure("bad header '\(line)'") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = RawResponse(status: status, headers: headers, body: [], rawBody: [], statusLine: statusLine)
        if head || status == 304 || status == 204 { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine()
                response.rawBody += Array((sizeLine + "\r\n").utf8)
                guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else {
                    throw TestFailure("bad chunk size '\(sizeLine)'")
                }
                if size == 0 {
                    let trailer = try readLine()
                    response.rawBody += Array((trailer + "\r\n").utf8)
                    break
                }
                let data = try readExactly(size)
                response.body += data
                response.rawBody += data
                let crlf = try readExactly(2)
                response.rawBody += crlf
                guard crlf == [0x0D, 0x0A] else { throw TestFailure("chunk not followed by CRLF") }
            }
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try readExactly(length)
            response.rawBody = response.body
        } else {
            while fill() {}
            response.body = buffer
            response.rawBody = buffer
            buffer.removeAll()
        }
        return response
    }

    /// Sends a GET (or another method) and reads the response.
    func request(_ method: String = "GET", _ target: String, headers: [String: String] = [:]) throws -> RawResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        try send(text + "\r\n")
        return try readResponse(head: method == "HEAD")
    }
}
