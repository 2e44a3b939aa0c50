import Testing
@testable import StreamShared

/// The HLS writers: playlists, the ID3 timestamp tag, the segmenter and fragmented MP4.
@Suite struct HLSWriterTests {
    // MARK: ID3 PRIV timestamp

    @Test func transportStreamTimestampTag_layout() throws {
        let ticks: UInt64 = 0x1_2345_6789            // 33 bits used
        let tag = ID3Writer.transportStreamTimestampTag(ticks90k: ticks)
        // A valid ID3v2.4 header that says how long the tag is.
        #expect(Array(tag.prefix(5)) == [0x49, 0x44, 0x33, 4, 0], "ID3v2.4 header")
        #expect(try ID3v2.totalSize(atStartOf: tag[...]) == tag.count, "the header's size covers the whole tag")
        #expect(try ID3v2.parse(tag[...]).majorVersion == 4, "our own ID3 parser accepts it")
        // One PRIV frame: owner, NUL, 8-byte big-endian timestamp.
        #expect(Array(tag[10..<14]) == Array("PRIV".utf8))
        let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8)
        let frameSize = tag[14..<18].reduce(0) { $0 << 7 | Int($1 & 0x7F) }   // synchsafe
        #expect(frameSize == owner.count + 1 + 8, "frame size")
        #expect(Array(tag[20..<(20 + owner.count)]) == owner)
        #expect(tag[20 + owner.count] == 0, "owner is NUL-terminated")
        let stamp = tag[(21 + owner.count)...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(stamp == ticks, "timestamp round-trips")
        #expect(tag.count == 20 + frameSize, "nothing after the frame")
    }

    @Test func transportStreamTimestampTag_keeps33Bits() {
        let tag = ID3Writer.transportStreamTimestampTag(ticks90k: (1 << 33) + 5)
        let stamp = tag.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(stamp == 5, "an MPEG-2 PTS wraps at 2^33")
    }

    // MARK: Playlists

    @Test func mediaPlaylist_vodRendersTheRFCTags() {
        var p = HLSMediaPlaylist(targetDuration: 6, playlistType: .vod, endList: true)
        p.segments = [HLSSegmentEntry(duration: 5.98458, uri: "seg-0.mp3"), HLSSegmentEntry(duration: 0.5, uri: "seg-1.mp3")]
        let lines = p.render().split(separator: "\n").map(String.init)
        #expect(lines.first == "#EXTM3U")
        #expect(lines.contains("#EXT-X-VERSION:3"), "decimal EXTINF needs version 3")
        #expect(lines.contains("#EXT-X-TARGETDURATION:6"))
        #expect(lines.contains("#EXT-X-PLAYLIST-TYPE:VOD"))
        #expect(lines.contains("#EXTINF:5.98458,"))
        #expect(lines.contains("#EXTINF:0.5,"))
        #expect(lines.last == "#EXT-X-ENDLIST")
        let mediaSequence = lines.firstIndex(of: "#EXT-X-MEDIA-SEQUENCE:0") ?? Int.max
        #expect(mediaSequence < (lines.firstIndex { $0.hasPrefix("#EXTINF") } ?? 0), "MEDIA-SEQUENCE before the first segment")
    }

    @Test func mediaPlaylist_byteRangesAndMapRaiseTheVersion() {
        var p = HLSMediaPlaylist(targetDuration: 6, playlistType: .vod, endList: true)
        p.segments = [HLSSegmentEntry(duration: 5, uri: "a.mp3", byteRange: (100, 10)),
                      HLSSegmentEntry(duration: 5, uri: "a.mp3", byteRange: (50, 110)),
                      HLSSegmentEntry(duration: 5, uri: "a.mp3", byteRange: (50, 500))]
        let text = p.render()
        #expect(text.contains("#EXT-X-VERSION:4"), "EXT-X-BYTERANGE needs version 4")
        #expect(text.contains("#EXT-X-BYTERANGE:100@10\n"), "the first range names its offset")
        #expect(text.contains("#EXT-X-BYTERANGE:50\n"), "a contiguous range may leave it out")
        #expect(text.contains("#EXT-X-BYTERANGE:50@500\n"), "a range after a gap names its offset")
        var f = HLSMediaPlaylist(targetDuration: 6, playlistType: .vod, endList: true)
        f.mapURI = "init.mp4"
        f.segments = [HLSSegmentEntry(duration: 5, uri: "seg-0.m4s")]
        #expect(f.render().contains("#EXT-X-VERSION:6"), "EXT-X-MAP without I-frames-only needs version 6")
        #expect(f.render().contains("#EXT-X-MAP:URI=\"init.mp4\""))
    }

    @Test func livePlaylist_discontinuityTags() {
        var p = HLSMediaPlaylist(targetDuration: 6, endList: false)
        p.mediaSequence = 12
        p.discontinuitySequence = 2
        p.segments = [HLSSegmentEntry(duration: 5, uri: "seg-12.mp3"), HLSSegmentEntry(duration: 5, uri: "seg-13.mp3", discontinuity: true)]
        let text = p.render()
        #expect(!text.contains("ENDLIST") && !text.contains("PLAYLIST-TYPE"), "a live playlist has neither")
        #expect(text.contains("#EXT-X-MEDIA-SEQUENCE:12\n#EXT-X-DISCONTINUITY-SEQUENCE:2\n"))
        #expect(text.contains("#EXT-X-DISCONTINUITY\n#EXTINF:5,\nseg-13.mp3"))
    }

    @Test func livePlaylist_programDateTimeBeforeEachSegment() {
        var p = HLSMediaPlaylist(targetDuration: 6, endList: false)
        p.segments = [HLSSegmentEntry(duration: 6, uri: "seg-0.mp3", programDateTime: 1_795_461_900.1234),
                      HLSSegmentEntry(duration: 6, uri: "seg-1.mp3", discontinuity: true, programDateTime: 1_795_461_906.1234)]
        let text = p.render()
        #expect(text.contains("#EXT-X-PROGRAM-DATE-TIME:2026-11-23T19:25:00.123Z\n#EXTINF:6,\nseg-0.mp3\n"), "\(text)")
        #expect(text.contains("#EXT-X-DISCONTINUITY\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T19:25:06.123Z\n#EXTINF:6,\nseg-1.mp3"),
                "the date follows the discontinuity, right before its segment")
    }

    @Test(arguments: [(0.0, "1970-01-01T00:00:00.000Z"), (951_782_400.5, "2000-02-29T00:00:00.500Z"),
                      (4_107_542_399.5, "2100-02-28T23:59:59.500Z"), (4_107_542_400, "2100-03-01T00:00:00.000Z"),
                      (1_704_067_199, "2023-12-31T23:59:59.000Z"), (-5, "1970-01-01T00:00:00.000Z"),
                      (.infinity, "1970-01-01T00:00:00.000Z"), (1e300, "9999-12-31T23:59:59.000Z")])
    func dateTime_leapYearsAndClamping(seconds: Double, expected: String) {
        #expect(HLSAttributes.dateTime(seconds) == expected)
    }

    @Test func masterPlaylist_attributes() {
        let m = HLSMasterPlaylist(variants: [HLSVariant(bandwidth: 170_570, averageBandwidth: 150_057, codecs: ["mp4a.40.2"],
                                                        uri: "index.m3u8")])
        #expect(m.render() == "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                + "#EXT-X-STREAM-INF:BANDWIDTH=170570,AVERAGE-BANDWIDTH=150057,CODECS=\"mp4a.40.2\"\nindex.m3u8\n")
    }

    @Test func decimal_formats() {
        #expect(HLSAttributes.decimal(6) == "6")
        #expect(HLSAttributes.decimal(5.9999999) == "6")
        #expect(HLSAttributes.decimal(0.0261224) == "0.026122")
        #expect(HLSAttributes.decimal(.nan) == "0")
        #expect(HLSAttributes.quoted("a\"b\nc") == "\"abc\"", "quotes and line breaks cannot end the attribute")
    }

    // MARK: Segmenter

    @Test func segmenter_cutsAtTheLastPointWithinTarget() {
        // An MP3-like index: a point at the first frame after every 0.5 s.
        let frame = 1152.0 / 44_100
        var points: [HLSCutPoint] = []
        var frameNumber = 0, next = 0.0
        while Double(frameNumber) * frame < 20 {
            let t = Double(frameNumber) * frame
            if t >= next { points.append(HLSCutPoint(time: t, position: 1000 + frameNumber * 418)); next += 0.5 }
            frameNumber += 1
        }
        let end = HLSCutPoint(time: Double(frameNumber) * frame, position: 1000 + frameNumber * 418)
        let spans = HLSSegmenter.plan(points: points, end: end, target: 6)
        #expect(spans.first?.start == 1000 && spans.last?.end == end.position, "the spans cover the audio")
        for (a, b) in zip(spans, spans.dropFirst()) {
            #expect(a.end == b.start, "spans are contiguous")
            #expect(abs(a.startTime + a.duration - b.startTime) < 1e-9, "times are contiguous")
        }
        #expect(spans.allSatisfy { $0.duration <= 6 }, "no segment longer than the target")
        #expect(spans.dropLast().allSatisfy { $0.duration > 5.4 }, "segments are as long as the index allows")
        #expect(HLSSegmenter.targetDuration(for: spans, target: 6) == 6)
    }

    @Test func segmenter_hostilePoints() {
        // Out of order, repeated, non-finite and past-the-end points are skipped; a gap longer than the
        // target gives a longer segment and a larger target duration.
        let points = [HLSCutPoint(time: 0, position: 0), HLSCutPoint(time: 0, position: 0), HLSCutPoint(time: .nan, position: 5),
                      HLSCutPoint(time: 3, position: 30), HLSCutPoint(time: 2, position: 40), HLSCutPoint(time: 20, position: 200),
                      HLSCutPoint(time: 50, position: 500)]
        let spans = HLSSegmenter.plan(points: points, end: HLSCutPoint(time: 21, position: 210), target: 6)
        #expect(spans.map(\.start) == [0, 30, 200])
        #expect(spans.map(\.end) == [30, 200, 210])
        #expect(HLSSegmenter.targetDuration(for: spans, target: 6) == 17)
        #expect(HLSSegmenter.plan(points: [], end: HLSCutPoint(time: 1, position: 1), target: 6).isEmpty)
    }

    // MARK: Fragmented MP4

    static let asc: [UInt8] = [0x12, 0x10]   // AAC-LC, 44.1 kHz, stereo

    @Test func initSegment_parsesAsFragmentedMovie() throws {
        let info = FMP4AudioTrackInfo(trackID: 1, timescale: 44_100, channels: 2, sampleRate: 44_100,
                                      audioSpecificConfig: Self.asc, avgBitrate: 128_000, maxBitrate: 160_000, bufferSize: 700)
        let bytes = FMP4Writer.initSegment(info)
        let outline = try MP4Outline.parse(bytes[...])
        let types = outline.entries.map { $0.header.type }
        #expect(types.prefix(2) == ["ftyp", "moov"])
        for needed in ["mvhd", "trak", "tkhd", "mdhd", "hdlr", "smhd", "stsd", "mvex", "trex"] {
            #expect(types.contains(needed), "init segment has \(needed)")
        }
        let moov = try #require(outline.entries.first { $0.header.type == "moov" }?.header)
        let movie = try MP4Movie.parse(moov: bytes[moov.offset..<(moov.offset + (moov.size ?? 0))])
        #expect(movie.isFragmented, "mvex present")
        let track = try #require(movie.audio)
        #expect(track.codec == "mp4a" && track.timescale == 44_100 && track.trackID == 1)
        #expect(track.channels == 2 && track.sampleRate == 44_100)
        #expect(track.decoderSpecificInfo == Self.asc, "esds carries the AudioSpecificConfig")
        #expect(track.objectTypeIndication == 0x40 && track.streamType == 5)
        #expect(track.avgBitrate == 128_000 && track.maxBitrate == 160_000 && track.bufferSize == 700)
        #expect(track.sampleCount == 0, "no samples in the init segment")
    }

    @Test func mediaSegment_boxesAndDataOffset() throws {
        let samples: [(duration: Int, size: Int)] = [(1024, 3), (1024, 5), (512, 2)]
        let payload: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        let header = FMP4Writer.mediaSegmentHeader(sequence: 7, trackID: 1, baseDecodeTime: 0x1_0000_0001, samples: samples)
        #expect(header.count == FMP4Writer.mediaHeaderSize(sampleCount: samples.count))
        let segment = header + payload
        let outline = try MP4Outline.parse(segment[...])
        let types = outline.entries.map { $0.header.type }
        #expect(types == ["moof", "mfhd", "traf", "tfhd", "tfdt", "trun", "mdat"])
        func body(_ type: String) throws -> ArraySlice<UInt8> {
            let h = try #require(outline.entries.first { $0.header.type == type }?.header)
            return segment[(h.offset + h.headerSize)..<(h.offset + (h.size ?? 0))]
        }
        func u32(_ s: ArraySlice<UInt8>, _ at: Int) -> Int {
            let i = s.startIndex + at
            return Int(s[i]) << 24 | Int(s[i + 1]) << 16 | Int(s[i + 2]) << 8 | Int(s[i + 3])
        }
        #expect(u32(try body("mfhd"), 4) == 7, "sequence number")
        let tfhd = try body("tfhd")
        #expect(u32(tfhd, 0) == 0x02_0000, "default-base-is-moof")
        let tfdt = try body("tfdt")
        #expect(tfdt.first == 1 && u32(tfdt, 4) == 1 && u32(tfdt, 8) == 1, "64-bit baseMediaDecodeTime")
        let trun = try body("trun")
        #expect(u32(trun, 0) == 0x301 && u32(trun, 4) == 3)
        let dataOffset = u32(trun, 8)
        #expect(Array(segment[dataOffset...]) == payload, "data_offset from the moof start lands on the samples")
        #expect(u32(trun, 12) == 1024 && u32(trun, 16) == 3 && u32(trun, 28) == 512 && u32(trun, 32) == 2)
        let mdat = try #require(outline.entries.last?.header)
        #expect(mdat.size == 8 + payload.count, "mdat covers exactly the sample bytes")
    }

    @Test func esDescriptor_longConfigUsesExpandableSizes() {
        let info = FMP4AudioTrackInfo(timescale: 48_000, channels: 2, sampleRate: 48_000,
                                      audioSpecificConfig: [UInt8](repeating: 0x11, count: 200))
        let es = FMP4Writer.esDescriptor(info)
        #expect(es[0] == 3 && es[1] & 0x80 != 0, "an ES_Descriptor over 127 bytes uses a continued size")
        // ES (tag + 2 size bytes) + 3, DecoderConfig (1 + 2) + 13, DecoderSpecificInfo (1 + 2) + 200, SLConfig 3.
        #expect(es.count == 3 + 3 + 3 + 13 + 3 + 200 + 3, "tag and size bytes add up")
    }

    // MARK: FLAC and Opus sample entries

    /// The bytes of the first box `type` found anywhere in `bytes` (a plain search: the test data is small).
    static func boxBody(_ bytes: [UInt8], _ type: String) -> ArraySlice<UInt8>? {
        let tag = Array(type.utf8)
        for at in 4..<max(4, bytes.count - 4) where Array(bytes[at..<(at + 4)]) == tag {
            let size = Int(bytes[at - 4]) << 24 | Int(bytes[at - 3]) << 16 | Int(bytes[at - 2]) << 8 | Int(bytes[at - 1])
            guard size >= 8, at - 4 + size <= bytes.count else { continue }
            return bytes[(at + 4)..<(at - 4 + size)]
        }
        return nil
    }

    @Test func flacInit_fLaCWithDfLaHoldingStreamInfo() throws {
        let streamInfo = [UInt8](0..<34)
        var info = FMP4AudioTrackInfo(timescale: 96_000, channels: 2, sampleRate: 96_000, audioSpecificConfig: [])
        info.codec = .flac(streamInfo: streamInfo, bitsPerSample: 24)
        let bytes = FMP4Writer.initSegment(info)
        let entry = try #require(Self.boxBody(bytes, "fLaC"))
        let base = entry.startIndex
        #expect(entry[base + 16] == 0 && entry[base + 17] == 2, "channelcount 2")
        #expect(entry[base + 18] == 0 && entry[base + 19] == 24, "samplesize 24")
        #expect(entry[(base + 24)..<(base + 28)].allSatisfy { $0 == 0 }, "96 kHz does not fit 16.16: samplerate 0")
        let dfLa = try #require(Self.boxBody(bytes, "dfLa"))
        #expect(Array(dfLa) == [0, 0, 0, 0, 0x80, 0, 0, 34] + streamInfo, "full box v0, one last STREAMINFO block")
        #expect(Self.boxBody(bytes, "esds") == nil && Self.boxBody(bytes, "elst") == nil)
    }

    @Test func opusInit_dOpsEditListAndRollGroup() throws {
        var head = try OpusHead.parse(Array("OpusHead".utf8)[...] + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0, 0, 0x00, 0xFF, 0][...])
        head.outputGainQ78 = -256
        var info = FMP4AudioTrackInfo(timescale: 48_000, channels: 2, sampleRate: 48_000, audioSpecificConfig: [])
        info.codec = .opus(head)
        info.edit = (mediaTime: 312, duration: 96_000)
        info.rollDistance = -4
        let bytes = FMP4Writer.initSegment(info)
        let dOps = try #require(Self.boxBody(bytes, "dOps"))
        // Version 0, 2 channels, pre-skip 312 and 48000 Hz big-endian, gain -256 (Q7.8), family 0.
        #expect(Array(dOps) == [0, 2, 0x01, 0x38, 0, 0, 0xBB, 0x80, 0xFF, 0x00, 0])
        let elst = try #require(Self.boxBody(bytes, "elst"))
        #expect(Array(elst) == [0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0x77, 0, 0, 0, 0x01, 0x38, 0, 1, 0, 0], "one edit: 96000 ticks from 312")
        let sgpd = try #require(Self.boxBody(bytes, "sgpd"))
        #expect(Array(sgpd) == [1, 0, 0, 0] + Array("roll".utf8) + [0, 0, 0, 2, 0, 0, 0, 1, 0xFF, 0xFC], "roll_distance -4")
        let header = FMP4Writer.mediaSegmentHeader(sequence: 1, trackID: 1, baseDecodeTime: 0,
                                                   samples: [(960, 10), (960, 12)], rollGroup: true)
        #expect(header.count == FMP4Writer.mediaHeaderSize(sampleCount: 2, sampleGroup: true))
        let sbgp = try #require(Self.boxBody(header, "sbgp"))
        #expect(Array(sbgp) == [0, 0, 0, 0] + Array("roll".utf8) + [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1])
        // trun's data_offset still lands just past the mdat header.
        let trun = try #require(Self.boxBody(header, "trun"))
        let offset = Int(trun[trun.startIndex + 8]) << 24 | Int(trun[trun.startIndex + 9]) << 16
            | Int(trun[trun.startIndex + 10]) << 8 | Int(trun[trun.startIndex + 11])
        #expect(offset == header.count, "data_offset counts the sbgp")
    }
}
