import Foundation
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
@testable import StreamShared

/// The in-memory search index (`SearchIndex`) against FTS5: on a library of tricky tags (accents,
/// punctuation, apostrophes, digits, mixed case, repeated words, other scripts), every query
/// gives the same ids in the same order both ways, before and after the catalog changes.
@Suite struct SearchIndexTests {
    typealias Fixture = LibraryStoreTests

    /// Words the tags are made of: plain ones common enough for more than 200 matches, and the
    /// ones whose tokens only FTS5 knows how to fold and split.
    static let words = [
        "river", "Rivers", "riverside", "rive", "RIVER", "blue", "Blue", "BLUES", "a", "an", "the", "of", "Dawn", "dawning",
        "Café", "cafe", "CAFÉ", "Crème", "Brûlée", "naïve", "Ñandú", "Zoë", "Åsa", "Øresund", "Ærø", "façade", "Dvořák",
        "Łódź", "İstanbul", "ǅemal", "straße", "STRASSE", "café́", "ﬁne", "ＡＢＣ", "①②", "½", "Ⅻ",
        "O'Brien", "rock'n'roll", "don't", "AC/DC", "R.E.M.", "P!nk", "Ke$ha", "+44", "7-11", "x86_64", "mp3", "R2D2",
        "1999", "2001", "007", "0042", "Beyoncé", "Sigur Rós", "Mötley Crüe", "under_score", "semi;colon", "tab\there",
        "東京", "東京タワー", "Москва", "москва", "Ελλάδα", "ελλαδα", "مرحبا", "שלום", "한국어", "ไทย", "🎵", "rEvErB",
    ]

    /// A deterministic generator (the tests must not depend on the run).
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        mutating func words(_ count: Int) -> String {
            (0..<count).map { _ in
                // Every third word from the first eight: "river", "blue" and their kin match hundreds.
                next(3) == 0 ? SearchIndexTests.words[next(8)] : SearchIndexTests.words[next(SearchIndexTests.words.count)]
            }.joined(separator: next(4) == 0 ? " - " : " ")
        }
    }

    static func library(_ count: Int, seed: UInt64, prefix: String = "t") -> [LibraryChange] {
        var g = Generator(state: seed)
        return (0..<count).map { n in
            let title: String? = g.next(20) == 0 ? nil : g.words(1 + g.next(4))
            let artist: String? = g.next(10) == 0 ? nil : g.words(1 + g.next(3))
            let album: String? = g.next(10) == 0 ? nil : g.words(1 + g.next(3))
            let albumArtist: String? = g.next(8) == 0 ? "Various Artists" : nil
            // The path breaks bm25 ties: not in the order of the ids.
            let path = String(format: "%@/%05d %@.mp3", prefix, (n * 7_919) % 100_003, "x")
            return .track(path: path, stamp: Fixture.stamp(n),
                          analysis: Fixture.analysis(title: title, artist: artist, album: album, albumArtist: albumArtist))
        }
    }

    /// What a listener types: prefixes of every word of the tags, whole words, pairs, and odd input.
    static func queries() -> [String] {
        var queries: [String] = ["riv blu", "o brien", "rock n roll", "don t", "ac dc", "r e m", "x86", "86", "0", "00", "1",
                                 "caf", "cafe", "crem", "dvor", "lodz", "istan", "strasse", "stra", "fine", "abc", "xii",
                                 "the of a", "a a a", "RIVER river", "zzz", "river zzz", "v", "various", "artists",
                                 "!!!", "\"", "riv\"er", "café", "Москва", "東京", "ελλ", "ñandu", "nandu", "zoe", "asa",
                                 "oresund", "aero", "aer", "be", "beyon", "motley", "crue", "under", "score", "tab", "reverb"]
        for word in words {
            queries.append(word)
            queries.append(word.uppercased())
            let folded = Array(word.lowercased())
            for length in 1...min(folded.count, 6) { queries.append(String(folded.prefix(length))) }
        }
        var g = Generator(state: 99)
        for _ in 0..<150 {
            let a = Array(words[g.next(words.count)].lowercased()), b = Array(words[g.next(8)].lowercased())
            queries.append(String(a.prefix(1 + g.next(a.count))) + " " + String(b.prefix(1 + g.next(b.count))))
        }
        return queries
    }

    /// Every query at several limits: the same ids, in the same order, from FTS5 and from the index.
    static func expectSameAnswers(_ store: LibraryStore, _ note: String) throws -> (answered: Int, big: Int, few: Int) {
        let index = try #require(try store.search.buildIndex(), "the index is built (\(note))")
        var answered = 0, big = 0, few = 0
        for query in queries() {
            let words = SearchRepository.searchWords(query)
            if let prefixes = SearchIndex.terms(words) {
                answered += 1
                switch index.search(prefixes: prefixes, limit: 1000, rankedMatchLimit: SearchRepository.rankedMatchLimit) {
                case .ids(let ids): if ids.count > SearchRepository.rankedMatchLimit { big += 1 }
                case .fewMatches: few += 1
                }
            }
            for limit in [1, 7, 101, 250, 1000] {
                let fts = try store.search.ids(query: query, limit: limit, inMemoryIndex: false)
                let memory = try store.search.ids(query: query, limit: limit, inMemoryIndex: true)
                // Compared first: the expectation would print both lists whole.
                let same = memory == fts
                #expect(same, "\(note): q=\(query) limit=\(limit): \(memory.count) ids \(memory.prefix(12)) against FTS5's \(fts.count) \(fts.prefix(12))")
            }
        }
        return (answered, big, few)
    }

    @Test func sameAnswersAsFTS5_onTrickyTags_beforeAndAfterChanges() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try LibraryStore(path: dir.appendingPathComponent("catalog.db").path, folder: "/music")
        try store.apply(Self.library(1_500, seed: 7))
        let first = try Self.expectSameAnswers(store, "first write")
        #expect(first.answered > 300, "most queries are plain ASCII words the index answers itself")
        #expect(first.big > 20, "queries with more than 200 matches (title hits first, then the others)")
        #expect(first.few > 20, "queries with 1 to 200 matches (ranked by FTS5)")

        // Renames, removals and new tracks: the index read before is not used, the next one agrees again.
        let before = try #require(try store.search.buildIndex())
        var changes = Self.library(300, seed: 8, prefix: "t")
        changes += (0..<200).map { LibraryChange.removed(path: String(format: "t/%05d x.mp3", ($0 * 3 * 7_919) % 100_003)) }
        changes += Self.library(100, seed: 9, prefix: "u")
        try store.apply(changes)
        #expect(store.generation != before.generation)
        _ = try Self.expectSameAnswers(store, "after changes")
    }

    /// Waits (at most 30 s: a hang guard; it takes milliseconds) for the background build.
    static func waitForCurrentIndex(_ store: LibraryStore) throws -> SearchIndex {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let index = store.search.currentIndex(startBuilding: false) { return index }
            usleep(10_000)
        }
        throw SQLiteError(code: 0, message: "the search index was not built in 30 s", context: "test")
    }

    /// A search that finds the index missing or stale is answered by FTS5 and has it read again
    /// in the background; a write makes it stale at once, so no answer comes from an index
    /// older than the catalog.
    @Test func staleIndex_isNotUsed_andIsReadAgainInTheBackground() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try LibraryStore(path: dir.appendingPathComponent("catalog.db").path, folder: "/music")
        try store.apply(Self.library(600, seed: 3))
        #expect(store.search.currentIndex(startBuilding: false) == nil, "nothing is read before a search asks")
        let first = try store.search.tracks(query: "riv", limit: 1000).map(\.path)
        let index = try Self.waitForCurrentIndex(store)
        #expect(index.generation == store.generation)
        #expect(try store.search.tracks(query: "riv", limit: 1000).map(\.path) == first, "the same answer from the index")

        try store.apply([.track(path: "new/rivulet.mp3", stamp: Fixture.stamp(9_000), analysis: Fixture.analysis(title: "Rivulet"))])
        #expect(store.search.currentIndex(startBuilding: false) == nil, "stale after a write")
        #expect(try store.search.tracks(query: "rivulet", limit: 10).map(\.path) == ["new/rivulet.mp3"], "FTS5 answers meanwhile")
        let again = try Self.waitForCurrentIndex(store)
        #expect(again.generation == store.generation && again !== index, "read again once writes settled")
        #expect(try store.search.tracks(query: "rivulet", limit: 10).map(\.path) == ["new/rivulet.mp3"])
        #expect(try store.search.ids(query: "riv", limit: 1000, inMemoryIndex: true)
                == (try store.search.ids(query: "riv", limit: 1000, inMemoryIndex: false)))
    }

    /// Shutdown: the thread reading the index stops when asked (it waits for a write to settle
    /// here), and no read starts after, so the database can be closed with no read on it.
    @Test func stopSearchIndexBuilds_endsTheReadingThread_andNoneStartsAfter() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try LibraryStore(path: dir.appendingPathComponent("catalog.db").path, folder: "/music")
        try store.apply(Self.library(300, seed: 5))
        _ = try store.search.tracks(query: "riv", limit: 10)   // starts the thread, which waits for the write to settle
        #expect(store.withSearchIndexState { $0.building }, "a read is under way")
        let started = Date()
        #expect(store.stopSearchIndexBuilds(deadline: monotonicNanos() + 2_000_000_000), "the thread ended")
        #expect(Date().timeIntervalSince(started) < 1, "a stop is seen within a pause's slice")
        #expect(!store.withSearchIndexState { $0.building })
        _ = try store.search.tracks(query: "riv", limit: 10)
        #expect(!store.withSearchIndexState { $0.building }, "no read starts once stopped")
        #expect(store.search.currentIndex(startBuilding: false) == nil)
        store.close()
    }

    @Test func termRanges_arePrefixesInByteOrder() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        try store.apply([
            .track(path: "a.mp3", stamp: Fixture.stamp(1), analysis: Fixture.analysis(title: "Rive River Riverside Rivet")),
            .track(path: "b.mp3", stamp: Fixture.stamp(2), analysis: Fixture.analysis(title: "Café riz")),
        ])
        let index = try #require(try store.search.buildIndex())
        func terms(_ prefix: String) -> Int { index.termRange(Array(prefix.utf8)).count }
        #expect(terms("riv") == 4 && terms("river") == 2 && terms("ri") == 5 && terms("rivets") == 0)
        #expect(terms("caf") == 1, "FTS5 folded café to cafe (remove_diacritics)")
        #expect(terms("") == index.termCount)
        #expect(SearchIndex.terms(["Café"]) == nil, "a word that is not plain ASCII goes to FTS5")
        #expect(SearchIndex.terms(["RiV", "09"]) == [Array("riv".utf8), Array("09".utf8)])
    }
}

/// Subsonic's song search (`unrankedTrackIDs`): the in-memory index and FTS5 give the same ids
/// in the same order (title hits, then the others, each in row order) for every query, and the
/// index's answer is what a brute-force reading of the tags says.
@Suite struct UnrankedSearchTests {
    typealias Fixture = LibraryStoreTests

    /// FTS5's ids for `query` without ranking (`rankedMatchLimit` 0), read apart from the index.
    static func ftsIDs(_ store: LibraryStore, _ query: String, limit: Int) throws -> [Int] {
        try store.read { db throws(SQLiteError) in
            try db.reading { () throws(SQLiteError) in
                try SearchRepository.ids(query: query, limit: limit, db, index: nil, rankedMatchLimit: 0)
            }
        }
    }

    @Test func indexAndFTS5_giveTheSameUnrankedAnswers_onTrickyTags() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try LibraryStore(path: dir.appendingPathComponent("catalog.db").path, folder: "/music")
        try store.apply(SearchIndexTests.library(1_500, seed: 7))
        #expect(store.search.currentIndex(startBuilding: false) == nil)
        // The first search once the catalog has settled (300 ms after the write) reads the index
        // on its own thread; until then FTS5 answers (at most 30 s: a hang guard).
        let deadline = Date().addingTimeInterval(30)
        while store.search.currentIndex(startBuilding: false) == nil, Date() < deadline {
            #expect(try store.search.unrankedTrackIDs(query: "riv", limit: 20, readIndexNow: true) == (try Self.ftsIDs(store, "riv", limit: 20)))
            usleep(10_000)
        }
        let index = try #require(store.search.currentIndex(startBuilding: false), "read by a search")
        #expect(!store.withSearchIndexState { $0.building }, "read on the caller's thread, not in the background")
        var fromIndex = 0, few = 0
        for query in SearchIndexTests.queries() {
            if SearchIndex.terms(SearchRepository.searchWords(query)) != nil { fromIndex += 1 }
            let all = try Self.ftsIDs(store, query, limit: 100_000)
            if (1...SearchRepository.rankedMatchLimit).contains(all.count) { few += 1 }
            // The same tracks as FTS5's MATCH finds, each once.
            let matching = try SearchRepository.ftsQuery(query).map { match in
                try store.read { db throws(SQLiteError) in
                    try db.query("SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ? ORDER BY rowid", [.text(match)]) { $0.int(0) }
                }
            } ?? []
            #expect(all.sorted() == matching, "q=\(query): \(all.count) against MATCH's \(matching.count)")
            #expect(Set(all).count == all.count, "q=\(query): each track once")
            for limit in [1, 20, 250, 1000] {
                let memory = try store.search.unrankedTrackIDs(query: query, limit: limit, readIndexNow: true)
                let same = memory == Array(all.prefix(limit))
                #expect(same, "q=\(query) limit=\(limit): \(memory.prefix(12)) against FTS5's \(all.prefix(12))")
            }
        }
        #expect(fromIndex > 300 && few > 20, "most queries from the index, many with few matches (once ranked by bm25)")
        #expect(store.search.currentIndex(startBuilding: false) === index, "read once for the generation")
    }

    /// Plain ASCII tags (mixed case, punctuation): the answer is the tracks whose title, artist,
    /// album artist or album have a word beginning with each query word, those with every word
    /// in the title first, each group by row id.
    @Test func indexAnswers_equalABruteForceReading() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try LibraryStore(path: dir.appendingPathComponent("catalog.db").path, folder: "/music")
        let words = ["Amber", "amberly", "BLUE", "blues", "Cedar", "dawn", "Dawning", "echo", "Echoes", "falcon", "R.E.M.",
                     "rock'n'roll", "AC/DC", "x86_64", "1999", "007", "river", "Riverside", "rive", "a", "an"]
        var g = SearchIndexTests.Generator(state: 11)
        func text(_ count: Int) -> String { (0..<count).map { _ in words[g.next(words.count)] }.joined(separator: g.next(3) == 0 ? " - " : " ") }
        let changes: [LibraryChange] = (0..<1_200).map { n in
            .track(path: String(format: "p/%05d.mp3", (n * 7_919) % 100_003), stamp: Fixture.stamp(n),
                   analysis: Fixture.analysis(title: text(1 + g.next(3)), artist: g.next(6) == 0 ? nil : text(1 + g.next(2)),
                                              album: g.next(6) == 0 ? nil : text(1 + g.next(2)),
                                              albumArtist: g.next(5) == 0 ? text(1) : nil))
        }
        try store.apply(changes)
        #expect(try store.search.buildIndex() != nil)
        func folded(_ text: String?) -> [String] {
            (text ?? "").lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init)
        }
        let rows = try store.read { db throws(SQLiteError) in
            try db.query("SELECT id, sort_title, artist, album_artist, album FROM tracks ORDER BY id") { s in
                (id: s.int(0), title: folded(s.optionalText(1)),
                 any: folded(s.optionalText(1)) + folded(s.optionalText(2)) + folded(s.optionalText(3)) + folded(s.optionalText(4)))
            }
        }
        var queries = ["am", "amber", "AMBERL", "bl blu", "r e m", "rock n", "ac dc", "x86", "64", "19", "00", "riv", "rivers",
                       "dawn echo", "e", "a an", "zz", "river zz", "Cedar Falcon", "c f"]
        for _ in 0..<80 {
            let a = folded(words[g.next(words.count)]).first ?? "a", b = folded(words[g.next(words.count)]).first ?? "b"
            queries.append(String(a.prefix(1 + g.next(a.count))) + (g.next(2) == 0 ? "" : " " + String(b.prefix(1 + g.next(b.count)))))
        }
        for query in queries {
            let terms = folded(query)
            func has(_ words: [String]) -> Bool { terms.allSatisfy { term in words.contains { $0.hasPrefix(term) } } }
            let expected = rows.filter { has($0.title) }.map(\.id) + rows.filter { !has($0.title) && has($0.any) }.map(\.id)
            for limit in [20, 100_000] {
                let answer = try store.search.unrankedTrackIDs(query: query, limit: limit, readIndexNow: true)
                let same = answer == Array(expected.prefix(limit))
                #expect(same, "q=\(query) limit=\(limit): \(answer.prefix(12)) against \(expected.prefix(12)) (\(answer.count)/\(expected.count))")
            }
        }
    }
}
