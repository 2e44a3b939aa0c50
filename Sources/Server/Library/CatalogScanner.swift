#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation
import StreamShared
import StreamHTTP
import Logging
import Synchronization

/// Keeps the catalog current in the background, on its own thread: the first scan at start
/// (the server listens meanwhile, serving what the database holds), then the paths inotify
/// names, a full rescan on request (SIGHUP), and periodic full rescans when inotify cannot
/// cover the tree (no inotify, or the watch limit reached).
public final class CatalogScanner: @unchecked Sendable {
    // @unchecked: `watcher` is used by the scanner thread only; `fullRequested` and `state`
    // are behind `lock`, `indexWanted` and `playedPaths` behind `indexCondition`; `wake` is an eventfd, safe to
    // write from any thread; `threads` is touched by `start` and `stop` (the owner's thread) only.
    public let catalog: Catalog
    /// Seconds between full rescans when inotify does not cover the tree.
    public let rescanInterval: Double
    private let wake: Int32
    private let lock = Mutex(())
    private var fullRequested = false
    private var watcher: FolderWatcher?
    private var state = WatchState()
    private var warnedLimit = false
    /// A scan ended since the indexer last looked (guarded by `indexCondition`).
    private var indexWanted = false
    /// Tracks a client started reading, whose index the indexer builds first (at most 256 wait).
    private var playedPaths: [String] = []
    private let indexCondition = ConditionLock()
    /// Set by `stop` (under `indexCondition`): both threads end at their next look.
    private var stopping = false
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
        catalog.statusExtras = { [weak self] status in
            guard let self else { return }
            let now = lock.withLock { _ in state }
            status.watcher = StatusDocument.Watcher(mode: now.mode, folders: now.folders, rescanIntervalSeconds: rescanInterval)
        }
        catalog.scanned = { [weak self] folders in
            self?.watch(folders)
            self?.requestIndexes()
        }
        catalog.indexRequested = { [weak self] path in self?.requestIndex(path) }
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
        indexCondition.withLock {
            stopping = true
            indexCondition.broadcast()
        }
        catalog.stopScans()
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
        for thread in threads {
            if !thread.join(until: Monotonic(nanoseconds: deadline)) { return false }
        }
        threads = []
        return true
    }

    private var isStopping: Bool { indexCondition.withLock { stopping } }

    /// After a scan: long tracks' seek indexes are built on the indexer's thread (a scan or an
    /// inotify event never waits for them).
    private func requestIndexes() {
        indexCondition.lock()
        indexWanted = true
        indexCondition.signal()
        indexCondition.unlock()
    }

    /// A client started reading the track at `path` (absolute): its index comes next.
    private func requestIndex(_ path: String) {
        indexCondition.lock()
        if playedPaths.count < 256 { playedPaths.append(path) }
        indexCondition.signal()
        indexCondition.unlock()
    }

    /// The indexer's thread: the tracks clients started reading, then what is missing after each
    /// scan; a track started or a scan ended meanwhile makes it look again (played tracks first,
    /// then the longest) once the file at hand is done. One worker serves a run of work, and
    /// stops when the work is done.
    private func runIndexer() {
        while true {
            waitForIndexWork()
            if isStopping { return }
            catalog.analyzer.keepingWorkers {
                while true {
                    var worked = false
                    while let path = indexCondition.withLock({ playedPaths.isEmpty || stopping ? nil : playedPaths.removeFirst() }) {
                        catalog.buildIndex(forAbsolutePath: path)
                        worked = true
                    }
                    let ahead = indexCondition.withLock { () -> Bool in
                        defer { indexWanted = false }
                        return indexWanted
                    }
                    if ahead {
                        catalog.buildIndexesAhead(shouldStop: { [self] in
                            indexCondition.withLock { indexWanted || !playedPaths.isEmpty || stopping }
                        })
                        worked = true
                    }
                    if !worked || isStopping { break }
                }
            }
        }
    }

    /// Waits until a track was started or a scan ended.
    private func waitForIndexWork() {
        indexCondition.lock()
        while !indexWanted && playedPaths.isEmpty && !stopping { indexCondition.wait() }
        indexCondition.unlock()
    }

    /// Asks for a full rescan (SIGHUP); one already running finishes first.
    public func requestFullScan() {
        lock.withLock { _ in fullRequested = true }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
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
        catalog.scan(.all)
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
                catalog.scan(.all)
                continue
            }
            if ready == 0 {
                if polling { catalog.scan(.all) }
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
                    catalog.scan(.all)
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
                catalog.scan(.all)
                return
            case .changed(let path, _):
                if path == root {
                    catalog.scan(.all)
                    return
                }
                guard path.hasPrefix(root + "/") else { continue }
                paths.insert(String(path.dropFirst(root.count + 1)))
            }
        }
        guard paths.count <= 2000 else {
            catalog.scan(.all)
            return
        }
        // A folder's scan covers its files: skip paths inside another path of the burst.
        let sorted = paths.sorted()
        var covered: String?
        for path in sorted {
            if let covered, path.hasPrefix(covered + "/") { continue }
            covered = path
            catalog.scan(.path(path))
        }
    }
}
