#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StreamShared

extension OpenFile: RandomAccessBytes {
    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, offset < size, count > 0 else { return [] }
        let wanted = min(count, size - offset)
        var result = [UInt8](repeating: 0, count: wanted)
        var done = 0
        while done < wanted {
            let n = result.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return pread(fd, base + done, wanted - done, off_t(offset + done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError(call: "pread", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        if done < wanted { result.removeLast(wanted - done) }
        return result
    }
}

/// One track of the library, as `/api/tracks` lists it.
public struct CatalogEntry: Sendable {
    /// Path relative to the library folder.
    public var path: String
    public var absolutePath: String
    public var size: Int
    public var mtime: Int
    public var etag: String
    public var analysis: TrackAnalysis

    /// The track's title, or its file name when it has no tag.
    public var displayTitle: String {
        analysis.tags.title ?? String(path.split(separator: "/").last ?? Substring(path))
    }
}

/// A file the catalog does not list, and why.
public struct SkippedFile: Sendable, Equatable {
    /// Size and mtime when it was tried: it is tried again only when they change.
    public var size: Int
    public var mtime: Int
    public var reason: String
    /// True when the analyzer crashed or overran on it (not merely "not audio").
    public var quarantined: Bool
}

/// The library: every audio file under the folder, analyzed once (in worker processes, see
/// `IsolatedAnalyzer`), with its seek index.
public final class Catalog: @unchecked Sendable {
    // @unchecked: all mutable state is behind `lock`; scans are serialised by `scanLock`.
    public let resolver: PathResolver
    /// Runs the analyzer out of process: a file that crashes or hangs it costs that file only.
    public let analyzer: IsolatedAnalyzer
    private let lock = NSLock()
    private let scanLock = NSLock()
    private var entries: [String: CatalogEntry] = [:]     // by absolute path
    private var skipped: [String: SkippedFile] = [:]      // by absolute path
    private var folderStamps: [String: Int] = [:]         // directory → mtime seen at the last scan
    private var lastCheck: UInt64 = 0
    private var scanCount = 0
    private var lastScanMillis = 0
    /// Called with one line per file that could not be analyzed.
    public var warn: @Sendable (String) -> Void = { _ in }

    public init(resolver: PathResolver, analyzer: IsolatedAnalyzer = IsolatedAnalyzer()) {
        self.resolver = resolver
        self.analyzer = analyzer
    }

    /// Scans the folder recursively. Unchanged files (same size and mtime) keep their analysis,
    /// or their reason for being skipped; the others go to the analyzer workers.
    public func scan() {
        scanLock.withLock { scanNow() }
    }

    private func scanNow() {
        let started = monotonicNanos()
        var found: [String: (size: Int, mtime: Int)] = [:]
        var stamps: [String: Int] = [:]
        walk(resolver.root, depth: 0, found: &found, stamps: &stamps)
        let (previous, previouslySkipped) = lock.withLock { (entries, skipped) }
        var next: [String: CatalogEntry] = [:]
        var notListed: [String: SkippedFile] = [:]
        var pending: [(path: String, size: Int, mtime: Int)] = []
        for (path, meta) in found.sorted(by: { $0.key < $1.key }) {
            if let old = previous[path], old.size == meta.size, old.mtime == meta.mtime {
                next[path] = old
            } else if let old = previouslySkipped[path], old.size == meta.size, old.mtime == meta.mtime {
                notListed[path] = old
            } else {
                pending.append((path, meta.size, meta.mtime))
            }
        }
        let outcomes = analyzer.analyze(pending.map { ($0.path, $0.size) })
        var unavailable: [String] = []
        for (file, outcome) in zip(pending, outcomes) {
            let path = file.path
            switch outcome {
            case .analyzed(let analysis):
                // The server opens the file only to stat it; the bytes were parsed in the worker.
                guard let opened = try? OpenFile(path: path), let relative = resolver.relative(path) else { continue }
                next[path] = CatalogEntry(path: relative, absolutePath: path, size: opened.size, mtime: opened.mtime,
                                          etag: opened.etag, analysis: analysis)
            case .rejected(let why):
                notListed[path] = SkippedFile(size: file.size, mtime: file.mtime, reason: why, quarantined: false)
                warn("catalog: skipping \(path): \(why)")
            case .quarantined(let why):
                notListed[path] = SkippedFile(size: file.size, mtime: file.mtime, reason: why, quarantined: true)
                warn("catalog: skipping \(path): \(why); quarantined until the file changes")
            case .unavailable(let why):
                // Not the file's fault: no record, so the next scan tries it again.
                if unavailable.isEmpty { warn("catalog: \(why)") }
                unavailable.append(path)
            }
        }
        if unavailable.count > 1 { warn("catalog: \(unavailable.count) files not analyzed; they are tried again at the next scan") }
        let elapsed = Int((monotonicNanos() - started) / 1_000_000)
        lock.withLock {
            entries = next
            skipped = notListed
            folderStamps = stamps
            lastCheck = monotonicNanos()
            scanCount += 1
            lastScanMillis = elapsed
        }
    }

    /// Why a track's analysis is not available.
    public struct AnalysisFailure: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// The analysis of `file` (at `path`): the catalog's when it describes these very bytes,
    /// else a fresh one from a worker (a file changed in place since the last scan). A file
    /// quarantined at this size and mtime is not tried again.
    public func analysis(forAbsolutePath path: String, file: OpenFile) throws(AnalysisFailure) -> TrackAnalysis {
        let (entry, skip) = lock.withLock { (entries[path], skipped[path]) }
        if let entry, entry.etag == file.etag { return entry.analysis }
        if let skip, skip.size == file.size, skip.mtime == file.mtime { throw AnalysisFailure(reason: skip.reason) }
        switch analyzer.analyze([(path, file.size)]).first {
        case .analyzed(let analysis):
            return analysis
        case .rejected(let why):
            throw AnalysisFailure(reason: why)
        case .quarantined(let why):
            // The listed entry described other bytes: the file is now quarantined instead.
            lock.withLock {
                entries[path] = nil
                skipped[path] = SkippedFile(size: file.size, mtime: file.mtime, reason: why, quarantined: true)
            }
            warn("catalog: skipping \(path): \(why); quarantined until the file changes")
            throw AnalysisFailure(reason: why)
        case .unavailable(let why):
            throw AnalysisFailure(reason: why)
        case nil:
            throw AnalysisFailure(reason: "not analyzed")
        }
    }

    /// Files under the folder that are not listed, with the reason, by absolute path.
    public func skippedFiles() -> [String: SkippedFile] {
        lock.withLock { skipped }
    }

    /// The `/api/status` JSON object: track count, skipped and quarantined files, scans.
    public func statusJSON() -> String {
        let (count, skips, scans, lastMillis) = lock.withLock { (entries.count, skipped, scanCount, lastScanMillis) }
        let items = skips.sorted { $0.key < $1.key }.map { path, skip -> String in
            var w = JSONObjectWriter()
            w.add("path", resolver.relative(path) ?? path)
            w.add("reason", skip.reason)
            w.add("quarantined", skip.quarantined)
            return w.text
        }
        var w = JSONObjectWriter()
        w.add("tracks", count)
        w.add("skipped_count", skips.count)
        w.add("quarantined_count", skips.values.filter(\.quarantined).count)
        w.add("scans", scans)
        w.add("last_scan_ms", lastMillis)
        w.add("analyzer_workers", analyzer.settings.workers)
        w.add("analyze_timeout_s", analyzer.settings.timeoutSeconds)
        w.addRaw("skipped", "[" + items.joined(separator: ",\n") + "]")
        return w.text + "\n"
    }

    /// Rescans when a folder's mtime changed since the last scan (checked at most once a second).
    public func rescanIfChanged() {
        let now = monotonicNanos()
        let stamps: [String: Int]? = lock.withLock {
            // A scan that ended after `now` was read sets lastCheck past it: no rescan then.
            guard now > lastCheck, now - lastCheck > 1_000_000_000 else { return nil }
            lastCheck = now
            return folderStamps
        }
        guard let stamps else { return }
        for (folder, mtime) in stamps {
            var info = stat()
            if stat(folder, &info) != 0 || Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec) != mtime {
                // A request thread does not queue behind a scan already running (SIGHUP's):
                // that one will pick up the change, and the answer meanwhile is the current list.
                guard scanLock.try() else { return }
                defer { scanLock.unlock() }
                scanNow()
                return
            }
        }
    }

    private func walk(_ folder: String, depth: Int, found: inout [String: (size: Int, mtime: Int)],
                      stamps: inout [String: Int]) {
        guard depth < 32, let dir = opendir(folder) else { return }
        defer { closedir(dir) }
        var info = stat()
        if stat(folder, &info) == 0 {
            stamps[folder] = Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec)
        }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            let path = folder + "/" + name
            guard stat(path, &info) == 0 else { continue }
            // Follow symlinks only when they stay inside the library, and not into a hidden part of it.
            guard let real = PathResolver.realPath(path), real.hasPrefix(resolver.root + "/"),
                  !PathResolver.isHidden(String(real.dropFirst(resolver.root.count + 1))) else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                walk(path, depth: depth + 1, found: &found, stamps: &stamps)
            } else if info.st_mode & S_IFMT == S_IFREG {
                found[real] = (Int(info.st_size), Int(info.st_mtim.tv_sec))
            }
        }
    }

    /// All tracks, ordered by path.
    public func tracks() -> [CatalogEntry] {
        lock.withLock { entries.values.sorted { $0.path < $1.path } }
    }

    public func entry(forAbsolutePath path: String) -> CatalogEntry? {
        lock.withLock { entries[path] }
    }

    /// Content-Type for a file: from its probed container, else from its extension.
    public func contentType(forAbsolutePath path: String) -> String {
        if let entry = entry(forAbsolutePath: path) { return entry.analysis.container.mimeType }
        switch path.split(separator: ".").last?.lowercased() {
        case "mp3": return "audio/mpeg"
        case "aac": return "audio/aac"
        case "m4a", "mp4": return "audio/mp4"
        case "wav": return "audio/wav"
        case "html", "htm": return "text/html; charset=utf-8"
        case "json": return "application/json"
        default: return "application/octet-stream"
        }
    }

    /// The `/api/tracks` JSON array.
    public func tracksJSON() -> String {
        rescanIfChanged()
        let items = tracks().map { entry -> String in
            let a = entry.analysis
            var w = JSONObjectWriter()
            w.add("path", entry.path)
            w.add("url", "/media/" + PathResolver.percentEncode(entry.path))
            w.add("title", a.tags.title)
            w.add("artist", a.tags.artist)
            w.add("album", a.tags.album)
            w.add("duration_s", a.durationSeconds)
            w.add("codec", a.codec)
            w.add("container", a.container.rawValue)
            w.add("sample_rate", a.sampleRate)
            w.add("channels", a.channels)
            w.add("bitrate", a.bitrate)
            w.add("size", entry.size)
            w.add("etag", entry.etag)
            return w.text
        }
        return "[" + items.joined(separator: ",\n") + "]\n"
    }

    /// Why a seek index cannot be served.
    public enum IndexError: Error, CustomStringConvertible {
        case notAudio(String)
        public var description: String {
            switch self {
            case .notAudio(let why): return "not an audio track: \(why)"
            }
        }
    }

    /// The `/api/index/<path>` JSON object.
    /// With `around`, only the points from 2 s before to 1 s after that time are listed.
    public func seekIndexJSON(forAbsolutePath path: String, around: Double? = nil) -> Result<String, IndexError> {
        guard let entry = entry(forAbsolutePath: path) else {
            return .failure(.notAudio(lock.withLock { skipped[path]?.reason } ?? "not in the catalog"))
        }
        let index = entry.analysis.seekIndex
        var w = JSONObjectWriter()
        w.add("path", entry.path)
        w.add("duration_s", entry.analysis.durationSeconds)
        w.add("first_frame_offset", index.firstFrameOffset)
        w.add("audio_end_offset", index.audioEndOffset)
        w.add("encoder_delay", index.encoderDelay)
        w.add("encoder_padding", index.encoderPadding)
        w.add("sample_rate", entry.analysis.sampleRate)
        w.add("etag", entry.etag)
        var selected = index.points[...]
        if let around {
            let lower = selected.firstIndex { $0.t >= around - 2 } ?? max(0, selected.count - 1)
            let upper = selected.firstIndex { $0.t > around + 1 } ?? selected.count
            selected = selected[max(0, min(lower, upper - 1))..<upper]
        }
        let points = selected.map { "{\"t\":\(JSONObjectWriter.number($0.t)),\"byte\":\($0.byte)}" }
        w.addRaw("points", "[" + points.joined(separator: ",") + "]")
        return .success(w.text + "\n")
    }
}
