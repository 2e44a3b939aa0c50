import Testing
import TestSupport
@testable import StreamShared

/// ReplayGain read from each tag format that carries it, with tags built byte by byte here.
@Suite struct ReplayGainTagTests {
    typealias T = TrailingBytes

    /// A TXXX frame: encoding byte, description, NUL, value (Latin-1 or UTF-8).
    static func txxx(_ key: String, _ value: String, version: UInt8, encoding: UInt8 = 0) -> [UInt8] {
        ID3Builder.frame("TXXX", [encoding] + Array(key.utf8) + [0] + Array(value.utf8), version: version)
    }

    static func utf16LE(_ text: String) -> [UInt8] {
        [0xFF, 0xFE] + Array(text.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    }

    @Test func id3v24_txxxUTF8_allFourValues() throws {
        let body = Self.txxx("REPLAYGAIN_TRACK_GAIN", "-6.54 dB", version: 4, encoding: 3)
            + Self.txxx("REPLAYGAIN_TRACK_PEAK", "0.988831", version: 4, encoding: 3)
            + Self.txxx("REPLAYGAIN_ALBUM_GAIN", "-7.10 dB", version: 4, encoding: 3)
            + Self.txxx("REPLAYGAIN_ALBUM_PEAK", "1.000000", version: 4, encoding: 3)
        let tag = try ID3v2.parse(ID3Builder.tag(version: 4, body: body)[...])
        #expect(tag.tags.replayGain == ReplayGain(trackGain: -6.54, trackPeak: 0.988831, albumGain: -7.10, albumPeak: 1))
    }

    @Test func id3v23_txxxUTF16_lowercaseKeys() throws {
        // foobar2000 and loudgain -L write lowercase descriptions; UTF-16 puts a BOM before each string.
        let key = Self.utf16LE("replaygain_track_gain") + [0, 0]
        let value = Self.utf16LE("+2.50 dB")
        let body = ID3Builder.frame("TXXX", [1] + key + value, version: 3)
        let tag = try ID3v2.parse(ID3Builder.tag(version: 3, body: body)[...])
        #expect(tag.tags.replayGain == ReplayGain(trackGain: 2.5))
    }

    @Test func id3_otherTXXX_andBadValues_areIgnored() throws {
        let body = Self.txxx("MusicBrainz Album Id", "abc", version: 3)
            + Self.txxx("REPLAYGAIN_TRACK_GAIN", "loud", version: 3)
            + Self.txxx("REPLAYGAIN_TRACK_PEAK", "nan", version: 3)
            + Self.txxx("REPLAYGAIN_ALBUM_GAIN", "-900 dB", version: 3)
            + ID3Builder.frame("TIT2", ID3Builder.latin1("Song"), version: 3)
        let tag = try ID3v2.parse(ID3Builder.tag(version: 3, body: body)[...])
        #expect(tag.tags.replayGain == nil)
        #expect(tag.tags.title == "Song")
    }

    @Test func id3_firstValueWins() throws {
        let body = Self.txxx("REPLAYGAIN_TRACK_GAIN", "-1.00 dB", version: 4)
            + Self.txxx("REPLAYGAIN_TRACK_GAIN", "-9.00 dB", version: 4)
        let tag = try ID3v2.parse(ID3Builder.tag(version: 4, body: body)[...])
        #expect(tag.tags.replayGain?.trackGain == -1)
    }

    /// An APEv2 tag with header and footer around `items`.
    static func ape(_ items: [[UInt8]]) -> [UInt8] {
        let body = items.flatMap { $0 }
        let size = body.count + 32
        return T.apeHeaderOrFooter(size: size, items: items.count, hasHeader: true, isHeader: true) + body
            + T.apeHeaderOrFooter(size: size, items: items.count, hasHeader: true, isHeader: false)
    }

    @Test func apeV2_items_mixedCaseKeys_thenID3v1() throws {
        let ape = Self.ape([T.apeItem("Title", "Ape Song"), T.apeItem("REPLAYGAIN_TRACK_GAIN", "-3.21 dB"),
                            T.apeItem("replaygain_track_peak", "0.5"), T.apeItem("Replaygain_Album_Gain", "-4 dB")])
        let file = T.audio(600) + ape + T.id3v1(title: "V1 title", artist: "V1 artist")
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        let tags = try #require(result.tags)
        #expect(tags.replayGain == ReplayGain(trackGain: -3.21, trackPeak: 0.5, albumGain: -4))
        #expect(tags.title == "Ape Song", "APE fields come before ID3v1's")
        #expect(tags.artist == "V1 artist", "ID3v1 fills what APE lacks")
    }

    @Test func ape_binaryItem_isSkipped_textAfterItIsRead() throws {
        // Flags 0b010: binary. Its bytes are not text, even when they look like a number.
        let binary = le32(5) + le32(2) + Array("REPLAYGAIN_TRACK_GAIN".utf8) + [0] + Array("-1.00".utf8)
        let ape = Self.ape([binary, T.apeItem("REPLAYGAIN_ALBUM_GAIN", "-2.00 dB")])
        let file = T.audio(100) + ape
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        #expect(result.tags?.replayGain == ReplayGain(albumGain: -2))
    }

    @Test func ape_itemOverrunningTheTag_endsTheWalk_keepsEarlierItems() throws {
        // The second item claims 4000 bytes: the first is kept, nothing past the lie is read.
        let lying = le32(4000) + le32(0) + Array("REPLAYGAIN_ALBUM_GAIN".utf8) + [0] + Array("-2".utf8)
        let ape = Self.ape([T.apeItem("REPLAYGAIN_TRACK_GAIN", "-1.5 dB"), lying])
        let file = T.audio(100) + ape
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        #expect(result.apeItems == [APEItem(key: "REPLAYGAIN_TRACK_GAIN", value: "-1.5 dB")])
        #expect(result.tags?.replayGain == ReplayGain(trackGain: -1.5))
    }

    @Test func ape_hugeItemCount_isBounded() throws {
        // The footer claims 2^32-1 items; the walk stops at the items that are there.
        let items = T.apeItem("REPLAYGAIN_TRACK_GAIN", "1 dB")
        let size = items.count + 32
        var footer = T.apeHeaderOrFooter(size: size, items: 0, hasHeader: false, isHeader: false)
        footer.replaceSubrange(16..<20, with: [0xFF, 0xFF, 0xFF, 0xFF])
        let file = T.audio(100) + items + footer
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        #expect(result.apeItems.count == 1)
    }

    @Test func ape_keyWithoutTerminator_readsNothing() throws {
        let broken = le32(1) + le32(0) + Array("REPLAYGAIN_TRACK_GAIN".utf8)
        let size = broken.count + 32
        let file = T.audio(100) + broken + T.apeHeaderOrFooter(size: size, items: 1, hasHeader: false, isHeader: false)
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        #expect(result.apeItems.isEmpty)
        #expect(result.tags == nil)
    }

    @Test func mp4_freeformAtoms_asLoudgainWritesThem() throws {
        var fixture = MP4Fixture()
        fixture.tags = false
        fixture.freeform = [("replaygain_track_gain", "-5.43 dB"), ("replaygain_track_peak", "0.812345"),
                            ("replaygain_album_gain", "-6.00 dB"), ("replaygain_album_peak", "0.9"),
                            ("replaygain_reference_loudness", "-18.00 LUFS")]
        let movie = try MP4Movie.parse(moov: fixture.moov()[...])
        #expect(movie.tags.replayGain == ReplayGain(trackGain: -5.43, trackPeak: 0.812345, albumGain: -6, albumPeak: 0.9))
    }

    @Test func mp4_freeformUppercase_andOtherNames() throws {
        var fixture = MP4Fixture()
        fixture.freeform = [("REPLAYGAIN_ALBUM_GAIN", "+1.25 dB"), ("iTunNORM", " 00000000 00000000")]
        let movie = try MP4Movie.parse(moov: fixture.moov()[...])
        #expect(movie.tags.replayGain == ReplayGain(albumGain: 1.25))
        #expect(movie.tags.title == "Box Title")
    }

    @Test func numberParsing_edgeCases() {
        #expect(ReplayGain.number("-6.54 dB") == -6.54)
        #expect(ReplayGain.number("+2.10 LU") == 2.1)
        #expect(ReplayGain.number(" 0.5\0") == 0.5)
        #expect(ReplayGain.number("-6.54dB") == -6.54)
        #expect(ReplayGain.number("") == nil)
        #expect(ReplayGain.number("dB") == nil)
        #expect(ReplayGain.number("1e300") == nil)
        #expect(ReplayGain.number("inf") == nil)
        #expect(ReplayGain.number("0x10") == nil)
        #expect(ReplayGain.number(String(repeating: "1", count: 400)) == nil)
    }

    @Test func mergedTags_frontValuesWin_fieldByField() {
        let front = TrackTags(replayGain: ReplayGain(trackGain: -1))
        let back = TrackTags(replayGain: ReplayGain(trackGain: -9, albumGain: -2))
        #expect(front.merged(with: back).replayGain == ReplayGain(trackGain: -1, albumGain: -2))
    }
}
