import Testing
@testable import StreamShared

/// The tag fields the library catalog keeps beyond title/artist/album/track.
@Suite struct LibraryTagTests {
    typealias B = ID3Builder

    static func txxx(_ key: String, _ value: String) -> [UInt8] {
        [0] + Array(key.utf8) + [0] + Array(value.utf8)
    }

    @Test func id3v24_albumArtistDiscDateGenreReplayGain() throws {
        let body = B.frame("TPE2", B.latin1("Various"), version: 4) + B.frame("TPOS", B.latin1("2/3"), version: 4)
            + B.frame("TDRC", B.latin1("2004-05-01"), version: 4) + B.frame("TCON", B.latin1("Jazz"), version: 4)
            + B.frame("TXXX", Self.txxx("REPLAYGAIN_TRACK_GAIN", "-6.54 dB"), version: 4)
            + B.frame("TXXX", Self.txxx("replaygain_track_peak", "0.988831"), version: 4)
            + B.frame("TXXX", Self.txxx("REPLAYGAIN_ALBUM_GAIN", "+1.20 dB"), version: 4)
            + B.frame("TXXX", Self.txxx("OTHER", "x"), version: 4)
        let tags = try ID3v2.parse(B.tag(version: 4, body: body)[...]).tags
        #expect(tags.albumArtist == "Various" && tags.disc == "2/3" && tags.date == "2004-05-01" && tags.genre == "Jazz")
        #expect(tags.year == 2004)
        #expect(tags.replayGain == ReplayGain(trackGain: -6.54, trackPeak: 0.988831, albumGain: 1.2))
    }

    @Test func id3v23_yearAndNumericGenre() throws {
        let body = B.frame("TYER", B.latin1("1999"), version: 3) + B.frame("TCON", B.latin1("(17)Rock"), version: 3)
            + B.frame("TPE2", B.latin1("Band"), version: 3)
        let tags = try ID3v2.parse(B.tag(version: 3, body: body)[...]).tags
        #expect(tags.year == 1999 && tags.genre == "Rock" && tags.albumArtist == "Band")
        let bare = try ID3v2.parse(B.tag(version: 3, body: B.frame("TCON", B.latin1("(17)"), version: 3))[...]).tags
        #expect(bare.genre == "(17)", "a bare reference is kept as written")
    }

    @Test func replayGain_badValuesAreIgnored() {
        var gain = ReplayGain()
        gain.set(key: "REPLAYGAIN_TRACK_GAIN", value: "loud")
        gain.set(key: "REPLAYGAIN_TRACK_PEAK", value: "-1")
        gain.set(key: "REPLAYGAIN_ALBUM_GAIN", value: "nan dB")
        gain.set(key: "REPLAYGAIN_ALBUM_PEAK", value: "1e999")
        gain.set(key: "REPLAYGAIN_TRACK_GAIN", value: String(repeating: "1", count: 100))
        #expect(gain.isEmpty)
        gain.set(key: "REPLAYGAIN_ALBUM_PEAK", value: " 1.5 ")
        #expect(gain.albumPeak == 1.5)
    }

    @Test func numbers_leadingAndTotal() {
        #expect(TrackTags.leadingNumber("3/12") == 3 && TrackTags.total("3/12") == 12)
        #expect(TrackTags.leadingNumber("07") == 7 && TrackTags.total("07") == nil)
        #expect(TrackTags.leadingNumber("x") == nil && TrackTags.leadingNumber("0") == nil)
        #expect(TrackTags.leadingNumber("99999999999999999999") == nil, "absurd numbers are not numbers")
        #expect(TrackTags(date: "20x4").year == nil && TrackTags(date: "0000").year == nil)
    }

    @Test func merged_fillsTheNewFieldsToo() {
        let first = TrackTags(title: "A", replayGain: ReplayGain(trackGain: -1))
        let second = TrackTags(title: "B", albumArtist: "C", disc: "1", date: "2000", genre: "G",
                               replayGain: ReplayGain(trackGain: -2, albumGain: -3))
        let merged = first.merged(with: second)
        #expect(merged == TrackTags(title: "A", albumArtist: "C", disc: "1", date: "2000", genre: "G",
                                    replayGain: ReplayGain(trackGain: -1, albumGain: -3)))
    }

    @Test func analysisWire_carriesTheNewFields() throws {
        var analysis = TrackAnalysisCodingTests.sample()
        analysis.tags = TrackTags(title: "T", albumArtist: "AA", disc: "1/2", date: "2001", genre: "Pop",
                                  replayGain: ReplayGain(trackGain: -3.5, trackPeak: 0.9, albumGain: -4, albumPeak: 1))
        #expect(try TrackAnalysis(encoded: analysis.encoded()[...]) == analysis)
    }
}
