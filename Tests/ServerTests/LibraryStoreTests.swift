import Foundation
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
@testable import StreamShared

/// The catalog database: schema, writes, the read API the routes use, and what happens to a
/// database file that is damaged or not ours.
@Suite struct LibraryStoreTests {
    static func temporaryFolder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("library-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func analysis(title: String?, artist: String? = nil, album: String? = nil, albumArtist: String? = nil,
                         track: String? = nil, disc: String? = nil, date: String? = nil, cover: Int? = nil,
                         duration: Double = 10) -> TrackAnalysis {
        TrackAnalysis(container: .mp3, codec: "mp3", sampleRate: 44_100, channels: 2, durationSeconds: duration,
                      bitrate: 128_000, frames: 383, firstFrameOffset: 0, encoderDelay: 576, encoderPadding: 1_000,
                      totalSamples: 441_216,
                      tags: TrackTags(title: title, artist: artist, album: album, track: track, coverArtBytes: cover,
                                      albumArtist: albumArtist, disc: disc, date: date, genre: "Test",
                                      replayGain: ReplayGain(trackGain: -6.5, trackPeak: 0.9)),
                      seekIndex: SeekIndex(points: [SeekPoint(t: 0, byte: 0)], firstFrameOffset: 0, audioEndOffset: 1_000,
                                           encoderDelay: 576, encoderPadding: 1_000, durationSeconds: duration))
    }

    static func stamp(_ n: Int) -> FileStamp { FileStamp(size: 1_000 + n, mtimeNanos: 1_700_000_000_000_000_000 + n, inode: UInt64(n)) }

    /// A small library: two albums of one artist (one in two discs), a compilation, a loose track.
    static func sampleStore(path: String = ":memory:") throws -> LibraryStore {
        let store = try LibraryStore(path: path, folder: "/music")
        try store.apply([
            .track(path: "Band/Second/2-01 Late.mp3", stamp: stamp(1),
                   analysis: analysis(title: "Late", artist: "Band", album: "Second", track: "1", disc: "2/2", date: "2011")),
            .track(path: "Band/Second/1-02 Middle.mp3", stamp: stamp(2),
                   analysis: analysis(title: "Middle", artist: "Band", album: "Second", track: "2", disc: "1/2", date: "2011", cover: 500)),
            .track(path: "Band/Second/1-01 Early.mp3", stamp: stamp(3),
                   analysis: analysis(title: "Early", artist: "Band", album: "Second", track: "1/9", disc: "1/2", date: "2011")),
            .track(path: "Band/First/01 Opening.mp3", stamp: stamp(4),
                   analysis: analysis(title: "Opening Night", artist: "Band", album: "First", track: "1", date: "2009")),
            .track(path: "Various/Hits/01.mp3", stamp: stamp(5),
                   analysis: analysis(title: "Song of Band", artist: "Guest", album: "Hits", albumArtist: "Various Artists", track: "1")),
            .track(path: "Various/Hits/02.mp3", stamp: stamp(6),
                   analysis: analysis(title: "Other", artist: "Band", album: "Hits", albumArtist: "Various Artists", track: "2")),
            .track(path: "loose.mp3", stamp: stamp(7), analysis: analysis(title: nil)),
            .skipped(path: "notes.txt", stamp: stamp(8), reason: "not audio", quarantined: false),
        ])
        return store
    }

    @Test func tracks_pagedInAStableOrder_withTheTotal() throws {
        let store = try Self.sampleStore()
        let all = try store.tracks.page(offset: 0, limit: 100, sort: .path)
        #expect(all.total == 7 && all.rows.map(\.path) == all.rows.map(\.path).sorted())
        var paged: [String] = []
        for offset in stride(from: 0, to: 7, by: 3) {
            let page = try store.tracks.page(offset: offset, limit: 3, sort: .title)
            #expect(page.total == 7)
            paged += page.rows.map(\.path)
        }
        #expect(paged.count == 7 && Set(paged).count == 7, "pages neither overlap nor miss a track: \(paged)")
        let byTitle = try store.tracks.page(offset: 0, limit: 100, sort: .title).rows.map(\.displayTitle)
        #expect(byTitle == ["Early", "Late", "loose", "Middle", "Opening Night", "Other", "Song of Band"])
        for sort in TrackSort.allCases {
            #expect(try store.tracks.page(offset: 0, limit: 100, sort: sort).rows.count == 7, "\(sort)")
        }
        #expect(try store.tracks.page(offset: 100, limit: 10).rows.isEmpty)
    }

    @Test func trackRow_keepsEveryField() throws {
        let store = try Self.sampleStore()
        let row = try #require(try store.tracks.track(path: "Band/Second/1-01 Early.mp3"))
        #expect(row.title == "Early" && row.artist == "Band" && row.album == "Second" && row.trackNumber == 1
                && row.trackTotal == 9 && row.discNumber == 1 && row.discTotal == 2 && row.year == 2011 && row.genre == "Test")
        #expect(row.replayGain == ReplayGain(trackGain: -6.5, trackPeak: 0.9))
        #expect(row.stamp == Self.stamp(3) && row.etag == Self.stamp(3).etag)
        #expect(row.codec == "mp3" && row.sampleRate == 44_100 && row.encoderDelay == 576 && row.durationSeconds == 10)
        #expect(row.url == "/media/Band/Second/1-01%20Early.mp3")
        let loose = try #require(try store.tracks.track(path: "loose.mp3"))
        // Untagged, in the library root: the title is the file name's, no album or artist.
        #expect(loose.title == "loose" && loose.derived == [.title] && loose.albumID == nil && loose.artistID == nil)
    }

    @Test func search_prefixesOfEveryWord_rankedByField() throws {
        let store = try Self.sampleStore()
        #expect(try store.search.tracks(query: "ope", limit: 10).map(\.title) == ["Opening Night"])
        #expect(try store.search.tracks(query: "open nig", limit: 10).map(\.title) == ["Opening Night"])
        // "band" is the title of one track and the artist of most: the title hit ranks first.
        let band = try store.search.tracks(query: "Band", limit: 10)
        #expect(band.first?.title == "Song of Band", "\(band.map(\.title))")
        #expect(band.count == 6)
        #expect(try store.search.tracks(query: "various", limit: 10).count == 2, "album artists are searched too")
        #expect(try store.search.tracks(query: "\"; DROP TABLE tracks; --", limit: 10).isEmpty)
        #expect(try store.search.tracks(query: "!!!", limit: 10).isEmpty)
        #expect(try store.search.tracks(query: "band", limit: 2).count == 2)
        #expect(SearchRepository.ftsQuery("a\"b c*") == "\"a\"* \"b\"* \"c\"*")
        #expect(SearchRepository.ftsQuery("  ") == nil)
    }

    @Test func albums_groupedByAlbumArtist_tracksInDiscOrder() throws {
        let store = try Self.sampleStore()
        let albums = try store.albums.page(offset: 0, limit: 10)
        #expect(albums.total == 3)
        #expect(albums.rows.map(\.title) == ["First", "Second", "Hits"], "by artist name, then title")
        let second = try #require(albums.rows.first { $0.title == "Second" })
        #expect(second.trackCount == 3 && second.durationSeconds == 30 && second.year == 2011 && second.artistName == "Band")
        #expect(second.coverTrackPath == "Band/Second/1-02 Middle.mp3" && second.folder == "Band/Second")
        let detail = try #require(try store.albums.album(id: second.id))
        #expect(detail.tracks.map(\.title) == ["Early", "Middle", "Late"])
        #expect(try store.albums.album(id: 999_999) == nil)
        #expect(try store.covers.source(albumID: second.id) == CoverSource(embeddedTrackPath: "Band/Second/1-02 Middle.mp3", folder: "Band/Second"))
        let hits = try #require(albums.rows.first { $0.title == "Hits" })
        #expect(hits.artistName == "Various Artists" && hits.coverTrackPath == nil && hits.trackCount == 2)
        #expect(try store.covers.source(albumID: hits.id)?.embeddedTrackPath == nil)
    }

    @Test func artists_withTheirAlbums() throws {
        let store = try Self.sampleStore()
        let artists = try store.artists.page(offset: 0, limit: 10)
        #expect(artists.rows.map(\.name) == ["Band", "Guest", "Various Artists"])
        let band = try #require(artists.rows.first)
        #expect(band.trackCount == 5 && band.albumCount == 2)
        let detail = try #require(try store.artists.artist(id: band.id))
        #expect(detail.albums.map(\.title) == ["Hits", "First", "Second"], "albums holding its tracks too, by year")
        #expect(try store.artists.artist(id: -1) == nil)
    }

    @Test func ids_stayStable_andEmptyAlbumsGo() throws {
        let store = try Self.sampleStore()
        let before = try store.albums.page(offset: 0, limit: 10).rows
        let first = try #require(before.first { $0.title == "First" })
        let track = try #require(try store.tracks.track(path: "Band/First/01 Opening.mp3"))
        // The same file read again (changed): same track id, same album id.
        try store.apply([.track(path: "Band/First/01 Opening.mp3", stamp: Self.stamp(40),
                                analysis: Self.analysis(title: "Opening Night (remaster)", artist: "Band", album: "First"))])
        #expect(try store.tracks.track(path: "Band/First/01 Opening.mp3")?.id == track.id)
        #expect(try store.albums.page(offset: 0, limit: 10).rows.first { $0.title == "First" }?.id == first.id)
        #expect(try store.search.tracks(query: "remaster", limit: 5).count == 1, "the search index follows updates")
        #expect(try store.search.tracks(query: "opening", limit: 5).map(\.path) == ["Band/First/01 Opening.mp3"])
        // Removed: the album and an artist with nothing left go too.
        try store.apply([.removed(path: "Band/First/01 Opening.mp3"), .removed(path: "Various/Hits/01.mp3")])
        #expect(try store.albums.album(id: first.id) == nil)
        #expect(try store.artists.page(offset: 0, limit: 10).rows.map(\.name) == ["Band", "Various Artists"])
        #expect(try store.search.tracks(query: "opening", limit: 5).isEmpty)
        #expect(try store.tracks.count() == 5)
    }

    @Test func stamps_andSkippedFiles() throws {
        let store = try Self.sampleStore()
        let stamps = try store.stamps()
        #expect(stamps.count == 8 && stamps["notes.txt"] == Self.stamp(8) && stamps["loose.mp3"] == Self.stamp(7))
        #expect(Set(try store.stamps(under: "Band").keys) == ["Band/Second/2-01 Late.mp3", "Band/Second/1-02 Middle.mp3",
                                                              "Band/Second/1-01 Early.mp3", "Band/First/01 Opening.mp3"])
        #expect(try store.stamps(under: "Ban").isEmpty, "a prefix of a name is not its folder")
        #expect(try store.stamps(under: "loose.mp3").count == 1)
        #expect(try store.skipped.all().map(\.path) == ["notes.txt"])
        // A skipped file that becomes audio moves over, and back.
        try store.apply([.track(path: "notes.txt", stamp: Self.stamp(9), analysis: Self.analysis(title: "Now audio"))])
        #expect(try store.skipped.all().isEmpty && store.tracks.count() == 8)
        try store.apply([.skipped(path: "notes.txt", stamp: Self.stamp(10), reason: "analyzer crashed", quarantined: true)])
        #expect(try store.skipped.file(path: "notes.txt")?.quarantined == true && store.tracks.count() == 7)
    }

    @Test func cachedAnalyses_areKeyedByTheStamp() throws {
        let store = try Self.sampleStore()
        var exact = Self.analysis(title: "Late")
        exact.seekIndex.points = (0..<100).map { SeekPoint(t: Double($0) / 2, byte: $0 * 417) }
        try store.analyses.save(path: "Band/Second/2-01 Late.mp3", stamp: Self.stamp(1), analysis: exact)
        #expect(try store.analyses.cached(path: "Band/Second/2-01 Late.mp3", stamp: Self.stamp(1)) == exact)
        #expect(try store.analyses.cached(path: "Band/Second/2-01 Late.mp3", stamp: Self.stamp(11)) == nil, "the file changed")
        try store.apply([.removed(path: "Band/Second/2-01 Late.mp3")])
        #expect(try store.analyses.cached(path: "Band/Second/2-01 Late.mp3", stamp: Self.stamp(1)) == nil)
    }

    @Test func tracksWithoutAnalysis_longestFirst_notWAV_notThoseStoredForTheirStamp() throws {
        let store = try Self.sampleStore()
        var wav = Self.analysis(title: "Long WAV", duration: 4_000)
        wav.container = .wav
        try store.apply([
            .track(path: "Long/mix.mp3", stamp: Self.stamp(20), analysis: Self.analysis(title: "Mix", duration: 3_600)),
            .track(path: "Long/book.mp3", stamp: Self.stamp(21), analysis: Self.analysis(title: "Book", duration: 7_200)),
            .track(path: "Long/take.wav", stamp: Self.stamp(22), analysis: wav),
        ])
        #expect(try store.analyses.missing(minSeconds: 1_800, limit: 10).map(\.path) == ["Long/book.mp3", "Long/mix.mp3"])
        #expect(try store.analyses.missing(minSeconds: 1_800, limit: 1).map(\.path) == ["Long/book.mp3"])
        #expect(try store.analyses.missing(minSeconds: 5, limit: 100).count == 9, "the seven songs of 10 s too")
        var exact = Self.analysis(title: "Book", duration: 7_200)
        exact.seekIndex.points = (0..<100).map { SeekPoint(t: Double($0) / 2, byte: $0 * 417) }
        try store.analyses.save(path: "Long/book.mp3", stamp: Self.stamp(21), analysis: exact)
        let left = try store.analyses.missing(minSeconds: 1_800, limit: 10)
        #expect(left.map(\.path) == ["Long/mix.mp3"] && left.first?.stamp == Self.stamp(20))
        // The file changed since its index was stored: due again.
        try store.apply([.track(path: "Long/book.mp3", stamp: Self.stamp(23), analysis: Self.analysis(title: "Book", duration: 7_200))])
        #expect(try store.analyses.missing(minSeconds: 1_800, limit: 10).map(\.path) == ["Long/book.mp3", "Long/mix.mp3"])
    }

    @Test func onDisk_walMode_andReopened() throws {
        let dir = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("sub/catalog.db").path
        do {
            let store = try Self.sampleStore(path: path)
            #expect(try store.tracks.count() == 7)
        }
        let db = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try db.queryOne("PRAGMA journal_mode") { $0.text(0) } == "wal")
        #expect(try db.queryOne("PRAGMA user_version") { $0.int(0) } == LibrarySchema.version)
        let reopened = try LibraryStore(path: path, folder: "/music")
        #expect(try reopened.tracks.count() == 7, "a second start reads the same catalog")
    }

    @Test func corruptFile_isMovedAside_andRebuilt() throws {
        let dir = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 131) }).write(to: URL(fileURLWithPath: path))
        let warningsLog = CapturedLog()
        let store = try LibraryStore(path: path, folder: "/music", logger: warningsLog.logger)
        let warnings = warningsLog.lines
        #expect(try store.tracks.count() == 0)
        #expect(warnings.count == 1 && warnings[0].contains("moved to"), "\(warnings)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("catalog.db.bad-") }
        #expect(aside.count == 1, "the damaged file is kept for a look: \(aside)")
    }

    @Test func damagedPages_areMovedAsideToo() throws {
        let dir = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        do { _ = try Self.sampleStore(path: path) }
        // Checkpointed into the main file, then its schema page overwritten from byte 100 on.
        let db = try SQLiteDatabase(path: path)
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 100)
        handle.write(Data(repeating: 0xEE, count: 3000))
        try handle.close()
        let warningsLog = CapturedLog()
        let store = try LibraryStore(path: path, folder: "/music", logger: warningsLog.logger)
        let warnings = warningsLog.lines
        #expect(try store.tracks.count() == 0 && warnings.count == 1, "\(warnings)")
    }

    @Test func foreignDatabase_isMovedAside() throws {
        let dir = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        do {
            let other = try SQLiteDatabase(path: path)
            try other.execute("CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos(name) VALUES ('x');")
        }
        let warningsLog = CapturedLog()
        let store = try LibraryStore(path: path, folder: "/music", logger: warningsLog.logger)
        let warnings = warningsLog.lines
        #expect(try store.tracks.count() == 0 && warnings.first?.contains("not streamd's") == true, "\(warnings)")
        // A newer schema version is not ours to touch either.
        do {
            let db = try SQLiteDatabase(path: path)
            try db.execute("PRAGMA user_version = 99")
        }
        let againLog = CapturedLog()
        _ = try LibraryStore(path: path, folder: "/music", logger: againLog.logger)
        let again = againLog.lines
        #expect(again.first?.contains("newer") == true, "\(again)")
    }

    @Test func anotherFolder_startsTheCatalogOver() throws {
        let dir = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        do { _ = try Self.sampleStore(path: path) }
        let warningsLog = CapturedLog()
        let store = try LibraryStore(path: path, folder: "/other", logger: warningsLog.logger)
        let warnings = warningsLog.lines
        #expect(try store.tracks.count() == 0 && warnings.count == 1)
    }

    @Test func unwritableLocation_isATypedError() {
        #expect(throws: SQLiteError.self) { try LibraryStore(path: "/proc/streamd-cannot-be-here/x.db", folder: "/music") }
    }

    @Test func defaultPath_followsXDG_andNeverLandsInTheFolder() {
        let a = LibraryStore.defaultPath(forFolder: "/music", environment: ["XDG_STATE_HOME": "/state", "HOME": "/home/u"])
        #expect(a.hasPrefix("/state/streamd/") && a.hasSuffix(".db"))
        let b = LibraryStore.defaultPath(forFolder: "/music", environment: ["HOME": "/home/u"])
        #expect(b.hasPrefix("/home/u/.local/state/streamd/"))
        #expect(LibraryStore.defaultPath(forFolder: "/other", environment: ["HOME": "/home/u"]) != b, "one catalog per folder")
        let inside = LibraryStore.defaultPath(forFolder: "/home/u", environment: ["HOME": "/home/u", "TMPDIR": "/t"])
        #expect(inside.hasPrefix("/t/streamd-"), "not inside the music folder: \(inside)")
    }

    @Test func concurrentReaders_whileWriting() throws {
        let dir = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try Self.sampleStore(path: dir.appendingPathComponent("c.db").path)
        let failures = LockedCounter()
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for n in 0..<50 {
                do {
                    if i == 0 {
                        try store.apply([.track(path: "new/\(n).mp3", stamp: Self.stamp(100 + n), analysis: Self.analysis(title: "New \(n)"))])
                    } else {
                        let page = try store.tracks.page(offset: 0, limit: 5, sort: .title)
                        if page.rows.isEmpty { failures.add() }
                        _ = try store.search.tracks(query: "new", limit: 5)
                    }
                } catch {
                    failures.add()
                }
            }
        }
        #expect(failures.value == 0)
        #expect(try store.tracks.count() == 57)
    }
}

/// A counter several threads add to.
final class LockedCounter: @unchecked Sendable {
    // @unchecked: every access goes through the lock.
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// What changed for speed at 100,000 tracks: the search index's prefix indexes (with the
/// migration of a version-1 database) and `/api/status`'s summary of the skipped files.
@Suite struct LibraryStoreSpeedTests {
    typealias Fixture = LibraryStoreTests

    /// A database as streamd wrote it before the prefix indexes (schema version 1), with two tracks.
    static func versionOneDatabase(at path: String) throws {
        let db = try SQLiteDatabase(path: path)
        try db.execute(LibrarySchema.migrations[0])
        try db.execute("PRAGMA application_id = \(LibrarySchema.applicationID); PRAGMA user_version = 1")
        try db.run("INSERT INTO meta(key, value) VALUES ('folder', '/music')")
        for (n, title) in [(1, "Riverbank Song"), (2, "Canyon Echo")] {
            try db.run("""
                INSERT INTO tracks(path, size, mtime_ns, inode, title, artist, album, duration_s, codec, container,
                  sample_rate, channels, bitrate, frames, total_samples, first_frame_offset, encoder_delay, encoder_padding, sort_title)
                VALUES (?, 1000, 1, ?, ?, 'Old Artist', 'Old Album', 10, 'mp3', 'mp3', 44100, 2, 128000, 383, 441216, 0, 0, 0, ?)
                """, [.text("a/\(n).mp3"), .int(Int64(n)), .text(title), .text(title)])
        }
        db.close()
    }

    @Test func versionOneDatabase_getsThePrefixIndexes_andKeepsItsTracksSearchable() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        try Self.versionOneDatabase(at: path)
        let warningsLog = CapturedLog()
        let store = try LibraryStore(path: path, folder: "/music", logger: warningsLog.logger)
        let warnings = warningsLog.lines
        #expect(warnings.isEmpty, "a migration is not a damaged file: \(warnings)")
        #expect(try store.tracks.count() == 2)
        // The new index is filled at the end of the next full scan, not before the server listens.
        #expect(try store.search.tracks(query: "ri", limit: 10).isEmpty)
        try store.apply([.track(path: "b/0.mp3", stamp: Fixture.stamp(9), analysis: Fixture.analysis(title: "Riverside"))])
        try store.apply([.removed(path: "b/0.mp3")])
        let generation = store.generation
        try store.ensureOrderIndexes()
        #expect(store.generation != generation, "search answers changed")
        #expect(try store.search.tracks(query: "ri", limit: 10).map(\.path) == ["a/1.mp3"], "a 2-letter prefix (prefix index)")
        #expect(try store.search.tracks(query: "riverb", limit: 10).map(\.path) == ["a/1.mp3"], "a prefix longer than the indexes")
        #expect(try store.search.tracks(query: "old can", limit: 10).map(\.path) == ["a/2.mp3"])
        // New tracks reach the rebuilt index through the triggers.
        try store.apply([.track(path: "b/3.mp3", stamp: Fixture.stamp(3), analysis: Fixture.analysis(title: "Rivet", artist: "New"))])
        #expect(try store.search.tracks(query: "riv", limit: 10).map(\.path).sorted() == ["a/1.mp3", "b/3.mp3"])
        let db = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try db.queryOne("PRAGMA user_version") { $0.int(0) } == LibrarySchema.version)
        let sql = try db.queryOne("SELECT sql FROM sqlite_master WHERE name = 'tracks_fts'") { $0.text(0) } ?? ""
        #expect(sql.contains("prefix"), "\(sql)")
    }

    static func hasInsertTrigger(_ path: String) throws -> Bool {
        let db = try SQLiteDatabase(path: path, readOnly: true)
        return try db.queryOne("SELECT count(*) FROM sqlite_master WHERE name = 'tracks_fts_insert'") { $0.int(0) } == 1
    }

    static func searchIndexRows(_ path: String) throws -> Int {
        let db = try SQLiteDatabase(path: path, readOnly: true)
        return try db.queryOne("SELECT count(*) FROM tracks_fts") { $0.int(0) } ?? -1
    }

    /// A first scan runs without the search index's insert trigger, yet each write adds its own
    /// tracks to the index: found at once, also when a delete frees an id the next insert takes
    /// again, and after a restart in the middle (the scan cut short carries on where it stopped).
    @Test func firstScan_writesAreSearchableAtOnce_throughDeletesAndARestart() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        func chunk(_ range: Range<Int>) -> [LibraryChange] {
            range.map { .track(path: String(format: "c/%03d.mp3", $0), stamp: Fixture.stamp($0),
                               analysis: Fixture.analysis(title: "Kestrel \($0)", artist: "Artist \($0 % 3)")) }
        }
        do {
            let store = try LibraryStore(path: path, folder: "/music")
            #expect(try store.beginBulkLoad())
            #expect(try !Self.hasInsertTrigger(path), "the first scan runs without the insert trigger")
            try store.apply(chunk(0..<10))
            #expect(try store.search.tracks(query: "kestrel", limit: 100).count == 10, "the first chunk is searchable at once")
            // The last track goes and a new one comes in the same write: it is given the freed id.
            let last = try #require(try store.tracks.track(path: "c/009.mp3")?.id)
            try store.apply([.removed(path: "c/009.mp3"),
                             .track(path: "c/new.mp3", stamp: Fixture.stamp(99), analysis: Fixture.analysis(title: "Osprey"))])
            #expect(try store.tracks.track(path: "c/new.mp3")?.id == last, "SQLite gives the freed id again")
            #expect(try store.search.tracks(query: "osprey", limit: 10).map(\.path) == ["c/new.mp3"])
            #expect(try store.search.tracks(query: "kestrel", limit: 100).count == 9)
            // A track that becomes a skipped file, then a new track, the same way.
            try store.apply([.skipped(path: "c/new.mp3", stamp: Fixture.stamp(100), reason: "not audio", quarantined: false),
                             .track(path: "c/newer.mp3", stamp: Fixture.stamp(101), analysis: Fixture.analysis(title: "Harrier"))])
            #expect(try store.search.tracks(query: "osprey", limit: 10).isEmpty)
            #expect(try store.search.tracks(query: "harrier", limit: 10).map(\.path) == ["c/newer.mp3"])
            // A track changed meanwhile (its update trigger indexes it) stays one row of the index.
            try store.apply([.track(path: "c/000.mp3", stamp: Fixture.stamp(200), analysis: Fixture.analysis(title: "Kestrel zero"))])
            #expect(try store.search.tracks(query: "zero", limit: 10).map(\.path) == ["c/000.mp3"])
        }
        // The process ends in the middle of the scan; the next one carries on.
        let store = try LibraryStore(path: path, folder: "/music")
        #expect(try !Self.hasInsertTrigger(path))
        try store.apply(chunk(10..<20))
        #expect(try store.search.tracks(query: "kestrel", limit: 100).count == 19)
        #expect(try Self.searchIndexRows(path) == 20, "each track once in the index")
        try store.ensureOrderIndexes()
        #expect(try Self.hasInsertTrigger(path), "the trigger is back after the scan")
        #expect(try Self.searchIndexRows(path) == 20)
        try store.apply([.track(path: "d/later.mp3", stamp: Fixture.stamp(300), analysis: Fixture.analysis(title: "Kestrel later"))])
        #expect(try store.search.tracks(query: "kestrel", limit: 100).count == 20)
        #expect(try store.tracks.count() == 21)
    }

    /// A search index left empty (a database migrated to schema 2) is filled before the scan's
    /// walk, in batches, each moving the catalog generation.
    @Test func searchBacklog_isWorkedOffInBatches() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        do {
            let store = try LibraryStore(path: path, folder: "/music")
            for start in stride(from: 0, to: LibraryStore.searchBacklogBatch + 500, by: 2_048) {
                try store.apply((start..<min(start + 2_048, LibraryStore.searchBacklogBatch + 500)).map {
                    .track(path: String(format: "t/%05d.mp3", $0), stamp: Fixture.stamp($0), analysis: Fixture.analysis(title: "Song \($0)"))
                })
            }
            #expect(try store.indexSearchBacklog() == 0, "the trigger keeps the index: no backlog")
        }
        let db = try SQLiteDatabase(path: path)
        try db.execute("DROP TRIGGER tracks_fts_insert; DELETE FROM tracks_fts;")
        db.close()
        let store = try LibraryStore(path: path, folder: "/music")
        #expect(try store.search.tracks(query: "song", limit: 5).isEmpty)
        let generation = store.generation
        #expect(try store.indexSearchBacklog() == LibraryStore.searchBacklogBatch + 500)
        #expect(store.generation != generation, "search answers changed")
        #expect(try store.search.tracks(query: "song 8500", limit: 5).map(\.path) == ["t/08500.mp3"])
        #expect(try store.indexSearchBacklog() == 0)
        try store.ensureOrderIndexes()
        #expect(try Self.hasInsertTrigger(path) && Self.searchIndexRows(path) == LibraryStore.searchBacklogBatch + 500)
    }

    /// The count `/api/status` shows follows every write, though it is counted once per generation.
    @Test func trackCount_followsTheWrites() throws {
        let store = try Fixture.sampleStore()
        #expect(try store.tracks.count() == 7 && store.tracks.count() == 7)
        try store.apply([.track(path: "x.mp3", stamp: Fixture.stamp(50), analysis: Fixture.analysis(title: "X"))])
        #expect(try store.tracks.count() == 8)
        try store.apply([.removed(path: "x.mp3"), .removed(path: "loose.mp3")])
        #expect(try store.tracks.count() == 6)
    }

    /// Beyond `rankedMatchLimit` matches: the title matches first, then the others, each group
    /// in catalog order; up to it, bm25 (a title hit first too). With more title matches than
    /// are ranked, and with fewer.
    @Test func search_beyondTheRankedLimit_titleMatchesFirst_inCatalogOrder() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        // 0..<260 "River n" titles; 260..<400 "Song n" by "River Band"; 400..<450 neither.
        try store.apply((0..<450).map { n in
            let inTitle = n < 260
            let byArtist = n >= 260 && n < 400
            return .track(path: String(format: "t/%04d.mp3", n), stamp: Fixture.stamp(n),
                          analysis: Fixture.analysis(title: inTitle ? "River \(n)" : "Song \(n)", artist: byArtist ? "River Band" : "Other"))
        })
        func numbers(_ query: String, _ limit: Int) throws -> [Int] {
            try store.search.tracks(query: query, limit: limit).map { Int($0.path.dropFirst(2).prefix(4))! }
        }
        #expect(try numbers("riv", 100) == Array(0..<100), "more title matches than are ranked: the first by catalog order")
        #expect(try numbers("riv", 300) == Array(0..<260) + Array(260..<300), "then the artist matches")
        #expect(try numbers("riv", 1000) == Array(0..<400))
        // "so" is in 190 titles (Song n) and no artist yet: few enough to be ranked.
        #expect(Set(try numbers("so", 1000)) == Set(260..<450))
        // Then 40 tracks by "Song Birds": fewer title matches than are ranked, more matches in all.
        try store.apply((0..<40).map { n in
            .track(path: String(format: "u/%04d.mp3", n), stamp: Fixture.stamp(500 + n),
                   analysis: Fixture.analysis(title: "Quiet \(n)", artist: "Song Birds"))
        })
        let mixed = try store.search.tracks(query: "so", limit: 250).map(\.path)
        #expect(mixed.count == 230 && mixed.prefix(190).allSatisfy { $0.hasPrefix("t/") } && mixed.suffix(40).allSatisfy { $0.hasPrefix("u/") },
                "230 matches: the 190 title matches, then the 40 by artist")
        // 200 matches or fewer are ranked: a title hit before an artist hit.
        let ranked = try store.search.tracks(query: "quiet", limit: 10).map(\.path)
        #expect(ranked.count == 10 && ranked.allSatisfy { $0.hasPrefix("u/") })
        #expect(try store.search.tracks(query: "band", limit: 1000).count == 140)
    }

    /// Past the ranked limit, with fewer title matches than the page holds and the other matches
    /// before them in catalog order: the title matches still come first, then the others from
    /// the start of the catalog, read on past the first 201 matches, none twice.
    @Test func search_titleMatchesFirst_whenTheOthersComeEarlierInTheCatalog() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        // 0..<300 "Song n" by "Lake Band" (artist matches), 300..<360 "Lake n" by "Other" (title matches).
        try store.apply((0..<360).map { n in
            .track(path: String(format: "t/%04d.mp3", n), stamp: Fixture.stamp(n),
                   analysis: Fixture.analysis(title: n < 300 ? "Song \(n)" : "Lake \(n)", artist: n < 300 ? "Lake Band" : "Other"))
        })
        func numbers(_ query: String, _ limit: Int) throws -> [Int] {
            try store.search.tracks(query: query, limit: limit).map { Int($0.path.dropFirst(2).prefix(4)) ?? -1 }
        }
        #expect(try numbers("lak", 100) == Array(300..<360) + Array(0..<40))
        #expect(try numbers("lak", 290) == Array(300..<360) + Array(0..<230), "past the first 201 matches read")
        #expect(try numbers("lak", 1000) == Array(300..<360) + Array(0..<300))
        #expect(try numbers("lake ba", 1000) == Array(0..<300), "two words: only the artist matches hold both")
    }

    /// A search index in many segments (one per transaction here) is merged into one, and every
    /// answer stays the same.
    @Test func compactSearchIndex_mergesSegments_answersUnchanged() throws {
        let dir = try Fixture.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        let store = try LibraryStore(path: path, folder: "/music")
        // FTS5 would merge small segments as they come; with that off, each transaction's stays
        // (as the larger segments of a first scan's 100,000 rows stay; below 16, when FTS5 merges anyway).
        try SQLiteDatabase(path: path).execute("INSERT INTO tracks_fts(tracks_fts, rank) VALUES('automerge', 0)")
        for n in 0..<12 {
            try store.apply([.track(path: String(format: "t/%04d.mp3", n), stamp: Fixture.stamp(n),
                                    analysis: Fixture.analysis(title: "River \(n) Song", artist: n % 2 == 0 ? "Band" : "Other"))])
        }
        let before = try store.search.segments()
        #expect(before > SearchRepository.maxSegments, "\(before) segments after 12 transactions")
        let queries = ["riv", "river so", "ba", "oth", "so ban", "1"]
        let answers = try queries.map { try store.search.tracks(query: $0, limit: 100).map(\.path) }
        #expect(try store.search.compact() == before)
        #expect(try store.search.segments() == 1)
        #expect(try queries.map { try store.search.tracks(query: $0, limit: 100).map(\.path) } == answers)
        #expect(try store.search.compact() == nil, "one segment: nothing to do")
    }

    @Test func skippedSummary_countsEveryRow_listsTheFirstByPath() throws {
        let store = try Fixture.sampleStore()
        try store.apply((0..<6).map { n in
            .skipped(path: "z/\(5 - n).txt", stamp: Fixture.stamp(20 + n), reason: "not audio", quarantined: n % 3 == 0)
        })
        let summary = try store.skipped.summary(limit: 3)
        #expect(summary.count == 7 && summary.quarantined == 2, "\(summary.count) \(summary.quarantined)")
        #expect(summary.first.map(\.path) == ["notes.txt", "z/0.txt", "z/1.txt"])
        #expect(try store.skipped.summary(limit: 0).first.isEmpty)
    }
}

/// Schema 5: FLAC, Ogg, AIFF and ALAC are catalogued with their bit depth.
@Suite struct LibrarySchemaFiveTests {
    /// A version-4 database (before bit depths) that skipped a FLAC and an ALAC file as
    /// unsupported and holds a WAV track: the migration forgets those two skips (the next scan
    /// reads them), keeps the others, and marks the WAV row to be read again for its depth.
    @Test func versionFour_forgetsUnsupportedSkips_andRereadsWAV() throws {
        let dir = try LibraryStoreTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("catalog.db").path
        let old = try SQLiteDatabase(path: path)
        for migration in LibrarySchema.migrations.prefix(4) { try old.execute(migration) }
        try old.execute("PRAGMA application_id = \(LibrarySchema.applicationID); PRAGMA user_version = 4")
        try old.run("INSERT INTO meta(key, value) VALUES ('folder', '/music')")
        for (file, reason) in [("a.flac", "parser: unsupported: FLAC files are not supported (MP3, AAC in ADTS or MP4, and WAV)"),
                               ("b.m4a", "mp4: unsupported: audio codec 'alac'"), ("c.txt", "parser: not an audio stream (empty)")] {
            try old.run("INSERT INTO skipped(path, size, mtime_ns, inode, reason, quarantined) VALUES (?, 1, 1, 1, ?, 0)",
                        [.text(file), .text(reason)])
        }
        try old.run("""
            INSERT INTO tracks(path, size, mtime_ns, inode, title, duration_s, codec, container, sample_rate, channels, bitrate,
              frames, total_samples, first_frame_offset, encoder_delay, encoder_padding, sort_title)
            VALUES ('d.wav', 1000, 5, 1, 'W', 1, 'pcm_s24le', 'wav', 44100, 2, 2116800, 44100, 44100, 44, 0, 0, 'W')
            """)
        old.close()
        _ = try LibraryStore(path: path, folder: "/music", logger: CapturedLog().logger)
        let db = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try db.queryOne("PRAGMA user_version") { $0.int(0) } == LibrarySchema.version)   // 5, and the migrations after it
        #expect(try db.queryOne("SELECT group_concat(path) FROM skipped") { $0.text(0) } == "c.txt")
        #expect(try db.queryOne("SELECT mtime_ns FROM tracks WHERE path = 'd.wav'") { $0.int(0) } == -1)
        #expect(try db.queryOne("SELECT bits_per_sample IS NULL FROM tracks WHERE path = 'd.wav'") { $0.int(0) } == 1)
    }
}
