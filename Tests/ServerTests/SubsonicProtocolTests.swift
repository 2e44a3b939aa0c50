import Foundation
import Testing
import StreamShared
import StreamHTTP
@testable import StreamSubsonic
@testable import StreamLibrary

/// The parts of the Subsonic API that need no server: MD5, the one model written as XML and
/// JSON, parameters, credentials, lyrics.
@Suite struct SubsonicProtocolTests {
    @Test func md5_rfc1321Vectors() {
        let vectors = [("", "d41d8cd98f00b204e9800998ecf8427e"), ("a", "0cc175b9c0f1b6a831c399e269772661"),
                       ("abc", "900150983cd24fb0d6963f7d28e17f72"), ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
                       ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
                       ("12345678901234567890123456789012345678901234567890123456789012345678901234567890", "57edf4a22be3c955ac49da2e2107b67a")]
        for (text, digest) in vectors { #expect(MD5.hex(text.utf8) == digest, "md5(\(text))") }
    }

    @Test func token_isMD5OfSecretAndSalt_comparedInAnyCase() {
        // The example of the Subsonic documentation: password "sesame", salt "c19b2d".
        #expect(SubsonicAuth.tokenMatches("26719a1196d2a940705a59634eb18eab", secret: Array("sesame".utf8), salt: "c19b2d"))
        #expect(SubsonicAuth.tokenMatches("26719A1196D2A940705A59634EB18EAB", secret: Array("sesame".utf8), salt: "c19b2d"))
        #expect(!SubsonicAuth.tokenMatches("26719a1196d2a940705a59634eb18eac", secret: Array("sesame".utf8), salt: "c19b2d"))
        #expect(!SubsonicAuth.tokenMatches("", secret: Array("sesame".utf8), salt: "c19b2d"))
    }

    @Test func encodedPassword_hexInEitherCase() {
        #expect(SubsonicAuth.decodePassword("enc:736573616d65") == Array("sesame".utf8))
        #expect(SubsonicAuth.decodePassword("enc:736573616D65") == Array("sesame".utf8))
        #expect(SubsonicAuth.decodePassword("sesame") == Array("sesame".utf8))
        #expect(SubsonicAuth.decodePassword("enc:73657") == nil)
        #expect(SubsonicAuth.decodePassword("enc:zz") == nil)
    }

    struct OneUser: SubsonicAccounts {
        var hasUsers: Bool { true }
        let user = SubsonicUser(id: 7, name: "ann", isAdmin: false)
        func user(named name: String, password: [UInt8], request: HTTPRequest) -> SubsonicUser? { name == "ann" && password == Array("pw".utf8) ? user : nil }
        func user(named name: String, token: String, salt: String, request: HTTPRequest) -> SubsonicUser? {
            name == "ann" && SubsonicAuth.tokenMatches(token, secret: Array("app".utf8), salt: salt) ? user : nil
        }
        func user(apiKey: String, request: HTTPRequest) -> SubsonicUser? { apiKey == "key" ? user : nil }
    }

    func authenticate(_ pairs: [(String, String)], accounts: (any SubsonicAccounts)? = OneUser()) -> Result<SubsonicUser, SubsonicError> {
        SubsonicAuth(accounts: accounts).authenticate(SubsonicParameters(pairs: pairs))
    }

    @Test func credentials_eachMechanismAndItsErrors() throws {
        #expect(try authenticate([("u", "ann"), ("p", "pw")]).get().id == 7)
        #expect(try authenticate([("u", "ann"), ("p", "enc:7077")]).get().id == 7)
        #expect(try authenticate([("u", "ann"), ("t", MD5.hex(Array("appxyz".utf8))), ("s", "xyz")]).get().id == 7)
        #expect(try authenticate([("apiKey", "key")]).get().id == 7)
        func code(_ pairs: [(String, String)]) -> Int? {
            if case .failure(let error) = authenticate(pairs) { return error.code }
            return nil
        }
        #expect(code([("u", "ann"), ("p", "wrong")]) == 40)
        #expect(code([("u", "bob"), ("p", "pw")]) == 40, "an unknown user is the same error as a wrong password")
        #expect(code([("u", "ann"), ("t", "0"), ("s", "xyz")]) == 40)
        #expect(code([("apiKey", "nope")]) == 44)
        #expect(code([("apiKey", "key"), ("u", "ann")]) == 43)
        #expect(code([("u", "ann"), ("p", "pw"), ("t", "x"), ("s", "y")]) == 43)
        #expect(code([("u", "ann")]) == 10)
        #expect(code([]) == 10)
        // No accounts: an open server takes anything.
        #expect(try authenticate([("u", "x"), ("p", "y")], accounts: nil).get().id == 0)
        #expect(try authenticate([], accounts: nil).get().id == 0)
    }

    @Test func parameters_decodedRepeatedAndBooleansInAnyCase() throws {
        let p = try SubsonicParameters(query: "id=a&id=b&query=two+words%21&submission=True", form: Array("flag=FALSE&n=12".utf8))
        #expect(p.all("id") == ["a", "b"])
        #expect(p.string("query") == "two words!")
        #expect(try p.bool("submission") == true)
        #expect(try p.bool("flag") == false)
        #expect(try p.int("n", in: 0...100) == 12)
        #expect(throws: SubsonicError.self) { try p.int("n", in: 0...10) }
        #expect(throws: SubsonicError.self) { try SubsonicParameters(query: "q=%zz", form: nil) }
    }

    /// `stream`'s parameters to the transcoder's: raw, the original within maxBitRate, MP3 by default.
    @Test func streamChoice_formatMaxBitRateTimeOffsetEstimate() throws {
        func choice(_ query: String, suffix: String = "flac", kbps: Int = 900) throws -> SubsonicStreamChoice {
            try SubsonicStreamChoice(try SubsonicParameters(query: Substring(query), form: nil), suffix: suffix, sourceKbps: kbps)
        }
        #expect(try choice("") == .original)
        #expect(try choice("maxBitRate=0") == .original)
        #expect(try choice("maxBitRate=1000") == .original)
        #expect(try choice("format=raw&maxBitRate=64&timeOffset=5") == .original)
        #expect(try choice("maxBitRate=128") == .transcode(format: "mp3", kbps: 128, offset: 0, estimate: false))
        #expect(try choice("format=MP3&maxBitRate=128&estimateContentLength=True")
                == .transcode(format: "mp3", kbps: 128, offset: 0, estimate: true))
        #expect(try choice("format=mp3") == .transcode(format: "mp3", kbps: 192, offset: 0, estimate: false))
        #expect(try choice("format=mp3&maxBitRate=2000") == .transcode(format: "mp3", kbps: 320, offset: 0, estimate: false))
        #expect(try choice("format=opus&estimateContentLength=true") == .transcode(format: "opus", kbps: 128, offset: 0, estimate: true))
        #expect(try choice("timeOffset=2.5") == .transcode(format: "mp3", kbps: 192, offset: 2.5, estimate: false))
        // An unknown format is no format; an MP3 within maxBitRate is sent as it is, unless an offset is asked.
        #expect(try choice("format=flac&maxBitRate=96") == .transcode(format: "mp3", kbps: 96, offset: 0, estimate: false))
        #expect(try choice("format=mp3&maxBitRate=192", suffix: "mp3", kbps: 128) == .original)
        #expect(try choice("format=mp3&maxBitRate=96", suffix: "mp3", kbps: 128) == .transcode(format: "mp3", kbps: 96, offset: 0, estimate: false))
        #expect(try choice("format=mp3&timeOffset=1", suffix: "mp3", kbps: 128) == .transcode(format: "mp3", kbps: 192, offset: 1, estimate: false))
        #expect(try choice("format=opus", suffix: "opus", kbps: 96) == .original)
        for bad in ["maxBitRate=-1", "maxBitRate=x", "timeOffset=-1", "timeOffset=abc", "estimateContentLength=maybe"] {
            #expect(throws: SubsonicError.self, "\(bad)") { try choice(bad) }
        }
    }

    @Test func jsonpCallback_onlyJavaScriptIdentifiers() {
        for good in ["cb", "app.onPing_1", "$jsonp", "_x"] { #expect(SubsonicParameters.isJavaScriptIdentifier(good), "\(good)") }
        for bad in ["", "1cb", "alert(1)", "a b", "cb;x", "a..b", "a.", String(repeating: "a", count: 200), "é"] {
            #expect(!SubsonicParameters.isJavaScriptIdentifier(bad), "\(bad)")
        }
    }

    @Test func oneModel_xmlAndJSON_listsAlwaysArrays() throws {
        var folders = SubsonicElement()
        folders.add("musicFolder", list: [SubsonicElement([("id", .int(1)), ("name", .string("A & \"B\""))])])
        var extensionItem = SubsonicElement([("name", .string("formPost"))])
        extensionItem.add("versions", values: [.int(1)])
        var body = SubsonicElement()
        body.add("musicFolders", folders)
        body.add("openSubsonicExtensions", list: [extensionItem])
        body.add("lyrics", SubsonicElement([("title", .string("t"))], text: "la <la>\n"))
        let json = SubsonicWriter.json(ok: true, body: body)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let response = try #require(object["subsonic-response"] as? [String: Any])
        #expect(response["status"] as? String == "ok" && response["version"] as? String == "1.16.1")
        #expect(response["type"] as? String == "streamd" && response["openSubsonic"] as? Bool == true)
        let list = try #require((response["musicFolders"] as? [String: Any])?["musicFolder"] as? [[String: Any]], "one folder is an array")
        #expect(list.count == 1 && list[0]["name"] as? String == "A & \"B\"")
        #expect(((response["openSubsonicExtensions"] as? [[String: Any]])?.first?["versions"] as? [Int]) == [1])
        #expect((response["lyrics"] as? [String: Any])?["value"] as? String == "la <la>\n")
        let xml = SubsonicWriter.xml(ok: true, body: body)
        #expect(xml.contains("<musicFolder id=\"1\" name=\"A &amp; &quot;B&quot;\"/>"), "\(xml)")
        #expect(xml.contains("<versions>1</versions>"), "\(xml)")
        #expect(xml.contains("<lyrics title=\"t\">la &lt;la&gt;\n</lyrics>"), "\(xml)")
        #expect(xml.contains("xmlns=\"http://subsonic.org/restapi\" status=\"ok\" version=\"1.16.1\""), "\(xml)")
        let failed = SubsonicWriter.json(ok: false, body: SubsonicError(70, "Album not found").element)
        #expect(failed.contains("\"status\":\"failed\"") && failed.contains("\"error\":{\"code\":70,\"message\":\"Album not found\"}"), "\(failed)")
    }

    @Test func writtenAlbumItems_byteForByteTheElements() {
        let plain = SubsonicAlbum(id: 5, sid: "al-0123456789abcdef", title: "Tab\there & \"quoted\" <x>", artist: "Ünïcode Ärtist",
                                  artistSid: "ar-1", songCount: 3, duration: 181.6, year: 1999, created: 1_700_000_000, genre: "Rock")
        var bare = SubsonicAlbum(id: 6, sid: "al-2", title: "Bare", artist: "", artistSid: nil, songCount: 0, duration: 0,
                                 year: nil, created: 0, genre: nil)
        bare.marks = SubsonicMarks(starredAt: 1_700_000_100, rating: 4, playCount: 7, playedAt: 1_700_000_200)
        var starred = plain
        starred.marks = SubsonicMarks(starredAt: 1_700_000_000, rating: nil, playCount: 2, playedAt: nil)
        let albums = [plain, bare, starred, plain]
        let tables = SubsonicTables()
        for id3 in [true, false] {
            var expected = SubsonicElement(), written = SubsonicElement()
            expected.add("album", list: albums.map { id3 ? SubsonicItems.album($0) : SubsonicItems.albumChild($0) })
            written.add("album", written: tables.items(albums, id3: id3, generation: 1))
            // Twice: the second time from the kept bytes.
            var again = SubsonicElement()
            again.add("album", written: tables.items(albums, id3: id3, generation: 1))
            for body in [written, again] {
                #expect(SubsonicWriter.jsonBytes(ok: true, body: body) == SubsonicWriter.jsonBytes(ok: true, body: expected), "id3 \(id3)")
                #expect(SubsonicWriter.xmlBytes(ok: true, body: body) == SubsonicWriter.xmlBytes(ok: true, body: expected), "id3 \(id3)")
            }
        }
        // An element with no fixed attributes: the marks are its first members, and nothing else moves.
        var children = SubsonicElement(text: "t")
        children.add("genres", list: [SubsonicElement([("name", .string("x"))])])
        let fixed = SubsonicWrittenElement(name: "album", children)
        for extra in [[], [("playCount", SubsonicValue.int(1))]] {
            var expected = children
            expected.attributes = extra
            var a = SubsonicElement(), b = SubsonicElement()
            a.add("album", list: [expected])
            b.add("album", written: [SubsonicWrittenItem(fixed, attributes: extra)])
            #expect(SubsonicWriter.json(ok: true, body: a) == SubsonicWriter.json(ok: true, body: b))
            #expect(SubsonicWriter.xml(ok: true, body: a) == SubsonicWriter.xml(ok: true, body: b))
        }
    }

    /// Song items written once (`SubsonicTables.songItems`) against today's elements
    /// (`SubsonicItems.song` of the rows `SubsonicLibrary` reads with the user's marks): the
    /// same bytes in both forms, for a user with marks and one without, first written and kept.
    @Test func writtenSongItems_byteForByteTheElements_withEachUsersMarks() throws {
        let store = try LibraryStoreTests.sampleStore()
        try store.apply([.track(path: "Odd/01.mp3", stamp: LibraryStoreTests.stamp(20),
                                analysis: LibraryStoreTests.analysis(title: "Tab\there & \"quoted\" <x>", artist: "Ünïcode Ärtist",
                                                                     album: "Ålbum", track: "3", date: "1999"))])
        try SubsonicSchema.migrate(store)
        try SubsonicIDs(store: store).ensureCurrent()
        let library = SubsonicLibrary(store: store)
        let ids = try store.read { db throws(SQLiteError) in try db.query("SELECT track_id FROM subsonic_track_ids ORDER BY track_id DESC") { $0.int(0) } }
        #expect(ids.count == 8)
        let sids = try library.songs(trackIDs: ids, user: 0).map(\.sid)
        try store.write { db throws(SQLiteError) in
            try db.run("INSERT INTO subsonic_annotations(user_id, sid, starred_at, rating, play_count, played_at) VALUES (3, ?, 1700000100, 4, 7, 1700000200)", [.text(sids[0])])
            try db.run("INSERT INTO subsonic_annotations(user_id, sid, starred_at, rating, play_count, played_at) VALUES (3, ?, NULL, 2, 0, NULL)", [.text(sids[3])])
            try db.run("INSERT INTO subsonic_annotations(user_id, sid, starred_at, rating, play_count, played_at) VALUES (4, ?, 1700000000, NULL, 1, 1700000001)", [.text(sids[1])])
        }
        let tables = SubsonicTables()
        // Out of order, with an id that has no track (left out).
        let asked = [ids[3], ids[0], 999_999, ids[1], ids[7], ids[5]]
        for user in [3, 4, 9] {
            let songs = try library.songs(trackIDs: asked, user: user)
            #expect(songs.count == 5)
            if user == 3 { #expect(songs.contains { $0.marks.rating == 4 } && songs.contains { $0.marks.rating == 2 }) }
            var expected = SubsonicElement()
            expected.add("song", list: songs.map(SubsonicItems.song))
            let who = SubsonicUser(id: user, name: "u\(user)", isAdmin: false)
            for pass in ["written", "kept", "marks from memory"] {
                let marks = pass == "marks from memory" ? try tables.userMarks(user: who, version: 1, store: store) : nil
                #expect((marks != nil) == (pass == "marks from memory"), "a user with few marks has them kept")
                var written = SubsonicElement()
                written.add("song", written: try tables.songItems(trackIDs: asked, user: user, store: store, marks: marks))
                #expect(SubsonicWriter.jsonBytes(ok: true, body: written) == SubsonicWriter.jsonBytes(ok: true, body: expected), "user \(user), \(pass)")
                #expect(SubsonicWriter.xmlBytes(ok: true, body: written) == SubsonicWriter.xmlBytes(ok: true, body: expected), "user \(user), \(pass)")
            }
        }
        #expect(tables.writtenSongCount.songs == 5 && tables.writtenSongCount.bytes > 5 * 500)
        // Marks in memory are read again for a new marks version only (a write takes one).
        let who = SubsonicUser(id: 4, name: "u4", isAdmin: false)
        try store.write { db throws(SQLiteError) in
            try db.run("INSERT INTO subsonic_annotations(user_id, sid, starred_at, rating, play_count, played_at) VALUES (4, ?, NULL, 5, 0, NULL)", [.text(sids[2])])
        }
        #expect(try tables.userMarks(user: who, version: 1, store: store)?.count == 1, "kept for version 1")
        #expect(try tables.userMarks(user: who, version: 2, store: store)?[sids[2]]?.rating == 5, "read again for version 2")
        #expect(try tables.userMarks(user: SubsonicUser(id: 4, name: "other", isAdmin: false), version: 2, store: store)?.count == 2,
                "another name with the same id reads its own")
        // Not kept (a sync's pages); a new generation lets the kept ones go.
        _ = try tables.songItems(trackIDs: [ids[2]], user: 3, store: store, keep: false)
        #expect(tables.writtenSongCount.songs == 5)
        try store.apply([.removed(path: "loose.mp3")])
        _ = try tables.songItems(trackIDs: [ids[2]], user: 3, store: store)
        #expect(tables.writtenSongCount.songs == 1)
    }

    @Test func dates_asISO8601InUTC() {
        let reference = ISO8601DateFormatter()
        reference.timeZone = TimeZone(identifier: "UTC")
        for seconds in [0, 59, 86_399, 951_782_400, 1_700_000_000, 4_102_444_799, -1] {
            #expect(SubsonicItems.date(seconds) == reference.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))), "\(seconds)")
        }
        #expect(SubsonicItems.date(-62_135_596_801).hasPrefix("0-12-31T23:59:59Z"))
    }

    @Test func queryPairs_splitOnBytesDecodedInOrder() throws {
        let pairs = try QueryValue.pairs("a=1&&b=two+words&a=%33&c&=x&d=&e=caf%C3%A9&", maxValueBytes: 64).get()
        #expect(pairs.map(\.0) == ["a", "b", "a", "c", "", "d", "e"])
        #expect(pairs.map(\.1) == ["1", "two words", "3", "", "x", "", "café"])
        #expect(try QueryValue.pairs("", maxValueBytes: 8).get().isEmpty)
        // A combining mark after `&` does not hide it: the form encoding is bytes.
        #expect(try QueryValue.pairs("a=1&\u{301}b=2", maxValueBytes: 8).get().map(\.1) == ["1", "2"])
        for bad in ["a=%zz", "a=%4", "a=%00", "n=123456789", String(repeating: "x", count: 65) + "=1"] {
            #expect(throws: FormPairError.self, "\(bad)") { try QueryValue.pairs(Substring(bad), maxValueBytes: 8).get() }
        }
    }

    @Test func jsonStrings_escapedAsBefore() {
        var out: [UInt8] = []
        SubsonicWriter.writeJSONString("a\"b\\c\n\r\t\u{1}é\u{1F}z", to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #""a\"b\\c\n\r\t\u0001é\u001fz""#)
        out = []
        SubsonicWriter.writeJSONString("", to: &out)
        #expect(out == Array(#""""#.utf8))
    }

    @Test func nameIndex_everyWordAPrefix_foldedAndInIDOrder() {
        let index = SubsonicNameIndex([(7, "Silver River"), (3, "River Deep"), (9, "Café Noël"), (4, "riverside"), (12, "The Rivers"),
                                       (13, "Rio Rivers river")])
        func ids(_ query: String) -> [Int] { index.ids(matching: SubsonicNameIndex.words(query)) }
        #expect(ids("ri") == [3, 4, 7, 12, 13], "each id once, however many of its words match")
        #expect(ids("rio riv") == [13])
        #expect(ids("RIV sil") == [7])
        #expect(ids("sil riv") == [7])
        #expect(ids("cafe") == [9] && ids("NOEL") == [9] && ids("café noë") == [9])
        #expect(ids("river deeper").isEmpty && ids("x").isEmpty && ids("").isEmpty && ids("!!").isEmpty)
        #expect(SubsonicNameIndex([]).ids(matching: SubsonicNameIndex.words("a")).isEmpty)
    }

    @Test func nameIndex_sameAnswersAsEveryNameRead() {
        let vocabulary = ["river", "rivers", "rio", "riverside", "silver", "sil", "é", "ab", "a", "abc", "zz", "12", "123"]
        var generator = SystemRandomNumberGenerator()
        let rows = (0..<400).map { id in
            (id * 3 + 1, (0..<Int.random(in: 1...4, using: &generator)).map { _ in vocabulary.randomElement(using: &generator) ?? "" }.joined(separator: " "))
        }
        let index = SubsonicNameIndex(rows)
        for _ in 0..<200 {
            let query = (0..<Int.random(in: 1...3, using: &generator)).map { _ in
                let word = vocabulary.randomElement(using: &generator) ?? "a"
                return String(word.prefix(Int.random(in: 1...word.count, using: &generator)))
            }
            let terms = query.flatMap { SubsonicNameIndex.words($0) }
            let expected = rows.filter { row in
                let words = SubsonicNameIndex.words(row.1)
                return terms.allSatisfy { term in words.contains { $0.starts(with: term) } }
            }.map(\.0).sorted()
            #expect(index.ids(matching: terms) == (terms.isEmpty ? [] : expected), "\(query)")
        }
    }

    @Test func lrc_syncedRepeatedAndPlain() {
        let synced = LRCLyrics(Array("\u{FEFF}[ar:Someone]\n[ti:Song]\n[offset:+250]\n[00:01.50][00:10.00]Chorus\n[00:05.1]Verse\r\n[00:07:250]x\n".utf8))
        #expect(synced.synced && synced.artist == "Someone" && synced.title == "Song" && synced.offsetMilliseconds == 250)
        #expect(synced.lines.map(\.startMilliseconds) == [1500, 5100, 7250, 10_000])
        #expect(synced.lines.map(\.text) == ["Chorus", "Verse", "x", "Chorus"])
        let plain = LRCLyrics(Array("\nJust words\n[not a tag\nmore\n\n".utf8))
        #expect(!plain.synced && plain.lines.map(\.text) == ["Just words", "[not a tag", "more"])
        #expect(LRCLyrics(Array("[99:99.99]bad seconds".utf8)).lines.first?.startMilliseconds == nil)
    }
}
