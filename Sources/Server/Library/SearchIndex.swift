import StreamHTTP
/// An in-memory copy of the catalog's FTS5 search index (`tracks_fts`), read from FTS5 itself
/// (`fts5vocab`, one row per token instance), so its terms are exactly the ones unicode61 made
/// (case folded, diacritics removed, split where FTS5 splits). It answers the searches whose
/// words are plain ASCII letters and digits, the only query tokens whose folding is known here
/// for sure (ASCII A-Z to a-z, nothing else changes); any other word goes to FTS5.
///
/// Each term has the rows that hold it, with a bit per column (title, artist, album). A term in
/// at least one row in 16 is kept as two bitsets over the row ids (any column; the title), the
/// others as a sorted list: a prefix's rows are then a few word-wide ORs and ANDs instead of
/// FTS5's doclist decoding (about 0.4 ms a search at 100,000 tracks).
///
/// Immutable once built: shared by every reader, valid while the catalog's `generation` is the
/// one it was built at.
final class SearchIndex: Sendable {
    /// The catalog generation it was read at.
    let generation: UInt64
    /// Rows a bitset covers: the largest row id + 1.
    let rowLimit: Int
    /// 64-bit words per bitset.
    let wordsPerSet: Int
    /// Term i is `termBytes[termStarts[i] ..< termStarts[i + 1]]`, in byte order (FTS5's).
    private let termBytes: [UInt8]
    private let termStarts: [UInt32]
    /// The list of a sparse term i: `postingRows[postingStarts[i] ..< postingStarts[i + 1]]`
    /// (empty for a dense term), with its columns in `postingColumns`.
    private let postingStarts: [UInt32]
    private let postingRows: [UInt32]
    private let postingColumns: [UInt8]
    /// The bitsets of a dense term: slot `denseSlots[i]` (-1 for a sparse term) of `denseAny`
    /// and `denseTitle`, `wordsPerSet` words each.
    private let denseSlots: [Int32]
    private let denseAny: [UInt64]
    private let denseTitle: [UInt64]

    /// Column bits of a posting.
    static let titleBit: UInt8 = 1
    static let artistBit: UInt8 = 2
    static let albumBit: UInt8 = 4

    /// Row ids above this are not indexed here (the bitsets would be too large): FTS5 answers.
    static let maxRowID = 1 << 26

    /// The most memory the index may take (about 64 bytes a track: 6.5 MB at 100,000): a larger
    /// library is searched by FTS5 alone rather than held twice.
    static let maxBytes = 32 << 20

    /// Terms in the index.
    var termCount: Int { termStarts.count - 1 }

    private init(generation: UInt64, rowLimit: Int, termBytes: [UInt8], termStarts: [UInt32], postingStarts: [UInt32],
                 postingRows: [UInt32], postingColumns: [UInt8], denseSlots: [Int32], denseAny: [UInt64], denseTitle: [UInt64]) {
        self.generation = generation
        self.rowLimit = rowLimit
        wordsPerSet = (rowLimit + 63) / 64
        self.termBytes = termBytes
        self.termStarts = termStarts
        self.postingStarts = postingStarts
        self.postingRows = postingRows
        self.postingColumns = postingColumns
        self.denseSlots = denseSlots
        self.denseAny = denseAny
        self.denseTitle = denseTitle
    }

    // MARK: building

    /// The name of the `fts5vocab` table the index is read through (temp: each connection has its own).
    static let vocabularyTable = "temp.tracks_fts_instances"

    /// Reads the search index of `db` (in the caller's read transaction, so that `tracks` and
    /// `tracks_fts` are one snapshot); nil when it cannot be held here (row ids beyond
    /// `maxRowID`, more than `maxBytes`, or terms not in the order expected), and FTS5 answers instead.
    static func build(_ db: SQLiteDatabase, generation: UInt64) throws(SQLiteError) -> SearchIndex? {
        let top = try LibraryStore.largestTrackID(db)
        guard top >= 0, top < maxRowID, top * 64 <= maxBytes else { return nil }
        let rowLimit = top + 1
        let wordsPerSet = (rowLimit + 63) / 64
        // A term in one row in 16 costs no more as two bitsets (rows / 4 bytes) than as a list (5 bytes a row).
        let denseThreshold = max(64, rowLimit / 16)

        var termBytes: [UInt8] = []
        var termStarts: [UInt32] = [0]
        var postingStarts: [UInt32] = [0]
        var postingRows: [UInt32] = []
        var postingColumns: [UInt8] = []
        var denseSlots: [Int32] = []
        var denseAny: [UInt64] = []
        var denseTitle: [UInt64] = []
        // The term being read: its rows and columns (a row once, its columns ORed).
        var rows: [UInt32] = []
        var columns: [UInt8] = []
        var current: [UInt8] = []
        var hasTerm = false
        var ordered = true

        func finishTerm() {
            termBytes.append(contentsOf: current)
            termStarts.append(UInt32(termBytes.count))
            if rows.count >= denseThreshold {
                denseSlots.append(Int32(denseAny.count / wordsPerSet))
                let base = denseAny.count
                denseAny.append(contentsOf: repeatElement(0, count: wordsPerSet))
                denseTitle.append(contentsOf: repeatElement(0, count: wordsPerSet))
                for (row, column) in zip(rows, columns) {
                    let word = base + Int(row >> 6), bit = UInt64(1) << (row & 63)
                    denseAny[word] |= bit
                    if column & titleBit != 0 { denseTitle[word] |= bit }
                }
            } else {
                denseSlots.append(-1)
                postingRows.append(contentsOf: rows)
                postingColumns.append(contentsOf: columns)
            }
            postingStarts.append(UInt32(postingRows.count))
            rows.removeAll(keepingCapacity: true)
            columns.removeAll(keepingCapacity: true)
        }

        var held = 0
        try db.each("SELECT term, doc, col FROM \(vocabularyTable)") { row in
            guard ordered, held <= maxBytes else { return }
            let term = row.textBytes(0)
            let doc = row.int(1)
            let name = row.textBytes(2)
            let column: UInt8 = name.first == UInt8(ascii: "t") ? titleBit
                : name.count > 1 && name[1] == UInt8(ascii: "r") ? artistBit : albumBit
            guard doc >= 0, doc < rowLimit else { ordered = false; return }
            if !hasTerm || !term.elementsEqual(current) {
                if hasTerm {
                    guard precedes(current, term) else { ordered = false; return }
                    finishTerm()
                    held = termBytes.count + 12 * termStarts.count + 5 * postingRows.count + 16 * denseAny.count
                }
                current.removeAll(keepingCapacity: true)
                current.append(contentsOf: term)
                hasTerm = true
            }
            let id = UInt32(doc)
            if let last = rows.last, last == id {
                columns[columns.count - 1] |= column
            } else {
                guard rows.last.map({ $0 < id }) ?? true else { ordered = false; return }
                rows.append(id)
                columns.append(column)
            }
        }
        guard ordered, held <= maxBytes else { return nil }
        if hasTerm { finishTerm() }
        return SearchIndex(generation: generation, rowLimit: rowLimit, termBytes: termBytes, termStarts: termStarts,
                           postingStarts: postingStarts, postingRows: postingRows, postingColumns: postingColumns,
                           denseSlots: denseSlots, denseAny: denseAny, denseTitle: denseTitle)
    }

    /// Byte order (memcmp, then the shorter first): FTS5's order of terms.
    static func precedes<A: Collection<UInt8>, B: Collection<UInt8>>(_ a: A, _ b: B) -> Bool {
        a.lexicographicallyPrecedes(b)
    }

    // MARK: searching

    /// What the index says of a search.
    package enum Answer: Equatable {
        /// The ids, best first (more than `rankedMatchLimit` matched: title hits, then the others).
        case ids([Int])
        /// Between 1 and `rankedMatchLimit` rows match: FTS5 ranks them (bm25).
        case fewMatches
    }

    /// The words of a search as index terms (ASCII lowercased), or nil when one is not plain
    /// ASCII letters and digits: such a word goes to FTS5, whose folding of it is not known here.
    static func terms(_ words: [String]) -> [[UInt8]]? {
        var result: [[UInt8]] = []
        result.reserveCapacity(words.count)
        for word in words {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(word.utf8.count)
            for byte in word.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): bytes.append(byte)
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): bytes.append(byte + 32)
                default: return nil
                }
            }
            if bytes.isEmpty { return nil }
            result.append(bytes)
        }
        return result.isEmpty ? nil : result
    }

    /// The rows holding a term that starts with every one of `prefixes` (lowercase ASCII, from
    /// `terms`), as `SearchRepository.ids` orders them: with more than `rankedMatchLimit`
    /// matches, the first `limit` of the title hits (every prefix in the title) in row order,
    /// then the other matches in row order; with 1 to `rankedMatchLimit`, `.fewMatches`.
    func search(prefixes: [[UInt8]], limit: Int, rankedMatchLimit: Int) -> Answer {
        guard limit > 0, !prefixes.isEmpty else { return .ids([]) }
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(prefixes.count)
        for prefix in prefixes {
            let range = termRange(prefix)
            if range.isEmpty { return .ids([]) }
            ranges.append(range)
        }
        let count = wordsPerSet
        // A word that is one dense term is read from its bitsets where they are; the others'
        // terms are ORed into bitsets of their own.
        let builtWords = ranges.count { !($0.count == 1 && denseSlots[$0.lowerBound] >= 0) }
        var built = [UInt64](repeating: 0, count: 2 * count * builtWords)
        return built.withUnsafeMutableBufferPointer { built in
            denseAny.withUnsafeBufferPointer { denseAny in
                denseTitle.withUnsafeBufferPointer { denseTitle in
                    var any: [UnsafePointer<UInt64>] = []
                    var title: [UnsafePointer<UInt64>] = []
                    var next = 0
                    for range in ranges {
                        let slot = Int(denseSlots[range.lowerBound])
                        if range.count == 1, slot >= 0 {
                            any.append(denseAny.baseAddress! + slot * count)
                            title.append(denseTitle.baseAddress! + slot * count)
                        } else {
                            let a = built.baseAddress! + next * 2 * count, t = a + count
                            fill(range, a, t)
                            any.append(UnsafePointer(a))
                            title.append(UnsafePointer(t))
                            next += 1
                        }
                    }
                    return Self.answer(any: any, title: title, words: count, limit: limit, rankedMatchLimit: rankedMatchLimit)
                }
            }
        }
    }

    /// The answer from each word's bitsets (their AND is the matches; of the titles', the title hits).
    private static func answer(any: [UnsafePointer<UInt64>], title: [UnsafePointer<UInt64>], words count: Int,
                               limit: Int, rankedMatchLimit: Int) -> Answer {
        func matchWord(_ i: Int) -> UInt64 {
            var word = any[0][i]
            for k in 1..<any.count { word &= any[k][i] }
            return word
        }
        func titleWord(_ i: Int) -> UInt64 {
            var word = title[0][i]
            for k in 1..<title.count { word &= title[k][i] }
            return word
        }
        // How many match, counted only as far as the ranking limit.
        var matches = 0
        for i in 0..<count {
            matches += matchWord(i).nonzeroBitCount
            if matches > rankedMatchLimit { break }
        }
        if matches == 0 { return .ids([]) }
        if matches <= rankedMatchLimit { return .fewMatches }
        var ids: [Int] = []
        ids.reserveCapacity(limit)
        // The title hits in row order, then the other matches in row order.
        for pass in 0..<2 {
            for i in 0..<count {
                var word = pass == 0 ? titleWord(i) : matchWord(i) & ~titleWord(i)
                while word != 0 {
                    ids.append(i << 6 | word.trailingZeroBitCount)
                    if ids.count == limit { return .ids(ids) }
                    word &= word - 1
                }
            }
        }
        return .ids(ids)
    }

    /// ORs into `any` and `title` (`wordsPerSet` words each, zero on entry) the rows of every term in `range`.
    private func fill(_ range: Range<Int>, _ a: UnsafeMutablePointer<UInt64>, _ t: UnsafeMutablePointer<UInt64>) {
        let count = wordsPerSet
        postingRows.withUnsafeBufferPointer { rows in
            postingColumns.withUnsafeBufferPointer { columns in
                denseAny.withUnsafeBufferPointer { da in
                    denseTitle.withUnsafeBufferPointer { dt in
                        for term in range {
                            let slot = denseSlots[term]
                            if slot >= 0 {
                                let base = Int(slot) * count
                                for i in 0..<count {
                                    a[i] |= da[base + i]
                                    t[i] |= dt[base + i]
                                }
                                continue
                            }
                            for p in Int(postingStarts[term])..<Int(postingStarts[term + 1]) {
                                let row = rows[p]
                                let word = Int(row >> 6), bit = UInt64(1) << (row & 63)
                                a[word] |= bit
                                if columns[p] & Self.titleBit != 0 { t[word] |= bit }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The terms that start with `prefix`: a range of the sorted terms.
    func termRange(_ prefix: [UInt8]) -> Range<Int> {
        termBytes.withUnsafeBufferPointer { bytes in
            termStarts.withUnsafeBufferPointer { starts in
                // -1, 0, 1: the term's first prefix.count bytes before, equal to, after the prefix.
                func compare(_ term: Int) -> Int {
                    let start = Int(starts[term]), end = Int(starts[term + 1])
                    let n = min(end - start, prefix.count)
                    for i in 0..<n where bytes[start + i] != prefix[i] {
                        return bytes[start + i] < prefix[i] ? -1 : 1
                    }
                    return end - start < prefix.count ? -1 : 0
                }
                let terms = starts.count - 1
                var low = 0, high = terms
                while low < high {
                    let mid = (low + high) / 2
                    if compare(mid) < 0 { low = mid + 1 } else { high = mid }
                }
                var upper = low, end = terms
                while upper < end {
                    let mid = (upper + end) / 2
                    if compare(mid) <= 0 { upper = mid + 1 } else { end = mid }
                }
                return low..<upper
            }
        }
    }
}
