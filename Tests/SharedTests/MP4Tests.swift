import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// Byte-level helpers for building MP4 boxes in tests.
enum MP4Builder {
    /// Box types are bytes: "\u{A9}nam" must become A9 6E 61 6D.
    static func fourCC(_ s: String) -> [UInt8] { s.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } }

    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] { be32(8 + body.count) + fourCC(type) + body }
    /// A box with a 64-bit size (size field 1, largesize after the type).
    static func box64(_ type: String, _ body: [UInt8]) -> [UInt8] { be32(1) + fourCC(type) + be64(16 + body.count) + body }
    static func fullBox(_ type: String, version: UInt8 = 0, flags: Int = 0, _ body: [UInt8]) -> [UInt8] {
        box(type, [version, UInt8(flags >> 16 & 0xFF), UInt8(flags >> 8 & 0xFF), UInt8(flags & 0xFF)] + body)
    }

    /// An esds box. `esFlags` sets streamDependence (0x80), URL (0x40) and OCR (0x20) fields;
    /// `longLengths` writes sizes in the 4-byte 0x80-continued form some muxers use.
    static func esds(asc: [UInt8], objectType: UInt8 = 0x40, esFlags: UInt8 = 0, longLengths: Bool = true) -> [UInt8] {
        func length(_ n: Int) -> [UInt8] { longLengths ? [0x80, 0x80, 0x80, UInt8(n)] : [UInt8(n)] }
        let dsi: [UInt8] = [5] + length(asc.count) + asc
        let dcdBody: [UInt8] = [objectType, 0x15] + [0x00, 0x18, 0x00] + be32(160_000) + be32(128_000) + dsi
        let dcd: [UInt8] = [4] + length(dcdBody.count) + dcdBody
        let sl: [UInt8] = [6, 1, 2]
        var esBody: [UInt8] = be16(1) + [esFlags]
        if esFlags & 0x80 != 0 { esBody += be16(7) }
        if esFlags & 0x40 != 0 { esBody += [4] + Array("a://".utf8) }
        if esFlags & 0x20 != 0 { esBody += be16(9) }
        esBody += dcd + sl
        return fullBox("esds", [3] + length(esBody.count) + esBody)
    }

    /// An audio sample entry: the ISO fields, QuickTime's v1/v2 extensions, then `children`.
    static func audioEntry(_ type: String = "mp4a", version: Int = 0, channels: Int = 2, rate: Int = 44_100,
                           children: [UInt8]) -> [UInt8] {
        var body: [UInt8] = [0, 0, 0, 0, 0, 0] + be16(1) + be16(version) + be16(0) + be32(0)
        if version == 2 {
            // QuickTime v2: the classic fields hold fixed values; the real ones follow.
            body += be16(3) + be16(16) + be16(0xFFFE) + be16(0) + be32(0x0001_0000)
            body += be32(72) + be64(Int(Double(rate).bitPattern)) + be32(channels) + be32(0x7F00_0000) + be32(24)
                + be32(0) + be32(0) + be32(1)
        } else {
            body += be16(channels) + be16(16) + be16(0) + be16(0) + be32(rate << 16)
            if version == 1 { body += be32(1024) + be32(0) + be32(2) + be32(2) }
        }
        return box(type, body + children)
    }

    static func mp4a(channels: Int = 2, rate: Int = 44_100, asc: [UInt8] = [0x12, 0x10]) -> [UInt8] {
        audioEntry(channels: channels, rate: rate, children: esds(asc: asc))
    }

    static func dataBox(_ value: [UInt8], type: Int) -> [UInt8] { box("data", be32(type) + be32(0) + value) }
    static func item(_ type: String, _ text: String) -> [UInt8] { box(type, dataBox(Array(text.utf8), type: 1)) }
    static func hdlr(_ handler: String) -> [UInt8] { fullBox("hdlr", be32(0) + fourCC(handler) + [UInt8](repeating: 0, count: 13)) }
}

/// A movie to build, with the answers the parser should give for it. Every field has a
/// default, so each test changes only what it is about.
struct MP4Fixture {
    /// Sample sizes, one per sample.
    var sizes: [Int] = (0..<10).map { 100 + $0 }
    /// Samples in each chunk (must add up to `sizes.count`).
    var chunkSamples: [Int] = [4, 4, 2]
    var chunkBase = 1000
    /// Bytes between chunks (another track's data in a real file).
    var chunkGap = 50
    var wideOffsets = false
    /// Write stz2 with this field size instead of stsz.
    var compactFieldSize: Int?
    /// stts runs; nil = every sample 1024 ticks.
    var stts: [(count: Int, delta: Int)]?
    var timescale = 44_100
    var movieTimescale = 44_100
    var mdhdVersion: UInt8 = 0
    var mdhdDuration: Int?
    /// elst entries (segment duration in movie ticks, media time); empty = no edts.
    var edits: [(duration: Int, mediaTime: Int)] = [(7828, 2112)]
    var elstVersion: UInt8 = 0
    var smpb: String?
    /// iTunes freeform items (----, mean com.apple.iTunes) as name and text.
    var freeform: [(name: String, value: String)] = []
    var video = false
    var mvex = false
    var quickTimeMeta = false
    var tags = true
    /// The last child of moov (udta) written with size 0: "to the end of the container".
    var udtaSizeZero = false
    /// A box type whose entry count is replaced by 0xFFFFFFFF.
    var lyingCount: String?
    /// Replaces the default mp4a sample entry.
    var sampleEntry: [UInt8]?
    var stsdVersion: UInt8 = 0

    var chunkOffsets: [Int] {
        var offsets: [Int] = []
        var offset = chunkBase
        var sample = 0
        for n in chunkSamples {
            offsets.append(offset)
            for s in sample..<(sample + n) { offset += sizes[s] }
            sample += n
            offset += chunkGap
        }
        return offsets
    }

    /// Where each sample should be found.
    var expectedLocations: [(offset: Int, size: Int)] {
        var result: [(offset: Int, size: Int)] = []
        var sample = 0
        for (chunk, n) in chunkSamples.enumerated() {
            var offset = chunkOffsets[chunk]
            for s in sample..<(sample + n) {
                result.append((offset, sizes[s]))
                offset += sizes[s]
            }
            sample += n
        }
        return result
    }

    /// stsc: runs of chunks with the same sample count.
    var stscEntries: [(firstChunk: Int, samplesPerChunk: Int)] {
        var entries: [(firstChunk: Int, samplesPerChunk: Int)] = []
        for (i, n) in chunkSamples.enumerated() where entries.last?.samplesPerChunk != n {
            entries.append((i + 1, n))
        }
        return entries
    }

    private func count(_ type: String, _ n: Int) -> [UInt8] {
        lyingCount == type ? be32(0xFFFF_FFFF) : be32(n)
    }

    func stbl() -> [UInt8] {
        typealias B = MP4Builder
        let runs = stts ?? [(sizes.count, 1024)]
        let sttsBox = B.fullBox("stts", count("stts", runs.count) + runs.flatMap { be32($0.count) + be32($0.delta) })
        let stscBox = B.fullBox("stsc", count("stsc", stscEntries.count)
                                + stscEntries.flatMap { be32($0.firstChunk) + be32($0.samplesPerChunk) + be32(1) })
        var sizeBox: [UInt8]
        if let field = compactFieldSize {
            var packed: [UInt8] = []
            switch field {
            case 4:
                for pair in stride(from: 0, to: sizes.count, by: 2) {
                    let low = pair + 1 < sizes.count ? sizes[pair + 1] : 0
                    packed.append(UInt8(sizes[pair] << 4 | low))
                }
            case 8: packed = sizes.map { UInt8($0) }
            default: packed = sizes.flatMap(be16)
            }
            sizeBox = B.fullBox("stz2", [0, 0, 0, UInt8(field)] + count("stz2", sizes.count) + packed)
        } else {
            sizeBox = B.fullBox("stsz", be32(0) + count("stsz", sizes.count) + sizes.flatMap(be32))
        }
        let offsets = chunkOffsets
        let chunkBox = wideOffsets
            ? B.fullBox("co64", count("co64", offsets.count) + offsets.flatMap(be64))
            : B.fullBox("stco", count("stco", offsets.count) + offsets.flatMap(be32))
        let stsd = B.fullBox("stsd", version: stsdVersion, be32(1) + (sampleEntry ?? B.mp4a()))
        return B.box("stbl", stsd + sttsBox + stscBox + sizeBox + chunkBox)
    }

    func moov() -> [UInt8] {
        typealias B = MP4Builder
        let totalTicks = (stts ?? [(sizes.count, 1024)]).reduce(0) { $0 &+ $1.count &* $1.delta }  // may wrap: some fixtures lie
        let duration = mdhdDuration ?? totalTicks
        let mdhd = mdhdVersion == 1
            ? B.fullBox("mdhd", version: 1, be64(0) + be64(0) + be32(timescale) + be64(duration) + [0x55, 0xC4, 0, 0])
            : B.fullBox("mdhd", be32(0) + be32(0) + be32(timescale) + be32(duration) + [0x55, 0xC4, 0, 0])
        let mdia = B.box("mdia", mdhd + B.hdlr("soun") + B.box("minf", stbl()))
        var trak = B.box("tkhd", [0, 0, 0, 7] + be32(0) + be32(0) + be32(2) + [UInt8](repeating: 0, count: 68))
        if !edits.isEmpty {
            let entries = edits.flatMap { edit in
                elstVersion == 1 ? be64(edit.duration) + be64(edit.mediaTime) + be32(0x0001_0000)
                    : be32(edit.duration) + be32(edit.mediaTime) + be32(0x0001_0000)
            }
            trak += B.box("edts", B.fullBox("elst", version: elstVersion, count("elst", edits.count) + entries))
        }
        trak += mdia
        var body = B.fullBox("mvhd", be32(0) + be32(0) + be32(movieTimescale) + be32(totalTicks)
                             + [UInt8](repeating: 0, count: 80))
        if video {
            let vmdhd = B.fullBox("mdhd", be32(0) + be32(0) + be32(90_000) + be32(90_000) + [0, 0, 0, 0])
            let vstbl = B.box("stbl", B.fullBox("stsd", be32(1) + B.box("avc1", [UInt8](repeating: 0, count: 78))))
            body += B.box("trak", B.box("tkhd", [0, 0, 0, 7] + be32(0) + be32(0) + be32(1) + [UInt8](repeating: 0, count: 68))
                          + B.box("mdia", vmdhd + B.hdlr("vide") + B.box("minf", vstbl)))
        }
        body += B.box("trak", trak)
        if mvex { body += B.box("mvex", B.fullBox("trex", be32(2) + be32(1) + be32(0) + be32(0) + be32(0))) }
        if tags || smpb != nil || !freeform.isEmpty {
            var ilst: [UInt8] = []
            if tags {
                ilst += B.item("\u{A9}nam", "Box Title") + B.item("\u{A9}ART", "Box Artist") + B.item("\u{A9}alb", "Box Album")
                ilst += B.box("trkn", B.dataBox([0, 0, 0, 5, 0, 9, 0, 0], type: 0))
                ilst += B.box("covr", B.dataBox([UInt8](repeating: 0xD8, count: 321), type: 13))
            }
            if let smpb {
                ilst += B.box("----", B.fullBox("mean", Array("com.apple.iTunes".utf8)) + B.fullBox("name", Array("iTunSMPB".utf8))
                              + B.dataBox(Array(smpb.utf8), type: 1))
            }
            for item in freeform {
                ilst += B.box("----", B.fullBox("mean", Array("com.apple.iTunes".utf8)) + B.fullBox("name", Array(item.name.utf8))
                              + B.dataBox(Array(item.value.utf8), type: 1))
            }
            let metaChildren = B.hdlr("mdir") + B.box("ilst", ilst)
            let meta = quickTimeMeta ? B.box("meta", metaChildren) : B.fullBox("meta", metaChildren)
            var udta = B.box("udta", meta)
            if udtaSizeZero { udta.replaceSubrange(0..<4, with: [0, 0, 0, 0]) }
            body += udta
        }
        return B.box("moov", body)
    }
}

@Suite struct MP4Tests {
    typealias B = MP4Builder

    // MARK: Box headers

    @Test func header_32BitSize() throws {
        let bytes = B.box("free", [1, 2, 3])
        #expect(try MP4BoxHeader.parse(bytes[...], at: 0) == MP4BoxHeader(type: "free", offset: 0, headerSize: 8, size: 11))
    }

    @Test func header_64BitSize() throws {
        let bytes = [9, 9] + B.box64("mdat", [UInt8](repeating: 0, count: 8))
        #expect(try MP4BoxHeader.parse(bytes[...], at: 2) == MP4BoxHeader(type: "mdat", offset: 2, headerSize: 16, size: 24))
    }

    @Test func header_64BitSizeInsideMoov_isWalked() throws {
        var fixture = MP4Fixture()
        fixture.tags = false
        var moov = fixture.moov()
        // Insert a 64-bit-size free box as moov's first child, then fix moov's size.
        moov.insert(contentsOf: B.box64("free", [1, 2, 3, 4]), at: 8)
        moov.replaceSubrange(0..<4, with: be32(moov.count))
        #expect(try MP4Movie.parse(moov: moov[...]).audio?.sampleCount == 10)
    }

    @Test func header_sizeZero_extendsToEndOfFile() throws {
        let file = B.box("ftyp", Array("M4A ".utf8) + be32(0)) + be32(0) + Array("mdat".utf8) + [UInt8](repeating: 7, count: 100)
        let header = try #require(try MP4BoxHeader.parse(file[...], at: 16))
        #expect(header.size == nil)
        let (layout, next) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        #expect(layout.mdatRange == 16..<file.count)
        #expect(next == nil)
    }

    @Test func childSizeZero_extendsToEndOfContainer() throws {
        var fixture = MP4Fixture()
        fixture.udtaSizeZero = true                       // udta is moov's last child
        let movie = try MP4Movie.parse(moov: fixture.moov()[...])
        #expect(movie.tags.title == "Box Title")
    }

    @Test func header_tooFewBytes_returnsNil() throws {
        #expect(try MP4BoxHeader.parse([0, 0, 0][...], at: 0) == nil)
        let large = B.box64("mdat", [])
        #expect(try MP4BoxHeader.parse(large.prefix(12), at: 0) == nil, "a 64-bit size needs 16 bytes")
        #expect(try MP4BoxHeader.parse(B.box("free", [])[...], at: 4) == nil)
    }

    @Test func header_sizeSmallerThanHeader_throws() {
        #expect(throws: FormatError.self) { try MP4BoxHeader.parse((be32(4) + B.fourCC("free"))[...], at: 0) }
        #expect(throws: FormatError.self) { try MP4BoxHeader.parse((be32(1) + B.fourCC("mdat") + be64(12))[...], at: 0) }
        #expect(throws: FormatError.self) { try MP4BoxHeader.parse((be32(20) + B.fourCC("uuid") + [UInt8](repeating: 0, count: 16))[...], at: 0) }
    }

    @Test func header_64BitSizeBeyondIntMax_throws() {
        let bytes = be32(1) + B.fourCC("mdat") + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(throws: FormatError.self) { try MP4BoxHeader.parse(bytes[...], at: 0) }
    }

    @Test func header_uuidCountsExtendedType() throws {
        let bytes = B.box("uuid", [UInt8](repeating: 0xAB, count: 20))
        #expect(try MP4BoxHeader.parse(bytes[...], at: 0)?.headerSize == 24)
    }

    // MARK: Bounds

    @Test func childOverrunningParent_throwsInvalid() throws {
        var bytes = MP4Fixture().moov()
        bytes[8] = 0x7F                                   // mvhd's size field now reaches far past moov
        #expect {
            try MP4Movie.parse(moov: bytes[...])
        } throws: { error in
            guard case .invalid(_, let reason, _) = error as? FormatError else { return false }
            return reason.contains("overruns its parent")
        }
    }

    @Test(arguments: ["stts", "stsc", "stsz", "stz2", "stco", "co64", "elst"])
    func hugeEntryCount_throwsWithoutAllocating(box: String) throws {
        var fixture = MP4Fixture()
        fixture.lyingCount = box
        fixture.compactFieldSize = box == "stz2" ? 16 : nil
        fixture.wideOffsets = box == "co64"
        #expect {
            try MP4Movie.parse(moov: fixture.moov()[...])
        } throws: { error in
            guard case .invalid(_, let reason, _) = error as? FormatError else { return false }
            return reason.contains("entry count 4294967295 exceeds box size")
        }
    }

    @Test func nestingDeeperThanLimit_throws() throws {
        var deep = B.box("free", [])
        for _ in 0..<20 { deep = B.box("udta", deep) }
        #expect(throws: FormatError.self) { try MP4Outline.parse(deep[...]) }
        var shallow = B.box("free", [])
        for _ in 0..<10 { shallow = B.box("udta", shallow) }
        #expect(try MP4Outline.parse(shallow[...]).entries.count == 11)
    }

    @Test func tooManyBoxes_throws() {
        let many = B.box("udta", [UInt8]((0..<100_001).lazy.flatMap { _ in B.box("free", []) }))
        #expect(throws: FormatError.self) { try MP4Outline.parse(many[...]) }
    }

    @Test func truncatedMoov_throwsTruncation_innerLie_throwsInvalid() throws {
        let moov = MP4Fixture().moov()
        #expect {
            try MP4Movie.parse(moov: moov.dropLast(1))
        } throws: { ($0 as? FormatError)?.isTruncation == true }
        // An mdhd too short for its version's fields: every byte is there, so the box is wrong.
        var fixture = MP4Fixture()
        fixture.tags = false
        var bytes = fixture.moov()
        let mdhd = B.fullBox("mdhd", be32(0) + be32(0) + be32(44_100) + be32(10_240) + [0x55, 0xC4, 0, 0])
        let range = try #require(bytes.firstRange(of: mdhd))
        bytes.replaceSubrange(range, with: B.fullBox("mdhd", version: 1, Array(mdhd[12...])))
        #expect {
            try MP4Movie.parse(moov: bytes[...])
        } throws: { error in
            guard case .invalid = error as? FormatError else { return false }
            return true
        }
    }

    @Test func notMoov_throwsInvalid() {
        #expect(throws: FormatError.self) { try MP4Movie.parse(moov: B.box("free", [0, 0, 0, 0])[...]) }
    }

    // MARK: The movie

    @Test func minimalMoov_allFields() throws {
        let fixture = MP4Fixture()
        let movie = try MP4Movie.parse(moov: fixture.moov()[...])
        let track = try #require(movie.audio)
        #expect(movie.movieTimescale == 44_100)
        #expect(track.trackID == 2)
        #expect(track.codec == "mp4a")
        #expect(track.channels == 2)
        #expect(track.sampleRate == 44_100)
        #expect(track.bitsPerSample == 16)
        #expect(track.timescale == 44_100)
        #expect(track.duration == 10 * 1024)
        #expect(track.movieTimescale == 44_100)
        #expect(track.objectTypeIndication == 0x40)
        #expect(track.streamType == 5)
        #expect(track.bufferSize == 0x1800)
        #expect(track.maxBitrate == 160_000)
        #expect(track.avgBitrate == 128_000)
        #expect(track.decoderSpecificInfo == [0x12, 0x10])
        #expect(track.sampleCount == 10)
        #expect(track.sampleSizes == .table((0..<10).map { 100 + $0 }))
        #expect(track.timeToSample == [.init(count: 10, delta: 1024)])
        #expect(track.sampleToChunk == [.init(firstChunk: 1, samplesPerChunk: 4), .init(firstChunk: 3, samplesPerChunk: 2)])
        #expect(track.chunkOffsets == fixture.chunkOffsets)
        #expect(track.editList == [.init(segmentDuration: 7828, mediaTime: 2112, rate: 1)])
        #expect(track.totalTicks == 10 * 1024)
        #expect(!movie.isFragmented)
    }

    @Test func mdhdVersion1_64BitFields() throws {
        var fixture = MP4Fixture()
        fixture.mdhdVersion = 1
        fixture.mdhdDuration = 5_000_000_000
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.timescale == 44_100)
        #expect(track.duration == 5_000_000_000)
    }

    @Test func sampleLocation_singleEntryStsc() throws {
        var fixture = MP4Fixture()
        fixture.chunkSamples = [5, 5]
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.sampleToChunk.count == 1)
        for (n, expected) in fixture.expectedLocations.enumerated() {
            #expect(Self.location(track, n) == [expected.offset, expected.size], "sample \(n)")
        }
        #expect(track.sampleLocation(10) == nil)
        #expect(track.sampleLocation(-1) == nil)
    }

    @Test func sampleLocation_acrossChunks_multiEntryStsc() throws {
        var fixture = MP4Fixture()
        fixture.sizes = (0..<17).map { 200 + 3 * $0 }
        fixture.chunkSamples = [2, 4, 4, 3, 3, 1]
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.sampleToChunk.map(\.firstChunk) == [1, 2, 4, 6])
        for (n, expected) in fixture.expectedLocations.enumerated() {
            #expect(Self.location(track, n) == [expected.offset, expected.size], "sample \(n)")
        }
        #expect(track.sampleLocation(17) == nil)
    }

    @Test func sampleLocation_constantSize() throws {
        var fixture = MP4Fixture()
        fixture.sizes = [Int](repeating: 3, count: 12)
        fixture.chunkSamples = [6, 6]
        var bytes = fixture.moov()
        // Rewrite stsz as "every sample 3 bytes" (sample_size 3, no table).
        let table = B.fullBox("stsz", be32(0) + be32(12) + fixture.sizes.flatMap(be32))
        let range = try #require(bytes.firstRange(of: table))
        bytes.replaceSubrange(range, with: B.fullBox("stsz", be32(3) + be32(12)))
        for parent in ["moov", "trak", "mdia", "minf", "stbl"] { Self.fixSize(of: parent, in: &bytes, delta: -48) }
        let track = try #require(try MP4Movie.parse(moov: bytes[...]).audio)
        #expect(track.sampleSizes == .constant(3))
        for (n, expected) in fixture.expectedLocations.enumerated() {
            #expect(Self.location(track, n) == [expected.offset, expected.size], "sample \(n)")
        }
    }

    @Test func co64_offsetsBeyond4GB() throws {
        var fixture = MP4Fixture()
        fixture.wideOffsets = true
        fixture.chunkBase = 5_000_000_000
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.chunkOffsets == fixture.chunkOffsets)
        #expect(Self.location(track, 9) == [fixture.expectedLocations[9].offset, fixture.expectedLocations[9].size])
    }

    @Test(arguments: [4, 8, 16])
    func stz2_compactSizes(fieldSize: Int) throws {
        var fixture = MP4Fixture()
        fixture.sizes = fieldSize == 4 ? [1, 15, 7, 0, 9, 3, 12] : fieldSize == 8 ? [10, 255, 0, 77, 128] : [300, 65_535, 2, 4096]
        fixture.chunkSamples = [fixture.sizes.count - 2, 2]
        fixture.compactFieldSize = fieldSize
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.sampleSizes == .table(fixture.sizes.map(UInt32.init)))
        #expect(track.sampleCount == fixture.sizes.count)
        for (n, expected) in fixture.expectedLocations.enumerated() {
            #expect(Self.location(track, n) == [expected.offset, expected.size], "sample \(n)")
        }
    }

    @Test func stz2_badFieldSize_throws() throws {
        var fixture = MP4Fixture()
        fixture.compactFieldSize = 16
        var bytes = fixture.moov()
        let header = B.fourCC("stz2") + [0, 0, 0, 0, 0, 0, 0, 16]
        let range = try #require(bytes.firstRange(of: header))
        bytes[range.upperBound - 1] = 12
        #expect(throws: FormatError.self) { try MP4Movie.parse(moov: bytes[...]) }
    }

    @Test func stsc_firstChunkZero_throws() throws {
        var bytes = MP4Fixture().moov()
        let stsc = B.fourCC("stsc") + [0, 0, 0, 0] + be32(2) + be32(1)
        let range = try #require(bytes.firstRange(of: stsc))
        bytes[range.upperBound - 1] = 0
        #expect(throws: FormatError.self) { try MP4Movie.parse(moov: bytes[...]) }
    }

    @Test func stts_decodeTimeAndSeek() throws {
        var fixture = MP4Fixture()
        fixture.stts = [(8, 1024), (2, 512)]
        fixture.edits = []
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.decodeTime(ofSample: 0) == 0)
        #expect(track.decodeTime(ofSample: 5) == 5 * 1024)
        #expect(track.decodeTime(ofSample: 9) == 8 * 1024 + 512)
        #expect(track.decodeTime(ofSample: 10) == 8 * 1024 + 1024, "one past the last sample is the end time")
        #expect(track.decodeTime(ofSample: 11) == nil)
        #expect(track.sampleIndex(atSeconds: 0) == 0)
        #expect(track.sampleIndex(atSeconds: 0.1) == 4)                  // 4410 ticks
        #expect(track.sampleIndex(atSeconds: 8292.0 / 44_100) == 8)      // 8192 + 100: in the first 512-tick sample
        #expect(track.sampleIndex(atSeconds: 1) == nil, "past the end")
        #expect(track.sampleIndex(atSeconds: -1) == nil)
        #expect(track.sampleIndex(atSeconds: .nan) == nil)
        #expect(track.sampleIndex(atSeconds: .infinity) == nil)
    }

    @Test func stts_overflowingTotal_throws() throws {
        var fixture = MP4Fixture()
        fixture.stts = [(0xFFFF_FFFF, 0xFFFF_FFFF), (0xFFFF_FFFF, 0xFFFF_FFFF)]
        #expect(throws: FormatError.self) { try MP4Movie.parse(moov: fixture.moov()[...]) }
    }

    // MARK: Edit lists and gapless

    @Test func elstVersion0_gaplessFromEditList() throws {
        let movie = try MP4Movie.parse(moov: MP4Fixture().moov()[...])
        #expect(movie.audio?.editMediaTime == 2112)
        #expect(movie.audio?.editDuration == 7828)
        // 10240 ticks of samples - 2112 priming - 7828 played = 300 padding.
        #expect(movie.gapless == GaplessInfo(encoderDelay: 2112, encoderPadding: 300))
        #expect(movie.gaplessSource == .editList)
    }

    @Test func elstVersion1_emptyEditThenMedia() throws {
        var fixture = MP4Fixture()
        fixture.elstVersion = 1
        fixture.edits = [(441, -1), (7828, 2112)]
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.editList == [.init(segmentDuration: 441, mediaTime: -1), .init(segmentDuration: 7828, mediaTime: 2112)])
        #expect(track.editList[0].isEmpty)
        #expect(track.editMediaTime == 2112)
    }

    @Test func elst_editInOtherTimescale() throws {
        var fixture = MP4Fixture()
        fixture.movieTimescale = 1000
        fixture.edits = [(200, 1024)]        // 200 ms = 8820 ticks; 10240 - 1024 - 8820 = 396
        let movie = try MP4Movie.parse(moov: fixture.moov()[...])
        #expect(movie.gapless == GaplessInfo(encoderDelay: 1024, encoderPadding: 396))
    }

    @Test func iTunSMPB_gaplessWinsOverEditList() throws {
        var fixture = MP4Fixture()
        fixture.smpb = " 00000000 00000840 000003C0 0000000000F34A00 00000000 00000000"
        let movie = try MP4Movie.parse(moov: fixture.moov()[...])
        #expect(movie.gapless == GaplessInfo(encoderDelay: 0x840, encoderPadding: 0x3C0))
        #expect(movie.gaplessSource == .iTunSMPB)
    }

    @Test func iTunSMPB_malformedText_isIgnored() {
        #expect(MP4Meta.parseITunSMPB(" 00000000 00000840") == nil)
        #expect(MP4Meta.parseITunSMPB(" 00000000 zz 000003C0") == nil)
        #expect(MP4Meta.parseITunSMPB(" 00000000 -0000001 000003C0") == nil)
        #expect(MP4Meta.parseITunSMPB("\t00000000\t00000840\t000003C0\0") == GaplessInfo(encoderDelay: 0x840, encoderPadding: 0x3C0))
    }

    // MARK: Tags

    @Test func ilstTags() throws {
        let movie = try MP4Movie.parse(moov: MP4Fixture().moov()[...])
        #expect(movie.tags == TrackTags(title: "Box Title", artist: "Box Artist", album: "Box Album", track: "5/9",
                                        coverArtBytes: 321))
    }

    @Test func ilst_utf16TextAndTrackWithoutTotal() throws {
        let utf16: [UInt8] = Array("Bände".utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let ilst = B.box("ilst", B.box("\u{A9}ART", B.dataBox(utf16, type: 2))
                         + B.box("trkn", B.dataBox([0, 0, 0, 3, 0, 0, 0, 0], type: 0))
                         + B.box("\u{A9}nam", B.dataBox(Array("Zero\0".utf8), type: 1)))
        var fixture = MP4Fixture()
        fixture.tags = false
        var bytes = fixture.moov()
        let udta = B.box("udta", B.fullBox("meta", B.hdlr("mdir") + ilst))
        bytes += udta
        bytes.replaceSubrange(0..<4, with: be32(bytes.count))
        let tags = try MP4Movie.parse(moov: bytes[...]).tags
        #expect(tags == TrackTags(title: "Zero", artist: "Bände", track: "3"))
    }

    @Test func quickTimeMeta_withoutVersion() throws {
        var fixture = MP4Fixture()
        fixture.quickTimeMeta = true
        let movie = try MP4Movie.parse(moov: fixture.moov()[...])
        #expect(movie.tags.title == "Box Title")
        #expect(movie.tags.coverArtBytes == 321)
    }

    // MARK: Tracks and sample entries

    @Test func videoTrackFirst_isSkipped() throws {
        var fixture = MP4Fixture()
        fixture.video = true
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.codec == "mp4a")
        #expect(track.trackID == 2)
    }

    @Test func noAudioTrack_givesNilAudio() throws {
        let vmdhd = B.fullBox("mdhd", be32(0) + be32(0) + be32(90_000) + be32(90_000) + [0, 0, 0, 0])
        let moov = B.box("moov", B.fullBox("mvhd", [UInt8](repeating: 0, count: 96))
                         + B.box("trak", B.box("mdia", vmdhd + B.hdlr("vide"))))
        let movie = try MP4Movie.parse(moov: moov[...])
        #expect(movie.audio == nil)
    }

    @Test func esds_optionalESFieldsAndShortLengths() throws {
        var fixture = MP4Fixture()
        fixture.sampleEntry = B.audioEntry(children: B.esds(asc: [0x11, 0x90, 0x56, 0xE5, 0x00], objectType: 0x40,
                                                            esFlags: 0x80 | 0x40 | 0x20, longLengths: false))
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.decoderSpecificInfo == [0x11, 0x90, 0x56, 0xE5, 0x00])
        #expect(track.avgBitrate == 128_000)
    }

    @Test func esds_mp3ObjectType() throws {
        var fixture = MP4Fixture()
        fixture.sampleEntry = B.audioEntry(children: B.esds(asc: [], objectType: 0x6B))
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.objectTypeIndication == 0x6B)
        #expect(track.decoderSpecificInfo.isEmpty)
    }

    @Test func esds_descriptorOverrunningBox_throws() throws {
        var fixture = MP4Fixture()
        var esds = B.esds(asc: [0x12, 0x10], longLengths: false)
        esds[13] = 0x7F                                   // ES_Descriptor length far past the box
        fixture.sampleEntry = B.audioEntry(children: esds)
        #expect(throws: FormatError.self) { try MP4Movie.parse(moov: fixture.moov()[...]) }
    }

    @Test func quickTimeSoundDescriptionV1() throws {
        var fixture = MP4Fixture()
        fixture.sampleEntry = B.audioEntry(version: 1, channels: 1, rate: 22_050,
                                           children: B.box("wave", B.box("frma", B.fourCC("mp4a")) + B.esds(asc: [0x13, 0x88])))
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.channels == 1)
        #expect(track.sampleRate == 22_050)
        #expect(track.decoderSpecificInfo == [0x13, 0x88], "esds found inside QuickTime's wave box")
    }

    @Test func quickTimeSoundDescriptionV2() throws {
        var fixture = MP4Fixture()
        fixture.sampleEntry = B.audioEntry("lpcm", version: 2, channels: 6, rate: 96_000, children: [])
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.codec == "lpcm")
        #expect(track.channels == 6)
        #expect(track.sampleRate == 96_000)
        #expect(track.bitsPerSample == 24)
    }

    @Test func isoSampleEntryV1_addsNoFields() throws {
        var fixture = MP4Fixture()
        fixture.stsdVersion = 1
        // ISO AudioSampleEntryV1 (inside an stsd of version 1): version 1, but children follow at once.
        var entry = B.audioEntry(channels: 2, rate: 48_000, children: B.esds(asc: [0x11, 0x90]))
        entry[17] = 1
        fixture.sampleEntry = entry
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.sampleRate == 48_000)
        #expect(track.decoderSpecificInfo == [0x11, 0x90])
    }

    @Test func mvex_marksFragmented() throws {
        var fixture = MP4Fixture()
        fixture.mvex = true
        #expect(try MP4Movie.parse(moov: fixture.moov()[...]).isFragmented)
        let file = B.box("ftyp", Array("iso6".utf8) + be32(0)) + fixture.moov()
        #expect(try MP4TopLevel.scan(prefix: file[...], fileSize: file.count).0.isFragmented)
    }

    // MARK: Top-level layout

    @Test func topLevel_moovAfterMdat() throws {
        let ftyp = B.box("ftyp", Array("M4A ".utf8) + be32(0) + Array("isomM4A ".utf8))
        let mdat = B.box("mdat", [UInt8](repeating: 0, count: 5000))
        let moov = MP4Fixture().moov()
        let file = ftyp + mdat + moov
        // A caller that has only the first bytes learns where to fetch next.
        let (layout, next) = try MP4TopLevel.scan(prefix: file.prefix(ftyp.count + 16), fileSize: file.count)
        #expect(layout.majorBrand == "M4A ")
        #expect(layout.mdatRange == ftyp.count..<(ftyp.count + mdat.count))
        #expect(layout.moovRange == nil)
        #expect(next == ftyp.count + mdat.count, "the next header to fetch is moov's")
        // With just moov's header it knows moov's range.
        let (withHeader, _) = try MP4TopLevel.scan(prefix: file.prefix(ftyp.count + mdat.count + 8), fileSize: file.count)
        #expect(withHeader.moovRange == (ftyp.count + mdat.count)..<file.count)
        let (full, end) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        #expect(full.boxes.map(\.type) == ["ftyp", "mdat", "moov"])
        #expect(end == nil)
    }

    @Test func topLevel_faststartWith64BitMdat() throws {
        let ftyp = B.box("ftyp", Array("isom".utf8) + be32(0))
        let moov = MP4Fixture().moov()
        let mdat = B.box64("mdat", [UInt8](repeating: 1, count: 64))
        let file = ftyp + moov + mdat
        let (layout, next) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        #expect(layout.moovRange == ftyp.count..<(ftyp.count + moov.count))
        #expect(layout.mdatRange == (ftyp.count + moov.count)..<file.count)
        #expect(layout.boxes.last?.headerSize == 16)
        #expect(next == nil)
    }

    @Test func topLevel_unknownFileSize_asksForNextHeader() throws {
        let file = B.box("ftyp", Array("M4A ".utf8) + be32(0)) + B.box("free", [1, 2])
        let (layout, next) = try MP4TopLevel.scan(prefix: file[...], fileSize: nil)
        #expect(layout.boxes.count == 2)
        #expect(next == file.count)
    }

    @Test func topLevel_boxOverrunningFile_throws() {
        let file = B.box("ftyp", Array("M4A ".utf8) + be32(0)) + be32(1000) + B.fourCC("mdat")
        #expect(throws: FormatError.self) { try MP4TopLevel.scan(prefix: file[...], fileSize: file.count) }
    }

    @Test func topLevel_moofMarksFragmented() throws {
        let file = B.box("ftyp", Array("iso6".utf8) + be32(0)) + B.box("moov", []) + B.box("moof", [])
            + B.box("mdat", [1])
        let (layout, _) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        #expect(layout.isFragmented)
    }

    // MARK: Generated media

    /// track.m4a from media/make-media.sh: AAC-LC, 44.1 kHz stereo, title/artist/album tags.
    @Test func generatedTrackM4A_matchesFFprobe() throws {
        guard let file = try GeneratedMedia.load("track.m4a") else { return }
        let (layout, _) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        let moovRange = try #require(layout.moovRange)
        #expect(layout.majorBrand == "M4A ")
        #expect(moovRange.lowerBound < (layout.mdatRange?.lowerBound ?? 0), "made with +faststart")
        let movie = try MP4Movie.parse(moov: file[moovRange])
        let track = try #require(movie.audio)
        #expect(track.codec == "mp4a")
        #expect(track.objectTypeIndication == 0x40)
        #expect(track.channels == 2)
        #expect(track.sampleRate == 44_100)
        #expect(track.decoderSpecificInfo.first.map { $0 >> 3 } == 2, "AAC-LC AudioSpecificConfig")
        #expect(movie.tags.title == "Long Mix")
        #expect(movie.tags.artist == "streamd test band")
        #expect(movie.tags.album == "Generated Library")
        // Samples lie back to back in mdat and fill it.
        let mdat = try #require(layout.mdatRange)
        var expected = try #require(track.sampleLocation(0)).offset
        var bytes = 0
        for n in 0..<track.sampleCount {
            let location = try #require(track.sampleLocation(n))
            #expect(location.offset == expected)
            expected = location.offset + location.size
            bytes += location.size
        }
        #expect(bytes == mdat.count - 8)
        let untrimmed = Double(track.sampleCount * 1024) / Double(track.timescale)
        let gapless = try #require(movie.gapless)
        let trimmedTicks = track.totalTicks - gapless.encoderDelay - gapless.encoderPadding
        print("track.m4a: \(track.sampleCount) samples × 1024 / \(track.timescale) = \(untrimmed) s; stts total \(track.totalTicks) ticks; delay \(gapless.encoderDelay), padding \(gapless.encoderPadding); trimmed \(trimmedTicks) ticks")
        guard let probe = GeneratedMedia.ffprobe(["-select_streams", "a:0", "-show_entries",
                                                "stream=channels,sample_rate,nb_frames,duration_ts,duration"], file: "track.m4a") else {
            return
        }
        print("ffprobe: \(probe)")
        #expect(probe["channels"].flatMap { Int($0) } == track.channels)
        #expect(probe["sample_rate"].flatMap { Int($0) } == track.sampleRate)
        #expect(probe["nb_frames"].flatMap { Int($0) } == track.sampleCount)
        // ffprobe reports the edited duration: the samples minus priming and padding.
        #expect(probe["duration_ts"].flatMap { Int($0) } == trimmedTicks)
        let probeSeconds = try #require(probe["duration"].flatMap { Double($0) })
        #expect(abs(untrimmed - probeSeconds) < 2048.0 / 44_100, "whole-frame length within two frames of ffprobe's")
    }
}

extension MP4Tests {
    /// Sample `n`'s location as [offset, size] (tuples are not Equatable), nil when absent.
    static func location(_ track: MP4AudioTrack, _ n: Int) -> [Int]? {
        track.sampleLocation(n).map { [$0.offset, $0.size] }
    }

    /// Adds `delta` to the size field of the first box of `type` in `bytes`.
    static func fixSize(of type: String, in bytes: inout [UInt8], delta: Int) {
        guard let at = bytes.firstRange(of: B.fourCC(type))?.lowerBound, at >= 4 else { return }
        let size = bytes[(at - 4)..<at].reduce(0) { $0 << 8 | Int($1) }
        bytes.replaceSubrange((at - 4)..<at, with: be32(size + delta))
    }
}

