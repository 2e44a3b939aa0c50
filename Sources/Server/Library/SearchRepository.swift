#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP

/// Search: FTS5 queries over `tracks_fts`, and the in-memory copy of its index (`SearchIndex`) that answers most of them.
public struct SearchRepository: Sendable {
    let store: LibraryStore

    /// The FTS5 query for what a user typed: each word a quoted prefix term, all of them required.
    /// nil when there is no word (punctuation only).
    public static func ftsQuery(_ text: String) -> String? {
        let terms = searchWords(text).map { "\"\($0)\"*" }
        return terms.isEmpty ? nil : terms.joined(separator: " ")
    }

    /// The words of what a user typed that a search looks for (each a prefix): runs of letters
    /// and digits, the first 16, each cut to 64 characters.
    static func searchWords(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                current.unicodeScalars.append(scalar)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return words.prefix(16).map { String($0.prefix(64)) }
    }

    /// Matches up to which `search` ranks by bm25. Ranking costs 1.5-11 µs a match (at 100,000
    /// tracks: 13,000 matches of "river" 20-30 ms, 32,000 of "a" 85 ms, 1,500 of two prefixes
    /// 17 ms), and the prefixes typed into a search box reach thousands at once; up to 200 it is
    /// about 2 ms. Whether there are more is read from the index's first 201 rows, not a count.
    static let rankedMatchLimit = 200

    /// Tracks whose title, artist or album match every word of `query` as a prefix, best first,
    /// at most `limit`. Up to `rankedMatchLimit` matches are ranked by bm25 (a title hit weighing
    /// most); beyond that, the tracks whose title holds every word come first, then the others,
    /// each group in catalog order, read from the index only as far as the page goes.
    public func tracks(query: String, limit: Int) throws(SQLiteError) -> [Track] {
        var rows: [Track] = []
        try forEach(query: query, limit: limit) { rows.append(TrackRepository.row($0)) }
        return rows
    }

    /// The ids `tracks(query:limit:)` answers with, best first, for routes that read the rows
    /// their own way (Subsonic's search).
    public func trackIDs(query: String, limit: Int) throws(SQLiteError) -> [Int] {
        let index = currentIndex()
        return try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in try Self.ids(query: query, limit: limit, db, index: index) }
        }
    }

    /// The ids of the tracks matching every word of `query` as a prefix (as `trackIDs`), without
    /// bm25: the tracks whose title holds every word first, then the others, each group in
    /// catalog (row id) order, at most `limit`; Subsonic's search, whose clients show songs as
    /// they come and page through them. From the in-memory index, no SQLite read, when it is
    /// current and every word is plain ASCII; else from FTS5, in the same order. With
    /// `readIndexNow`, a caller finding the index not current while the catalog is settled and
    /// no build runs reads it now on its own thread (off the loop: a client's first search waits
    /// for it, as the first getAlbumList2 waits for the albums); otherwise the background build
    /// starts as for `trackIDs`.
    public func unrankedTrackIDs(query: String, limit: Int, readIndexNow: Bool) throws(SQLiteError) -> [Int] {
        let words = Self.searchWords(query)
        guard limit > 0, !words.isEmpty else { return [] }
        if let prefixes = SearchIndex.terms(words), let index = readIndexNow ? currentIndexReadingNow() : currentIndex(),
           case .ids(let ids) = index.search(prefixes: prefixes, limit: limit, rankedMatchLimit: 0) {
            return ids
        }
        return try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in try Self.ids(query: query, limit: limit, db, index: nil, rankedMatchLimit: 0) }
        }
    }

    /// `tracks(query:limit:)` handing each row to `body` as the statement's row (`TrackRepository.columns`).
    public func forEach(query: String, limit: Int, _ body: (SQLiteDatabase.Statement) -> Void) throws(SQLiteError) {
        let index = currentIndex()
        try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                let ids = try Self.ids(query: query, limit: limit, db, index: index)
                guard !ids.isEmpty else { return }
                try db.each("SELECT \(TrackRepository.columns) FROM tracks t WHERE t.id = ?", keys: ids, body)
            }
        }
    }

    /// `tracks(query:limit:)` handing each track's `/api/tracks` item to `body` (`TrackRepository.forEachJSON`).
    public func forEachJSON(query: String, limit: Int, _ body: (UnsafeRawBufferPointer) -> Void) throws(SQLiteError) {
        let index = currentIndex()
        try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                try TrackRepository.eachJSON(ids: try Self.ids(query: query, limit: limit, db, index: index), db, body)
            }
        }
    }

    /// The ids `search` answers with, from FTS5 alone (`inMemoryIndex` false) or from the
    /// in-memory index where it can (true: read first when it is not current). What the tests
    /// compare.
    func ids(query: String, limit: Int, inMemoryIndex: Bool) throws(SQLiteError) -> [Int] {
        var index: SearchIndex?
        if inMemoryIndex {
            index = currentIndex(startBuilding: false)
            if index == nil { index = try buildIndex() }
        }
        return try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in try Self.ids(query: query, limit: limit, db, index: index) }
        }
    }

    /// The ids `search` answers with, best first: only the search index is read (the rows are
    /// read by id after, one prepared statement for them all). With `index` (current), a query
    /// of plain ASCII words is answered from it, and FTS5 only ranks 1 to `rankedMatchLimit`
    /// matches (bm25).
    /// With `rankedMatchLimit` 0 nothing is ranked: every answer is title hits, then the others.
    static func ids(query: String, limit: Int, _ db: SQLiteDatabase, index: SearchIndex?,
                    rankedMatchLimit: Int = Self.rankedMatchLimit) throws(SQLiteError) -> [Int] {
        guard limit > 0 else { return [] }
        let words = searchWords(query)
        guard !words.isEmpty else { return [] }
        let match = words.map { "\"\($0)\"*" }.joined(separator: " ")
        if let index, let prefixes = SearchIndex.terms(words) {
            switch index.search(prefixes: prefixes, limit: limit, rankedMatchLimit: rankedMatchLimit) {
            case .ids(let ids): return ids
            case .fewMatches: return try rankedIDs(match: match, limit: limit, db)
            }
        }
        let inOrder = "SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ? ORDER BY rowid LIMIT ?"
        // The first matches in catalog order tell whether there are few enough to rank, and are
        // the first of the others once the title hits are placed.
        var asked = rankedMatchLimit + 1
        var matches = try db.query(inOrder, [.text(match), .int(Int64(asked))]) { $0.int(0) }
        if matches.count <= rankedMatchLimit { return try rankedIDs(match: match, limit: limit, db) }
        var ids = try db.query(inOrder, [.text("{title} : (\(match))"), .int(Int64(limit))]) { $0.int(0) }
        guard ids.count < limit else { return ids }
        // Fewer title hits than the page holds: these are all of them, so the rest of the page is
        // the other matches in catalog order, read on from where the first read stopped (one
        // pass of the index instead of a second query that negates the first).
        let titleHits = Set(ids)
        let after = "SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ? AND rowid > ? ORDER BY rowid LIMIT ?"
        while true {
            for id in matches where !titleHits.contains(id) {
                ids.append(id)
                if ids.count == limit { return ids }
            }
            guard matches.count == asked, let last = matches.last else { return ids }
            asked = max(limit, 256)
            matches = try db.query(after, [.text(match), .int(Int64(last)), .int(Int64(asked))]) { $0.int(0) }
        }
    }

    /// The matches of the FTS5 query `match` ranked by bm25 (a title hit weighing most), then path.
    static func rankedIDs(match: String, limit: Int, _ db: SQLiteDatabase) throws(SQLiteError) -> [Int] {
        try db.query("""
            SELECT t.id FROM tracks_fts JOIN tracks t ON t.id = tracks_fts.rowid
            WHERE tracks_fts MATCH ? ORDER BY bm25(tracks_fts, 10.0, 5.0, 3.0), t.path LIMIT ?
            """, [.text(match), .int(Int64(limit))]) { $0.int(0) }
    }

    // MARK: the in-memory search index

    /// The in-memory search index when it is current (built at this generation); else nil, and
    /// a build is started in the background (`startBuilding`) unless one runs or this
    /// generation's failed.
    func currentIndex(startBuilding: Bool = true) -> SearchIndex? {
        let now = store.generation
        return store.withSearchIndexState { state in
            if let index = state.index {
                if index.generation == now { return index }
                // A stale index is let go at once: never two in memory while the next is read.
                if index.generation < now { state.index = nil }
            }
            guard startBuilding, !state.building, !state.stopped, state.failedGeneration != now else { return nil }
            // Started holding the state's lock, so a stop finds the thread it is to join (the
            // thread's first step waits for the lock). Holds the store only while a step runs: a
            // store dropped meanwhile ends the thread. Pauses are slept a tenth of a second at a
            // time, so a stop is seen soon.
            state.building = true
            do {
                state.builder = try NativeThread(name: "search index") { [weak owner = store] in
                    while let pause = owner.flatMap({ SearchRepository(store: $0).buildStep() }) { usleep(useconds_t(min(pause / 1_000, 100_000))) }
                }
            } catch {
                // No thread: the next search asks again.
                state.building = false
            }
            return nil
        }
    }

    /// `currentIndex()`, but when it is not current, the catalog has settled, no build runs and
    /// the last build's duty cycle allows, the index is read now on the caller's thread (nil when
    /// a write came in meanwhile or it cannot be held: the caller answers from FTS5).
    func currentIndexReadingNow() -> SearchIndex? {
        let generation = store.generation
        let now = DispatchTime.now().uptimeNanoseconds
        let wait = waitBeforeReading(now: now)
        let claim: (index: SearchIndex?, readNow: Bool) = store.withSearchIndexState { state in
            if let index = state.index {
                if index.generation == generation { return (index, false) }
                if index.generation < generation { state.index = nil }
            }
            guard wait == nil, !state.building, !state.stopped, state.failedGeneration != generation else { return (nil, false) }
            state.building = true
            return (nil, true)
        }
        if let index = claim.index { return index }
        guard claim.readNow else { return currentIndex() }
        // On a failure FTS5 answers (and says what is wrong, if it is the database).
        let read = readIndex(startedAt: now)
        store.withSearchIndexState { $0.building = false }
        return read.index
    }

    /// Nanoseconds to wait before the index may be read at `now` (nil: it may be read now): the
    /// catalog must have settled, and a library that changes every few seconds would have the
    /// index read again after each change, so reads take at most a tenth of the time (FTS5
    /// answers in between).
    private func waitBeforeReading(now: UInt64) -> UInt64? {
        let quiet = now &- store.lastWriteNanos.load(ordering: .acquiring)
        if quiet < Self.settleNanos { return Self.settleNanos - quiet }
        let due = store.withSearchIndexState { $0.lastBuildEnd &+ $0.lastBuildCost &* (Self.dutyCycle - 1) }
        return now < due ? due - now : nil
    }

    /// Reads the index (`buildIndex`), begun at `start`, and records the read's end and cost for
    /// the duty cycle. `over`: nothing more to try for this generation (read, or it failed).
    private func readIndex(startedAt start: UInt64) -> (index: SearchIndex?, over: Bool) {
        let attempted = store.generation
        do {
            let index = try buildIndex()
            let end = DispatchTime.now().uptimeNanoseconds
            let failed = store.withSearchIndexState { state in
                state.lastBuildEnd = end
                state.lastBuildCost = end &- start
                return state.failedGeneration == attempted
            }
            return (index, index != nil || failed)
        } catch {
            store.withSearchIndexState { $0.failedGeneration = attempted }
            return (nil, true)
        }
    }

    /// How long the catalog must have been unchanged before the index is read: a scan writes a
    /// chunk every fraction of a second, and an index read between two writes would be stale at once.
    static let settleNanos: UInt64 = 300_000_000

    /// Reads of the index take at most one part in this many of the wall clock: a read of 0.4 s
    /// waits 3.6 s after the one before.
    static let dutyCycle: UInt64 = 10

    /// One step of the background build: nil when it is over (the index is current, or cannot
    /// be built for this generation), else how long to wait before the next step. It waits until
    /// writes settle, reads the index and publishes it when no write came in the meantime.
    func buildStep() -> UInt64? {
        let stopped = store.withSearchIndexState { state in
            if state.stopped { state.building = false }
            return state.stopped
        }
        if stopped { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        if let wait = waitBeforeReading(now: now) { return wait }
        let done = readIndex(startedAt: now).over
        if done { store.withSearchIndexState { $0.building = false } }
        return done ? nil : 1_000_000
    }

    /// Reads the in-memory index now and publishes it when the catalog did not change meanwhile;
    /// returns it then (nil when a write came in: it is stale; or when it cannot be held here,
    /// which marks this generation failed).
    @discardableResult
    func buildIndex() throws(SQLiteError) -> SearchIndex? {
        let before = store.generation
        let built = try store.read { db throws(SQLiteError) -> SearchIndex? in
            try db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS \(SearchIndex.vocabularyTable) USING fts5vocab(main, tracks_fts, instance)")
            return try db.reading { () throws(SQLiteError) in try SearchIndex.build(db, generation: before) }
        }
        guard store.generation == before else { return nil }
        return store.withSearchIndexState { state in
            guard let built else {
                state.failedGeneration = before
                return nil
            }
            if let index = state.index, index.generation == before { return index }
            state.index = built
            return built
        }
    }

    /// Search-index segments above which `compact` merges them.
    public static let maxSegments = 4

    /// Merges the search index into one segment when writes have left it in more than
    /// `maxSegments` (each transaction that adds tracks writes a segment; FTS5's automerge keeps
    /// several per level). A query then reads one doclist per term instead of one per segment: at
    /// 100,000 tracks, 9 segments after a first scan made a two-word search's index work about
    /// 560 µs of CPU, one segment 390 µs. Answers do not change. Returns the segments it merged
    /// into one, nil when there were not more than `maxSegments`.
    @discardableResult
    public func compact(maxSegments: Int = Self.maxSegments) throws(SQLiteError) -> Int? {
        try store.write { db throws(SQLiteError) in
            let segments = try Self.segments(db)
            guard segments > maxSegments else { return nil }
            try db.execute("INSERT INTO tracks_fts(tracks_fts) VALUES('optimize')")
            return segments
        }
    }

    /// Segments of the search index now.
    public func segments() throws(SQLiteError) -> Int {
        try store.read { db throws(SQLiteError) in try Self.segments(db) }
    }

    static func segments(_ db: SQLiteDatabase) throws(SQLiteError) -> Int {
        try db.queryOne("SELECT count(DISTINCT segid) FROM tracks_fts_idx") { $0.int(0) } ?? 0
    }
}

/// The in-memory search index's state, kept by the store (one per database) under its lock.
extension LibraryStore {
    func withSearchIndexState<T>(_ body: (inout SearchIndexState) -> T) -> T {
        searchIndexLock.withLock { _ in body(&searchIndexStorage) }
    }

    /// The in-memory index's state, under its lock.
    struct SearchIndexState {
        var index: SearchIndex?
        var building = false
        /// A generation whose build failed (a database error, or ids it cannot hold): not tried again.
        var failedGeneration: UInt64?
        /// When the last build ended and how long it took (`DispatchTime` nanoseconds).
        var lastBuildEnd: UInt64 = 0
        var lastBuildCost: UInt64 = 0
        /// Set by `stopSearchIndexBuilds`: no build starts or goes on.
        var stopped = false
        /// The last build thread started: joined by `stopSearchIndexBuilds` (one that ended on
        /// its own is let go when the next starts).
        var builder: NativeThread?
    }

    /// Shutdown: stops the thread that reads the in-memory index, if one runs, and waits for it
    /// until `deadline` (monotonic ns), so no read holds the database while it is closed. True
    /// once no build thread runs.
    @discardableResult
    public func stopSearchIndexBuilds(deadline: UInt64) -> Bool {
        let builder: NativeThread? = withSearchIndexState { state in
            state.stopped = true
            return state.builder
        }
        // A thread already joined (by an earlier stop) or ended is found ended at once.
        return builder?.join(until: Monotonic(nanoseconds: deadline)) ?? true
    }
}
