import Foundation
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
@testable import StreamShared

/// The byte writer of `/api/tracks` and `/api/search` items writes exactly what
/// `Catalog.trackJSON` writes from the same row, whatever the text holds.
@Suite struct TrackJSONTests {
    typealias Fixture = LibraryStoreTests

    /// Tracks whose text needs every kind of escape, non-ASCII, NULL tags and odd numbers.
    static func awkwardStore() throws -> LibraryStore {
        let store = try Fixture.sampleStore()
        try store.apply([
            .track(path: "Quote \"Q\"/Back\\slash/01 Tab\there.mp3", stamp: FileStamp(size: 0, mtimeNanos: 0, inode: 0),
                   analysis: Fixture.analysis(title: "Line\nbreak\r\u{1}\u{1F}\"\\", artist: "Ünïcødé 音楽 🎵",
                                              album: "Percent % & ? # +", track: "7", duration: 0.000_000_4)),
            .track(path: "Deep/ñ/space name.mp3", stamp: FileStamp(size: Int(Int32.max) + 5, mtimeNanos: -5, inode: UInt64.max),
                   analysis: Fixture.analysis(title: "", artist: nil, album: nil, duration: 1234.567_890_123)),
        ])
        return store
    }

    @Test func items_matchTheStringWriter_byteForByte() throws {
        let store = try Self.awkwardStore()
        let rows = try store.tracks.page(offset: 0, limit: 100).rows
        #expect(rows.count == 9)
        let json = try TrackJSON.array { each throws(SQLiteError) in try store.tracks.forEach(ids: rows.map(\.id), each) }
        let expected = "[" + rows.map(Catalog.trackJSON).joined(separator: ",\n") + "]\n"
        #expect(String(decoding: json.bytes, as: UTF8.self) == expected)
        #expect(!json.more)
    }

    @Test func array_stopsAtTheLimit_andSaysThereIsMore() throws {
        let store = try Self.awkwardStore()
        let ids = try store.tracks.ids(sort: .title)
        let json = try TrackJSON.array(limit: 3) { each throws(SQLiteError) in try store.tracks.forEach(ids: ids, each) }
        let expected = try store.tracks.list(ids: Array(ids.prefix(3)))
        #expect(String(decoding: json.bytes, as: UTF8.self) == "[" + expected.map(Catalog.trackJSON).joined(separator: ",\n") + "]\n")
        #expect(json.more)
        let empty = try TrackJSON.array { each throws(SQLiteError) in try store.tracks.forEach(ids: [], each) }
        #expect(empty.bytes == Array("[]\n".utf8) && !empty.more)
    }

    @Test func forEachTrackByID_keepsTheOrderGiven_andSkipsIDsNoLongerListed() throws {
        let store = try Fixture.sampleStore()
        let ids = try store.tracks.ids(sort: .path)
        let wanted = [ids[3], 999_999, ids[0], ids[5]]
        #expect(try store.tracks.list(ids: wanted).map(\.id) == [ids[3], ids[0], ids[5]])
    }

    @Test func searchRows_areThoseOfTheRowSearch() throws {
        let store = try Self.awkwardStore()
        for query in ["band", "ünï", "line", "percent", "nothing-matches"] {
            let rows = try store.search.tracks(query: query, limit: 10)
            let json = try TrackJSON.array(limit: 10) { each throws(SQLiteError) in try store.search.forEach(query: query, limit: 11, each) }
            #expect(String(decoding: json.bytes, as: UTF8.self) == "[" + rows.map(Catalog.trackJSON).joined(separator: ",\n") + "]\n",
                    "\(query)")
        }
    }

    /// The item stored with a row (what pages and searches copy) is the one the column writer
    /// writes from the row as it stands, through inserts, changes in place and removals.
    @Test func storedItems_areTheColumnWritersItems_afterEveryChange() throws {
        let store = try Self.awkwardStore()
        func items(_ ids: [Int]) throws -> String {
            String(decoding: try TrackJSON.array(items: .max) { each throws(SQLiteError) in try store.tracks.forEachJSON(ids: ids, each) }.bytes,
                   as: UTF8.self)
        }
        func columns(_ ids: [Int]) throws -> String {
            String(decoding: try TrackJSON.array { each throws(SQLiteError) in try store.tracks.forEach(ids: ids, each) }.bytes, as: UTF8.self)
        }
        var ids = try store.tracks.ids(sort: .title)
        #expect(try items(ids) == columns(ids))
        #expect(try items(ids + [999_999]) == columns(ids), "an id no longer listed is left out")
        // Changed in place (same path, so the same id): the stored item follows.
        let path = "Quote \"Q\"/Back\\slash/01 Tab\there.mp3"
        try store.apply([.track(path: path, stamp: FileStamp(size: 7, mtimeNanos: 8, inode: 9),
                                analysis: Fixture.analysis(title: "Renamed \"again\"", artist: "Other", album: "Moved", duration: 3))])
        ids = try store.tracks.ids(sort: .title)
        let changed = try #require(try store.tracks.track(path: path))
        #expect(try items([changed.id]) == "[" + Catalog.trackJSON(changed) + "]\n")
        #expect(try items(ids) == columns(ids))
        try store.apply([.removed(path: path)])
        #expect(try items([changed.id]) == "[]\n")
        #expect(try items([]) == "[]\n")
    }

    /// Runs of consecutive ids (a page in path order) are read with one range scan: a run with
    /// a row whose stored item is missing, a removed id inside it, ids past the end, short runs
    /// and ids going down all give the items the column writer gives, in the order asked.
    @Test func storedItems_readInRuns_areTheColumnWritersItems() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        let store = try Fixture.sampleStore(path: path)
        let ids = try store.tracks.ids(sort: .path).sorted()
        try #require(ids.count == 7 && ids == Array(ids[0]...ids[6]), "the sample's ids are consecutive")
        func items(_ ids: [Int]) throws -> String {
            String(decoding: try TrackJSON.array(items: .max) { each throws(SQLiteError) in try store.tracks.forEachJSON(ids: ids, each) }.bytes,
                   as: UTF8.self)
        }
        func columns(_ ids: [Int]) throws -> String {
            String(decoding: try TrackJSON.array { each throws(SQLiteError) in try store.tracks.forEach(ids: ids, each) }.bytes, as: UTF8.self)
        }
        let other = try SQLiteDatabase(path: path)
        try other.run("DELETE FROM track_json WHERE id = ?", [.int(Int64(ids[2]))])
        let removed = try #require(try store.tracks.list(ids: [ids[4]]).first)
        try store.apply([.removed(path: removed.path)])
        let past = ids[6] + 1
        for asked in [ids, ids + [past, past + 1, past + 2, past + 3], [ids[0], ids[1]] + Array(ids[3...]), Array(ids.reversed()),
                      [ids[5], ids[6], ids[0], ids[1], ids[2], ids[3], ids[4]], [ids[1], ids[2], ids[3]]] {
            let answered = try items(asked)
            #expect(answered == (try columns(asked)), "\(asked)")
            #expect(!answered.contains(removed.title ?? "\u{0}"), "a removed track is left out")
        }
        #expect(try items(ids).components(separatedBy: "\"id\":").count - 1 == 6, "six of seven are still listed")
    }

    /// A database whose rows have no stored items (written before they were kept) answers from
    /// the columns, the same bytes, until `fillMissingTrackJSON` writes them.
    @Test func missingItems_areWrittenFromTheColumns_thenFilledIn() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        let store = try Fixture.sampleStore(path: path)
        let ids = try store.tracks.ids(sort: .path)
        let expected = "[" + (try store.tracks.list(ids: ids)).map(Catalog.trackJSON).joined(separator: ",\n") + "]\n"
        let other = try SQLiteDatabase(path: path)
        try other.execute("DELETE FROM track_json")
        func items() throws -> String {
            String(decoding: try TrackJSON.array(items: .max) { each throws(SQLiteError) in try store.tracks.forEachJSON(ids: ids, each) }.bytes,
                   as: UTF8.self)
        }
        #expect(try items() == expected)
        #expect(try store.fillMissingTrackJSON(batch: 3) == ids.count, "in batches of 3")
        #expect(try other.queryOne("SELECT count(*) FROM track_json") { $0.int(0) } == ids.count)
        #expect(try store.fillMissingTrackJSON() == 0)
        #expect(try items() == expected)
    }

    @Test func searchItems_areThoseOfTheRowSearch_inTheSameOrder() throws {
        let store = try Self.awkwardStore()
        for query in ["band", "ünï", "line", "percent", "o", "nothing-matches"] {
            let rows = try store.search.tracks(query: query, limit: 10)
            let json = try TrackJSON.array(items: 10) { each throws(SQLiteError) in try store.search.forEachJSON(query: query, limit: 11, each) }
            #expect(String(decoding: json.bytes, as: UTF8.self) == "[" + rows.map(Catalog.trackJSON).joined(separator: ",\n") + "]\n",
                    "\(query)")
            #expect(!json.more)
        }
        let two = try TrackJSON.array(items: 2) { each throws(SQLiteError) in try store.search.forEachJSON(query: "band", limit: 3, each) }
        #expect(two.more)
    }

    /// Key by key in one read transaction of its own, or inside the caller's.
    @Test func eachKey_inItsOwnTransaction_orTheCallers() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');")
        var seen: [String] = []
        try db.each("SELECT v FROM t WHERE id = ?", keys: [3, 9, 1, 1]) { seen.append($0.text(0)) }
        #expect(seen == ["c", "a", "a"])
        try db.transaction { () throws(SQLiteError) in
            try db.run("INSERT INTO t VALUES (4, 'd')")
            try db.each("SELECT v FROM t WHERE id = ?", keys: [4, 2]) { seen.append($0.text(0)) }
        }
        #expect(seen == ["c", "a", "a", "d", "b"])
        try db.execute("BEGIN IMMEDIATE; COMMIT;")   // no transaction was left open
    }

    @Test func numbers_areWrittenAsStringDoes() {
        for value in [0, 1, -1, 9, 10, 12_345, Int.max, Int.min + 1, Int.min, -987_654_321] {
            var out: [UInt8] = []
            JSONBytes.integer(value, &out)
            #expect(String(decoding: out, as: UTF8.self) == String(value))
        }
        for value: UInt64 in [0, 1, 15, 16, 0xdead_beef, UInt64.max] {
            var out: [UInt8] = []
            JSONBytes.hex(value, &out)
            #expect(String(decoding: out, as: UTF8.self) == String(value, radix: 16))
        }
    }
}
