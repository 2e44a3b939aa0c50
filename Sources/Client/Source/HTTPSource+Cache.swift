import StreamShared
import Logging

/// The disk cache in the HTTP source (`--cache-dir`): bytes the cache holds for the URL are
/// written into the throttle from disk, block by block, each checked against its CRC-32, and
/// no request is made for them; the network fills the gaps (each request bounded by the next
/// cached byte) and what it brings is stored. Before an entry is first played, one one-byte
/// request checks that the server still holds that version (same ETag and size): a stale entry
/// is dropped and the track streams anew; a server that cannot be reached within
/// `revalidationTimeout` leaves the entry in use (replay offline). Requests carry `If-Range` with
/// the cached ETag: a server whose file changed during playback answers 200, the entry is
/// dropped, and playback stops as for any file changed while playing (`SourceError.changed`).
extension HTTPSource {
    /// Plays cached bytes from `offset` until a gap, the end, a seek or a stop. nil when the
    /// cache has nothing at `offset`; else the offset reached and whether it is the resource's end.
    func serveFromCache(into throttle: Throttle, from offset: Int, control: SourceControl,
                        generation: Int) -> (offset: Int, reachedEnd: Bool)? {
        guard let cache = options.cache, let entry = cache.entry(for: name) else { return nil }
        guard adoptCachedVersion(entry, control: control) else { return nil }
        if let total = entry.totalSize, offset >= total { return (offset, true) }
        var at = offset
        var served = false
        while !control.isStopped && !control.hasSeek, let bytes = entry.read(at: at), !bytes.isEmpty {
            var written = 0
            while written < bytes.count && !control.isStopped && !control.hasSeek {
                let n = bytes.withUnsafeBytes { raw in
                    throttle.write(UnsafeRawBufferPointer(rebasing: raw[written...]), generation: generation)
                }
                written += n
                // Full: the reader pokes the control when it has room again (onSpaceAvailable).
                if n == 0 { control.waitForCommand(timeout: 0.05) }
            }
            at += written
            served = true
            if let total = entry.totalSize, at >= total { return (at, true) }
        }
        if served { logger?.debug("source: \(at - offset) bytes from the disk cache from byte \(offset)") }
        return served ? (at, false) : nil
    }

    /// The bytes of `range` when the disk cache holds every one of them (verified block by
    /// block), else nil: a replay reads an MP4's moov at the end without a request.
    public func cachedBytes(_ range: Range<Int>) -> [UInt8]? {
        guard let entry = options.cache?.entry(for: name), entry.cachedLength(from: range.lowerBound) >= range.count else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(range.count)
        while bytes.count < range.count {
            guard let block = entry.read(at: range.lowerBound + bytes.count), !block.isEmpty else { return nil }
            bytes += block.prefix(range.count - bytes.count)
        }
        return bytes
    }

    /// The start of the next cached bytes after `offset` (where a gap-filling request stops).
    func cachedStart(after offset: Int) -> Int? {
        guard let entry = options.cache?.entry(for: name) else { return nil }
        return entry.nextCachedOffset(after: offset)
    }

    /// How long the check of a cached entry may wait for the server before the entry is played
    /// as it is: a stopped server on loopback refuses at once, a vanished remote one must not
    /// hold up an offline replay for the whole connect timeout.
    static let revalidationTimeout = 1.5

    /// The first time this source meets its cached entry: checks it against the server (a stale
    /// one is dropped: false), then its ETag becomes the one requests validate against
    /// (`If-Range`), and its size the resource's.
    private func adoptCachedVersion(_ entry: CacheEntry, control: SourceControl) -> Bool {
        guard etag == nil else { return true }
        do {
            let now = try currentVersion(timeout: Self.revalidationTimeout)
            if now.etag != entry.etag || (entry.totalSize.map { $0 != now.size } ?? false) {
                logger?.debug("source: the cached copy of \(name) is stale (ETag \(entry.etag) → \(now.etag ?? "none")); fetching it again")
                options.cache?.remove(url: name)
                return false
            }
        } catch {
            // Not reachable (or not answering as before): the cached bytes are all there is.
            logger?.debug("source: cannot revalidate the cached copy (\(error)); playing it as cached")
        }
        etag = entry.etag
        control.setTotalSize(entry.totalSize)
        return true
    }
}

extension HTTPSource.Transfer {
    /// Hands bytes just written to the throttle to the cache entry of this response's version
    /// (created when the response names an ETag and its size is known).
    func storeInCache(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        guard let cache, !bytes.isEmpty else { return }
        if cacheEntry == nil {
            guard let tag = etag, !tag.hasPrefix("W/"), let total = control.totalSize else { return }
            cacheEntry = cache.entry(for: url, etag: tag, totalSize: total)
            self.cache = cacheEntry == nil ? nil : cache
        }
        cacheEntry?.store(ArraySlice(bytes.bindMemory(to: UInt8.self)), at: offset)
    }
}
