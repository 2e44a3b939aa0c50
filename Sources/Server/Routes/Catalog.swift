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

/// The library: every audio file under the folder, probed and analyzed once, with its seek index.
public final class Catalog: @unchecked Sendable {
    // @unchecked: all mutable state is behind `lock`.
    public let resolver: PathResolver
    private let lock = NSLock()
    private var entries: [String: CatalogEntry] = [:]     // by absolute path
    private var skipped: [String: String] = [:]           // absolute path → why it is not audio
    private var folderStamps: [String: Int] = [:]         // directory → mtime seen at the last scan
    private var lastCheck: UInt64 = 0
    /// Called with one line per file that could not be analyzed.
    public var warn: @Sendable (String) -> Void = { _ in }

    public init(resolver: PathResolver) {
        self.resolver = resolver
    }

    /// Scans the folder recursively; unchanged files (same size and mtime) keep their analysis.
    public func scan() {
        var found: [String: (size: Int, mtime: Int)] = [:]
        var stamps: [String: Int] = [:]
        walk(resolver.root, depth: 0, found: &found, stamps: &stamps)
        let previous = lock.withLock { entries }
        var next: [String: CatalogEntry] = [:]
        var notAudio: [String: String] = [:]
        for (path, meta) in found.sorted(by: { $0.key < $1.key }) {
            if let old = previous[path], old.size == meta.size, old.mtime == meta.mtime {
                next[path] = old
                continue
            }
            do {
                let file = try OpenFile(path: path)
                let analysis = try TrackAnalyzer.analyze(file)
                guard let relative = resolver.relative(path) else { continue }
                next[path] = CatalogEntry(path: relative, absolutePath: path, size: file.size, mtime: file.mtime,
                                          etag: file.etag, analysis: analysis)
            } catch {
                notAudio[path] = "\(error)"
                if lock.withLock({ skipped[path] }) == nil { warn("catalog: skipping \(path): \(error)") }
            }
        }
        lock.withLock {
            entries = next
            skipped = notAudio
            folderStamps = stamps
            lastCheck = monotonicNanos()
        }
    }

    /// Rescans when a folder's mtime changed since the last scan (checked at most once a second).
    public func rescanIfChanged() {
        let now = monotonicNanos()
        let stamps: [String: Int]? = lock.withLock {
            guard now - lastCheck > 1_000_000_000 else { return nil }
            lastCheck = now
            return folderStamps
        }
        guard let stamps else { return }
        for (folder, mtime) in stamps {
            var info = stat()
            if stat(folder, &info) != 0 || Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec) != mtime {
                scan()
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
            // Follow symlinks only when they stay inside the library.
            guard let real = PathResolver.realPath(path), real.hasPrefix(resolver.root + "/") else { continue }
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
            return .failure(.notAudio(lock.withLock { skipped[path] } ?? "not in the catalog"))
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
