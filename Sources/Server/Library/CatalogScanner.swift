#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation
import StreamShared
import StreamHTTP
import Logging
import Synchronization
import Atomics

/// Keeps the catalog current in the background, on its own thread: the first scan at start
/// (the server listens meanwhile, serving what the database holds), then the paths inotify
/// names, a full rescan on request (SIGHUP), and periodic full rescans when inotify cannot
/// cover the tree (no inotify, or the watch limit reached).
public final class CatalogScanner: @unchecked Sendable {
    // @unchecked: `watcher` is used by the scanner thread only; `fullRequested` and `state`
    // are behind `lock`; `wake` is an eventfd, safe to write from any thread; `threads` is
    // touched by `start` and `stop` (the owner's thread) only.
    public let catalog: Catalog
    /// Seconds between full rescans when inotify does not cover the tree.
    public let rescanInterval: Double
    private let wake: Int32
    private let lock = Lock(())
    private var fullRequested = false
    private var watcher: FolderWatcher?
    private var state = WatchState()
    private var warnedLimit = false
    /// Set by `stop`: the scanner thread ends at its next look (the indexer is told through
    /// the catalog's `indexRequests`).
    private let stopping = ManagedAtomic<Bool>(false)
    /// The scanner and indexer threads, joined by `stop`.
    private var threads: [NativeThread] = []

    /// How changes are noticed, for `/api/status`.
    struct WatchState {
        var mode = "starting"
        var folders = 0
    }

    /// - Parameters:
    ///   - inotify: watch the tree with inotify (else only rescans every `rescanInterval` seconds).
    ///   - maxWatches: a watch limit below the kernel's (`--max-watches`).
    public init(catalog: Catalog, rescanInterval: Double, inotify: Bool = true, maxWatches: Int? = nil) throws(SystemError) {
        self.catalog = catalog
        self.rescanInterval = rescanInterval
        wake = try syscallChecked("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) }
        if inotify {
            do {
                watcher = try FolderWatcher(maxWatches: maxWatches)
            } catch {
                catalog.logger.warning("catalog: inotify unavailable (\(error)); rescanning every \(Int(rescanInterval)) s instead")
            }
        }
    }

    /// How changes are noticed now, for `/api/status`.
    public var watcherStatus: StatusDocument.Watcher {
        let now = lock.withLock { _ in state }
        return StatusDocument.Watcher(mode: now.mode, folders: now.folders, rescanIntervalSeconds: rescanInterval)
    }

    /// Starts the threads: the first scan begins at once. When one cannot start, none runs.
    public func start() throws(ThreadError) {
        threads.append(try NativeThread(name: "streamd-scanner") { [self] in run() })
        do {
            threads.append(try NativeThread(name: "streamd-indexer") { [self] in runIndexer() })
        } catch {
            stop(within: 5)
            throw error
        }
    }

    /// Stops both threads: a scan under way reads no further chunk, the indexer takes no
    /// further file (their workers stop with them). Returns true once both have ended, false
    /// when `seconds` passed first.
    @discardableResult
    public func stop(within seconds: Double) -> Bool {
        let deadline = monotonicNanos() + UInt64(max(0, seconds) * 1e9)
        stopping.store(true, ordering: .relaxed)
        catalog.indexRequests.stop()
        catalog.stopScans()
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
        for thread in threads {
            if !thread.join(until: Monotonic(nanoseconds: deadline)) { return false }
        }
        threads = []
        return true
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// The indexer's thread: the tracks clients started reading, then what is missing after each
    /// scan (the catalog's `indexRequests`); a track started or a scan ended meanwhile makes it
    /// look again (played tracks first, then the longest) once the file at hand is done. One
    /// worker serves a run of work, and stops when the work is done.
    private func runIndexer() {
        let requests = catalog.indexRequests
        while true {
            var work = requests.next()
            if work == .stop { return }
            catalog.analyzer.keepingWorkers {
                while true {
                    switch work {
                    case .played(let path): catalog.buildIndex(forAbsolutePath: path)
                    case .ahead: catalog.buildIndexesAhead(shouldStop: { requests.hasNewerWork })
                    case .stop: return
                    }
                    guard let next = requests.poll() else { return }
                    work = next
                }
            }
            if work == .stop { return }
        }
    }

    /// Asks for a full rescan (SIGHUP); one already running finishes first.
    public func requestFullScan() {
        lock.withLock { _ in fullRequested = true }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// One scan, then watches on the folders it walked.
    private func scan(_ scope: Catalog.ScanScope) {
        catalog.scan(scope, walked: watch)
    }

    private var polling: Bool { watcher == nil || watcher?.limitHit == true }

    /// Called on the scanner thread with the folders each scan walked.
    private func watch(_ folders: [String]) {
        guard let watcher else {
            lock.withLock { _ in state.mode = "polling" }
            return
        }
        watcher.watch(folders)
        if watcher.limitHit && !warnedLimit {
            warnedLimit = true
            let limit = FolderWatcher.kernelLimit.map { " (fs.inotify.max_user_watches = \($0))" } ?? ""
            catalog.logger.warning(.init(stringLiteral: "catalog: inotify watch limit reached\(limit) after \(watcher.count) folders; "
                         + "changes are picked up by a full rescan every \(JSONObjectWriter.number(rescanInterval)) s instead"))
        }
        lock.withLock { _ in
            state.mode = watcher.limitHit ? "polling" : "inotify"
            state.folders = watcher.count
        }
    }

    private func run() {
        scan(.all)
        while !isStopping {
            let timeout: Int32 = polling ? Int32(clamping: Int(rescanInterval * 1000)) : -1
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: watcher?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                catalog.logger.warning("catalog: poll: \(SystemError(call: "poll", errno: errno)); rescanning every \(Int(rescanInterval)) s")
                watcher = nil
                sleep(UInt32(max(1, rescanInterval)))
                scan(.all)
                continue
            }
            if ready == 0 {
                if polling { scan(.all) }
                continue
            }
            if fds[0].revents != 0 {
                var count: UInt64 = 0
                _ = read(wake, &count, 8)
                if isStopping { return }
                let full = lock.withLock { _ in
                    defer { fullRequested = false }
                    return fullRequested
                }
                if full {
                    scan(.all)
                    continue
                }
            }
            if fds[1].revents != 0, let watcher { handle(collect(watcher)) }
        }
    }

    /// The events of a burst: read until 100 ms pass without one (at most a second), so a
    /// file being copied is looked at once, when it is complete.
    private func collect(_ watcher: FolderWatcher) -> [FolderWatcher.Event] {
        var events = watcher.read()
        let deadline = monotonicNanos() + 1_000_000_000
        while monotonicNanos() < deadline {
            var fd = pollfd(fd: watcher.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&fd, 1, 100) > 0 else { break }
            events += watcher.read()
        }
        return events
    }

    private func handle(_ events: [FolderWatcher.Event]) {
        let root = catalog.resolver.root
        var paths = Set<String>()
        for event in events {
            switch event {
            case .overflow:
                scan(.all)
                return
            case .changed(let path, _):
                if path == root {
                    scan(.all)
                    return
                }
                guard path.hasPrefix(root + "/") else { continue }
                paths.insert(String(path.dropFirst(root.count + 1)))
            }
        }
        guard paths.count <= 2000 else {
            scan(.all)
            return
        }
        // A folder's scan covers its files: skip paths inside another path of the burst.
        let sorted = paths.sorted()
        var covered: String?
        for path in sorted {
            if let covered, path.hasPrefix(covered + "/") { continue }
            covered = path
            scan(.path(path))
        }
    }
}
