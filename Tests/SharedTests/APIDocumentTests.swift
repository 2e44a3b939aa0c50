import Testing
@testable import StreamShared

/// The API's documents: each written to the exact bytes streamd has always sent, read back
/// equal, and hostile input refused with a typed error.
@Suite struct APIDocumentTests {
    static let seekIndex = SeekIndexDocument(
        path: "Artist/Album/01 \"Quoted\".mp3", durationSeconds: 184.033, firstFrameOffset: 4_096, audioEndOffset: 2_950_000,
        encoderDelay: 576, encoderPadding: 1_152, sampleRate: 44_100, etag: "\"1a2b-2d0370-17f0\"",
        points: [SeekPoint(t: 0, byte: 4_096), SeekPoint(t: 0.522449, byte: 12_456), SeekPoint(t: 1.044898, byte: 21_000)])

    @Test func seekIndex_writesTheContractsBytes() {
        #expect(Self.seekIndex.encoded() == #"""
            {"path":"Artist/Album/01 \"Quoted\".mp3","duration_s":184.033,"first_frame_offset":4096,"audio_end_offset":2950000,"encoder_delay":576,"encoder_padding":1152,"sample_rate":44100,"etag":"\"1a2b-2d0370-17f0\"","points":[{"t":0,"byte":4096},{"t":0.522449,"byte":12456},{"t":1.044898,"byte":21000}]}

            """#)
        var empty = Self.seekIndex
        empty.points = []
        #expect(empty.encoded().hasSuffix(#""points":[]}"# + "\n"))
    }

    @Test func seekIndex_roundTrips() throws {
        #expect(try SeekIndexDocument.decode(Array(Self.seekIndex.encoded().utf8)) == Self.seekIndex)
        var big = Self.seekIndex
        big.points = (0..<SeekIndexDocument.maxPoints).map { SeekPoint(t: Double($0) * 0.5, byte: 4_096 + $0 * 417) }
        #expect(try SeekIndexDocument.decode(Array(big.encoded().utf8)) == big)
    }

    @Test func seekIndex_ignoresMembersItDoesNotKnow_andTakesAnyOrder() throws {
        let text = #"{"points":[{"byte":7,"t":1.5,"new":true}],"etag":"e","sample_rate":8000,"encoder_padding":0,"#
            + #""encoder_delay":0,"audio_end_offset":9,"first_frame_offset":7,"duration_s":2,"path":"p","added":[1,{}]}"#
        let index = try SeekIndexDocument.decode(Array(text.utf8))
        #expect(index.points == [SeekPoint(t: 1.5, byte: 7)] && index.sampleRate == 8000 && index.path == "p")
    }

    @Test func seekIndex_refusesHostileInput_withTypedErrors() {
        let valid = Self.seekIndex.encoded()
        func refusal(_ text: String) -> APIDocumentError? {
            do {
                _ = try SeekIndexDocument.decode(Array(text.utf8))
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal(valid.replacingOccurrences(#""sample_rate":44100"#, "\"sample_rate\":\"44100\""))
                == .wrongType(member: "sample_rate", expected: "a whole number"))
        #expect(refusal(valid.replacingOccurrences(#""byte":12456"#, #""byte":12456.5"#))
                == .wrongType(member: "points[1].byte", expected: "a whole number"))
        #expect(refusal(valid.replacingOccurrences(#""t":0,"#, #""t":null,"#)) == .wrongType(member: "points[0].t", expected: "a number"))
        #expect(refusal(valid.replacingOccurrences(#""etag":"#, #""etag_":"#)) == .missing(member: "etag"))
        #expect(refusal(valid.replacingOccurrences(#""points":["#, #""points":{"a":["#).replacingOccurrences("]}", "]}}"))
                == .wrongType(member: "points", expected: "an array"))
        #expect(refusal("[1,2,3]") == .wrongType(member: "the document", expected: "an object"))
        #expect(refusal(#"{"points":[7]}"#) == .wrongType(member: "points[0]", expected: "an object"))
        // Truncated anywhere: never a crash, always the JSON error.
        let bytes = Array(valid.utf8)
        for cut in 0..<(bytes.count - 1) {
            guard case .malformed? = refusal(String(decoding: bytes[..<cut], as: UTF8.self)) else {
                Issue.record("cut at \(cut) not refused as malformed")
                return
            }
        }
    }

    @Test func seekIndex_refusesTooManyPoints_beforeHoldingThem() {
        // One point too many: refused by count.
        let point = #"{"t":1,"byte":1}"#
        let over = #"{"path":"p","points":["# + Array(repeating: point, count: SeekIndexDocument.maxPoints + 1).joined(separator: ",") + "]}"
        #expect(throws: APIDocumentError.tooMany(member: "points", limit: SeekIndexDocument.maxPoints)) {
            try SeekIndexDocument.decode(Array(over.utf8))
        }
        // Millions of tiny values: refused while parsing, by the value budget (no array of them is built).
        let flood = #"{"points":["# + String(repeating: "0,", count: 2_000_000) + "0]}"
        do {
            _ = try SeekIndexDocument.decode(Array(flood.utf8))
            Issue.record("a flood of values was accepted")
        } catch {
            guard case .malformed(let json) = error else { Issue.record("\(error)"); return }
            #expect(json.reason.contains("more values"))
        }
    }

    // MARK: track items

    static let track = TrackItem(
        path: "Quote \"Q\"/01 Tab\there é.mp3", url: APIRoutes.mediaPath(forLibraryPath: "Quote \"Q\"/01 Tab\there é.mp3"),
        title: "Line\nbreak\u{1}", artist: "Ünïcødé 音楽", album: nil, durationSeconds: 1234.56789, codec: "mp3",
        container: "mp3", sampleRate: 44_100, channels: 2, bitrate: 320_000, size: 4_242_424, etag: "\"ff-40bb38-0\"",
        id: 17, albumID: 3, artistID: nil, albumArtist: nil, trackNumber: 1, discNumber: nil, year: 1999, genre: "Rock")

    @Test func trackItem_writesTheContractsBytes() {
        #expect(Self.track.url == "/media/Quote%20%22Q%22/01%20Tab%09here%20%C3%A9.mp3")
        #expect(Self.track.encoded() == #"""
            {"path":"Quote \"Q\"/01 Tab\there é.mp3","url":"/media/Quote%20%22Q%22/01%20Tab%09here%20%C3%A9.mp3","title":"Line\nbreak\u0001","artist":"Ünïcødé 音楽","album":null,"duration_s":1234.56789,"codec":"mp3","container":"mp3","sample_rate":44100,"channels":2,"bitrate":320000,"bits_per_sample":null,"first_frame_offset":null,"encoder_delay":null,"encoder_padding":null,"total_samples":null,"size":4242424,"etag":"\"ff-40bb38-0\"","id":17,"album_id":3,"artist_id":null,"album_artist":null,"track":1,"disc":null,"year":1999,"genre":"Rock","rg_track_gain":null,"rg_track_peak":null,"rg_album_gain":null,"rg_album_peak":null,"derived":[]}
            """#)
    }

    /// The byte writer writes what `JSONObjectWriter` writes for the same members (the text
    /// streamd's `/api/tracks` items had when they were written through it).
    @Test func trackItem_bytesAreJSONObjectWritersText() {
        let t = Self.track
        var w = JSONObjectWriter()
        w.add("path", t.path); w.add("url", t.url); w.add("title", t.title); w.add("artist", t.artist)
        w.add("album", t.album); w.add("duration_s", t.durationSeconds); w.add("codec", t.codec)
        w.add("container", t.container); w.add("sample_rate", t.sampleRate); w.add("channels", t.channels)
        w.add("bitrate", t.bitrate); w.add("bits_per_sample", t.bitsPerSample)
        w.add("first_frame_offset", t.gapless?.firstFrameOffset); w.add("encoder_delay", t.gapless?.encoderDelay)
        w.add("encoder_padding", t.gapless?.encoderPadding); w.add("total_samples", t.gapless?.totalSamples); w.add("size", t.size); w.add("etag", t.etag)
        w.add("id", t.id); w.add("album_id", t.albumID); w.add("artist_id", t.artistID); w.add("album_artist", t.albumArtist)
        w.add("track", t.trackNumber); w.add("disc", t.discNumber); w.add("year", t.year); w.add("genre", t.genre)
        w.add("rg_track_gain", t.replayGain?.trackGain); w.add("rg_track_peak", t.replayGain?.trackPeak)
        w.add("rg_album_gain", t.replayGain?.albumGain); w.add("rg_album_peak", t.replayGain?.albumPeak)
        w.addRaw("derived", "[]")
        #expect(t.encoded() == w.text)
        for text in ["", "plain", "\"", "\\", "\u{0}\u{1F}\u{7F}", "a\r\nb\tc", "é音🎵", "\u{8}\u{C}/"] {
            var bytes: [UInt8] = []
            var copy = text
            copy.withUTF8 { JSONBytes.string($0, &bytes) }
            #expect(String(decoding: bytes, as: UTF8.self) == JSONObjectWriter.quote(text), "\(Array(text.utf8))")
        }
    }

    /// A lossless track's depth and a track's ReplayGain (R128 already converted) are written
    /// and read back; null when absent.
    @Test func trackItem_bitDepthAndGains_roundTrip() throws {
        var lossless = Self.track
        lossless.bitsPerSample = 24
        lossless.gapless = TrackItem.Gapless(firstFrameOffset: 417, encoderDelay: 576, encoderPadding: 1_024, totalSamples: 44_100)
        lossless.replayGain = ReplayGain(trackGain: 3, trackPeak: 0.5, albumGain: -1.25, albumPeak: nil)
        let text = lossless.encoded()
        #expect(text.contains(#""bitrate":320000,"bits_per_sample":24,"#), "\(text)")
        #expect(text.contains(#""first_frame_offset":417,"encoder_delay":576,"encoder_padding":1024,"total_samples":44100,"#), "\(text)")
        #expect(text.contains(#""rg_track_gain":3,"rg_track_peak":0.5,"rg_album_gain":-1.25,"rg_album_peak":null,"#), "\(text)")
        #expect(try TrackItem.decode(Array(text.utf8)) == lossless)
    }

    @Test func trackItem_roundTrips_aloneAndInAList() throws {
        #expect(try TrackItem.decode(Array(Self.track.encoded().utf8)) == Self.track)
        var second = Self.track
        second.id = 18
        second.durationSeconds = nil
        second.title = nil
        let list = "[" + [Self.track, second].map { $0.encoded() }.joined(separator: ",\n") + "]\n"
        #expect(try TrackItem.decodeList(Array(list.utf8)) == [Self.track, second])
        #expect(try TrackItem.decodeList(Array("[]\n".utf8)) == [])
    }

    @Test func trackItem_refusesHostileInput_withTypedErrors() {
        let item = Self.track.encoded()
        #expect(throws: APIDocumentError.wrongType(member: "[0].id", expected: "a whole number")) {
            try TrackItem.decodeList(Array(("[" + item.replacingOccurrences(#""id":17"#, #""id":true"#) + "]").utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "title", expected: "a string or null")) {
            try TrackItem.decode(Array(item.replacingOccurrences(#""title":"Line\nbreak\u0001""#, #""title":["x"]"#).utf8))
        }
        #expect(throws: APIDocumentError.missing(member: "url")) {
            try TrackItem.decode(Array(item.replacingOccurrences(#""url":"#, #""uri":"#).utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "the document", expected: "an array")) {
            try TrackItem.decodeList(Array(item.utf8))
        }
        let many = "[" + String(repeating: "{},", count: TrackItem.maxListCount) + "{}]"
        #expect(throws: APIDocumentError.tooMany(member: "the document", limit: TrackItem.maxListCount)) {
            try TrackItem.decodeList(Array(many.utf8))
        }
        let bytes = Array(item.utf8)
        for cut in 0..<(bytes.count - 1) {
            #expect(throws: APIDocumentError.self) { try TrackItem.decode(Array(bytes[..<cut])) }
        }
    }

    /// Fields the catalog took from the path are listed by their member names, in one order,
    /// and read back; a document without the list (an older streamd) reads as none derived, and
    /// names this reader does not know (a newer streamd) are passed over.
    @Test func trackItem_derivedMembers_writtenByName_andReadBack() throws {
        var derived = Self.track
        derived.derived = [.disc, .title, .albumArtist, .artist, .album, .track]
        let text = derived.encoded()
        #expect(text.hasSuffix(#","rg_album_peak":null,"derived":["title","artist","album","album_artist","track","disc"]}"#), "\(text)")
        #expect(try TrackItem.decode(Array(text.utf8)) == derived)
        derived.derived = [.title]
        #expect(derived.encoded().hasSuffix(#""derived":["title"]}"#))
        #expect(try TrackItem.decodeList(Array(("[" + derived.encoded() + "]").utf8)) == [derived])
        let older = Self.track.encoded().replacingOccurrences(#","derived":[]"#, "")
        #expect(!older.contains("derived"))
        #expect(try TrackItem.decode(Array(older.utf8)).derived == [])
        let newer = derived.encoded().replacingOccurrences(#"["title"]"#, #"["title","composer"]"#)
        #expect(try TrackItem.decode(Array(newer.utf8)).derived == [.title])
        #expect(throws: APIDocumentError.wrongType(member: "derived", expected: "an array")) {
            try TrackItem.decode(Array(derived.encoded().replacingOccurrences(#"["title"]"#, #""title""#).utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "[0].derived[1]", expected: "a string")) {
            try TrackItem.decodeList(Array(("[" + derived.encoded().replacingOccurrences(#"["title"]"#, #"["title",7]"#) + "]").utf8))
        }
        let tooMany = "[" + Array(repeating: #""title""#, count: 33).joined(separator: ",") + "]"
        #expect(throws: APIDocumentError.tooMany(member: "derived", limit: 32)) {
            try TrackItem.decode(Array(derived.encoded().replacingOccurrences(#"["title"]"#, tooMany).utf8))
        }
        #expect(DerivedFields([.album, .title]).names == ["title", "album"])
        #expect(DerivedFields().json == "[]")
    }

    // MARK: status

    static let status = StatusDocument(
        tracks: 120, skippedCount: 3, ignoredCount: 1, quarantinedCount: 1, scans: 2, lastScanMillis: 850, scanning: false,
        scanFound: 124, scanToRead: 0, scanRead: 124, analyzerWorkers: 2, analyzeTimeoutSeconds: 10, database: "/tmp/x/catalog.db",
        seekIndexesCached: 40, seekIndexesBuiltAhead: 38, seekIndexesBuiltOnPlay: 2, indexAheadSeconds: 600,
        watcher: .init(mode: "inotify", folders: 12, rescanIntervalSeconds: 3600),
        connections: .init(total: 3, perLoop: [1, 2]),
        skipped: [.init(path: "cover.jpg", reason: "not audio", quarantined: false),
                  .init(path: "trap.mp3", reason: "analyzer crashed", quarantined: true)])

    @Test func status_writesTheContractsBytes() {
        #expect(Self.status.encoded() == #"""
            {"tracks":120,"skipped_count":3,"ignored_count":1,"quarantined_count":1,"scans":2,"last_scan_ms":850,"scanning":false,"scan_found":124,"scan_to_read":0,"scan_read":124,"analyzer_workers":2,"analyze_timeout_s":10,"db":"/tmp/x/catalog.db","seek_indexes_cached":40,"seek_indexes_built_ahead":38,"seek_indexes_built_on_play":2,"index_ahead_s":600,"watch":"inotify","watched_folders":12,"rescan_interval_s":3600,"connections":3,"connections_per_loop":[1,2],"skipped":[{"path":"cover.jpg","reason":"not audio","quarantined":false},
            {"path":"trap.mp3","reason":"analyzer crashed","quarantined":true}]}

            """#)
        // Without a scanner or a server their members are left out; no index built ahead is null.
        let bare = StatusDocument(tracks: 1, indexAheadSeconds: nil)
        #expect(bare.encoded().contains(#""index_ahead_s":null,"skipped":[]}"#))
    }

    @Test func status_roundTrips() throws {
        #expect(try StatusDocument.decode(Array(Self.status.encoded().utf8)) == Self.status)
        let bare = StatusDocument(tracks: 1, database: "db")
        #expect(try StatusDocument.decode(Array(bare.encoded().utf8)) == bare)
    }

    @Test func status_refusesHostileInput_withTypedErrors() {
        let text = Self.status.encoded()
        #expect(throws: APIDocumentError.wrongType(member: "scanning", expected: "true or false")) {
            try StatusDocument.decode(Array(text.replacingOccurrences(#""scanning":false"#, #""scanning":0"#).utf8))
        }
        #expect(throws: APIDocumentError.missing(member: "watched_folders")) {
            try StatusDocument.decode(Array(text.replacingOccurrences(#""watched_folders":"#, #""folders":"#).utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "connections_per_loop[1]", expected: "a whole number")) {
            try StatusDocument.decode(Array(text.replacingOccurrences("[1,2]", #"[1,"2"]"#).utf8))
        }
        #expect(throws: APIDocumentError.wrongType(member: "skipped[1].quarantined", expected: "true or false")) {
            try StatusDocument.decode(Array(text.replacingOccurrences(#""quarantined":true"#, #""quarantined":"yes""#).utf8))
        }
        let many = "[" + String(repeating: "{},", count: StatusDocument.maxListCount) + "{}]"
        #expect(throws: APIDocumentError.tooMany(member: "skipped", limit: StatusDocument.maxListCount)) {
            try StatusDocument.decode(Array(text.replacingOccurrences(#""skipped":["#, #""skipped":"# + many + #","old":["#).utf8))
        }
        #expect(throws: APIDocumentError.self) { try StatusDocument.decode(Array("{\"tracks\":1".utf8)) }
        #expect(throws: APIDocumentError.self) { try StatusDocument.decode([]) }
    }

    // MARK: routes

    @Test func seekIndexURL_isTheMediaURLsTwin() {
        #expect(APIRoutes.seekIndexURL(forMediaURL: "http://h:8080/media/A%20B/c.mp3")
                == "http://h:8080/api/index/A%20B/c.mp3")
        #expect(APIRoutes.seekIndexURL(forMediaURL: "http://h/media/c.mp3?x=1", around: 12.5) == "http://h/api/index/c.mp3?t=12.5")
        #expect(APIRoutes.seekIndexURL(forMediaURL: "https://h/prefix/media/c.m4a#f") == "https://h/prefix/api/index/c.m4a")
        #expect(APIRoutes.seekIndexURL(forMediaURL: "/media/x.mp3") == "/api/index/x.mp3")
        #expect(APIRoutes.seekIndexURL(forMediaURL: "http://h/hls/c.mp3/index.m3u8") == nil)
        #expect(APIRoutes.seekIndexURL(forMediaURL: "http://h/file.mp3?u=/media/x") == nil)
    }

    @Test func numbers_largeAndHuge_areJSONNumbers_notATrap() throws {
        for value in [1e15, 1e16, -3.5e20, 1.7e308, -Double.greatestFiniteMagnitude] {
            let text = JSONObjectWriter.number(value)
            #expect(try JSONValue.parse(Array(text.utf8)).double == value, "\(text)")
        }
        // Small values are written in fixed notation, rounded (a product a hair under the digit is not cut).
        for micros in 1..<1000 {
            var digits = String(micros)
            digits = String(repeating: "0", count: 6 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            #expect(JSONObjectWriter.number(Double(micros) / 1e6) == "0." + digits)
        }
    }
}

private extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        guard let range = firstRange(of: target) else { return self }
        var copy = self
        copy.replaceSubrange(range, with: replacement)
        return copy
    }
}
