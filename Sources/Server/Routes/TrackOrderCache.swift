import Foundation
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio
import StreamShared

/// The id of every track in each sort order `/api/tracks` was asked for, kept while the catalog
/// is unchanged (`LibraryStore.generation`), so that a page anywhere in the list costs its own
/// rows: with SQL's OFFSET every row before the page is walked (13 ms at offset 99,900 of
/// 100,000 by title). 8 bytes a track and order; rebuilt (50 ms at 100,000) after a change.
final class TrackOrderCache: @unchecked Sendable {
    // @unchecked: `orders` is read and written under `lock`; `buildLock` makes concurrent misses
    // wait for one build instead of each running the same query.
    private let lock = Lock(())
    private let buildLock = Lock(())
    private var orders: [TrackSort: (generation: UInt64, ids: [Int])] = [:]

    /// One page of tracks in `sort` order, and the number of tracks.
    func page(_ store: LibraryStore, offset: Int, limit: Int, sort: TrackSort) throws(SQLiteError) -> (total: Int, rows: [Track]) {
        let page = try pageIDs(store, offset: offset, limit: limit, sort: sort)
        return (page.total, try store.tracks.list(ids: page.ids))
    }

    /// The ids of one page of tracks in `sort` order, and the number of tracks.
    func pageIDs(_ store: LibraryStore, offset: Int, limit: Int, sort: TrackSort) throws(SQLiteError) -> (total: Int, ids: [Int]) {
        let ids = try self.ids(store, sort: sort)
        guard offset < ids.count, limit > 0 else { return (ids.count, []) }
        return (ids.count, Array(ids[offset..<(offset + min(limit, ids.count - offset))]))
    }

    /// Every track id in `sort` order (built once per catalog generation).
    func allIDs(_ store: LibraryStore, sort: TrackSort) throws(SQLiteError) -> [Int] {
        try ids(store, sort: sort)
    }

    private func ids(_ store: LibraryStore, sort: TrackSort) throws(SQLiteError) -> [Int] {
        // The generation is read before the ids: a change while they are read makes them stale
        // at the next request, never current with old contents.
        var generation = store.generation
        if let cached = lock.withLock({ _ in orders[sort] }), cached.generation == generation { return cached.ids }
        return try buildLock.withLock { _ throws(SQLiteError) in
            generation = store.generation
            if let cached = lock.withLock({ _ in orders[sort] }), cached.generation == generation { return cached.ids }
            let ids = try store.tracks.ids(sort: sort)
            lock.withLock { _ in orders[sort] = (generation, ids) }
            return ids
        }
    }
}
