#if canImport(Glibc)
import Glibc
#endif
import StreamHTTP
import StreamShared

/// What a worker process (`streamd analyze-worker`, `streamd decode-worker`) does for itself:
/// the kernel should take it, not the server, when memory runs out, and its crashes (which a
/// crafted file may cause) should leave no core file behind. It answers on stdout.
package enum WorkerSide {
    package static func becomeExpendable() {
        if let adjust = fopen("/proc/self/oom_score_adj", "w") {
            fputs("1000", adjust)
            fclose(adjust)
        }
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
    }

    /// Writes all of `bytes` to stdout; false when the server has gone.
    package static func writeAll(_ bytes: [UInt8]) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(1, $0.baseAddress.map { $0 + done }, bytes.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }
}

/// A worker's requests as they come on stdin: each frame's payload once it has all arrived.
package struct WorkerRequests {
    private var frames = FrameAssembler()
    private var chunk: [UInt8]

    /// Reads stdin `chunkBytes` at a time.
    package init(chunkBytes: Int) {
        chunk = [UInt8](repeating: 0, count: chunkBytes)
    }

    /// The next request's payload; nil once stdin has ended (the server closed the pipe or went
    /// away). Throws when a frame's length is past the limit. `beforeWaiting` runs before each
    /// read that may block (a worker disarms its alarm while idle).
    package mutating func next(beforeWaiting: () -> Void = {}) throws(FormatError) -> [UInt8]? {
        while true {
            if let payload = try frames.next() { return payload }
            beforeWaiting()
            let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            frames.append(chunk[0..<n])
        }
    }
}

/// The first 4 KiB a worker wrote on stderr (the Swift runtime's "Fatal error: ..." line, then a
/// stack trace), read by the server as it waits for the worker, and how the worker's end is told.
package struct WorkerStderr {
    private(set) var head: [UInt8] = []
    /// False once the pipe has ended (or failed): it is no longer polled.
    private(set) var isOpen = true
    static let limit = 4096

    /// Reads what is there (the descriptor is non-blocking).
    mutating func drain(_ fd: Int32, using buffer: inout [UInt8]) {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n > 0 {
            head += buffer[0..<min(n, max(0, Self.limit - head.count))]
        } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
            isOpen = false
        }
    }

    /// Forgets what was read (a new request to the same worker).
    mutating func reset() { head.removeAll() }

    /// "WHO crashed (signal 4): Fatal error: ..." from how the worker ended and what it said last
    /// (the rest of its stderr is read first).
    package mutating func describeEnd(_ termination: ChildProcess.Termination, of who: String, fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<16 where isOpen { drain(fd, using: &buffer) }
        let lines = String(decoding: head, as: UTF8.self).split(whereSeparator: \.isNewline)
        // "Swift/IntegerTypes.swift:8841: Fatal error: Double value cannot be ..." → from "Fatal error".
        var said = lines.first { !$0.allSatisfy(\.isWhitespace) }
        if let line = lines.first(where: { $0.contains("Fatal error:") }), let range = line.range(of: "Fatal error:") {
            said = line[range.lowerBound...]
        }
        let how: String
        switch termination {
        case .signalled(let signal): how = "\(who) crashed (signal \(signal))"
        case .exited(let status): how = "\(who) exited with status \(status)"
        }
        return said.map { "\(how): \($0.prefix(300))" } ?? how
    }
}

/// The server's side of a worker's two output pipes: answer frames from stdout, the head of
/// stderr (read as it comes, so a chatty worker never blocks on a full pipe).
package struct WorkerOutput {
    package var frames = FrameAssembler()
    package var stderr = WorkerStderr()
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    package init() {}

    package enum Wait {
        /// Whatever came was read (possibly nothing: the wait timed out).
        case read
        /// stdout ended: the worker is exiting or dead.
        case ended
        case failed(SystemError)
    }

    /// Waits at most `millis` for either pipe of `child` and reads what came.
    package mutating func wait(on child: ChildProcess, millis: Int32) -> Wait {
        var fds = [pollfd(fd: child.output, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: child.errors, events: Int16(POLLIN), revents: 0)]
        let ready = poll(&fds, nfds_t(stderr.isOpen ? 2 : 1), millis)
        if ready < 0 && errno != EINTR { return .failed(SystemError(call: "poll", errno: errno)) }
        if stderr.isOpen, fds[1].revents != 0 { stderr.drain(child.errors, using: &buffer) }
        if fds[0].revents != 0 {
            let n = buffer.withUnsafeMutableBytes { read(child.output, $0.baseAddress, $0.count) }
            if n > 0 {
                frames.append(buffer[0..<n])
            } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
                return .ended
            }
        }
        return .read
    }
}
