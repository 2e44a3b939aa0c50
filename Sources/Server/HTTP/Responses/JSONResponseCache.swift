import StreamShared

/// Recent generated answers by a key (the library API's request target; a Subsonic call's
/// parameters without its credentials, with its user), each valid only for the catalog
/// generation it was built from (`LibraryStore.generation`), least recently used evicted first
/// beyond `capacityBytes` (counted with each target and a fixed overhead: an answer of three
/// bytes under an 8 KB target must not count as three). A page the library page or a client asks again (the first albums,
/// a prefix typed by several listeners) is then sent without reading the database or writing
/// JSON again; a change to the catalog makes every entry stale at once.
package final class JSONResponseCache: @unchecked Sendable {
    // @unchecked: every property is read and written under `lock`.
    package struct Entry {
        package var body: [UInt8]
        package var headers: [(String, String)]
        package var etag: String

        package init(body: [UInt8], headers: [(String, String)]) {
            self.body = body
            self.headers = headers
            etag = JSONResponse.etag(of: body, headers: headers)
        }
    }

    private let lock = Lock(())
    private let capacityBytes: Int
    private let admitOnSecondRequest: Bool
    private var entries: [String: (generation: UInt64, entry: Entry, used: UInt64)] = [:]
    private var bytes = 0
    private var clock: UInt64 = 0
    /// Hashes of the targets answered once and not kept (with `admitOnSecondRequest`).
    private var seenOnce: Set<Int> = []
    /// Targets `seenOnce` remembers at most (8 bytes each); when full it starts over.
    static let seenOnceLimit = 16_384

    /// With `admitOnSecondRequest`, an answer is kept only when its target was answered before
    /// (and not kept): pages at random offsets and queries nobody repeats would otherwise fill
    /// the cache and push out the answers that are asked again (the first pages, the common
    /// prefixes typed into the search box), each such answer costing its copy for nothing.
    package init(capacityBytes: Int, admitOnSecondRequest: Bool = false) {
        self.capacityBytes = capacityBytes
        self.admitOnSecondRequest = admitOnSecondRequest
    }

    /// Bytes an entry counts for beyond its body: the dictionary slot, the headers and the tag.
    static let entryOverhead = 256

    /// What keeping `entry` under `target` costs against the capacity: its body, its key (up to
    /// the 8 KB request line, whatever the answer's size) and `entryOverhead`.
    static func cost(_ target: String, _ entry: Entry) -> Int {
        entry.body.count + target.utf8.count + entryOverhead
    }

    package func lookup(_ target: String, generation: UInt64) -> Entry? {
        lock.withLock { _ in
            guard let found = entries[target] else { return nil }
            guard found.generation == generation else {
                entries[target] = nil
                bytes -= Self.cost(target, found.entry)
                // It was asked again before: its new answer is kept at once.
                if admitOnSecondRequest { remember(target) }
                return nil
            }
            clock += 1
            entries[target]?.used = clock
            return found.entry
        }
    }

    private func remember(_ target: String) {
        if seenOnce.count >= Self.seenOnceLimit { seenOnce.removeAll(keepingCapacity: true) }
        seenOnce.insert(target.hashValue)
    }

    /// Keeps `entry` unless it alone is more than an eighth of the capacity (or, with
    /// `admitOnSecondRequest`, its target is new).
    package func insert(_ target: String, generation: UInt64, _ entry: Entry) {
        let cost = Self.cost(target, entry)
        guard cost <= capacityBytes / 8 else { return }
        lock.withLock { _ in
            if admitOnSecondRequest && entries[target] == nil {
                guard seenOnce.remove(target.hashValue) != nil else {
                    remember(target)
                    return
                }
            }
            if let old = entries[target] { bytes -= Self.cost(target, old.entry) }
            clock += 1
            entries[target] = (generation, entry, clock)
            bytes += cost
            // Evict the least recently used: a scan of the few hundred entries that fit, once per
            // eviction batch (down to three quarters, so a full cache does not scan on every insert).
            if bytes > capacityBytes {
                let ordered = entries.sorted { $0.value.used < $1.value.used }
                for (key, value) in ordered where bytes > capacityBytes * 3 / 4 {
                    entries[key] = nil
                    bytes -= Self.cost(key, value.entry)
                }
            }
        }
    }
}
