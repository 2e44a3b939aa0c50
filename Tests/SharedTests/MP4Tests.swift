import Testing
@testable import StreamShared

/// Builds MP4 boxes for tests.
enum MP4Builder {
    static func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func be64(_ v: Int) -> [UInt8] { be32(v >> 32) + be32(v & 0xFFFF_FFFF) }

    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
        be32(8 + body.count) + Array(type.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }) + body
    }

    static func fullBox(_ type: String, version: UInt8 = 0, _ body: [UInt8]) -> [UInt8] {
        box(type, [version, 0, 0, 0] + body)
    }

    static func esds(asc: [UInt8]) -> [UInt8] {
        let dsi: [UInt8] = [5, UInt8(asc.count)] + asc
        let dcd: [UInt8] = [4, UInt8(13 + dsi.count), 0x40, 0x15, 0, 0x18, 0] + be32(160_000) + be32(128_000) + dsi
        let sl: [UInt8] = [6, 1, 2]
        // Descriptor lengths in the 4-byte 0x80-continued form some muxers write.
        let es: [UInt8] = [3, 0x80, 0x80, 0x80, UInt8(3 + dcd.count + sl.count), 0, 1, 0] + dcd + sl
        return fullBox("esds", es)
    }

    static func mp4a(channels: Int = 2, rate: Int = 44_100, asc: [UInt8] = [0x12, 0x10]) -> [UInt8] {
        box("mp4a", [0, 0, 0, 0, 0, 0] + be16(1) + [0, 0, 0, 0, 0, 0, 0, 0] + be16(channels) + be16(16) + [0, 0, 0, 0]
            + be32(rate << 16) + esds(asc: asc))
    }

    /// A movie: `samples` AAC samples of 1024 ticks at 44.1 kHz, sizes 100 + i, in chunks of `perChunk`.
    static func moov(samples: Int = 10, perChunk: Int = 4, chunkBase: Int = 1000, wideOffsets: Bool = false,
                     elstMediaTime: Int? = 2112, smpb: String? = nil, video: Bool = false, mvex: Bool = false,
                     compactSizes: Bool = false) -> [UInt8] {
        let chunks = (samples + perChunk - 1) / perChunk
        var offsets: [Int] = []
        var offset = chunkBase
        for c in 0..<chunks {
            offsets.append(offset)
            for s in (c * perChunk)..<min(samples, (c + 1) * perChunk) { offset += 100 + s }
            offset += 50                                   // a gap between chunks
        }
        let stts = fullBox("stts", be32(1) + be32(samples) + be32(1024))
        let stsc = fullBox("stsc", be32(1) + be32(1) + be32(perChunk) + be32(1))
        let stsz = compactSizes
            ? fullBox("stz2", [0, 0, 0, 16] + be32(samples) + (0..<samples).flatMap { be16(100 + $0) })
            : fullBox("stsz", be32(0) + be32(samples) + (0..<samples).flatMap { be32(100 + $0) })
        let stco = wideOffsets ? fullBox("co64", be32(chunks) + offsets.flatMap(be64))
            : fullBox("stco", be32(chunks) + offsets.flatMap(be32))
        let stsd = fullBox("stsd", be32(1) + mp4a())
        let stbl = box("stbl", stsd + stts + stsc + stsz + stco)
        let mdhd = fullBox("mdhd", be32(0) + be32(0) + be32(44_100) + be32(samples * 1024) + [0x55, 0xC4, 0, 0])
        let hdlr = fullBox("hdlr", be32(0) + Array("soun".utf8) + [UInt8](repeating: 0, count: 13))
        let mdia = box("mdia", mdhd + hdlr + box("minf", stbl))
        var trak = box("tkhd", [0, 0, 0, 7] + be32(0) + be32(0) + be32(2) + [UInt8](repeating: 0, count: 68))
        if let elstMediaTime {
            trak += box("edts", fullBox("elst", be32(1) + be32(1000) + be32(elstMediaTime) + be32(0x0001_0000)))
        }
        trak += mdia
        var moovBody = fullBox("mvhd", be32(0) + be32(0) + be32(1000) + be32(samples * 1024 * 1000 / 44_100)
                               + [UInt8](repeating: 0, count: 80))
        if video {
            let vhdlr = fullBox("hdlr", be32(0) + Array("vide".utf8) + [UInt8](repeating: 0, count: 13))
            let vmdhd = fullBox("mdhd", be32(0) + be32(0) + be32(90_000) + be32(90_000) + [0, 0, 0, 0])
            moovBody += box("trak", box("mdia", vmdhd + vhdlr))
        }
        moovBody += box("trak", trak)
        if mvex { moovBody += box("mvex", fullBox("trex", be32(1) + be32(1) + be32(0) + be32(0) + be32(0))) }
        var ilst = item("\u{A9}nam", "Box Title") + item("\u{A9}ART", "Box Artist") + item("\u{A9}alb", "Box Album")
        ilst += box("trkn", dataBox([0, 0, 0, 5, 0, 9, 0, 0], type: 0))
        ilst += box("covr", dataBox([UInt8](repeating: 0xD8, count: 321), type: 13))
        if let smpb {
            ilst += box("----", fullBox("mean", Array("com.apple.iTunes".utf8)) + fullBox("name", Array("iTunSMPB".utf8))
                        + dataBox(Array(smpb.utf8), type: 1))
        }
        let meta = fullBox("meta", fullBox("hdlr", be32(0) + Array("mdir".utf8) + [UInt8](repeating: 0, count: 13)) + box("ilst", ilst))
        moovBody += box("udta", meta)
        return box("moov", moovBody)
    }

    static func dataBox(_ value: [UInt8], type: Int) -> [UInt8] { box("data", be32(type) + be32(0) + value) }
    static func item(_ type: String, _ text: String) -> [UInt8] { box(type, dataBox(Array(text.utf8), type: 1)) }
}

@Suite struct MP4Tests {
    @Test func boxHeaders_32And64BitAndToEnd() throws {
        let small = MP4Builder.box("free", [1, 2, 3])
        #expect(try MP4BoxHeader.parse(small[...], at: 0) == MP4BoxHeader(type: "free", offset: 0, headerSize: 8, size: 11))
        let large = MP4Builder.be32(1) + Array("mdat".utf8) + MP4Builder.be64(24) + [UInt8](repeating: 0, count: 8)
        #expect(try MP4BoxHeader.parse(large[...], at: 0)?.size == 24)
        #expect(try MP4BoxHeader.parse(large[...], at: 0)?.headerSize == 16)
        let toEnd = MP4Builder.be32(0) + Array("mdat".utf8)
        #expect(try MP4BoxHeader.parse(toEnd[...], at: 0)?.size == nil)
        #expect(try MP4BoxHeader.parse([0, 0, 0][...], at: 0) == nil)
        #expect(throws: FormatError.self) { try MP4BoxHeader.parse((MP4Builder.be32(4) + Array("free".utf8))[...], at: 0) }
    }

    @Test func movie_allFields() throws {
        let movie = try MP4Movie.parse(moov: MP4Builder.moov()[...])
        let track = try #require(movie.audio)
        #expect(track.trackID == 2)
        #expect(track.codec == "mp4a")
        #expect(track.channels == 2)
        #expect(track.sampleRate == 44_100)
        #expect(track.timescale == 44_100)
        #expect(track.sampleCount == 10)
        #expect(track.decoderSpecificInfo == [0x12, 0x10])
        #expect(track.objectTypeIndication == 0x40)
        #expect(track.avgBitrate == 128_000)
        #expect(track.editMediaTime == 2112)
        #expect(track.totalTicks == 10 * 1024)
        #expect(movie.tags == TrackTags(title: "Box Title", artist: "Box Artist", album: "Box Album", track: "5/9", coverArtBytes: 321))
        #expect(!movie.isFragmented)
    }

    @Test func sampleLocations_acrossChunks() throws {
        let track = try #require(try MP4Movie.parse(moov: MP4Builder.moov(samples: 10, perChunk: 4)[...]).audio)
        #expect(track.sampleLocation(0)! == (1000, 100))
        #expect(track.sampleLocation(3)! == (1000 + 100 + 101 + 102, 103))
        // Sample 4 opens the second chunk: after the first chunk's 4 samples and the 50-byte gap.
        #expect(track.sampleLocation(4)! == (1000 + 406 + 50, 104))
        #expect(track.sampleLocation(10) == nil)
        #expect(track.decodeTime(ofSample: 5) == 5 * 1024)
        #expect(track.sampleIndex(atSeconds: 0.1) == 4)
    }

    @Test func multiEntryStsc() throws {
        var track = try #require(try MP4Movie.parse(moov: MP4Builder.moov(samples: 10, perChunk: 4)[...]).audio)
        // Chunk 1 holds 2 samples, chunks 2.. hold 4.
        track.sampleToChunk = [.init(firstChunk: 1, samplesPerChunk: 2), .init(firstChunk: 2, samplesPerChunk: 4)]
        track.chunkOffsets = [500, 900, 2000]
        #expect(track.sampleLocation(1)! == (600, 101))
        #expect(track.sampleLocation(2)! == (900, 102))
        #expect(track.sampleLocation(6)! == (2000, 106))
    }

    @Test func co64Offsets() throws {
        let track = try #require(try MP4Movie.parse(moov: MP4Builder.moov(chunkBase: 5_000_000_000, wideOffsets: true)[...]).audio)
        #expect(track.sampleLocation(0)?.offset == 5_000_000_000)
    }

    @Test func stz2_compactSizes() throws {
        let track = try #require(try MP4Movie.parse(moov: MP4Builder.moov(samples: 6, compactSizes: true)[...]).audio)
        #expect(track.sampleSizes == .table([100, 101, 102, 103, 104, 105]))
        #expect(track.sampleLocation(5)! == (1000 + 406 + 50 + 104, 105))
    }

    @Test func iTunSMPB_gapless() throws {
        let movie = try MP4Movie.parse(moov: MP4Builder.moov(smpb: " 00000000 00000840 000001C0 0000000000002800")[...])
        #expect(movie.gapless == GaplessInfo(encoderDelay: 0x840, encoderPadding: 0x1C0))
    }

    @Test func videoTrackFirst_isSkipped() throws {
        let movie = try MP4Movie.parse(moov: MP4Builder.moov(video: true)[...])
        #expect(movie.audio?.codec == "mp4a")
    }

    @Test func mvex_marksFragmented() throws {
        #expect(try MP4Movie.parse(moov: MP4Builder.moov(mvex: true)[...]).isFragmented)
    }

    @Test func hugeEntryCount_throwsWithoutAllocating() throws {
        var bytes = MP4Builder.moov()
        let stts = MP4Builder.fullBox("stts", MP4Builder.be32(1) + MP4Builder.be32(10) + MP4Builder.be32(1024))
        let lying = MP4Builder.fullBox("stts", MP4Builder.be32(0x7FFF_FFFF) + MP4Builder.be32(10) + MP4Builder.be32(1024))
        let range = try #require(bytes.firstRange(of: stts))
        bytes.replaceSubrange(range, with: lying)
        #expect(throws: FormatError.self) { try MP4Movie.parse(moov: bytes[...]) }
    }

    @Test func childOverrunningParent_throws() throws {
        var bytes = MP4Builder.moov()
        // Grow the mvhd size field past the end of moov.
        let at = 8
        bytes[at] = 0x7F
        #expect(throws: FormatError.self) { try MP4Movie.parse(moov: bytes[...]) }
    }

    @Test func topLevel_moovAfterMdat() throws {
        let ftyp = MP4Builder.box("ftyp", Array("M4A ".utf8) + MP4Builder.be32(0) + Array("isomM4A ".utf8))
        let mdat = MP4Builder.box("mdat", [UInt8](repeating: 0, count: 5000))
        let moov = MP4Builder.moov()
        let file = ftyp + mdat + moov
        let (layout, next) = try MP4TopLevel.scan(prefix: file.prefix(ftyp.count + 16), fileSize: file.count)
        #expect(layout.majorBrand == "M4A ")
        #expect(layout.mdatRange == ftyp.count..<(ftyp.count + mdat.count))
        #expect(layout.moovRange == nil)
        #expect(next == ftyp.count + mdat.count, "the next header to fetch is moov's")
        let (full, end) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        #expect(full.moovRange == (ftyp.count + mdat.count)..<file.count)
        #expect(end == nil)
    }

    @Test(.timeLimit(.minutes(1))) func truncationsAndMutations() {
        let sample = MP4Builder.moov(smpb: " 00000000 00000840 000001C0 0000000000002800")
        var outcomes = 0
        Fuzz.forEachTruncation(of: sample) { prefix in
            _ = try? MP4Movie.parse(moov: prefix)
            outcomes += 1
        }
        var values = 0, errors = 0
        Fuzz.forEachMutation(of: sample, count: 10_000) { mutated in
            do {
                let movie = try MP4Movie.parse(moov: mutated[...])
                if let track = movie.audio {
                    _ = track.sampleLocation(track.sampleCount / 2)
                    _ = track.sampleIndex(atSeconds: 0.05)
                }
                values += 1
            } catch { errors += 1 }
        }
        #expect(outcomes == sample.count)
        #expect(values + errors == 10_000)
        #expect(values > 0 && errors > 0)
    }
}
