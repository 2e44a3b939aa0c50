import StreamShared

/// The cached bytes of one resource (one URL at one ETag), kept as sparse fixed-size blocks in
/// a data file, with the index beside it. Blocks are stored whole (the last one of the resource
/// may be shorter) and checked against their CRC-32 on every read: a block that is short or
/// damaged is withdrawn and reads as missing, so the caller fetches it again and never plays it.
public final class CacheEntry: @unchecked Sendable {
    // @unchecked: every mutable field is touched only under `lock`.
    public let url: String
    public let etag: String
    public let totalSize: Int?
    public let blockSize: Int
    let key: String
    private let data: CacheFile
    private let indexFile: CacheFile
    private weak var cache: DiskCache?
    private let lock = Lock(())
    private var blocks: [Int: CacheIndex.Block]
    private var indexLength: Int
    /// Bytes received but not yet a whole block: they start at `pendingStart`.
    private var pending: [UInt8] = []
    private var pendingStart = 0
    /// Set when the cache evicted or replaced this entry: nothing more is stored or read.
    private var isRemoved = false

    init(key: String, index: CacheIndex, blocks: [Int: CacheIndex.Block], indexLength: Int,
         data: CacheFile, indexFile: CacheFile, cache: DiskCache) {
        self.key = key
        url = index.url
        etag = index.etag
        totalSize = index.totalSize
        blockSize = index.blockSize
        self.blocks = blocks
        self.indexLength = indexLength
        self.data = data
        self.indexFile = indexFile
        self.cache = cache
    }

    /// Bytes stored (whole blocks), as the LRU bound counts them.
    var storedBytes: Int { lock.withLock { _ in blocks.values.reduce(0) { $0 + $1.length } } }

    /// How many bytes from `offset` on the index says are stored, without reading them.
    public func cachedLength(from offset: Int) -> Int {
        lock.withLock { _ in
            guard !isRemoved, offset >= 0 else { return 0 }
            var block = offset / blockSize
            var end = offset
            while let stored = blocks[block] {
                end = block * blockSize + stored.length
                if stored.length < blockSize { break }
                block += 1
            }
            return max(0, end - offset)
        }
    }

    /// Where the next stored bytes after `offset` begin (a block start), nil when none follow.
    public func nextCachedOffset(after offset: Int) -> Int? {
        lock.withLock { _ in
            guard !isRemoved else { return nil }
            let after = offset / blockSize
            return blocks.keys.filter { $0 > after }.min().map { $0 * blockSize }
        }
    }

    /// True when every byte of the resource is stored (its size is known).
    public var isComplete: Bool {
        guard let totalSize else { return false }
        return cachedLength(from: 0) >= totalSize
    }

    /// The verified bytes of the block holding `offset`, from `offset` to the block's end; nil
    /// when the block is not stored, or is short or damaged on disk (it is then withdrawn).
    public func read(at offset: Int) -> [UInt8]? {
        var touched = false
        let bytes: [UInt8]? = lock.withLock { _ in
            guard !isRemoved, offset >= 0 else { return nil }
            let number = offset / blockSize
            guard let stored = blocks[number] else { return nil }
            let start = number * blockSize
            guard offset < start + stored.length else { return nil }
            touched = true
            guard let block = try? data.read(at: start, count: stored.length),
                  block.count == stored.length, CRC32.checksum(block) == stored.crc else {
                withdraw(number)
                return nil
            }
            return Array(block[(offset - start)...])
        }
        if touched { cache?.used(self) }
        return bytes
    }

    /// Takes bytes that arrived for `offset...`: whole blocks are written (with their checksum)
    /// as they complete, the resource's last block when its end arrives. Bytes before the first
    /// block boundary of a run that starts mid-block are not kept. Storage errors and a full
    /// cache only stop the caching, never the caller.
    public func store(_ bytes: ArraySlice<UInt8>, at offset: Int) {
        var complete: [(number: Int, bytes: [UInt8])] = []
        lock.withLock { _ in
            guard !isRemoved, offset >= 0 else { return }
            var incoming = bytes
            var at = offset
            if pendingStart + pending.count != at || pending.isEmpty && at % blockSize != 0 {
                // A new run: start at the next block boundary.
                pending.removeAll(keepingCapacity: true)
                let boundary = (at + blockSize - 1) / blockSize * blockSize
                let skip = min(incoming.count, boundary - at)
                incoming = incoming.dropFirst(skip)
                at += skip
                pendingStart = at
            }
            pending += incoming
            while pending.count >= blockSize {
                complete.append((pendingStart / blockSize, Array(pending.prefix(blockSize))))
                pending.removeFirst(blockSize)
                pendingStart += blockSize
            }
            if let totalSize, !pending.isEmpty, pendingStart + pending.count >= totalSize, totalSize > pendingStart {
                complete.append((pendingStart / blockSize, Array(pending.prefix(totalSize - pendingStart))))
                pendingStart += pending.count
                pending.removeAll()
            }
        }
        for block in complete where !hasBlock(block.number) {
            // Room first: the cache may evict other entries (never this one) to make it.
            guard let cache, let time = cache.reserve(block.bytes.count, for: self) else { return }
            lock.withLock { _ in writeBlock(block.number, block.bytes) }
            cache.stamp(self, time)
        }
    }

    private func hasBlock(_ number: Int) -> Bool { lock.withLock { _ in blocks[number] != nil } }

    /// Writes one block and its record (under the lock).
    private func writeBlock(_ number: Int, _ bytes: [UInt8]) {
        guard !isRemoved else { return }
        let crc = CRC32.checksum(bytes)
        do {
            try data.write(bytes[...], at: number * blockSize)
            // The record goes after the data: a crash between the two leaves data no record
            // vouches for, never a record for data that is not there.
            let record = CacheIndex.encodedRecord(block: number, length: bytes.count, crc: crc)
            try indexFile.write(record[...], at: indexLength)
            indexLength += record.count
            blocks[number] = CacheIndex.Block(length: bytes.count, crc: crc)
        } catch {
            isRemoved = true
        }
    }

    /// Forgets a damaged block and records that (under the lock).
    private func withdraw(_ number: Int) {
        blocks[number] = nil
        let record = CacheIndex.encodedRecord(block: number, length: 0, crc: 0)
        if (try? indexFile.write(record[...], at: indexLength)) != nil { indexLength += record.count }
    }

    /// The cache dropped this entry (evicted, or replaced by another ETag).
    func markRemoved() { lock.withLock { _ in isRemoved = true } }
    var removed: Bool { lock.withLock { _ in isRemoved } }
}
