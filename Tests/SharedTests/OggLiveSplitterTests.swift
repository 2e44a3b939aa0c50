import Testing
@testable import StreamShared

/// The live Ogg page splitter of a pass-through channel on crafted streams: junk and foreign
/// logical streams skipped, header pages kept per link with its title, a page's samples the
/// granule advance, and a link's header pages bounded.
@Suite struct OggLiveSplitterTests {
    typealias B = FLACOggBuilders

    /// Every step of `bytes` fed whole: (page length, samples, header?, link start?) or a skip.
    static func walk(_ bytes: [UInt8], _ splitter: inout AudioFrameSplitter) throws -> [String] {
        var at = 0
        var steps: [String] = []
        while at < bytes.count {
            switch try splitter.next(in: bytes[at...], isComplete: true) {
            case .frame(let frame):
                let page = splitter.lastOggPage
                steps.append("\(page.startsLink ? "bos" : page.isHeader ? "hdr" : "audio") \(frame.samples)")
                at += frame.length
            case .skip(let n):
                steps.append("skip \(n)")
                at += n
            case .needMore:
                return steps
            }
        }
        return steps
    }

    @Test func chainedOpus_pagesByLink_withHeadersAndTitles() throws {
        let first = B.oggStream(serial: 1, headers: [B.opusHead(), B.opusTags(["ARTIST=A", "TITLE=One"])],
                                audio: [[1, 2, 3], [4, 5]], granules: [960, 2880])
        let theora = B.oggStream(serial: 9, headers: [[0x80] + Array("theora".utf8) + [UInt8](repeating: 0, count: 40)],
                                 audio: [], granules: [])
        let second = B.oggStream(serial: 2, headers: [B.opusHead(), B.opusTags(["TITLE=Two"])], audio: [[6]], granules: [480])
        var splitter = AudioFrameSplitter(codec: .ogg)
        let steps = try Self.walk(Array("junk".utf8) + first + theora + second, &splitter)
        #expect(steps == ["skip 4", "bos 0", "hdr 0", "audio 960", "audio 1920", "skip \(theora.count)", "bos 0", "hdr 0", "audio 480"],
                "\(steps)")
        let link = try #require(splitter.oggLink)
        #expect(link.number == 2 && link.title == "Two" && link.headersComplete)
        // The second link's two header pages, as they came.
        let headerEnd = second.count - (B.oggStream(serial: 2, headers: [], audio: [[6]], granules: [480]).count)
        #expect(link.headerPages == Array(second.prefix(headerEnd)))
    }

    @Test func commentTitles_areArtistDashTitle() {
        let comment = [3] + Array("vorbis".utf8) + B.vorbisComment(["artist=The Band", "title=Song"]) + [1]
        #expect(AudioFrameSplitter.title(commentPacket: comment[...]) == "The Band - Song")
        #expect(AudioFrameSplitter.title(commentPacket: B.opusTags(["TITLE=Only"])[...]) == "Only")
        #expect(AudioFrameSplitter.title(commentPacket: B.opusHead()[...]) == nil)
    }

    @Test func pagesBeforeAnyBOS_andDamagedPages_areSkipped() throws {
        var page = B.oggStream(serial: 1, headers: [B.opusHead(), B.opusTags([])], audio: [[1]], granules: [960])
        var splitter = AudioFrameSplitter(codec: .ogg)
        let orphan = B.oggPage(serial: 5, sequence: 3, granule: 100, lacing: [1], body: [7])
        page[40] ^= 0xFF      // the BOS page's CRC no longer holds: the link never starts
        let steps = try Self.walk(orphan + page, &splitter)
        #expect(steps.first == "skip \(orphan.count)" && !steps.contains { $0.hasPrefix("bos") || $0.hasPrefix("audio") }, "\(steps)")
    }

    @Test func headerPagesOverTheBound_areRefused() throws {
        let huge = B.opusTags(["TITLE=x", "COVER=" + String(repeating: "a", count: AudioFrameSplitter.maxOggHeaderBytes)])
        let stream = B.oggStream(serial: 1, headers: [B.opusHead(), huge], audio: [[1]], granules: [960])
        var splitter = AudioFrameSplitter(codec: .ogg)
        #expect(throws: FormatError.self) { _ = try Self.walk(stream, &splitter) }
    }
}
