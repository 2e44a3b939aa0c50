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
/// decoder costs that one answer. Workers are kept alive between resizes (at most one per turn,
/// `maxConcurrent`) and reused, which saves a process start and libvips' loading per cover; one
/// that crashed, timed out, answered garbage or died while idle is killed and the next resize
/// starts a new one, and each is retired after `resizesPerWorker`. Blocks its caller (the
/// blocking pool) up to the timeout, never the event loop.
final class CoverResizer: Sendable {
    let settings: CoverResizerSettings
    private let turns = ConditionLock()
    private let running = Lock(0)
    /// Workers waiting for their next picture.
    private let idle = Lock<[Worker]>([])
    /// Resizes a worker does before it is let go (a bound on what a long-lived decoder may leak).
    static let resizesPerWorker = 200

    /// A live `streamd cover-worker` and what it has sent so far.
    private final class Worker: @unchecked Sendable {
        // @unchecked: one resize uses it at a time; it is handed over through `idle`'s lock.
        let child: ChildProcess
        var output = WorkerOutput()
        var resizes = 0
        init(child: ChildProcess) { self.child = child }

        /// Kills and reaps the worker.
        func end() {
            child.kill()
            child.wait()
        }

        /// An idle worker has nothing to say: output (or its end) now means it died or misbehaved.
        var isQuiet: Bool {
            var fds = [pollfd(fd: child.output, events: Int16(POLLIN), revents: 0)]
            return poll(&fds, 1, 0) == 0
        }
    }

    deinit { for worker in idle.withLock({ $0 }) { worker.end() } }

    init(settings: CoverResizerSettings) {
        self.settings = settings
    }

    /// The thumbnail of `source`, or why there is none.
    func thumbnail(_ source: [UInt8], size: Int) throws(CoverResizeError) -> (jpeg: [UInt8], width: Int, height: Int) {
        guard source.count <= CoverWorker.maxInputBytes else { throw .refused("picture of \(source.count) bytes") }
        let deadline = monotonicNanos() + UInt64(settings.timeoutSeconds * 1e9)
        try takeTurn(until: deadline)
        defer { giveTurn() }
        var worker: Worker?
        while let kept = idle.withLock({ $0.popLast() }) {
            if kept.isQuiet { worker = kept; break }
            kept.end()
        }
        if let worker {
            do {
                return try resize(with: worker, source, size: size, deadline: deadline)
            } catch .worker where monotonicNanos() < deadline {
                // A kept worker may have died just before this picture came (its end not seen
                // yet): the picture gets one new worker before it counts as a failure.
            }
        }
        return try resize(with: try start(), source, size: size, deadline: deadline)
    }

    /// The resize by `worker`, which is kept for the next one unless it failed.
    private func resize(with worker: Worker, _ source: [UInt8], size: Int, deadline: UInt64) throws(CoverResizeError)
        -> (jpeg: [UInt8], width: Int, height: Int) {
        do {
            let answer = try run(worker, source, size: size, deadline: deadline)
            keep(worker)
            return answer
        } catch .refused(let why) {
            // A picture refused in a proper answer: the worker is fine.
            keep(worker)
            throw .refused(why)
        } catch {
            worker.end()
            throw error
        }
    }

    /// Puts `worker` back for the next resize, or lets it go once it has done its share.
    private func keep(_ worker: Worker) {
        worker.resizes += 1
        if worker.resizes >= Self.resizesPerWorker {
            worker.child.closeInput()
            worker.end()
            return
        }
        idle.withLock { $0.append(worker) }
    }

    private func start() throws(CoverResizeError) -> Worker {
        do {
            // ChildProcess.worker ignores SIGPIPE: a worker that dies leaves its stdin without a
            // reader, and the write must fail with EPIPE.
            let child = try ChildProcess.worker(executable: settings.executable, arguments: settings.arguments,
                                                overrides: settings.environment)
            _ = fcntl(child.input, F_SETFL, fcntl(child.input, F_GETFL) | O_NONBLOCK)
            return Worker(child: child)
        } catch {
            throw .worker("cannot start \(settings.executable): \(error)")
        }
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

    /// One request to `worker` and its answer; the worker's input stays open for the next.
    private func run(_ worker: Worker, _ source: [UInt8], size: Int, deadline: UInt64) throws(CoverResizeError)
        -> (jpeg: [UInt8], width: Int, height: Int) {
        let child = worker.child
        // The picture goes in while the worker's stderr is read, so neither side waits on a full pipe.
        let request = CoverWorker.request(source, size: size)
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
                throw .worker(worker.output.stderr.describeEnd(child.wait(), of: "cover worker", fd: child.errors))
            }
        }
        while true {
            do {
                if let payload = try worker.output.frames.next() {
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
            switch worker.output.wait(on: child, millis: Int32(min(250, (deadline - now) / 1_000_000 + 1))) {
            case .read: break
            case .ended:
                // The answer may have come with the end.
                if let payload = try? worker.output.frames.next(), let answer = try? CoverWorker.parseAnswer(payload) {
                    switch answer {
                    case .thumbnail(let jpeg, let width, let height): return (jpeg, width, height)
                    case .refused(let why): throw .refused(why)
                    }
                }
                throw .worker(worker.output.stderr.describeEnd(child.wait(), of: "cover worker", fd: child.errors))
            case .failed(let error): throw .worker("poll: \(error)")
            }
        }
    }
}
