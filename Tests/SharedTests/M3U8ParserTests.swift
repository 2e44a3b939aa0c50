import Testing
@testable import StreamShared

/// RFC 8216 playlists: the tags the player needs, and a clear error for every hostile case.
@Suite struct M3U8ParserTests {
    func parse(_ text: String, limits: M3U8Limits = M3U8Limits()) throws -> M3U8Playlist {
        try M3U8Parser.parse(Array(text.utf8)[...], limits: limits)
    }

    func media(_ text: String, limits: M3U8Limits = M3U8Limits()) throws -> M3U8MediaPlaylist {
        guard case .media(let playlist) = try parse(text, limits: limits) else { throw ParserTestFailure("not a media playlist") }
        return playlist
    }

    /// The reason of a FormatError thrown by `body`.
    func failure(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func vodMediaPlaylist_segmentsDurationsAndSequence() throws {
        let playlist = try media("""
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:7
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXTINF:6.008167,
        index0.ts
        # a comment
        #EXTINF:5.982044,title, with comma
        index1.ts

        #EXTINF:4,
        http://example.com/x/index2.ts
        #EXT-X-ENDLIST
        """)
        #expect(playlist.version == 3)
        #expect(playlist.targetDuration == 6)
        #expect(playlist.playlistType == .vod)
        #expect(playlist.endList)
        #expect(!playlist.isLive)
        #expect(playlist.segments.map(\.uri) == ["index0.ts", "index1.ts", "http://example.com/x/index2.ts"])
        #expect(playlist.segments.map(\.sequence) == [7, 8, 9])
        #expect(playlist.segments.map(\.duration) == [6.008167, 5.982044, 4])
        #expect(abs(playlist.totalDuration - 15.990211) < 1e-9)
    }

    @Test func crlfLineEndingsAndByteOrderMark_areAccepted() throws {
        let playlist = try media("\u{FEFF}#EXTM3U\r\n#EXT-X-TARGETDURATION:6\r\n#EXTINF:6.0,\r\na.ts\r\n")
        #expect(playlist.segments.map(\.uri) == ["a.ts"])
        #expect(playlist.isLive, "no ENDLIST and no VOD type: a live playlist")
    }

    @Test func liveWindow_discontinuitiesCountedPerSegment() throws {
        let playlist = try media("""
        #EXTM3U
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:120
        #EXT-X-DISCONTINUITY-SEQUENCE:3
        #EXTINF:6,
        a.aac
        #EXT-X-DISCONTINUITY
        #EXTINF:6,
        b.aac
        #EXTINF:6,
        c.aac
        """)
        #expect(playlist.isLive)
        #expect(playlist.segments.map(\.discontinuity) == [false, true, false])
        #expect(playlist.segments.map(\.discontinuitySequence) == [3, 4, 4])
        #expect(playlist.segments.map(\.sequence) == [120, 121, 122])
    }

    @Test func byteRanges_resolveImplicitOffsets() throws {
        let playlist = try media("""
        #EXTM3U
        #EXT-X-VERSION:4
        #EXT-X-TARGETDURATION:6
        #EXTINF:6,
        #EXT-X-BYTERANGE:1000@239
        all.mp3
        #EXTINF:6,
        #EXT-X-BYTERANGE:2000
        all.mp3
        #EXTINF:6,
        #EXT-X-BYTERANGE:500@0
        other.mp3
        #EXT-X-ENDLIST
        """)
        #expect(playlist.segments.map(\.byteRange) == [239..<1239, 1239..<3239, 0..<500])
        #expect(throws: FormatError.self) {
            _ = try media("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n#EXT-X-BYTERANGE:100\na.ts\n")
        }
        #expect(failure { _ = try media("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n#EXT-X-BYTERANGE:100@0\na.ts\n#EXTINF:6,\n#EXT-X-BYTERANGE:100\nb.ts\n") }
            .contains("does not follow a range of the same resource"))
    }

    @Test func map_appliesToTheSegmentsAfterIt() throws {
        let playlist = try media("""
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:6
        #EXT-X-MAP:URI="init.mp4"
        #EXTINF:6,
        a.m4s
        #EXT-X-MAP:URI="all.mp4",BYTERANGE="720@0"
        #EXTINF:6,
        b.m4s
        """)
        #expect(playlist.segments[0].map == M3U8Map(uri: "init.mp4", byteRange: nil))
        #expect(playlist.segments[1].map == M3U8Map(uri: "all.mp4", byteRange: 0..<720))
    }

    @Test func masterPlaylist_variantsAndAudioRenditions() throws {
        let playlist = try parse("""
        #EXTM3U
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English, main",DEFAULT=YES,LANGUAGE="en",URI="audio/en.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=140000,AVERAGE-BANDWIDTH=130000,CODECS="mp4a.40.2",AUDIO="aud"
        hi/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=70000,CODECS="mp4a.40.5"
        lo/index.m3u8
        """)
        guard case .master(let master) = playlist else { throw ParserTestFailure("not a master playlist") }
        #expect(master.variants.map(\.uri) == ["hi/index.m3u8", "lo/index.m3u8"])
        #expect(master.variants.map(\.bandwidth) == [140_000, 70_000])
        #expect(master.variants[0].averageBandwidth == 130_000)
        #expect(master.variants[0].codecs == ["mp4a.40.2"])
        #expect(master.variants[0].audioGroup == "aud")
        #expect(master.renditions == [M3U8Rendition(type: "AUDIO", groupID: "aud", name: "English, main", uri: "audio/en.m3u8",
                                                    isDefault: true, language: "en")])
    }

    @Test func notAPlaylist_saysWhatItStartsWith() {
        #expect(failure { _ = try parse("<!DOCTYPE html><html>") }.contains("not an M3U8 playlist (starts with '<!DOCTYPE html><html>')"))
        #expect(failure { _ = try parse("") }.contains("not an M3U8 playlist"))
    }

    @Test func hostileDurations_areClearErrors() {
        let head = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n"
        #expect(failure { _ = try media(head + "#EXTINF:99999999,\na.ts\n") }.contains("exceeds the limit of 3600 s"))
        #expect(failure { _ = try media(head + "#EXTINF:1e300,\na.ts\n") }.contains("is not a number"))
        #expect(failure { _ = try media(head + "#EXTINF:30,\na.ts\n") }.contains("EXTINF 30.0 exceeds EXT-X-TARGETDURATION 6"))
        #expect(failure { _ = try media(head + "#EXTINF:-3,\na.ts\n") }.contains("line 3: EXTINF duration -3 is negative"))
        #expect(failure { _ = try media(head + "#EXTINF:,\na.ts\n") }.contains("line 3: EXTINF without a duration"))
        #expect(failure { _ = try media(head + "#EXTINF:nan,\na.ts\n") }.contains("is not a number"))
        #expect(failure { _ = try media(head + "a.ts\n") }.contains("line 3: segment 'a.ts' without an EXTINF duration"))
        #expect(failure { _ = try media("#EXTM3U\n#EXTINF:6,\na.ts\n") }.contains("without EXT-X-TARGETDURATION"))
        #expect(failure { _ = try media("#EXTM3U\n#EXT-X-TARGETDURATION:99999999999\n") }.contains("exceeds the limit"))
        #expect(failure { _ = try media("#EXTM3U\n#EXT-X-TARGETDURATION:-6\n") }.contains("is not a decimal integer"))
    }

    @Test func limits_lineLengthSegmentCountVariants() throws {
        var limits = M3U8Limits()
        limits.maxSegments = 100
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n"
        for i in 0..<100 { text += "#EXTINF:1,\ns\(i).ts\n" }
        #expect(try media(text, limits: limits).segments.count == 100, "exactly the limit is fine")
        #expect(failure { _ = try media(text + "#EXTINF:1,\nmore.ts\n", limits: limits) }.contains("more than 100 segments"))
        let long = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n" + String(repeating: "a", count: 20_000) + "\n"
        #expect(failure { _ = try media(long) }.contains("line 4: line longer than 16384 bytes"))
        var master = "#EXTM3U\n"
        for i in 0..<1_001 { master += "#EXT-X-STREAM-INF:BANDWIDTH=\(i)\nv\(i).m3u8\n" }
        #expect(failure { _ = try parse(master) }.contains("more than 1000 variants"))
    }

    @Test func tenThousandSegments_parseQuickly() throws {
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for i in 0..<10_000 { text += "#EXTINF:6.000000,\nsegment\(i).ts\n" }
        text += "#EXT-X-ENDLIST\n"
        let playlist = try media(text)
        #expect(playlist.segments.count == 10_000)
        #expect(playlist.totalDuration == 60_000)
    }

    @Test func mixedOrBrokenStructure_isRefused() {
        #expect(failure { _ = try parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n#EXTINF:6,\nb.ts\n") }
            .contains("media playlist tag in a master playlist"))
        #expect(failure { _ = try parse("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n") }
            .contains("master playlist tag in a media playlist"))
        #expect(failure { _ = try parse("#EXTM3U\n#EXT-X-STREAM-INF:CODECS=\"mp4a.40.2\"\na.m3u8\n") }.contains("BANDWIDTH"))
        #expect(failure { _ = try parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n") }.contains("without a URI"))
        #expect(failure { _ = try parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"mp4a\na.m3u8\n") }.contains("unterminated"))
        #expect(failure { _ = try parse("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n") }
            .contains("encrypted segments"))
        #expect(failure { _ = try parse("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:LIVE\n") }
            .contains("neither VOD nor EVENT"))
    }

    @Test func mutatedPlaylists_neverCrash() {
        let text = """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:3
        #EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"
        #EXTINF:6.0,
        #EXT-X-BYTERANGE:1000@720
        all.mp4
        #EXT-X-DISCONTINUITY
        #EXTINF:5.5,
        #EXT-X-BYTERANGE:1000
        all.mp4
        #EXT-X-ENDLIST
        #EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="mp4a.40.2",AUDIO="a"
        """
        Fuzz.forEachMutation(of: Array(text.utf8), count: 10_000) { bytes in
            _ = try? M3U8Parser.parse(bytes[...])
        }
        Fuzz.forEachTruncation(of: Array(text.utf8)) { bytes in
            _ = try? M3U8Parser.parse(bytes)
        }
    }
}

/// A test expectation that did not hold, with what was found.
struct ParserTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
