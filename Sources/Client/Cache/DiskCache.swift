#if canImport(Glibc)
import Glibc
import StreamShared
#endif

/// `--cache-dir DIR --cache-mb N`: the bytes streamplay streamed, kept on disk per URL and ETag
/// as sparse blocks (`CacheEntry`), within a bound on the stored bytes: when a new block would
/// pass it, whole entries are evicted, least recently used first. Each entry is two files named
/// by a hash of its URL: `<hash>.data` (the blocks at their offsets, holes elsewhere) and
/// `<hash>.idx` (`CacheIndex`). Safe to share between threads.
public final class DiskCache: @unchecked Sendable {
    // @unchecked: `state` is only touched under `lock`.
    public let directory: String
    public let capacityBytes: Int
    public let blockSize: Int
    private let lock = Lock(())
    private var state = State()

    private struct State {
        /// Stored bytes and last use (ns) of every entry on disk, open or not.
        var sizes: [String: Int] = [:]
        var lastUse: [String: Int64] = [:]
        var total = 0
        var clock: Int64 = 0
        /// Entries handed out and still alive, so an eviction can stop them.
        var live: [String: WeakEntry] = [:]
    }

    private struct WeakEntry { weak var entry: CacheEntry? }

    /// Opens (creating) the cache directory and takes stock of the entries in it: an entry whose
    /// index header is damaged is deleted; the least recently used go until the rest fit.
    public init(directory: String, capacityBytes: Int, blockSize: Int = 64 * 1024) throws {
        precondition(blockSize > 0 && blockSize <= 1 << 24, "block size")
        self.directory = directory
        self.capacityBytes = max(0, capacityBytes)
        self.blockSize = blockSize
        try CacheFile.makeDirectory(directory)
        for name in try CacheFile.list(directory) where name.hasSuffix(".idx") {
            let key = String(name.dropLast(4))
            let indexPath = path(key, "idx")
            guard let file = try? CacheFile(path: indexPath, create: false),
                  let size = try? file.size(), size <= 64 << 20,
                  let bytes = try? file.read(at: 0, count: size),
                  let parsed = CacheIndex.parse(bytes) else {
                deleteFiles(key)
                continue
            }
            let stored = parsed.blocks.values.reduce(0) { $0 + $1.length }
            state.sizes[key] = stored
            // A last use in the future (a clock that was set wrong) counts as now: the LRU clock
            // goes on from the latest, and must not start near its end.
            state.lastUse[key] = min(CacheFile.modificationTime(indexPath), Self.now())
            state.total += stored
        }
        state.clock = state.lastUse.values.max() ?? 0
        lock.withLock { _ in evict(toFit: 0, keeping: nil) }
    }

    /// The stored entry for `url`, whatever its ETag; nil when there is none or it is unreadable.
    public func entry(for url: String) -> CacheEntry? {
        let key = Self.key(url)
        return lock.withLock { _ in
            if let live = state.live[key]?.entry, !live.removed, live.url == url { return live }
            guard state.sizes[key] != nil, let opened = openEntry(key, create: nil), opened.url == url else { return nil }
            return opened
        }
    }

    /// The entry for `url` at `etag` and `totalSize`, created empty when the stored one (if any)
    /// is for another ETag or size: that one is removed, since its bytes are of another version.
    /// nil when the URL or ETag is too long to keep or the files cannot be made.
    public func entry(for url: String, etag: String, totalSize: Int?) -> CacheEntry? {
        guard url.utf8.count <= CacheIndex.maxText, etag.utf8.count <= CacheIndex.maxText, !etag.isEmpty else { return nil }
        let key = Self.key(url)
        return lock.withLock { _ in
            if let existing = state.live[key]?.entry ?? (state.sizes[key] != nil ? openEntry(key, create: nil) : nil) {
                if !existing.removed, existing.url == url, existing.etag == etag, existing.totalSize == totalSize {
                    return existing
                }
                remove(key)
            }
            let index = CacheIndex(url: url, etag: etag, totalSize: totalSize, blockSize: blockSize)
            return openEntry(key, create: index)
        }
    }

    /// Removes the entry for `url` (the server says it changed).
    public func remove(url: String) {
        lock.withLock { _ in remove(Self.key(url)) }
    }

    /// Bytes stored in all entries.
    public var storedBytes: Int { lock.withLock { _ in state.total } }

    /// Marks an entry as just used (the LRU order; also the index file's mtime across runs).
    func used(_ entry: CacheEntry) {
        let time: Int64? = lock.withLock { _ in
            guard state.sizes[entry.key] != nil else { return nil }
            return tick(entry.key)
        }
        if let time { CacheFile.touch(path(entry.key, "idx"), nanoseconds: time) }
    }

    /// A use of `key` now: a time later than every use before (under the lock).
    private func tick(_ key: String) -> Int64 {
        state.clock = max(state.clock + 1, Self.now())
        state.lastUse[key] = state.clock
        return state.clock
    }

    /// Makes room for `bytes` more of `entry`, evicting others least recently used first, and
    /// returns the use time to stamp on the index once the block is written (`stamp`); nil when
    /// even evicting is not enough (the entry alone would pass the bound).
    func reserve(_ bytes: Int, for entry: CacheEntry) -> Int64? {
        lock.withLock { _ in
            guard !entry.removed, state.sizes[entry.key] != nil else { return nil }
            evict(toFit: bytes, keeping: entry.key)
            guard state.total + bytes <= capacityBytes else { return nil }
            state.sizes[entry.key, default: 0] += bytes
            state.total += bytes
            return tick(entry.key)
        }
    }

    /// Sets the entry's index mtime to its use time. Called after the index was written, since
    /// a write sets the mtime to the (coarse) current time.
    func stamp(_ entry: CacheEntry, _ time: Int64) {
        CacheFile.touch(path(entry.key, "idx"), nanoseconds: time)
    }

    // MARK: Under the lock

    private func evict(toFit bytes: Int, keeping: String?) {
        while state.total + bytes > capacityBytes {
            let victim = state.lastUse.filter { $0.key != keeping }.min { $0.value < $1.value }?.key
            guard let victim else { return }
            remove(victim)
        }
    }

    private func remove(_ key: String) {
        state.live[key]?.entry?.markRemoved()
        state.live[key] = nil
        state.total -= state.sizes[key] ?? 0
        state.sizes[key] = nil
        state.lastUse[key] = nil
        deleteFiles(key)
    }

    /// Opens the entry's files; with `create`, starts a new entry with that header.
    private func openEntry(_ key: String, create: CacheIndex?) -> CacheEntry? {
        do {
            let indexFile = try CacheFile(path: path(key, "idx"), create: create != nil)
            let data = try CacheFile(path: path(key, "data"), create: create != nil)
            let entry: CacheEntry
            if let create {
                try indexFile.truncate(to: 0)
                try data.truncate(to: 0)
                let header = create.encodedHeader()
                try indexFile.write(header[...], at: 0)
                entry = CacheEntry(key: key, index: create, blocks: [:], indexLength: header.count,
                                   data: data, indexFile: indexFile, cache: self)
                state.sizes[key] = 0
            } else {
                let size = try indexFile.size()
                guard size <= 64 << 20, let parsed = CacheIndex.parse(try indexFile.read(at: 0, count: size)) else {
                    remove(key)
                    return nil
                }
                // A torn last record is cut off, so new records follow the valid ones.
                if parsed.validLength < size { try indexFile.truncate(to: parsed.validLength) }
                entry = CacheEntry(key: key, index: parsed.index, blocks: parsed.blocks, indexLength: parsed.validLength,
                                   data: data, indexFile: indexFile, cache: self)
            }
            CacheFile.touch(path(key, "idx"), nanoseconds: tick(key))
            state.live[key] = WeakEntry(entry: entry)
            return entry
        } catch {
            remove(key)
            return nil
        }
    }

    private func deleteFiles(_ key: String) {
        CacheFile.remove(path(key, "idx"))
        CacheFile.remove(path(key, "data"))
    }

    private func path(_ key: String, _ ext: String) -> String { "\(directory)/\(key).\(ext)" }

    /// File name of a URL's entry: FNV-1a 64 of its bytes, in hex (the index holds the URL, so
    /// a collision reads as a miss, never as another resource's bytes).
    static func key(_ url: String) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in url.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func now() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }
}
