import Testing
@testable import StreamShared

/// Ogg on crafted pages: CRC-32, lacing, packets across pages, chains, multiplexed streams,
/// and the codec headers (OpusHead, OpusTags, Vorbis, FLAC-in-Ogg).
@Suite struct OggTests {
    typealias B = FLACOggBuilders

    static let opusHeaders = [B.opusHead(preSkip: 312), B.opusTags(["TITLE=Opus song", "R128_TRACK_GAIN=-256"])]

    @Test func page_fieldsLacingAndCRC() throws {
        let body = Array(repeating: UInt8(9), count: 300) + [1, 2, 3]
        let bytes = B.oggPage(serial: 0x1234_5678, sequence: 7, granule: 96_000, flags: 0x05, lacing: [255, 45, 3], body: body)
        let page = try #require(try OggPage.parse(bytes[...]))
        #expect(page.serial == 0x1234_5678 && page.sequence == 7 && page.granulePosition == 96_000)
        #expect(page.isContinued && !page.isBeginningOfStream && page.isEndOfStream)
        #expect(page.length == bytes.count && page.bodyLength == 303)
        #expect(page.pieces.map(\.length) == [300, 3] && page.pieces.allSatisfy(\.endsPacket))

        var corrupt = bytes
        corrupt[40] ^= 0xFF
        #expect(throws: FormatError.invalid(component: "ogg", reason: "page CRC-32 mismatch", offset: 22)) { try OggPage.parse(corrupt[...]) }
        var version = bytes
        version[4] = 1
        #expect(throws: FormatError.self) { try OggPage.parse(version[...]) }
        #expect(throws: FormatError.self) { try OggPage.parse(Array("OggX".utf8)[...]) }
        for cut in [0, 3, 26, 27, 29, bytes.count - 1] { #expect(try OggPage.parse(bytes.prefix(cut)) == nil, "cut \(cut)") }
        // Resync: garbage, then a page with a bad CRC, then a good one.
        let stream = Array("OggS garbage".utf8) + corrupt + bytes
        let found = try #require(OggPage.next(in: stream[...], from: 0))
        #expect(found.offset == 12 + corrupt.count)
    }

    /// The slice-by-8 CRC against the definition, one bit at a time (the builders' pages use
    /// OggCRC itself, so they cannot tell).
    @Test func crc32_sliceBy8MatchesTheBitwiseDefinition() {
        func bitwise(_ bytes: [UInt8], from start: UInt32 = 0) -> UInt32 {
            var crc = start
            for byte in bytes {
                crc ^= UInt32(byte) << 24
                for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
            }
            return crc
        }
        #expect(OggCRC.crc32(Array("123456789".utf8)[...]) == 0x89A1_897F, "the check value of CRC-32 with init 0, no final XOR")
        var generator = SplitMix64(seed: 23)
        for length in Array(0...40) + [255, 4096, 65_307] {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let start = UInt32(truncatingIfNeeded: generator.next())
            #expect(OggCRC.crc32(bytes[...], from: start) == bitwise(bytes, from: start), "length \(length)")
            // A slice that does not start at index 0, and the zeros of the CRC field.
            if length > 3 { #expect(OggCRC.crc32(bytes[3...]) == bitwise(Array(bytes[3...])), "slice of \(length)") }
            #expect(OggCRC.crc32(zeros: length % 9, from: start) == bitwise(Array(repeating: 0, count: length % 9), from: start))
        }
    }

    @Test func assembler_joinsPacketsAcrossPagesAndDropsOrphans() throws {
        let big = (0..<70_000).map { UInt8(truncatingIfNeeded: $0) }
        let stream = B.oggStream(serial: 5, headers: [[1, 2, 3]], audio: [big, [9, 9]], granules: [100, 200])
        var assembler = OggPacketAssembler(serial: 5)
        var packets: [OggPacket] = []
        var offset = 0
        while let (at, page) = OggPage.next(in: stream[...], from: offset) {
            packets += try assembler.push(page, body: stream[(at + page.headerLength)..<(at + page.length)])
            offset = at + page.length
        }
        #expect(packets.map(\.data.count) == [3, 70_000, 2])
        #expect(packets[1].data == big && packets[1].granulePosition == 100)
        #expect(packets[0].isFirst && packets[2].isLast)

        // A packet bigger than the limit throws; a continuation after a lost page is dropped.
        var small = OggPacketAssembler(serial: 5, maxPacketBytes: 1000)
        var sawLimit = false
        offset = 0
        while let (at, page) = OggPage.next(in: stream[...], from: offset) {
            do { _ = try small.push(page, body: stream[(at + page.headerLength)..<(at + page.length)]) } catch {
                sawLimit = error == .outOfRange(component: "ogg", field: "packet size", value: "more than 1000 bytes")
            }
            offset = at + page.length
        }
        #expect(sawLimit)
        var lossy = OggPacketAssembler(serial: 5)
        var pages: [(OggPage, ArraySlice<UInt8>)] = []
        offset = 0
        while let (at, page) = OggPage.next(in: stream[...], from: offset) {
            pages.append((page, stream[(at + page.headerLength)..<(at + page.length)]))
            offset = at + page.length
        }
        #expect(pages.count == 4)   // header, 70000 bytes on two pages, the last packet
        var got: [OggPacket] = []
        for (index, (page, body)) in pages.enumerated() where index != 1 { got += try lossy.push(page, body: body) }
        #expect(got.map(\.data.count) == [3, 2] && lossy.droppedPieces == 1)
    }

    @Test func assembler_joinsAContinuationWithoutItsFlag() throws {
        let first = B.oggPage(serial: 1, sequence: 0, granule: -1, lacing: [255], body: Array(repeating: 1, count: 255))
        let second = B.oggPage(serial: 1, sequence: 1, granule: 10, lacing: [5], body: [2, 2, 2, 2, 2])   // flag missing
        var assembler = OggPacketAssembler(serial: 1)
        #expect(try assembler.push(try #require(try OggPage.parse(first[...])), body: first[28...]).isEmpty)
        let packets = try assembler.push(try #require(try OggPage.parse(second[...])), body: second[28...])
        #expect(packets.map(\.data.count) == [260] && assembler.missingContinuationFlags == 1)
    }

    @Test func opusHead_fields() throws {
        let head = try OpusHead.parse(B.opusHead(channels: 2, preSkip: 65535, rate: 0, gain: -1536)[...])
        #expect(head.preSkip == 65535 && head.inputSampleRate == 0 && head.outputGainQ78 == -1536 && head.outputGainDB == -6)
        #expect(head.mappingFamily == 0 && head.streamCount == 1 && head.coupledCount == 1 && head.channelMapping == [0, 1])
        let surround = try OpusHead.parse(B.opusHead(channels: 6, family: 1, mapping: [4, 2, 0, 4, 1, 2, 3, 5])[...])
        #expect(surround.streamCount == 4 && surround.coupledCount == 2 && surround.channelMapping == [0, 4, 1, 2, 3, 5])
        #expect(throws: FormatError.self) { try OpusHead.parse(B.opusHead(channels: 3)[...]) }   // family 0 is 1 or 2 channels
        #expect(throws: FormatError.self) { try OpusHead.parse(B.opusHead(channels: 2, family: 1, mapping: [1, 1, 0, 7])[...]) }
        #expect(throws: FormatError.self) { try OpusHead.parse(B.opusHead().dropLast(3)) }
    }

    @Test func reader_opusDurationTagsAndPreSkip() throws {
        let file = B.oggStream(serial: 9, headers: Self.opusHeaders, audio: [[1], [2], [3]], granules: [960, 1920, 48_312])
        let stream = try OggReader.read(MemoryBytes(file))
        guard case .opus(let head) = stream.codec else { Issue.record("not Opus: \(stream.codec)"); return }
        #expect(head.preSkip == 312 && stream.sampleRate == 48_000 && stream.channels == 2)
        #expect(stream.first.firstAudioGranule == 960 && stream.first.lastGranule == 48_312)
        #expect(stream.durationSeconds == 1.0)
        #expect(stream.tags.title == "Opus song" && stream.tags.replayGain?.trackGain == 4)

        // Pre-skip 65535 with less audio than that: no samples, not a negative count.
        let skipAll = B.oggStream(serial: 9, headers: [B.opusHead(preSkip: 65535), Self.opusHeaders[1]], audio: [[1]], granules: [960])
        #expect(try OggReader.read(MemoryBytes(skipAll)).durationSeconds == 0)
        // A granule position of a century.
        let century = B.oggStream(serial: 9, headers: Self.opusHeaders, audio: [[1]], granules: [48_000 * 3_155_760_000])
        #expect(throws: FormatError.self) { try OggReader.read(MemoryBytes(century)) }
        // OpusTags missing.
        let noTags = B.oggStream(serial: 9, headers: [B.opusHead(), [1, 2, 3]], audio: [[1]], granules: [960])
        #expect(throws: FormatError.self) { try OggReader.read(MemoryBytes(noTags)) }
    }

    @Test func probe_oggOpusAndVorbisPlayFLACAndSpeexAreRefused() throws {
        let opus = B.oggStream(serial: 9, headers: Self.opusHeaders, audio: [[1]], granules: [960])
        guard case .audio(let stream) = try Probe.probe(opus[...], isComplete: true) else { Issue.record("no audio"); return }
        #expect(stream.container == .ogg && stream.codec == "opus" && stream.container.mimeType == "audio/ogg")
        #expect(stream.oggCodec?.preSkip == 312)
        // Vorbis behind a video stream's BOS page.
        let video = B.oggPage(serial: 3, sequence: 0, granule: 0, flags: 0x02, lacing: [7], body: [0x80] + Array("theora".utf8))
        let vorbis = B.oggStream(serial: 4, headers: [B.vorbisID(rate: 22_050)], audio: [[1]], granules: [0])
        guard case .audio(let muxed) = try Probe.probe((video + vorbis)[...], isComplete: true) else { Issue.record("no audio"); return }
        #expect(muxed.codec == "vorbis" && muxed.oggCodec?.sampleRate == 22_050)
        // The prefix cut inside the first page: more bytes, please.
        #expect(try Probe.probe(opus.prefix(30), isComplete: false) == .needMore(atLeast: 4096))
        let flac = B.oggStream(serial: 9, headers: [OggFLACHeader.magic + [1, 0, 0, 1] + Array("fLaC".utf8) + [0x80, 0, 0, 34]
                                                    + B.streamInfo(totalSamples: 0)], audio: [[1]], granules: [960])
        let flacError = #expect(throws: FormatError.self) { try Probe.probe(flac[...], isComplete: true) }
        #expect(String(describing: flacError).contains("Ogg FLAC is not supported"), "\(String(describing: flacError))")
        let noAudio = video + B.oggPage(serial: 3, sequence: 1, granule: 0, lacing: [1], body: [0])
        #expect(throws: FormatError.unsupported(component: "ogg", reason: "no Opus or Vorbis stream in the Ogg file")) {
            try Probe.probe(noAudio[...], isComplete: true)
        }
    }

    @Test func reader_chainedLinks() throws {
        let first = B.oggStream(serial: 1, headers: Self.opusHeaders, audio: [[1], [2]], granules: [960, 48_312])
        let second = B.oggStream(serial: 2, headers: [B.vorbisID(rate: 22_050), [3] + Array("vorbis".utf8) + B.vorbisComment(["TITLE=Two"]) + [1],
                                                      [5] + Array("vorbis".utf8) + [0, 0]],
                                 audio: [[1], [2]], granules: [0, 44_100])
        let stream = try OggReader.read(MemoryBytes(first + second))
        #expect(stream.links.map(\.serial) == [1, 2])
        #expect(stream.links[1].codec.sampleRate == 22_050 && stream.links[1].comment?.value("title") == "Two")
        #expect(stream.durationSeconds == 1.0 + 2.0)
        #expect(stream.links[1].offset == first.count)
    }

    @Test func reader_multiplexedPicksTheAudioStream() throws {
        // A Theora-like BOS first, then Vorbis; their pages interleave.
        let video = B.oggPage(serial: 77, sequence: 0, granule: 0, flags: 2, lacing: [10], body: [0x80] + Array("theora".utf8) + [0, 0, 0])
        let audio = B.oggStream(serial: 3, headers: [B.vorbisID(channels: 1, rate: 8000), [3] + Array("vorbis".utf8) + B.vorbisComment(["ARTIST=A"]),
                                                     [5] + Array("vorbis".utf8)], audio: [[1], [2]], granules: [100, 16_000])
        // Split the audio stream's pages: its BOS, then the video's, then the rest.
        let firstAudioPage = try #require(try OggPage.parse(audio[...]))
        let videoData = B.oggPage(serial: 77, sequence: 1, granule: 5, lacing: [3], body: [1, 2, 3])
        let file = video + Array(audio.prefix(firstAudioPage.length)) + videoData + Array(audio.dropFirst(firstAudioPage.length))
        for fullScan in [false, true] {
            let stream = try OggReader.read(MemoryBytes(file), fullScan: fullScan)
            #expect(stream.links.count == 1 && stream.first.serial == 3 && stream.codec.name == "vorbis")
            #expect(stream.first.otherSerials == [77] && stream.first.offset == 0)
            #expect(stream.durationSeconds == 2.0 && stream.tags.artist == "A")
        }
        let noAudio = video + videoData
        #expect(throws: FormatError.unsupported(component: "ogg", reason: "no Opus, Vorbis, FLAC or Speex stream")) {
            try OggReader.read(MemoryBytes(noAudio))
        }
    }

    @Test func reader_flacInOgg() throws {
        let info = B.streamInfo(rate: 48_000, channels: 2, bits: 24, totalSamples: 96_000)
        let header = [0x7F] + Array("FLAC".utf8) + [1, 0] + B.be16(1) + Array("fLaC".utf8) + B.block(0, info)
        let comment = B.block(4, B.vorbisComment(["ALBUM=Ogg FLAC"]), last: true)
        let file = B.oggStream(serial: 4, headers: [header, comment], audio: [[0xFF, 0xF8, 1], [0xFF, 0xF8, 2]],
                               granules: [4096, 96_000])
        let stream = try OggReader.read(MemoryBytes(file))
        #expect(stream.codec.name == "flac" && stream.sampleRate == 48_000 && stream.bitsPerSample == 24)
        #expect(stream.durationSeconds == 2.0 && stream.tags.album == "Ogg FLAC")
        var badVersion = header
        badVersion[5] = 2
        #expect(throws: FormatError.unsupported(component: "ogg-flac", reason: "mapping version 2.0")) { try OggFLACHeader.parse(badVersion[...]) }
    }

    /// FLAC-in-Ogg with a header count of 0 ("unknown"): metadata packets until the first frame.
    @Test func reader_flacInOggWithoutAHeaderCount() throws {
        let info = B.streamInfo(rate: 44_100, channels: 1, bits: 16, totalSamples: 0)
        let header = [0x7F] + Array("FLAC".utf8) + [1, 0] + B.be16(0) + Array("fLaC".utf8) + B.block(0, info)
        let file = B.oggStream(serial: 4, headers: [header, B.block(4, B.vorbisComment(["TITLE=n"])), B.block(1, [0, 0], last: false)],
                               audio: [[0xFF, 0xF8, 1], [0xFF, 0xF8, 2]], granules: [4096, 44_100])
        let stream = try OggReader.read(MemoryBytes(file))
        #expect(stream.first.firstAudioGranule == 4096 && stream.durationSeconds == 1.0 && stream.tags.title == "n")
    }

    @Test func reader_speex() throws {
        var speex = Array("Speex   ".utf8) + Array("1.2".utf8) + [UInt8](repeating: 0, count: 17) + B.le32(1) + B.le32(80)
        speex += B.le32(16_000) + B.le32(1) + B.le32(4) + B.le32(1) + B.le32(-1) + B.le32(320) + B.le32(0) + B.le32(1) + B.le32(0)
        speex += B.le32(0) + B.le32(0)
        let file = B.oggStream(serial: 6, headers: [speex, B.vorbisComment(["TITLE=Speex"])], audio: [[1], [2]], granules: [320, 32_000])
        let stream = try OggReader.read(MemoryBytes(file))
        #expect(stream.codec == .speex(SpeexHeader(sampleRate: 16_000, channels: 1, extraHeaders: 0)))
        #expect(stream.durationSeconds == 2.0 && stream.tags.title == "Speex")
    }

    @Test func reader_vorbisHeadersAndPicture() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 9, 9]
        let picture = FLACTests().base64(B.picture(data: png))
        let comment = [3] + Array("vorbis".utf8) + B.vorbisComment(["METADATA_BLOCK_PICTURE=" + picture, "TITLE=V"]) + [1]
        let file = B.oggStream(serial: 8, headers: [B.vorbisID(), comment, [5] + Array("vorbis".utf8) + [1, 2]],
                               audio: [[1], [2]], granules: [0, 88_200])
        let stream = try OggReader.read(MemoryBytes(file))
        #expect(stream.durationSeconds == 2.0 && stream.tags.title == "V" && stream.first.comment?.pictures.first?.data == png)
        // The setup header missing: a comment header followed by audio is refused.
        let noSetup = B.oggStream(serial: 8, headers: [B.vorbisID(), comment], audio: [[1], [2]], granules: [0, 88_200])
        #expect(throws: FormatError.self) { try OggReader.read(MemoryBytes(noSetup)) }
        // Block sizes out of range.
        var id = B.vorbisID()
        id[28] = 0xF3
        #expect(throws: FormatError.self) { try VorbisIdentification.parse(id[...]) }
    }

    /// Damage costs a bounded amount of work: past 4096 capture patterns that start no page, the read stops.
    @Test func reader_boundsTheWorkOnDamage() throws {
        var bad = B.oggPage(serial: 1, sequence: 0, granule: 0, flags: 2, lacing: [3], body: [1, 2, 3])
        bad[22] ^= 1
        let good = B.oggStream(serial: 9, headers: Self.opusHeaders, audio: [[1]], granules: [48_312])
        let few = Array([[UInt8]](repeating: bad, count: 10).joined()) + good
        let stream = try OggReader.read(MemoryBytes(few))
        #expect(stream.skippedBytes == 10 * bad.count && stream.durationSeconds == 1.0)
        let many = Array([[UInt8]](repeating: bad, count: 5000).joined()) + good
        #expect(throws: FormatError.invalid(component: "ogg", reason: "more than 4096 damaged pages", offset: 0)) {
            try OggReader.read(MemoryBytes(many))
        }
    }

    @Test func reader_refusesWhatIsNotOgg() {
        #expect(throws: FormatError.notAudio(reason: "no Ogg page")) { try OggReader.read(MemoryBytes(Array("fLaC and more bytes than a page header".utf8))) }
        let cut = Array(B.oggStream(serial: 9, headers: Self.opusHeaders, audio: [[1]], granules: [960]).prefix(40))
        #expect(throws: FormatError.self) { try OggReader.read(MemoryBytes(cut)) }
    }
}
