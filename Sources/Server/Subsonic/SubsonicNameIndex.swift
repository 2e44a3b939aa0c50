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
    /// Word i is `bytes[starts[i] ..< starts[i + 1]]`, the words in byte order (one word's ids
    /// ascending), all in one array: an array per word made each comparison of the binary search
    /// and of the walk retain and release one (most of a search's time in this index).
    private var bytes: [UInt8] = []
    private var starts: [Int] = [0]
    private var ids: [Int] = []

    /// From `(id, name)` rows.
    init(_ rows: [(Int, String)]) {
        var pairs: [([UInt8], Int)] = []
        pairs.reserveCapacity(rows.count * 3)
        for (id, name) in rows {
            for word in Set(Self.words(name)) { pairs.append((word, id)) }
        }
        pairs.sort { $0.0.lexicographicallyPrecedes($1.0) || ($0.0 == $1.0 && $0.1 < $1.1) }
        starts.reserveCapacity(pairs.count + 1)
        ids.reserveCapacity(pairs.count)
        for (word, id) in pairs {
            bytes.append(contentsOf: word)
            starts.append(bytes.count)
            ids.append(id)
        }
    }

    /// A name's or a query's words: runs of letters and digits, folded; at most 16.
    static func words(_ text: String) -> [[UInt8]] {
        let folded = text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        return folded.split(whereSeparator: { !($0.isLetter || $0.isNumber) }).prefix(16).map { Array($0.lowercased().utf8) }
    }

    /// The ids whose name has a word beginning with each of `terms`, ascending; empty for no terms.
    func ids(matching terms: [[UInt8]]) -> [Int] {
        var found: [Int]?
        // The longest term first: it begins the fewest words.
        for term in terms.sorted(by: { $0.count > $1.count }) {
            var matching = ids(beginning: term)
            if let earlier = found { matching = Self.intersection(earlier, matching) }
            if matching.isEmpty { return [] }
            found = matching
        }
        return found ?? []
    }

    /// The ids with a word beginning with `term`, ascending, each once.
    private func ids(beginning term: [UInt8]) -> [Int] {
        var matching: [Int] = []
        bytes.withUnsafeBufferPointer { all in
            term.withUnsafeBufferPointer { term in
                // The first word not before `term`, then every word it begins.
                var low = 0, high = ids.count
                while low < high {
                    let middle = (low + high) / 2
                    if precedes(middle, term, all) { low = middle + 1 } else { high = middle }
                }
                var i = low
                while i < ids.count, begins(i, term, all) {
                    matching.append(ids[i])
                    i += 1
                }
            }
        }
        matching.sort()
        var unique: [Int] = []
        unique.reserveCapacity(matching.count)
        for id in matching where id != unique.last { unique.append(id) }
        return unique
    }

    /// Whether word `i` is before `term` in byte order.
    private func precedes(_ i: Int, _ term: UnsafeBufferPointer<UInt8>, _ all: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = starts[i], count = starts[i + 1] - start
        for k in 0..<min(count, term.count) where all[start + k] != term[k] { return all[start + k] < term[k] }
        return count < term.count
    }

    /// Whether word `i` begins with `term`.
    private func begins(_ i: Int, _ term: UnsafeBufferPointer<UInt8>, _ all: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = starts[i]
        guard starts[i + 1] - start >= term.count else { return false }
        for k in 0..<term.count where all[start + k] != term[k] { return false }
        return true
    }

    /// The ids in both ascending lists, ascending.
    static func intersection(_ a: [Int], _ b: [Int]) -> [Int] {
        var both: [Int] = []
        var i = 0, j = 0
        while i < a.count, j < b.count {
            if a[i] < b[j] { i += 1 } else if a[i] > b[j] { j += 1 } else {
                both.append(a[i])
                i += 1
                j += 1
            }
        }
        return both
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
