#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP
import StreamLibrary
import Logging

/// Covers resized for `getCoverArt?size=N` (clients ask for the size of their grid cells, the
/// same few sizes again and again), kept by the source's validator (which changes with the
/// picture) and size: in memory, least recently used out first within `capacityBytes`, and on
/// disk (`SubsonicCoverDiskCache`, beside the catalog database) so a restart does not resize
/// them again. A miss is resized by `CoverResizer` in a worker process; a picture that cannot be
/// resized (damaged, not an image, the worker crashed or timed out) sends the original, and is
/// remembered for a while so it is not tried on every request.
final class SubsonicCoverCache: Sendable {
    struct Entry {
        var bytes: [UInt8]
        var mimeType: String
        var etag: String
        var lastUse: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        /// Keys whose resize failed, and when (monotonic ns): sent the original until `retryNanos` passed.
        var failed: [String: UInt64] = [:]
    }

    private let state = Lock(State())
    let capacityBytes: Int
    let resizer: CoverResizer?
    let disk: SubsonicCoverDiskCache?
    let logger: Logger
    /// Failed keys remembered at most (then forgotten all at once).
    static let maxFailed = 4096
    static let retryNanos: UInt64 = 600_000_000_000

    init(capacityBytes: Int = 32 << 20, resizer: CoverResizer? = nil, disk: SubsonicCoverDiskCache? = nil,
         logger: Logger = Logger(label: "streamd.subsonic")) {
        self.capacityBytes = capacityBytes
        self.resizer = resizer
        self.disk = disk
        self.logger = logger
    }

    /// Largest source picture read into memory for a resize (a cover file beside the tracks).
    static let maxSourceBytes = CoverWorker.maxInputBytes

    static func readWhole(_ file: OpenFile) -> [UInt8]? {
        guard file.size > 0, file.size <= maxSourceBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: file.size)
        var done = 0
        while done < file.size {
            let n = bytes.withUnsafeMutableBytes { raw in pread(file.fd, raw.baseAddress.map { $0 + done }, file.size - done, off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// The cache key of `size` of the picture whose validator is `etag`.
    static func key(etag: String, size: Int) -> String { etag.filter { $0 != "\"" } + "/" + String(size) }

    /// The picture at `size` (its longer side at most that many pixels), from the cache or
    /// resized now; the original when no size is asked for or it cannot be resized. Runs on the
    /// blocking pool (a disk read, maybe a worker's time).
    func respond(_ request: HTTPRequest, source: [UInt8], mimeType: String, etag: String, size: Int?) -> HTTPResponse {
        guard let size else { return .generated(source, contentType: mimeType, etag: etag, for: request) }
        let key = Self.key(etag: etag, size: size)
        let tag = Self.thumbnailTag(etag: etag, size: size)
        if let hit = cached(request, etag: etag, size: size) { return hit }
        guard let resizer, !recentlyFailed(key) else {
            return .generated(source, contentType: mimeType, etag: etag, for: request)
        }
        let resized: [UInt8]
        do {
            resized = try resizer.thumbnail(source, size: size).jpeg
        } catch {
            logger.warning("getCoverArt: \(error); sending the original")
            state.withLock { state in
                if state.failed.count >= Self.maxFailed { state.failed.removeAll() }
                state.failed[key] = monotonicNanos()
            }
            var response = HTTPResponse.generated(source, contentType: mimeType, etag: etag, for: request)
            response.headers.append(("X-Resize-Failed", "1"))
            return response
        }
        insert(key, Entry(bytes: resized, mimeType: "image/jpeg", etag: tag, lastUse: 0))
        if let disk, let why = disk.store(resized, key: key) { logger.warning("cover cache: \(why)") }
        var response = HTTPResponse.generated(resized, contentType: "image/jpeg", etag: tag, for: request)
        response.headers.append(("X-Cache", "MISS"))
        return response
    }

    static func thumbnailTag(etag: String, size: Int) -> String { "\"" + etag.filter { $0 != "\"" } + "-s\(size)\"" }

    /// The thumbnail of `size` of the picture whose validator is `etag` when it is in memory or
    /// on disk (`X-Cache: HIT`), without the picture itself: a cover file need not be read.
    func cached(_ request: HTTPRequest, etag: String, size: Int) -> HTTPResponse? {
        let key = Self.key(etag: etag, size: size)
        let tag = Self.thumbnailTag(etag: etag, size: size)
        var found = lookup(key)
        if found == nil, let stored = disk?.load(key: key) {
            let entry = Entry(bytes: stored, mimeType: "image/jpeg", etag: tag, lastUse: 0)
            insert(key, entry)
            found = entry
        }
        guard let found else { return nil }
        var response = HTTPResponse.generated(found.bytes, contentType: found.mimeType, etag: found.etag, for: request)
        response.headers.append(("X-Cache", "HIT"))
        return response
    }

    private func recentlyFailed(_ key: String) -> Bool {
        state.withLock { state in
            guard let when = state.failed[key] else { return false }
            if monotonicNanos() - when < Self.retryNanos { return true }
            state.failed[key] = nil
            return false
        }
    }

    func lookup(_ key: String) -> Entry? {
        state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[key] = entry
            return entry
        }
    }

    func insert(_ key: String, _ entry: Entry) {
        guard entry.bytes.count <= capacityBytes / 4 else { return }
        state.withLock { state in
            state.clock += 1
            var entry = entry
            entry.lastUse = state.clock
            if let old = state.entries[key] { state.bytes -= old.bytes.count }
            state.entries[key] = entry
            state.bytes += entry.bytes.count
            while state.bytes > capacityBytes, let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.bytes -= oldest.value.bytes.count
                state.entries[oldest.key] = nil
            }
        }
    }
}
