import Testing
import TestSupport
@testable import StreamShared

/// Builds the tags that sit at the end of a file, byte by byte.
enum TrailingBytes {
    /// Bytes standing in for audio.
    static func audio(_ count: Int) -> [UInt8] { [UInt8](repeating: 0x55, count: count) }

    /// Writes `text` (Latin-1) into `tag` at `offset`, at most `length` bytes.
    static func put(_ text: String, into tag: inout [UInt8], at offset: Int, length: Int) {
        for (i, scalar) in text.unicodeScalars.prefix(length).enumerated() {
            tag[offset + i] = UInt8(truncatingIfNeeded: scalar.value)
        }
    }

    /// A 128-byte ID3v1 tag; with `track` it is ID3v1.1 (zero byte, then the track, at the end of the comment).
    static func id3v1(title: String = "", artist: String = "", album: String = "", comment: String = "",
                      track: UInt8? = nil, pad: UInt8 = 0) -> [UInt8] {
        var tag = Array("TAG".utf8) + [UInt8](repeating: pad, count: 125)
        put(title, into: &tag, at: 3, length: 30)
        put(artist, into: &tag, at: 33, length: 30)
        put(album, into: &tag, at: 63, length: 30)
        put("2024", into: &tag, at: 93, length: 4)
        put(comment, into: &tag, at: 97, length: 30)
        if let track {
            tag[125] = 0
            tag[126] = track
        }
        tag[127] = 12                                                    // genre
        return tag
    }

    /// The 227-byte "TAG+" block: 60 more bytes each of title, artist and album.
    static func enhanced(title: String = "", artist: String = "", album: String = "") -> [UInt8] {
        var tag = Array("TAG+".utf8) + [UInt8](repeating: 0, count: 223)
        put(title, into: &tag, at: 4, length: 60)
        put(artist, into: &tag, at: 64, length: 60)
        put(album, into: &tag, at: 124, length: 60)
        return tag
    }

    /// One APE item: value size, flags, NUL-terminated key, value.
    static func apeItem(_ key: String, _ value: String) -> [UInt8] {
        le32(value.utf8.count) + le32(0) + Array(key.utf8) + [0] + Array(value.utf8)
    }

    /// An APE header or footer; `size` counts items and footer, not the header.
    static func apeHeaderOrFooter(version: Int = 2000, size: Int, items: Int, hasHeader: Bool, isHeader: Bool) -> [UInt8] {
        let flags = (hasHeader ? 0x8000_0000 : 0) | (isHeader ? 0x2000_0000 : 0)
        return Array("APETAGEX".utf8) + le32(version) + le32(size) + le32(items) + le32(flags) + [UInt8](repeating: 0, count: 8)
    }

    /// A whole APE tag with a title and an artist item, with or without its 32-byte header.
    static func ape(header: Bool, version: Int = 2000, filler: Int = 0) -> [UInt8] {
        let items = apeItem("Title", "APE title") + apeItem("Artist", "APE artist") + apeItem("Comment", String(repeating: "c", count: filler))
        let size = items.count + 32
        let head = header ? apeHeaderOrFooter(version: version, size: size, items: 3, hasHeader: true, isHeader: true) : []
        return head + items + apeHeaderOrFooter(version: version, size: size, items: 3, hasHeader: header, isHeader: false)
    }

    /// A Lyrics3v2 tag: "LYRICSBEGIN", fields, 6-digit size, "LYRICS200".
    static func lyrics3v2(_ lyrics: String = "[00:01]La la") -> [UInt8] {
        let field = "LYR" + digits(lyrics.utf8.count, width: 5) + lyrics
        let body = Array("LYRICSBEGIN".utf8) + Array("IND00003110".utf8) + Array(field.utf8)
        return body + Array(digits(body.count, width: 6).utf8) + Array("LYRICS200".utf8)
    }

    /// A zero-padded decimal number, as Lyrics3v2 writes its sizes.
    static func digits(_ n: Int, width: Int) -> String {
        let text = String(n)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    /// A Lyrics3v1 tag: "LYRICSBEGIN", lyrics, "LYRICSEND".
    static func lyrics3v1(_ lyrics: String = "Old lyrics") -> [UInt8] {
        Array("LYRICSBEGIN".utf8) + Array(lyrics.utf8) + Array("LYRICSEND".utf8)
    }
}

@Suite struct TrailingTagsScanTests {
    typealias T = TrailingBytes

    static func isInvalid(_ error: FormatError?) -> Bool {
        if case .invalid = error { return true }
        return false
    }

    static func scanWhole(_ file: [UInt8]) throws -> TrailingTags {
        try TrailingTags.scan(tail: file[...], fileSize: file.count)
    }

    @Test func nothingAtTheEnd() throws {
        #expect(try Self.scanWhole(T.audio(4000)) == TrailingTags(trailingBytes: 0, id3v1: nil, apeSize: 0))
        #expect(try Self.scanWhole([]) == TrailingTags(trailingBytes: 0, id3v1: nil, apeSize: 0))
        #expect(try Self.scanWhole(Array("TAG".utf8)) == TrailingTags(trailingBytes: 0, id3v1: nil, apeSize: 0))
    }

    @Test func id3v1_fieldsAreLatin1AndTrimmed() throws {
        // Fields padded with spaces (some writers) and with NULs (others); a full 30-byte comment: no track.
        let tag = T.id3v1(title: "Café Ünïcode  ", artist: "  Spaced", album: String(repeating: "A", count: 30),
                          comment: String(repeating: "c", count: 30), pad: 0x20)
        let result = try Self.scanWhole(T.audio(1000) + tag)
        #expect(result.trailingBytes == 128)
        #expect(result.apeSize == 0)
        #expect(result.id3v1 == TrackTags(title: "Café Ünïcode", artist: "Spaced", album: String(repeating: "A", count: 30), date: "2024"))
    }

    @Test func id3v11_trackNumber() throws {
        let result = try Self.scanWhole(T.audio(1000) + T.id3v1(title: "Old Song", artist: "Artist", track: 7))
        #expect(result.trailingBytes == 128)
        #expect(result.id3v1 == TrackTags(title: "Old Song", artist: "Artist", track: "7", date: "2024"))
    }

    @Test func id3v1_emptyFields_isAnEmptyTagNotNil() throws {
        let result = try Self.scanWhole(T.audio(200) + T.id3v1())
        #expect(result.id3v1 == TrackTags(date: "2024"), "the builder always writes a year")
        #expect(result.trailingBytes == 128)
    }

    @Test func id3v1Enhanced_extendsTheFields() throws {
        let title = String(repeating: "t", count: 30)
        let file = T.audio(500) + T.enhanced(title: " and the rest", artist: "ignored: artist was short")
            + T.id3v1(title: title, artist: "Short")
        let result = try Self.scanWhole(file)
        #expect(result.trailingBytes == 227 + 128)
        #expect(result.id3v1?.title == title + " and the rest")
        #expect(result.id3v1?.artist == "Short")
    }

    @Test func apeWithoutHeader() throws {
        let ape = T.ape(header: false)
        let result = try Self.scanWhole(T.audio(500) + ape)
        let items = [APEItem(key: "Title", value: "APE title"), APEItem(key: "Artist", value: "APE artist"),
                     APEItem(key: "Comment", value: "")]
        #expect(result == TrailingTags(trailingBytes: ape.count, id3v1: nil, apeSize: ape.count, apeItems: items))
    }

    @Test func apeWithHeader() throws {
        let ape = T.ape(header: true)
        let result = try Self.scanWhole(T.audio(500) + ape)
        #expect(result.apeSize == ape.count, "the footer's size plus the 32-byte header")
        #expect(result.trailingBytes == ape.count)
    }

    @Test func apeV1_hasNoHeader() throws {
        let ape = T.ape(header: false, version: 1000)
        #expect(try Self.scanWhole(T.audio(300) + ape).apeSize == ape.count)
    }

    @Test func apeThenID3v1() throws {
        let ape = T.ape(header: true)
        let file = T.audio(500) + ape + T.id3v1(title: "Both", track: 2)
        let result = try Self.scanWhole(file)
        #expect(result.apeSize == ape.count)
        #expect(result.trailingBytes == ape.count + 128)
        #expect(result.id3v1 == TrackTags(title: "Both", track: "2", date: "2024"))
    }

    @Test func apeLongerThanTheTail_isMeasuredFromItsFooter() throws {
        // The caller passes only the last bytes: the APE header and most items are out of view.
        let ape = T.ape(header: true, filler: 5000)
        let file = T.audio(10_000) + ape + T.id3v1(title: "Far")
        let tail = file[(file.count - 1000)...]
        let result = try TrailingTags.scan(tail: tail, fileSize: file.count)
        #expect(result.apeSize == ape.count)
        #expect(result.trailingBytes == ape.count + 128)
        #expect(result.id3v1?.title == "Far")
    }

    @Test func lyingAPESize_throwsInvalid() {
        var ape = T.ape(header: false)
        ape[ape.count - 32 + 15] = 0x7F                                  // size about 2 GB
        let file = T.audio(100) + ape
        let whole = #expect(throws: FormatError.self) { try Self.scanWhole(file) }
        #expect(Self.isInvalid(whole))
        // Also when the tail is short: the file size is what the size is checked against.
        let short = #expect(throws: FormatError.self) { try TrailingTags.scan(tail: file.suffix(40), fileSize: file.count) }
        #expect(Self.isInvalid(short))
    }

    @Test func apeHeaderFlagWithoutRoomForTheHeader_throwsInvalid() {
        // With a header the tag would need 32 more bytes than the file holds before its footer.
        let ape = T.ape(header: true)
        let file = Array(ape.dropFirst(32))                              // header missing, flag still set
        let error = #expect(throws: FormatError.self) { try Self.scanWhole(file) }
        #expect(Self.isInvalid(error))
    }

    @Test func apeHeaderMissingWhereTheFooterPutsIt_throwsInvalid() {
        var ape = T.ape(header: true)
        ape[0] = UInt8(ascii: "X")                                       // "XPETAGEX"
        let error = #expect(throws: FormatError.self) { try Self.scanWhole(T.audio(100) + ape) }
        #expect(Self.isInvalid(error))
    }

    @Test func apeSizeSmallerThanItsFooter_throwsInvalid() {
        let footer = T.apeHeaderOrFooter(size: 8, items: 0, hasHeader: false, isHeader: false)
        let error = #expect(throws: FormatError.self) { try Self.scanWhole(T.audio(100) + footer) }
        #expect(Self.isInvalid(error))
    }

    @Test func apeUnknownVersion_throwsUnsupported() {
        let ape = T.ape(header: false, version: 3000)
        let error = #expect(throws: FormatError.self) { try Self.scanWhole(T.audio(100) + ape) }
        if case .unsupported = error {} else { Issue.record("expected .unsupported, got \(String(describing: error))") }
    }

    @Test func lyrics3v2BeforeID3v1() throws {
        let lyrics = T.lyrics3v2()
        let result = try Self.scanWhole(T.audio(200) + lyrics + T.id3v1(title: "L"))
        #expect(result.trailingBytes == lyrics.count + 128)
        #expect(result.id3v1?.title == "L")
    }

    @Test func lyrics3v1BeforeID3v1() throws {
        let lyrics = T.lyrics3v1()
        let result = try Self.scanWhole(T.audio(200) + lyrics + T.id3v1(title: "L1"))
        #expect(result.trailingBytes == lyrics.count + 128)
    }

    @Test func lyrics3v1WithoutID3v1_isNotATag() throws {
        // The format requires the ID3v1 after it; without one these are just bytes.
        #expect(try Self.scanWhole(T.audio(200) + T.lyrics3v1()).trailingBytes == 0)
    }

    @Test func apeThenLyrics3v2ThenID3v1() throws {
        let ape = T.ape(header: true)
        let lyrics = T.lyrics3v2()
        let result = try Self.scanWhole(T.audio(300) + ape + lyrics + T.id3v1(title: "All"))
        #expect(result.apeSize == ape.count)
        #expect(result.trailingBytes == ape.count + lyrics.count + 128)
    }

    @Test func lyrics3v2WithLyingSize_throwsInvalid() {
        var lyrics = T.lyrics3v2()
        let digits = lyrics.count - 9 - 6
        lyrics[digits] = UInt8(ascii: "9")                               // 9xxxxx: far past the file start
        let error = #expect(throws: FormatError.self) { try Self.scanWhole(T.audio(100) + lyrics + T.id3v1()) }
        #expect(Self.isInvalid(error))
    }

    @Test func tailSliceWithNonZeroStartIndex() throws {
        let file = T.audio(3000) + T.ape(header: false) + T.id3v1(title: "Slice")
        let tail = file[1000...]
        let result = try TrailingTags.scan(tail: tail, fileSize: file.count)
        #expect(result.trailingBytes == T.ape(header: false).count + 128)
        #expect(result.id3v1?.title == "Slice")
    }

    @Test func tailLongerThanTheFile_throwsInvalid() {
        let error = #expect(throws: FormatError.self) { try TrailingTags.scan(tail: T.audio(200)[...], fileSize: 100) }
        #expect(Self.isInvalid(error))
    }
}

@Suite struct TrailingTagsMediaTests {
    @Test func cbrNoTag_id3v1Only() throws {
        guard let file = try TagMediaFiles.load("cbr-no-tag.mp3") else { return }
        let result = try TrailingTags.scan(tail: file.suffix(64 * 1024), fileSize: file.count)
        #expect(result.trailingBytes == 128)
        #expect(result.apeSize == 0)
        #expect(result.id3v1 == TrackTags(title: "Bare CBR", artist: TagMediaFiles.artist,
                                         album: TagMediaFiles.album, track: "9"))
    }

    @Test func cbr128k_id3v1AfterTheAudio() throws {
        guard let file = try TagMediaFiles.load("cbr-128k-44k.mp3") else { return }
        let result = try TrailingTags.scan(tail: file.suffix(64 * 1024), fileSize: file.count)
        #expect(result.trailingBytes == 128)
        #expect(result.id3v1?.title == "Chords and Melody")
        #expect(result.id3v1?.track == "1")
    }

    @Test func vbrV2_hasNoTrailingTags() throws {
        guard let file = try TagMediaFiles.load("vbr-v2.mp3") else { return }
        let result = try TrailingTags.scan(tail: file.suffix(64 * 1024), fileSize: file.count)
        #expect(result == TrailingTags(trailingBytes: 0, id3v1: nil, apeSize: 0))
    }
}
