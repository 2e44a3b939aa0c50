import Foundation
import Testing
@testable import StreamClient

/// The disk cache's store: sparse blocks, persistence, the LRU bound, and damage of every kind
/// detected and refetched rather than played.
@Suite struct DiskCacheTests {
    static let block = 1024

    /// A fresh cache directory, removed by the caller.
    static func directory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamplay-cache-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.path
    }

    static func bytes(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7 &+ ($0 >> 8)) }
    }

    /// Everything readable from `offset` on, block by block, as a source would read it.
    static func readAll(_ entry: CacheEntry, from offset: Int) -> [UInt8] {
        var out: [UInt8] = []
        var at = offset
        while let chunk = entry.read(at: at), !chunk.isEmpty {
            out += chunk
            at += chunk.count
        }
        return out
    }

    @Test func crc32_knownVectors() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
        #expect(CRC32.checksum(Array("456789".utf8), continuing: CRC32.checksum(Array("123".utf8))) == 0xCBF4_3926)
    }

    @Test func wholeResource_storedInBlocks_readsBackEqual_andSurvivesAReopen() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let body = Self.bytes(5 * Self.block + 300)
        do {
            let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
            let entry = try #require(cache.entry(for: "http://h/a.mp3", etag: "\"v1\"", totalSize: body.count))
            // Arrives in uneven pieces, as a network does.
            var at = 0
            for size in [1, 700, 2000, 13, 3000] where at < body.count {
                let end = min(body.count, at + size)
                entry.store(body[at..<end], at: at)
                at = end
            }
            entry.store(body[at...], at: at)
            #expect(entry.isComplete)
            #expect(entry.cachedLength(from: 0) == body.count)
            #expect(Self.readAll(entry, from: 0) == body)
            #expect(cache.storedBytes == body.count)
        }
        let reopened = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        let entry = try #require(reopened.entry(for: "http://h/a.mp3"))
        #expect(entry.etag == "\"v1\"")
        #expect(entry.totalSize == body.count)
        #expect(Self.readAll(entry, from: 0) == body)
        #expect(Self.readAll(entry, from: 2 * Self.block + 5) == Array(body[(2 * Self.block + 5)...]))
    }

    /// An entry whose index file is dated past 2262 (ext4 keeps times to 2446; a clock set
    /// wrong writes them): its nanoseconds overflow 64 bits, which trapped when the cache was
    /// opened. It opens, the entry reads back, and later uses go on with the clock of now.
    @Test func indexDatedPast2262_opens_andTheClockStaysNow() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let body = Self.bytes(2 * Self.block)
        do {
            let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
            let entry = try #require(cache.entry(for: "http://h/a.mp3", etag: "\"v1\"", totalSize: body.count))
            entry.store(body[...], at: 0)
        }
        let index = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).first { $0.hasSuffix(".idx") })
        let future = timespec(tv_sec: 10_413_792_000, tv_nsec: 0)          // 2300-01-01
        #expect(utimensat(AT_FDCWD, dir + "/" + index, [future, future], 0) == 0)
        #expect(CacheFile.modificationTime(dir + "/" + index) == .max, "the last time that fits")
        let reopened = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        let entry = try #require(reopened.entry(for: "http://h/a.mp3"))
        #expect(Self.readAll(entry, from: 0) == body)
        let other = try #require(reopened.entry(for: "http://h/b.mp3", etag: "\"v1\"", totalSize: body.count))
        other.store(body[...], at: 0)
        #expect(Self.readAll(other, from: 0) == body)
        // Used again, the entry is stamped with the clock of now, not of 2262.
        let now = DiskCache.now()
        #expect(CacheFile.modificationTime(dir + "/" + index) <= now + 1_000_000_000, "stamped now")
    }

    @Test func sparseRanges_afterSeeks() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let body = Self.bytes(12 * Self.block)
        let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        let entry = try #require(cache.entry(for: "http://h/s", etag: "e", totalSize: body.count))
        entry.store(body[0..<(3 * Self.block)], at: 0)
        // A seek lands mid-block: the part before the next boundary is not kept.
        let seek = 8 * Self.block + 100
        entry.store(body[seek..<(11 * Self.block)], at: seek)
        #expect(entry.cachedLength(from: 0) == 3 * Self.block)
        #expect(entry.cachedLength(from: 3 * Self.block) == 0)
        #expect(entry.cachedLength(from: 8 * Self.block) == 0)
        #expect(entry.cachedLength(from: 9 * Self.block) == 2 * Self.block)
        #expect(entry.cachedLength(from: 9 * Self.block + 10) == 2 * Self.block - 10)
        #expect(entry.read(at: 5 * Self.block) == nil)
        #expect(Self.readAll(entry, from: 9 * Self.block) == Array(body[(9 * Self.block)..<(11 * Self.block)]))
        #expect(!entry.isComplete)
    }

    @Test func unknownSize_keepsOnlyWholeBlocks() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        let entry = try #require(cache.entry(for: "http://h/live", etag: "e", totalSize: nil))
        entry.store(Self.bytes(2 * Self.block + 500)[...], at: 0)
        #expect(entry.cachedLength(from: 0) == 2 * Self.block)
        #expect(!entry.isComplete)
    }

    @Test func newETag_replacesTheEntry() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        let old = try #require(cache.entry(for: "http://h/x", etag: "v1", totalSize: Self.block))
        old.store(Self.bytes(Self.block)[...], at: 0)
        let new = try #require(cache.entry(for: "http://h/x", etag: "v2", totalSize: Self.block))
        #expect(new.cachedLength(from: 0) == 0)
        #expect(old.read(at: 0) == nil, "the old version is gone, even through a reference held to it")
        #expect(cache.entry(for: "http://h/x")?.etag == "v2")
        #expect(cache.storedBytes == 0)
    }

    @Test func lruBound_evictsTheLeastRecentlyUsedEntry() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache = try DiskCache(directory: dir, capacityBytes: 3 * Self.block, blockSize: Self.block)
        let a = try #require(cache.entry(for: "http://h/a", etag: "e", totalSize: Self.block))
        a.store(Self.bytes(Self.block, seed: 1)[...], at: 0)
        let b = try #require(cache.entry(for: "http://h/b", etag: "e", totalSize: Self.block))
        b.store(Self.bytes(Self.block, seed: 2)[...], at: 0)
        #expect(a.read(at: 0) != nil)             // a is now more recent than b
        let c = try #require(cache.entry(for: "http://h/c", etag: "e", totalSize: 2 * Self.block))
        c.store(Self.bytes(2 * Self.block, seed: 3)[...], at: 0)
        #expect(cache.storedBytes == 3 * Self.block)
        #expect(c.isComplete)
        #expect(a.read(at: 0) == Self.bytes(Self.block, seed: 1))
        #expect(b.read(at: 0) == nil)
        #expect(cache.entry(for: "http://h/b") == nil)
        // The order holds across a restart: reopening and adding more evicts a before c's use.
        let reopened = try DiskCache(directory: dir, capacityBytes: 3 * Self.block, blockSize: Self.block)
        #expect(reopened.storedBytes == 3 * Self.block)
        _ = try #require(reopened.entry(for: "http://h/c")).read(at: 0)
        let d = try #require(reopened.entry(for: "http://h/d", etag: "e", totalSize: Self.block))
        d.store(Self.bytes(Self.block)[...], at: 0)
        #expect(reopened.entry(for: "http://h/a") == nil)
        #expect(reopened.entry(for: "http://h/c")?.isComplete == true)
    }

    @Test func entryLargerThanTheBound_storesWhatFits_andNeverPassesIt() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache = try DiskCache(directory: dir, capacityBytes: 2 * Self.block + 10, blockSize: Self.block)
        let big = try #require(cache.entry(for: "http://h/big", etag: "e", totalSize: 6 * Self.block))
        big.store(Self.bytes(6 * Self.block)[...], at: 0)
        #expect(cache.storedBytes == 2 * Self.block)
        #expect(big.cachedLength(from: 0) == 2 * Self.block)
    }

    @Test func smallerBoundOnReopen_evictsUntilItFits() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
            for name in ["a", "b", "c"] {
                try #require(cache.entry(for: "http://h/\(name)", etag: "e", totalSize: Self.block)).store(Self.bytes(Self.block)[...], at: 0)
            }
        }
        let small = try DiskCache(directory: dir, capacityBytes: Self.block, blockSize: Self.block)
        #expect(small.storedBytes == Self.block)
        #expect(small.entry(for: "http://h/c") != nil, "the most recent stays")
    }

    /// Damages the data file of the only entry in `dir` with `damage`, then checks the block is
    /// refused (read nil, index withdrawn, also after a reopen) and can be stored again.
    func damagedData_isRefused(_ damage: (FileHandle, Int) throws -> Void) throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let body = Self.bytes(3 * Self.block)
        let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        let entry = try #require(cache.entry(for: "http://h/d", etag: "e", totalSize: body.count))
        entry.store(body[...], at: 0)
        let dataPath = "\(dir)/\(DiskCache.key("http://h/d")).data"
        let handle = try #require(FileHandle(forUpdatingAtPath: dataPath))
        try damage(handle, body.count)
        try handle.close()
        #expect(entry.read(at: 0) == Array(body[0..<Self.block]), "block 0 is intact")
        #expect(entry.read(at: 2 * Self.block + 7) == nil, "the damaged block is refused")
        #expect(entry.cachedLength(from: 0) == 2 * Self.block, "and withdrawn from the index")
        let reopened = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        let again = try #require(reopened.entry(for: "http://h/d"))
        #expect(again.cachedLength(from: 0) == 2 * Self.block, "the withdrawal is on disk")
        again.store(body[(2 * Self.block)...], at: 2 * Self.block)
        #expect(Self.readAll(again, from: 0) == body, "refetched bytes are stored again")
    }

    @Test func flippedByte_isDetected() throws {
        try damagedData_isRefused { handle, size in
            try handle.seek(toOffset: UInt64(size - 5))
            let byte = try #require(try handle.read(upToCount: 1)).first ?? 0
            try handle.seek(toOffset: UInt64(size - 5))
            try handle.write(contentsOf: [byte ^ 0x40])
        }
    }

    @Test func truncatedData_isDetected() throws {
        try damagedData_isRefused { handle, size in try handle.truncate(atOffset: UInt64(size - 100)) }
    }

    @Test func damagedIndexHeader_dropsTheEntry() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
            try #require(cache.entry(for: "http://h/i", etag: "e", totalSize: Self.block)).store(Self.bytes(Self.block)[...], at: 0)
        }
        let indexPath = "\(dir)/\(DiskCache.key("http://h/i")).idx"
        var index = try [UInt8](Data(contentsOf: URL(fileURLWithPath: indexPath)))
        index[12] ^= 1                                  // inside the total size
        try Data(index).write(to: URL(fileURLWithPath: indexPath))
        let reopened = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        #expect(reopened.entry(for: "http://h/i") == nil)
        #expect(reopened.storedBytes == 0)
        #expect(!FileManager.default.fileExists(atPath: indexPath))
    }

    @Test func tornIndexRecord_keepsTheRecordsBeforeIt() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let body = Self.bytes(3 * Self.block)
        do {
            let cache = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
            try #require(cache.entry(for: "http://h/t", etag: "e", totalSize: body.count)).store(body[...], at: 0)
        }
        let indexPath = "\(dir)/\(DiskCache.key("http://h/t")).idx"
        var index = try [UInt8](Data(contentsOf: URL(fileURLWithPath: indexPath)))
        index.removeLast(9)                              // the last record torn in half
        try Data(index).write(to: URL(fileURLWithPath: indexPath))
        let reopened = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        let entry = try #require(reopened.entry(for: "http://h/t"))
        #expect(entry.cachedLength(from: 0) == 2 * Self.block)
        entry.store(body[(2 * Self.block)...], at: 2 * Self.block)
        #expect(Self.readAll(entry, from: 0) == body)
        let third = try DiskCache(directory: dir, capacityBytes: 1 << 20, blockSize: Self.block)
        #expect(try #require(third.entry(for: "http://h/t")).isComplete, "the new record follows the valid ones")
    }

    @Test func hostileIndex_isRefusedWithoutTrapping() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let valid = CacheIndex(url: "http://h/z", etag: "e", totalSize: 5000, blockSize: Self.block).encodedHeader()
        // Records that lie: a block past the size, a length over the block size, a zero-length withdrawal.
        let lies = CacheIndex.encodedRecord(block: 1_000_000, length: 10, crc: 0)
        let tooLong = CacheIndex.encodedRecord(block: 0, length: Self.block + 1, crc: 0)
        for bytes in [[], Array(valid.prefix(9)), valid + lies, valid + tooLong, Array(repeating: 0xFF, count: 400)] {
            #expect(CacheIndex.parse(bytes)?.blocks.isEmpty ?? true)
        }
        var huge = Array("SPCACHE1".utf8) + [0, 4, 0, 0] + [UInt8](repeating: 0xFE, count: 8)
        huge += [0xFF, 0xFF]
        #expect(CacheIndex.parse(huge) == nil)
    }
}
