#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP

/// Covers resized for `getCoverArt?size=N` (clients ask for the size of their grid cells, the
/// same few sizes again and again), kept by source validator and size, least recently used
/// out first within `capacityBytes`. A resize that fails, or a server built without the
/// resizer, sends the original.
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
    }

    private let state = Lock(State())
    let capacityBytes: Int

    init(capacityBytes: Int = 32 << 20) {
        self.capacityBytes = capacityBytes
    }

    /// Largest source picture read into memory for a resize (a cover file beside the tracks).
    static let maxSourceBytes = 32 << 20

    static func readWhole(_ file: OpenFile) -> [UInt8]? {
        guard file.size > 0, file.size <= maxSourceBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: file.size)
        var done = 0
        while done < file.size {
            let n = bytes.withUnsafeMutableBytes { raw in pread(file.fd, raw.baseAddress! + done, file.size - done, off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// The picture at `size` (its longer side at most that many pixels), from the cache or
    /// resized now; the original when no size is asked for or it cannot be resized.
    func respond(_ request: HTTPRequest, source: [UInt8], mimeType: String, etag: String, size: Int?) -> HTTPResponse {
        guard let size else { return .generated(source, contentType: mimeType, etag: etag, for: request) }
        let key = etag + "/" + String(size)
        if let hit = lookup(key) {
            var response = HTTPResponse.generated(hit.bytes, contentType: hit.mimeType, etag: hit.etag, for: request)
            response.headers.append(("X-Cache", "HIT"))
            return response
        }
        guard let resized = CoverResizer.thumbnail(source, size: size) else {
            return .generated(source, contentType: mimeType, etag: etag, for: request)
        }
        let tag = "\"" + etag.filter { $0 != "\"" } + "-s\(size)\""
        insert(key, Entry(bytes: resized, mimeType: "image/jpeg", etag: tag, lastUse: 0))
        var response = HTTPResponse.generated(resized, contentType: "image/jpeg", etag: tag, for: request)
        response.headers.append(("X-Cache", "MISS"))
        return response
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
