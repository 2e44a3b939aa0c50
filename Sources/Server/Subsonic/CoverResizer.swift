import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP
import StreamLibrary

/// How cover resizes run (`streamd serve --cover-worker`, `--cover-timeout`).
public struct CoverResizerSettings: Sendable {
    /// The program to run; `/proc/self/exe` is streamd itself.
    public var executable = "/proc/self/exe"
    public var arguments = [CoverWorker.subcommand]
    /// Time a worker has to take the picture and answer.
    public var timeoutSeconds: Double = 10
    /// Resizes at once (one worker each); more wait for a turn, within the same time.
    public var maxConcurrent = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Variables set for the workers on top of the server's environment.
    public var environment: [String: String] = [:]

    public init() {}
}

/// Resizes a cover picture to a thumbnail (JPEG, longer side `size`, aspect kept, never
/// enlarged) in a `streamd cover-worker` process, so a picture that crashes or hangs the image
/// decoder costs that one answer. Blocks its caller (the blocking pool) up to the timeout,
/// never the event loop.
final class CoverResizer: Sendable {
    let settings: CoverResizerSettings
    private let turns = ConditionLock()
    private let running = Lock(0)

    init(settings: CoverResizerSettings) {
        self.settings = settings
    }

    /// The thumbnail of `source`, or why there is none.
    func thumbnail(_ source: [UInt8], size: Int) throws(CoverResizeError) -> (jpeg: [UInt8], width: Int, height: Int) {
        guard source.count <= CoverWorker.maxInputBytes else { throw .refused("picture of \(source.count) bytes") }
        let deadline = monotonicNanos() + UInt64(settings.timeoutSeconds * 1e9)
        try takeTurn(until: deadline)
        defer { giveTurn() }
        return try run(source, size: size, deadline: deadline)
    }

    private func takeTurn(until deadline: UInt64) throws(CoverResizeError) {
        turns.lock()
        defer { turns.unlock() }
        while running.withLock({ $0 }) >= settings.maxConcurrent {
            let now = monotonicNanos()
            guard now < deadline else { throw .worker("no free worker within \(settings.timeoutSeconds) s") }
            _ = turns.wait(seconds: Double(deadline - now) / 1e9)
        }
        running.withLock { $0 += 1 }
    }

    private func giveTurn() {
        turns.withLock {
            running.withLock { $0 -= 1 }
            turns.signal()
        }
    }

    private func run(_ source: [UInt8], size: Int, deadline: UInt64) throws(CoverResizeError) -> (jpeg: [UInt8], width: Int, height: Int) {
        let child: ChildProcess
        do {
            child = try ChildProcess.worker(executable: settings.executable, arguments: settings.arguments,
                                            overrides: settings.environment)
        } catch {
            throw .worker("cannot start \(settings.executable): \(error)")
        }
        defer {
            child.kill()
            child.wait()
        }
        var output = WorkerOutput()
        // The picture goes in while the worker's stderr is read, so neither side waits on a full pipe.
        let request = CoverWorker.request(source, size: size)
        _ = fcntl(child.input, F_SETFL, fcntl(child.input, F_GETFL) | O_NONBLOCK)
        var written = 0
        while written < request.count {
            let now = monotonicNanos()
            guard now < deadline else { throw .worker("timed out taking the picture") }
            var fds = [pollfd(fd: child.input, events: Int16(POLLOUT), revents: 0)]
            _ = poll(&fds, 1, Int32(min(250, (deadline - now) / 1_000_000 + 1)))
            let n = request.withUnsafeBytes { write(child.input, $0.baseAddress.map { $0 + written }, $0.count - written) }
            if n > 0 {
                written += n
            } else if n < 0 && errno != EAGAIN && errno != EINTR {
                throw .worker(output.stderr.describeEnd(child.wait(), of: "cover worker", fd: child.errors))
            }
        }
        child.closeInput()
        while true {
            do {
                if let payload = try output.frames.next() {
                    switch try CoverWorker.parseAnswer(payload) {
                    case .thumbnail(let jpeg, let width, let height): return (jpeg, width, height)
                    case .refused(let why): throw CoverResizeError.refused(why)
                    }
                }
            } catch let error as CoverResizeError {
                throw error
            } catch {
                throw .worker("malformed answer (\(error))")
            }
            let now = monotonicNanos()
            guard now < deadline else { throw .worker("timed out after \(settings.timeoutSeconds) s") }
            switch output.wait(on: child, millis: Int32(min(250, (deadline - now) / 1_000_000 + 1))) {
            case .read: break
            case .ended:
                // The answer may have come with the end.
                if let payload = try? output.frames.next(), let answer = try? CoverWorker.parseAnswer(payload) {
                    switch answer {
                    case .thumbnail(let jpeg, let width, let height): return (jpeg, width, height)
                    case .refused(let why): throw .refused(why)
                    }
                }
                throw .worker(output.stderr.describeEnd(child.wait(), of: "cover worker", fd: child.errors))
            case .failed(let error): throw .worker("poll: \(error)")
            }
        }
    }
}
