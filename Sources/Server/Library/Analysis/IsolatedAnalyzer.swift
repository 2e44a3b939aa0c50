#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StreamShared
import StreamHTTP

/// Runs `TrackAnalyzer` on files in worker processes (`streamd analyze-worker`), several at
/// once, each file under a time bound. A worker that dies or overruns costs the file it was
/// working on, which is reported as quarantined; the server itself never runs the analyzer.
public final class IsolatedAnalyzer: Sendable {
    /// Workers kept between calls inside `keepingWorkers`.
    private let idle = IdleWorkers()

    /// How workers are started and bounded.
    public struct Settings: Sendable {
        /// The program to run; `/proc/self/exe` is streamd itself.
        public var executable = "/proc/self/exe"
        public var arguments = [AnalyzerProtocol.workerSubcommand]
        /// Workers run in parallel (one per core by default).
        public var workers = max(1, min(8, ProcessInfo.processInfo.activeProcessorCount))
        /// Time one file may take (`--analyze-timeout`), plus `secondsPerGiB` for its size.
        public var timeoutSeconds: Double = 10
        /// Extra time per GiB of file, so a long track on a slow disk is not mistaken for a hang.
        public var secondsPerGiB: Double = 60
        /// Time a new worker has to say hello.
        public var startSeconds: Double = 10
        /// Variables set for the workers on top of the server's environment.
        public var environment: [String: String] = [:]

        public init() {}

        /// The time bound for a file of `size` bytes.
        public func timeout(forSize size: Int) -> Double {
            timeoutSeconds + Double(max(0, size)) / Double(1 << 30) * secondsPerGiB
        }
    }

    /// What became of one file.
    public enum Outcome: Sendable, Equatable {
        case analyzed(TrackAnalysis)
        /// The analyzer said no (not audio, unsupported, malformed): an ordinary skip.
        case rejected(String)
        /// The worker crashed or overran on this file: skipped until the file changes.
        case quarantined(String)
        /// No worker could be started; the file should be tried again at the next scan.
        case unavailable(String)
    }

    public let settings: Settings

    public init(settings: Settings = Settings()) {
        self.settings = settings
        // A worker that dies leaves a pipe without a reader: writing to it must fail with EPIPE,
        // not kill the server (streamd ignores SIGPIPE anyway; `streamd package` needs this).
        signal(SIGPIPE, SIG_IGN)
    }

    /// How much of each file is read.
    public enum Mode: Sendable {
        /// Every frame: exact duration and seek index (`TrackAnalyzer.analyze`).
        case full
        /// Headers and tags only (`TrackAnalyzer.describe`), for the catalog's scan.
        case quick
    }

    /// Runs `body` with the workers its calls start kept for the next call (a scan's chunks),
    /// then stops them; outside such a scope workers live for one call.
    public func keepingWorkers<T>(_ body: () throws -> T) rethrows -> T {
        idle.open()
        defer { for worker in idle.close() { worker.stop() } }
        return try body()
    }

    /// Analyzes `files` (absolute path and size) on up to `settings.workers` workers; the
    /// outcomes come back in the same order. Workers live for this call only (or for the
    /// `keepingWorkers` scope). `batch` requests
    /// go down a worker's pipe at once (answers still come one file at a time, so a worker that
    /// dies names its file; the rest of its batch goes to a fresh worker).
    public func analyze(_ files: [(path: String, size: Int)], mode: Mode = .full, batch: Int = 1) -> [Outcome] {
        guard !files.isEmpty else { return [] }
        let queue = WorkQueue(files)
        let threads = min(settings.workers, files.count)
        let wire: AnalyzerProtocol.Mode = mode == .quick ? .quick : .full
        let batch = max(1, min(256, batch))
        if threads == 1 {
            drain(queue, mode: wire, batch: batch)
        } else {
            // Threads that cannot start leave their share to the others (this thread at least).
            let started = (0..<threads).compactMap { i in
                try? NativeThread(name: "analyzer-\(i)") { [self] in drain(queue, mode: wire, batch: batch) }
            }
            if started.isEmpty { drain(queue, mode: wire, batch: batch) }
            for thread in started { thread.join() }
        }
        return queue.outcomes()
    }

    /// One worker's share: takes batches from the queue until it is empty.
    private func drain(_ queue: WorkQueue, mode: AnalyzerProtocol.Mode, batch: Int) {
        var worker: WorkerHandle?
        var unavailable: String?
        var carried: [(Int, (path: String, size: Int))] = []
        while true {
            let items = carried.isEmpty ? queue.take(batch) : carried
            carried = []
            if items.isEmpty { break }
            if let unavailable {
                for (index, _) in items { queue.put(index, .unavailable(unavailable)) }
                continue
            }
            if worker == nil {
                do {
                    worker = try idle.take() ?? WorkerHandle(settings: settings)
                } catch {
                    let why = "analyzer worker unavailable: \(error)"
                    unavailable = why
                    for (index, _) in items { queue.put(index, .unavailable(why)) }
                    continue
                }
            }
            guard let current = worker else { continue }
            let outcomes = current.analyze(items.map(\.1), mode: mode, timeout: settings.timeout(forSize:))
            for (k, item) in items.enumerated() {
                if k < outcomes.count { queue.put(item.0, outcomes[k]) } else { carried.append(item) }
            }
            if current.isFinished { worker = nil }
        }
        if let worker, !idle.keep(worker) { worker.stop() }
    }
}

/// Idle workers between the calls of a `keepingWorkers` scope (scopes may nest or overlap:
/// the workers stop when the last one closes).
private final class IdleWorkers: @unchecked Sendable {
    // @unchecked: every access goes through `lock`; a worker taken out is used by one thread.
    private let lock = Lock(())
    private var scopes = 0
    private var workers: [WorkerHandle] = []

    func open() { lock.withLock { _ in scopes += 1 } }

    /// Ends a scope; the workers to stop when it was the last.
    func close() -> [WorkerHandle] {
        lock.withLock { _ in
            scopes -= 1
            guard scopes == 0 else { return [] }
            defer { workers = [] }
            return workers
        }
    }

    func take() -> WorkerHandle? { lock.withLock { _ in workers.popLast() } }

    /// Keeps a live worker while a scope is open; false when it is not kept.
    func keep(_ worker: WorkerHandle) -> Bool {
        lock.withLock { _ in
            guard scopes > 0, !worker.isFinished else { return false }
            workers.append(worker)
            return true
        }
    }
}

/// Files to analyze and their outcomes, shared by the worker threads.
private final class WorkQueue: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = Lock(())
    private let files: [(path: String, size: Int)]
    private var nextIndex = 0
    private var results: [IsolatedAnalyzer.Outcome?]

    init(_ files: [(path: String, size: Int)]) {
        self.files = files
        results = Array(repeating: nil, count: files.count)
    }

    /// Up to `count` files not yet handed out, with their indexes.
    func take(_ count: Int) -> [(Int, (path: String, size: Int))] {
        lock.withLock { _ in
            let end = min(files.count, nextIndex + count)
            defer { nextIndex = end }
            return (nextIndex..<end).map { ($0, files[$0]) }
        }
    }

    func put(_ index: Int, _ outcome: IsolatedAnalyzer.Outcome) {
        lock.withLock { _ in results[index] = outcome }
    }

    func outcomes() -> [IsolatedAnalyzer.Outcome] {
        lock.withLock { _ in results.map { $0 ?? .unavailable("not analyzed") } }
    }
}

/// Why a worker could not be used.
struct WorkerError: Error, CustomStringConvertible {
    var description: String
}

/// One running worker process and the conversation with it.
package final class WorkerHandle {
    private let child: ChildProcess
    /// Answers from the worker, and what it wrote on stderr during the current request.
    private var output = WorkerOutput()
    /// Set once the worker has ended or been killed: the owner starts another.
    private(set) var isFinished = false

    /// Starts a worker and waits for its hello.
    init(settings: IsolatedAnalyzer.Settings) throws {
        child = try ChildProcess.worker(executable: settings.executable, arguments: settings.arguments,
                                        overrides: settings.environment)
        switch receive(deadline: monotonicNanos() + UInt64(settings.startSeconds * 1e9)) {
        case .frame(let payload) where payload == AnalyzerProtocol.hello:
            return
        case .frame:
            finish()
            throw WorkerError(description: "\(settings.executable) is not a streamd analyzer (wrong hello)")
        case .failed(let why):
            throw WorkerError(description: "\(settings.executable) \(settings.arguments.joined(separator: " ")): \(why)")
        }
    }

    /// Sends one file and waits for its answer, at most `timeout` seconds.
    func analyze(_ path: String, timeout: Double) -> IsolatedAnalyzer.Outcome {
        analyze([(path, 0)], mode: .full, timeout: { _ in timeout }).first ?? .unavailable("not analyzed")
    }

    /// Sends every request of `files` at once, then takes the answers in order, each within
    /// `timeout(size)` seconds of the previous one. Returns at least one outcome: when the worker
    /// dies, the file it was on is quarantined and the outcomes stop there (the caller hands the
    /// rest to another worker).
    func analyze(_ files: [(path: String, size: Int)], mode: AnalyzerProtocol.Mode,
                 timeout: (Int) -> Double) -> [IsolatedAnalyzer.Outcome] {
        let millis = files.map { Int(min(timeout($0.size), 86_400) * 1000) }
        var requests: [UInt8] = []
        for (file, limit) in zip(files, millis) {
            requests += AnalyzerProtocol.request(path: file.path, timeoutMillis: limit, mode: mode)
        }
        guard send(requests) else {
            // The worker was gone before it saw these files: not their fault.
            finish()
            return [.unavailable("analyzer worker ended before the request (\(child.termination?.description ?? "unknown"))")]
        }
        var outcomes: [IsolatedAnalyzer.Outcome] = []
        // Cleared once per batch, not per answer: a trapping file's "Fatal error" line may be
        // read while the answer before it is awaited, and must still name its cause.
        output.stderr.reset()
        for limit in millis {
            switch receive(deadline: monotonicNanos() + UInt64(limit) * 1_000_000) {
            case .frame(let payload):
                do {
                    switch try AnalyzerProtocol.parseAnswer(payload) {
                    case .analysis(let analysis): outcomes.append(.analyzed(analysis))
                    case .failure(let message): outcomes.append(.rejected(message))
                    }
                } catch {
                    finish()
                    outcomes.append(.quarantined("analyzer sent a malformed answer (\(error))"))
                    return outcomes
                }
            case .failed(let why):
                // A worker the shutdown killed says nothing about its file: tried again next run.
                outcomes.append(ChildProcess.isShuttingDown ? .unavailable(why) : .quarantined(why))
                return outcomes
            }
        }
        return outcomes
    }

    /// Ends a healthy worker (end of input, then a kill after a grace period).
    package func stop() {
        guard !isFinished else { return }
        isFinished = true
        child.stop()
    }

    private enum Received {
        case frame([UInt8])
        /// The worker died, overran or spoke nonsense; it has been killed and reaped.
        case failed(String)
    }

    /// Waits for the next frame from the worker, reading its stderr meanwhile.
    private func receive(deadline: UInt64) -> Received {
        let started = monotonicNanos()
        var stdoutOpen = true
        while true {
            do {
                if let payload = try output.frames.next() { return .frame(payload) }
            } catch {
                finish()
                return .failed("analyzer sent a malformed frame (\(error))")
            }
            if !stdoutOpen {
                // End of output: the worker is dying; reap it and say how it ended.
                return .failed(crashDescription(child.wait()))
            }
            let now = monotonicNanos()
            guard now < deadline else {
                finish()
                let seconds = Double(deadline - started) / 1e9
                return .failed("analysis timed out after \(Self.format(seconds)) s")
            }
            switch output.wait(on: child, millis: Int32(min(1_000, (deadline - now) / 1_000_000 + 1))) {
            case .read: break
            case .ended: stdoutOpen = false
            case .failed(let error):
                finish()
                return .failed("poll: \(error)")
            }
        }
    }

    /// "analyzer crashed (signal 4): Fatal error: ..." from how the worker ended and what it said last.
    private func crashDescription(_ termination: ChildProcess.Termination) -> String {
        isFinished = true
        return output.stderr.describeEnd(termination, of: "analyzer", fd: child.errors)
    }

    private func send(_ bytes: [UInt8]) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(child.input, $0.baseAddress.map { $0 + done }, bytes.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    /// Kills and reaps the worker.
    private func finish() {
        isFinished = true
        child.kill()
        child.wait()
    }

    /// Seconds to a tenth, without a trailing ".0" ("10", "2.5").
    package static func format(_ seconds: Double) -> String {
        let tenths = (seconds * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) : String(format: "%.1f", tenths)
    }
}
