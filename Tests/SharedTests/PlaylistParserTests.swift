import Testing
@testable import StreamShared

/// Track playlists (M3U, extended M3U, PLS): every edge case a real file shows, and a typed
/// error for every hostile one.
@Suite struct PlaylistParserTests {
    func parse(_ text: String, encoding: PlaylistTextEncoding = .utf8OrWindows1252,
               limits: PlaylistLimits = PlaylistLimits()) throws(PlaylistError) -> PlaylistFile {
        try PlaylistParser.parse(Array(text.utf8)[...], encoding: encoding, limits: limits)
    }

    func error(_ bytes: [UInt8], encoding: PlaylistTextEncoding = .utf8OrWindows1252,
               limits: PlaylistLimits = PlaylistLimits()) -> PlaylistError? {
        do {
            _ = try PlaylistParser.parse(bytes[...], encoding: encoding, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    // MARK: M3U

    @Test func extendedM3U_durationsTitlesAndLocations() throws {
        let playlist = try parse("""
        #EXTM3U
        #PLAYLIST:Road trip
        #EXTINF:123,Artist - Title
        Artist/Album/01 Song.mp3
        # a comment between entries
        #EXTINF:4.5,Only title, with a comma
        /music/abs.m4a

        http://example.com/stream.mp3
        """)
        #expect(playlist.format == .extendedM3U)
        #expect(playlist.title == "Road trip")
        #expect(playlist.entries == [
            PlaylistEntry(location: "Artist/Album/01 Song.mp3", title: "Artist - Title", duration: 123),
            PlaylistEntry(location: "/music/abs.m4a", title: "Only title, with a comma", duration: 4.5),
            PlaylistEntry(location: "http://example.com/stream.mp3"),
        ])
    }

    @Test func plainM3U_isOneLocationPerLine() throws {
        let playlist = try parse("a.mp3\n#not a tag\nb/c.wav\n")
        #expect(playlist.format == .m3u)
        #expect(playlist.entries.map(\.location) == ["a.mp3", "b/c.wav"])
        #expect(playlist.entries.allSatisfy { $0.title == nil && $0.duration == nil })
    }

    @Test func windowsLineEnds_andLoneCR() throws {
        let crlf = try parse("#EXTM3U\r\n#EXTINF:10,T\r\nx.mp3\r\ny.mp3\r\n")
        #expect(crlf.entries == [PlaylistEntry(location: "x.mp3", title: "T", duration: 10), PlaylistEntry(location: "y.mp3")])
        let cr = try parse("#EXTM3U\r#EXTINF:10,T\rx.mp3\ry.mp3")
        #expect(cr.entries == crlf.entries)
    }

    @Test func utf8ByteOrderMark_isSkipped() throws {
        let playlist = try PlaylistParser.parse(([0xEF, 0xBB, 0xBF] + Array("#EXTM3U\n#EXTINF:1,Café\nb.mp3\n".utf8))[...])
        #expect(playlist.format == .extendedM3U)
        #expect(playlist.entries == [PlaylistEntry(location: "b.mp3", title: "Café", duration: 1)])
    }

    @Test func utf16ByteOrderMarks_areDecoded() throws {
        let text = "#EXTM3U\r\n#EXTINF:2,Ünïcödé 🎵\r\nsub\\ü.mp3\r\n"
        let units = Array(text.utf16)
        let little: [UInt8] = [0xFF, 0xFE] + units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let big: [UInt8] = [0xFE, 0xFF] + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let expected = [PlaylistEntry(location: "sub\\ü.mp3", title: "Ünïcödé 🎵", duration: 2)]
        #expect(try PlaylistParser.parse(little[...]).entries == expected)
        #expect(try PlaylistParser.parse(big[...]).entries == expected)
    }

    @Test func utf16_oddLengthOrUnpairedSurrogate_isNotText() {
        #expect(error([0xFF, 0xFE, 0x41]) == .notText(reason: "UTF-16 text of an odd byte count"))
        #expect(error([0xFF, 0xFE, 0x00, 0xD8, 0x41, 0x00]) == .notText(reason: "invalid UTF-16 (an unpaired surrogate)"))
    }

    @Test func latin1M3U_fallsBackToWindows1252() throws {
        // "Café – Noël.mp3" as Windows writes it: é = E9, – = 96 (Windows-1252), ë = EB.
        let bytes: [UInt8] = Array("#EXTINF:3,Caf".utf8) + [0xE9] + Array("\n".utf8)
            + Array("Caf".utf8) + [0xE9, 0x20, 0x96, 0x20] + Array("No".utf8) + [0xEB] + Array("l.mp3\n".utf8)
        let playlist = try PlaylistParser.parse(bytes[...], encoding: PlaylistTextEncoding(fileExtension: "M3U"))
        #expect(playlist.entries == [PlaylistEntry(location: "Café – Noël.mp3", title: "Café", duration: 3)])
    }

    @Test func invalidUTF8_inM3U8_isAnError() {
        let bytes = Array("#EXTM3U\nok.mp3\nCaf".utf8) + [0xE9] + Array(".mp3\n".utf8)
        #expect(PlaylistTextEncoding(fileExtension: "m3u8") == .utf8)
        #expect(error(bytes, encoding: .utf8) == .invalidUTF8(line: 3))
        // A UTF-8 byte order mark says the same of a .m3u.
        #expect(error([0xEF, 0xBB, 0xBF] + bytes, encoding: .utf8OrWindows1252) == .invalidUTF8(line: 3))
    }

    @Test func extinf_unknownOrBadDurations_areNil() throws {
        let playlist = try parse("""
        #EXTM3U
        #EXTINF:-1,Live stream
        a
        #EXTINF:abc,Not a number
        b
        #EXTINF:1e999,Overflow
        c
        #EXTINF:99999999,More than a week
        d
        #EXTINF:nan,NaN
        e
        #EXTINF:,No duration
        f
        #EXTINF:7
        g
        """)
        #expect(playlist.entries.map(\.duration) == [nil, nil, nil, nil, nil, nil, 7])
        #expect(playlist.entries.map(\.title) == ["Live stream", "Not a number", "Overflow", "More than a week", "NaN",
                                                  "No duration", nil])
    }

    @Test func extinf_attributesWithQuotedCommas() throws {
        let playlist = try parse("""
        #EXTM3U
        #EXTINF:-1 tvg-id="radio.1" group-title="News, Talk",Radio One
        http://radio.example/one
        """)
        #expect(playlist.entries == [PlaylistEntry(location: "http://radio.example/one", title: "Radio One", duration: nil)])
    }

    @Test func extinf_appliesOnlyToTheNextLocation_andTrailingOneIsDropped() throws {
        let playlist = try parse("#EXTM3U\n#EXTINF:5,First\n#EXTGRP:group\na.mp3\nb.mp3\n#EXTINF:9,Dangling\n")
        #expect(playlist.entries == [PlaylistEntry(location: "a.mp3", title: "First", duration: 5), PlaylistEntry(location: "b.mp3")])
    }

    @Test func spacesAroundLocations_areTrimmed() throws {
        let playlist = try parse("  \t a b.mp3 \t\n")
        #expect(playlist.entries.map(\.location) == ["a b.mp3"])
    }

    @Test func emptyFile_isAnEmptyPlaylist() throws {
        #expect(try parse("").entries.isEmpty)
        #expect(try parse("#EXTM3U\n").format == .extendedM3U)
    }

    @Test func nulByte_isNotText() {
        // An MP3 named .m3u: its first bytes hold NULs.
        #expect(error(Array("ID3".utf8) + [4, 0, 0, 0, 0, 0x21]) == .notText(reason: "NUL byte at offset 4"))
    }

    // MARK: HLS is told apart by content

    @Test func hlsMediaPlaylist_isRefusedAsHLS() {
        let media = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nseg0.mp3\n#EXT-X-ENDLIST\n"
        #expect(error(Array(media.utf8)) == .hls(tag: "#EXT-X-TARGETDURATION"))
        #expect(PlaylistParser.kind(of: Array(media.utf8)[...]) == .hls)
    }

    @Test func hlsMasterPlaylist_isRefusedAsHLS() {
        let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=128000\nv/index.m3u8\n"
        #expect(error(Array(master.utf8)) == .hls(tag: "#EXT-X-STREAM-INF"))
    }

    @Test func otherEXTXTags_inATrackList_areIgnored() throws {
        let playlist = try parse("#EXTM3U\n#EXT-X-VERSION:3\n#EXTINF:3,A\na.mp3\n")
        #expect(playlist.entries.count == 1)
        #expect(PlaylistParser.kind(of: Array("#EXTM3U\na.mp3\n".utf8)[...]) == .tracks(.extendedM3U))
        #expect(PlaylistParser.kind(of: [0x49, 0x00][...]) == nil)
    }

    // MARK: PLS

    @Test func pls_entriesInNumberOrder() throws {
        let playlist = try parse("""
        [playlist]
        File2=http://radio.example/two
        Title2=Two
        Length2=-1
        File1=Artist\\Album\\01.mp3
        Title1=One
        Length1=201
        NumberOfEntries=2
        Version=2
        """)
        #expect(playlist.format == .pls)
        #expect(playlist.entries == [
            PlaylistEntry(location: "Artist\\Album\\01.mp3", title: "One", duration: 201),
            PlaylistEntry(location: "http://radio.example/two", title: "Two", duration: nil),
        ])
    }

    @Test func pls_caseInsensitiveKeys_commentsAndSpaces() throws {
        let playlist = try parse("\r\n[PlayList]\r\n; comment\r\nfile1 = a.mp3\r\nTITLE1= A \r\nlength1=3.5\r\nFileSize1=9\r\n")
        #expect(playlist.entries == [PlaylistEntry(location: "a.mp3", title: "A", duration: 3.5)])
    }

    @Test func pls_titleWithoutFile_andGaps() throws {
        let playlist = try parse("[playlist]\nTitle1=orphan\nFile3=c.mp3\nFile7=g.mp3\nNumberOfEntries=9\n")
        #expect(playlist.entries.map(\.location) == ["c.mp3", "g.mp3"])
        #expect(playlist.entries.allSatisfy { $0.title == nil })
    }

    @Test func pls_keysOutsideThePlaylistSection_areIgnored() throws {
        let playlist = try parse("[playlist]\nFile1=a.mp3\n[other]\nFile2=b.mp3\n")
        #expect(playlist.entries.map(\.location) == ["a.mp3"])
    }

    @Test func pls_badNumbers_areTypedErrors() {
        #expect(error(Array("[playlist]\nNumberOfEntries=many\n".utf8))
                == .invalidPLS(line: 2, reason: "NumberOfEntries 'many' is not a number"))
        #expect(error(Array("[playlist]\nFile0=a.mp3\n".utf8)) == .invalidPLS(line: 2, reason: "entry number 0 in 'file0'"))
        #expect(error(Array("[playlist]\nFile99999999999999999999=a.mp3\n".utf8)) == .tooManyEntries(line: 2, limit: 100_000))
        #expect(error(Array("[playlist]\nFile100001=a.mp3\n".utf8)) == .tooManyEntries(line: 2, limit: 100_000))
        #expect(error(Array("[playlist]\nNumberOfEntries=100001\n".utf8)) == .tooManyEntries(line: 2, limit: 100_000))
    }

    // MARK: Bounds

    @Test func tooLarge_isRefusedBeforeReading() {
        var limits = PlaylistLimits()
        limits.maxBytes = 100
        #expect(error(Array(repeating: UInt8(ascii: "a"), count: 101), limits: limits) == .tooLarge(bytes: 101, limit: 100))
    }

    @Test func tooManyEntries_inM3U() {
        var limits = PlaylistLimits()
        limits.maxEntries = 3
        let text = (1...4).map { "t\($0).mp3" }.joined(separator: "\n")
        #expect(error(Array(text.utf8), limits: limits) == .tooManyEntries(line: 4, limit: 3))
        #expect((try? parse((1...3).map { "t\($0).mp3" }.joined(separator: "\n"), limits: limits))?.entries.count == 3)
    }

    @Test func lineTooLong() {
        var limits = PlaylistLimits()
        limits.maxLineLength = 10
        #expect(error(Array("ok.mp3\n0123456789a.mp3\n".utf8), limits: limits) == .lineTooLong(line: 2, limit: 10))
    }

    @Test func errorMessages_nameTheComponentAndLine() {
        #expect(PlaylistError.invalidUTF8(line: 3).description == "playlist: line 3: not valid UTF-8")
        #expect(PlaylistError.hls(tag: "#EXT-X-STREAM-INF").description
                == "playlist: an HLS playlist (#EXT-X-STREAM-INF), not a list of tracks")
    }

    // MARK: Writer

    @Test func writer_roundTrips() throws {
        let entries = [
            PlaylistEntry(location: "http://h:8080/media/A%20B/01.mp3", title: "Artist - Title, with comma", duration: 201.4),
            PlaylistEntry(location: "relative/x.wav", title: nil, duration: nil),
            PlaylistEntry(location: "http://h/media/%E2%82%AC.m4a", title: "Ünïcode €", duration: 0.6),
        ]
        let text = M3UWriter.render(entries, title: "Mix")
        #expect(text == """
        #EXTM3U
        #PLAYLIST:Mix
        #EXTINF:201,Artist - Title, with comma
        http://h:8080/media/A%20B/01.mp3
        #EXTINF:-1,
        relative/x.wav
        #EXTINF:1,Ünïcode €
        http://h/media/%E2%82%AC.m4a

        """)
        let back = try parse(text)
        #expect(back.title == "Mix")
        #expect(back.entries.map(\.location) == entries.map(\.location))
        #expect(back.entries.map(\.title) == entries.map(\.title))
        #expect(back.entries.map(\.duration) == [201, nil, 1])
    }

    @Test func writer_escapesLineBreaksControlsAndLeadingHash() throws {
        let entries = [PlaylistEntry(location: "#odd name\n.mp3", title: "two\r\nlines\u{2028}and\ttab", duration: -3)]
        let text = M3UWriter.render(entries)
        #expect(text == "#EXTM3U\n#EXTINF:-1,two  lines and tab\n%23odd%20name%0A.mp3\n")
        let back = try parse(text)
        #expect(back.entries == [PlaylistEntry(location: "%23odd%20name%0A.mp3", title: "two  lines and tab", duration: nil)])
    }

    @Test func writer_hugeOrNonFiniteDurations_areUnknown() {
        #expect(M3UWriter.seconds(.infinity) == -1)
        #expect(M3UWriter.seconds(.nan) == -1)
        #expect(M3UWriter.seconds(1e300) == -1)
        #expect(M3UWriter.seconds(59.5) == 60)
    }

    // MARK: Locations

    @Test func location_relativeAbsoluteAndDotSegments() {
        #expect(PlaylistLocation.resolve("a/b.mp3", relativeTo: "/m/lists") == .local("/m/lists/a/b.mp3"))
        #expect(PlaylistLocation.resolve("../x/./y.mp3", relativeTo: "/m/lists") == .local("/m/x/y.mp3"))
        #expect(PlaylistLocation.resolve("/abs//p.mp3", relativeTo: "/m") == .local("/abs/p.mp3"))
        #expect(PlaylistLocation.resolve("../../../../etc/passwd", relativeTo: "/m/l") == .local("/etc/passwd"))
    }

    @Test func location_backslashes_areFolderSeparators() {
        #expect(PlaylistLocation.resolve("Artist\\Album\\01.mp3", relativeTo: "/m") == .local("/m/Artist/Album/01.mp3"))
    }

    @Test func location_urls() {
        #expect(PlaylistLocation.resolve("HTTP://radio/x", relativeTo: "/m") == .remote("HTTP://radio/x"))
        #expect(PlaylistLocation.resolve("file:///m/A%20B/c.mp3", relativeTo: "/x") == .local("/m/A B/c.mp3"))
        #expect(PlaylistLocation.resolve("file://localhost/m/c.mp3?x#y", relativeTo: "/x") == .local("/m/c.mp3"))
        #expect(PlaylistLocation.resolve("file:/m/c.mp3", relativeTo: "/x") == .local("/m/c.mp3"))
        #expect(PlaylistLocation.resolve("file://nas/m/c.mp3", relativeTo: "/x") == .unresolvable("file URL of another host 'nas'"))
        #expect(PlaylistLocation.resolve("file:///m/%zz.mp3", relativeTo: "/x")
                == .unresolvable("bad percent escape in 'file:///m/%zz.mp3'"))
        #expect(PlaylistLocation.resolve("file:///m/%00.mp3", relativeTo: "/x") == .unresolvable("NUL in a file URL"))
    }

    @Test func location_windowsPaths_areUnresolvable() {
        #expect(PlaylistLocation.resolve("C:\\Music\\a.mp3", relativeTo: "/m") == .unresolvable("Windows path 'C:\\Music\\a.mp3'"))
        #expect(PlaylistLocation.resolve("d:/a.mp3", relativeTo: "/m") == .unresolvable("Windows path 'd:/a.mp3'"))
        #expect(PlaylistLocation.resolve("\\\\server\\share\\a.mp3", relativeTo: "/m")
                == .unresolvable("Windows path '\\\\server\\share\\a.mp3'"))
        #expect(PlaylistLocation.resolve("", relativeTo: "/m") == .unresolvable("empty location"))
    }
}
