import Foundation
import StreamShared
import StreamLibrary

/// The words of every album's title or every album artist's name, for search2/search3's albums
/// and artists: each word folded (lower case, no diacritics: as the catalog's FTS5 index folds
/// them) as bytes, sorted, beside the row id it belongs to. A query's words are prefixes: each
/// is a binary search and a walk over the words it begins; the ids having every word are the
/// answer, in id order. The FTS5 column queries this replaces cost 0.4-0.9 ms each at 100,000
/// tracks (two a search); this is tens of microseconds.
struct SubsonicNameIndex: Sendable {
    private var words: [[UInt8]] = []
    private var ids: [Int] = []

    /// From `(id, name)` rows.
    init(_ rows: [(Int, String)]) {
        var pairs: [([UInt8], Int)] = []
        pairs.reserveCapacity(rows.count * 3)
        for (id, name) in rows {
            for word in Set(Self.words(name)) { pairs.append((word, id)) }
        }
        pairs.sort { $0.0.lexicographicallyPrecedes($1.0) || ($0.0 == $1.0 && $0.1 < $1.1) }
        words = pairs.map(\.0)
        ids = pairs.map(\.1)
    }

    /// A name's or a query's words: runs of letters and digits, folded; at most 16.
    static func words(_ text: String) -> [[UInt8]] {
        let folded = text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        return folded.split(whereSeparator: { !($0.isLetter || $0.isNumber) }).prefix(16).map { Array($0.lowercased().utf8) }
    }

    /// The ids whose name has a word beginning with each of `terms`, ascending; empty for no terms.
    func ids(matching terms: [[UInt8]]) -> [Int] {
        guard !terms.isEmpty else { return [] }
        // One word (most searches): its ids gathered, sorted and made unique, no set.
        if terms.count == 1 {
            var matching: [Int] = []
            var i = lowerBound(terms[0])
            while i < words.count, words[i].starts(with: terms[0]) {
                matching.append(ids[i])
                i += 1
            }
            matching.sort()
            var unique: [Int] = []
            unique.reserveCapacity(matching.count)
            for id in matching where id != unique.last { unique.append(id) }
            return unique
        }
        var found: Set<Int>?
        // The longest term first: it begins the fewest words.
        for term in terms.sorted(by: { $0.count > $1.count }) {
            var matching = Set<Int>()
            var i = lowerBound(term)
            while i < words.count, words[i].starts(with: term) {
                if found?.contains(ids[i]) ?? true { matching.insert(ids[i]) }
                i += 1
            }
            found = matching
            if matching.isEmpty { return [] }
        }
        return (found ?? []).sorted()
    }

    /// The first index whose word is not before `term`.
    private func lowerBound(_ term: [UInt8]) -> Int {
        var low = 0, high = words.count
        while low < high {
            let middle = (low + high) / 2
            if words[middle].lexicographicallyPrecedes(term) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// The album and artist name indexes, built once per catalog generation.
final class SubsonicNameIndexes: Sendable {
    private let built = Lock<[String: (generation: UInt64, index: SubsonicNameIndex)]>([:])

    /// The index of `key` ("albums", "artists") for the catalog as it is, read with `sql`
    /// (rows of id and name) when the catalog changed since it was last built.
    func index(_ key: String, store: LibraryStore, sql: String) throws(SQLiteError) -> SubsonicNameIndex {
        let generation = store.generation
        if let hit = built.withLock({ $0[key] }), hit.generation == generation { return hit.index }
        let rows = try store.read { db throws(SQLiteError) in try db.query(sql) { ($0.int(0), $0.text(1)) } }
        let index = SubsonicNameIndex(rows)
        built.withLock { $0[key] = (generation, index) }
        return index
    }
}
