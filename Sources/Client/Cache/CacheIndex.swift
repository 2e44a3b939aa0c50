import StreamShared

/// The on-disk index of one cache entry: a header naming the resource (URL, ETag, size, block
/// size), then one 16-byte record per stored block. Every part carries a CRC-32, so a torn or
/// damaged index is noticed: a bad header discards the entry, a bad record ends the list there.
///
/// Header: "SPCACHE1", u32 block size, u64 total size (all ones: unknown), u16 + URL bytes,
/// u16 + ETag bytes, u32 CRC of everything before it. Record: u32 block number, u32 length,
/// u32 CRC of the block's bytes, u32 CRC of the first 12 bytes of the record. All little-endian.
/// A record of length 0 withdraws the block (it was found corrupt).
struct CacheIndex: Equatable {
    static let magic = Array("SPCACHE1".utf8)
    static let recordSize = 16
    /// Longest URL or ETag kept; longer ones are not cached.
    static let maxText = 8192

    var url: String
    var etag: String
    var totalSize: Int?
    var blockSize: Int

    struct Block: Equatable {
        var length: Int
        var crc: UInt32
    }

    /// The header bytes.
    func encodedHeader() -> [UInt8] {
        var out = Self.magic
        out += le32(UInt32(blockSize))
        out += le64(totalSize.map { UInt64($0) } ?? UInt64.max)
        for text in [url, etag] {
            let bytes = Array(text.utf8)
            out += [UInt8(bytes.count & 0xFF), UInt8(bytes.count >> 8)]
            out += bytes
        }
        out += le32(CRC32.checksum(out))
        return out
    }

    static func encodedRecord(block: Int, length: Int, crc: UInt32) -> [UInt8] {
        var out = le32(UInt32(truncatingIfNeeded: block)) + le32(UInt32(truncatingIfNeeded: length)) + le32(crc)
        out += le32(CRC32.checksum(out))
        return out
    }

    /// Parses an index file's bytes: the header and the blocks its valid records leave, and how
    /// many bytes of the file are valid (the rest is a torn record to cut off). nil when the
    /// header is not intact: the entry cannot be trusted at all.
    static func parse(_ bytes: [UInt8]) -> (index: CacheIndex, blocks: [Int: Block], validLength: Int)? {
        var reader = LittleEndianReader(bytes)
        guard reader.take(magic.count) == magic[...],
              let blockSize = reader.u32(), blockSize > 0, blockSize <= 1 << 24,
              let total = reader.u64(),
              let url = reader.text(), let etag = reader.text() else { return nil }
        let headerEnd = reader.offset
        guard let crc = reader.u32(), crc == CRC32.checksum(bytes[0..<headerEnd]) else { return nil }
        let totalSize: Int? = total == UInt64.max ? nil : (total <= UInt64(InputLimits.maxBytes) ? Int(total) : -1)
        guard totalSize != -1 else { return nil }
        let index = CacheIndex(url: url, etag: etag, totalSize: totalSize, blockSize: Int(blockSize))
        var blocks: [Int: Block] = [:]
        var valid = reader.offset
        while let record = reader.take(recordSize) {
            let start = record.startIndex
            let stored = UInt32(record[start + 12]) | UInt32(record[start + 13]) << 8
                | UInt32(record[start + 14]) << 16 | UInt32(record[start + 15]) << 24
            guard stored == CRC32.checksum(record[start..<(start + 12)]) else { break }
            var fields = LittleEndianReader(Array(record))
            guard let block = fields.u32(), let length = fields.u32(), let dataCRC = fields.u32() else { break }
            let number = Int(block), size = Int(length)
            // A record that does not fit the resource is as bad as a broken one.
            guard size <= index.blockSize,
                  index.totalSize.map({ number * index.blockSize + size <= $0 }) ?? true else { break }
            if size == 0 { blocks[number] = nil } else { blocks[number] = Block(length: size, crc: dataCRC) }
            valid = reader.offset
        }
        return (index, blocks, valid)
    }
}


private func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
private func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

/// A bounds-checked little-endian cursor for the index: nil when the bytes run out.
private struct LittleEndianReader {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
        guard n >= 0, bytes.count - offset >= n else { return nil }
        defer { offset += n }
        return bytes[offset..<(offset + n)]
    }

    mutating func u32() -> UInt32? {
        take(4).map { $0.reversed().reduce(0) { $0 << 8 | UInt32($1) } }
    }

    mutating func u64() -> UInt64? {
        take(8).map { $0.reversed().reduce(0) { $0 << 8 | UInt64($1) } }
    }

    mutating func text() -> String? {
        guard let length = take(2).map({ Int($0[$0.startIndex]) | Int($0[$0.startIndex + 1]) << 8 }),
              length <= CacheIndex.maxText, let raw = take(length) else { return nil }
        return String(decoding: raw, as: UTF8.self)
    }
}
