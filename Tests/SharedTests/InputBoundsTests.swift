import Testing
import TestSupport
@testable import StreamShared

/// Values from a file that would overflow a conversion or claim an absurd length: each is a
/// typed `FormatError.outOfRange` naming the field, never a trap (issue 12, item 2).
@Suite struct InputBoundsTests {
    typealias B = MP4Builder
    typealias F = FragmentBuilder

    /// The field an `outOfRange` error names, or nil for any other outcome.
    static func outOfRangeField(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch let FormatError.outOfRange(_, field, _) {
            return field
        } catch {
            return nil
        }
    }

    /// A fragmented M4A: ftyp, a moov with mvhd/mdhd timescale `timescale` and no samples of
    /// its own, one moof whose trun has `count` samples of the tfhd defaults, and an mdat.
    static func fragmentedFile(timescale: Int = 1, count: Int, duration: Int, size: Int, mdat: Int = 300) -> [UInt8] {
        var fixture = MP4Fixture()
        fixture.sizes = []
        fixture.chunkSamples = []
        fixture.stts = []
        fixture.edits = []
        fixture.tags = false
        fixture.mvex = true
        fixture.timescale = timescale
        fixture.movieTimescale = timescale
        let moof = F.moof(trafs: [F.tfhd(trackID: 2, defaultDuration: duration, defaultSize: size, baseIsMoof: true)
                                  + F.tfdt(0) + F.trun(.init(count: count))])
        return B.box("ftyp", Array("M4A ".utf8) + be32(0)) + fixture.moov() + moof
            + B.box("mdat", [UInt8](repeating: 0x21, count: mdat))
    }

    // MARK: MP4

    /// The crafted file of issue 12: timescale 1 and 2^18 samples of 2^32 - 1 ticks in 1.2 KB.
    /// It used to trap in TrackAnalyzer ("Double value cannot be converted to Int").
    @Test func fragmentedTimescaleOne_hugeTickCounts_throws() {
        let file = Self.fragmentedFile(count: MP4Fragment.maxSamples - 1, duration: 0xFFFF_FFFF, size: 0)
        #expect(file.count < 1300)
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file)) } == "trun.sample_count",
                "more samples than the file has bytes")
    }

    @Test func fragmentedTimescaleOne_weeksOfTicks_throws() {
        let file = Self.fragmentedFile(count: 200, duration: 0xFFFF_FFFF, size: 1)
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file)) } == "trun.sample_duration")
    }

    @Test func fragmentedHugeSamplesOfNoDuration_throws() {
        // 300 samples of 4 GiB: more than 2^40 bytes, and a bit rate over no time at all.
        let file = Self.fragmentedFile(timescale: 44_100, count: 300, duration: 0, size: 0xFFFF_FFFF, mdat: 400)
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file)) } == "trun.sample_size")
    }

    @Test func fragmentedBitRateBeyondInt_throws() {
        // One 4 GiB sample lasting one tick of a 2^32 - 1 timescale: 10^20 bit/s.
        let file = Self.fragmentedFile(timescale: 0xFFFF_FFFF, count: 1, duration: 1, size: 0xFFFF_FFFF)
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file)) } == "bitrate")
    }

    @Test func fragmentedNormalValues_stillAnalyze() throws {
        let file = Self.fragmentedFile(timescale: 44_100, count: 100, duration: 1024, size: 3, mdat: 300)
        let analysis = try TrackAnalyzer.analyze(MemoryBytes(file))
        #expect(analysis.frames == 100)
        #expect(abs(analysis.seekIndex.durationSeconds - 102_400.0 / 44_100) < 1e-9)
        #expect(analysis.bitrate > 0)
    }

    /// An edit list whose media_time is near 2^62 trapped when scaled to the output rate.
    @Test func editListMediaTimeNear2to62_throws() {
        var fixture = MP4Fixture()
        fixture.timescale = 1
        fixture.movieTimescale = 1
        fixture.stts = [(10, 1)]
        fixture.elstVersion = 1
        fixture.edits = [(duration: 5, mediaTime: 1 << 62)]
        let moov = fixture.moov()
        #expect(Self.outOfRangeField { try MP4Movie.parse(moov: moov[...]) } == "elst.media_time")
        let file = B.box("ftyp", Array("M4A ".utf8) + be32(0)) + moov + B.box("mdat", [UInt8](repeating: 0, count: 2000))
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file)) } == "elst.media_time")
    }

    @Test func editListSegmentDurationBeyondAWeek_throws() {
        var fixture = MP4Fixture()
        fixture.movieTimescale = 1
        fixture.edits = [(duration: 0xFFFF_FFFF, mediaTime: 1024)]
        let moov = fixture.moov()
        #expect(Self.outOfRangeField { try MP4Movie.parse(moov: moov[...]) } == "elst.segment_duration")
    }

    @Test func sttsTotalBeyondAWeek_throws() {
        var fixture = MP4Fixture()
        fixture.timescale = 1
        fixture.stts = [(10, 0xFFFF_FFFF)]
        fixture.edits = []
        let moov = fixture.moov()
        #expect(Self.outOfRangeField { try MP4Movie.parse(moov: moov[...]) } == "stts.sample_delta")
    }

    /// iTunSMPB fields are 32-bit: 16 hex digits of delay and padding (Int.max each) made the
    /// player's `total - delay - padding` overflow. They are ignored like any malformed comment.
    @Test func iTunSMPBBeyond32Bits_isIgnored() throws {
        var fixture = MP4Fixture()
        fixture.edits = []
        fixture.smpb = " 00000000 7FFFFFFFFFFFFFFF 7FFFFFFFFFFFFFFF 0000000000002800"
        let movie = try MP4Movie.parse(moov: fixture.moov()[...])
        #expect(movie.gapless == nil)
        fixture.smpb = " 00000000 FFFFFFFF 00000400 0000000000002800"
        #expect(try MP4Movie.parse(moov: fixture.moov()[...]).gapless == GaplessInfo(encoderDelay: 0xFFFF_FFFF, encoderPadding: 1024))
    }

    @Test func mehdBeyondAWeek_throws() throws {
        var fixture = MP4Fixture()
        fixture.movieTimescale = 1
        fixture.mvex = true
        fixture.edits = []
        var moov = fixture.moov()
        // An mehd of 2^62 movie ticks inside mvex (version 1: 64-bit), sizes fixed up.
        let mehd = B.fullBox("mehd", version: 1, be64(1 << 62))
        let mvexAt = try #require(Self.find("mvex", in: moov))
        moov.insert(contentsOf: mehd, at: mvexAt + 8)
        Self.grow(&moov, at: mvexAt, by: mehd.count)
        Self.grow(&moov, at: 0, by: mehd.count)
        #expect(Self.outOfRangeField { try MP4Movie.parse(moov: moov[...]) } == "mehd.fragment_duration")
    }

    @Test func constantSampleSizeCountBeyondTheFile_throws() throws {
        // stsz with one size for 2^32 - 1 samples, and stts to match: billions of steps to walk.
        var fixture = MP4Fixture()
        fixture.stts = [(0xFFFF_FFFF, 1)]
        fixture.edits = []
        var moov = fixture.moov()
        let stszAt = try #require(Self.find("stsz", in: moov))
        // stsz body: version/flags, sample_size, sample_count, then the table (left in place: unread).
        moov.replaceSubrange((stszAt + 12)..<(stszAt + 20), with: be32(1) + be32(0xFFFF_FFFF))
        let file = B.box("ftyp", Array("M4A ".utf8) + be32(0)) + moov + B.box("mdat", [UInt8](repeating: 0, count: 2000))
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file)) } == "stsz.sample_count")
    }

    @Test func topLevelScan_hugeBoxInAStreamOfUnknownLength_throws() {
        // A 64-bit size of Int.max after the ftyp: offset + size overflowed when no file size bounded it.
        let bytes = B.box("ftyp", Array("M4A ".utf8) + be32(0)) + be32(1) + B.fourCC("mdat") + be64(Int.max)
        #expect(Self.outOfRangeField { try MP4TopLevel.scan(prefix: bytes[...], fileSize: nil) } == "mdat.size")
    }

    /// Offset of the first box of `type` (by its four-character code) in `bytes`.
    static func find(_ type: String, in bytes: [UInt8]) -> Int? {
        let code = Array(type.utf8)
        guard bytes.count >= 8 else { return nil }
        return (4..<(bytes.count - 3)).first { Array(bytes[$0..<($0 + 4)]) == code }.map { $0 - 4 }
    }

    /// Adds `n` to the 32-bit size of the box at `offset`.
    static func grow(_ bytes: inout [UInt8], at offset: Int, by n: Int) {
        let size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        bytes.replaceSubrange(offset..<(offset + 4), with: be32(size + n))
    }

    // MARK: MP3

    @Test func xingFrameCountBeyondAWeek_throwsWithoutAFullScan() {
        let raw = MPEGBuilder.header()
        let file = MPEGBuilder.xingFrame(frames: 0xFFFF_FFFF, bytes: 1_000_000) + MPEGBuilder.frames(raw, count: 10)
        // 2^32 frames of 1152 samples at 44.1 kHz: 3.5 years.
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file), scanFrames: false) } == "xing.frames")
        // The full scan counts the frames that are there instead.
        #expect((try? TrackAnalyzer.analyze(MemoryBytes(file)))?.frames == 10)
    }

    // MARK: WAV and the seek index

    /// A WAV at 1 Hz, 8-bit mono: every byte is a second.
    static func wavAtOneHertz(seconds: Int) -> [UInt8] {
        WAVBuilder.file(WAVBuilder.fmt(channels: 1, rate: 1, bits: 8), dataBytes: seconds)
    }

    @Test func wavAtOneHertz_seekIndexIsBounded() throws {
        let seconds = 200_000                 // 2.3 days, a point every 0.5 s would be 400,000
        let analysis = try TrackAnalyzer.analyze(MemoryBytes(Self.wavAtOneHertz(seconds: seconds)))
        let points = analysis.seekIndex.points
        #expect(abs(analysis.durationSeconds - Double(seconds)) < 1e-9)
        #expect(points.count <= SeekIndexBuilder.maxPoints)
        #expect(points.count >= SeekIndexBuilder.maxPoints / 4, "still a useful index: \(points.count) points")
        #expect(points.first == SeekPoint(t: 0, byte: 44))
        let gaps = zip(points, points.dropFirst()).map { $1.t - $0.t }
        #expect(gaps.allSatisfy { $0 > 0 && $0 <= 8 }, "spacing grew evenly, largest gap \(gaps.max() ?? 0) s")
        #expect(points.allSatisfy { $0.byte == 44 + Int($0.t) }, "every point is the byte of its second")
    }

    @Test func wavAtOneHertz_beyondAWeek_throws() {
        let file = Self.wavAtOneHertz(seconds: 8 * 24 * 3600)
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file)) } == "data size")
    }

    /// An RF64 file whose ds64 data size is 2^63 - 1: analysing it used to overflow
    /// `dataStart + dataSize + 1` while looking for tags after the samples.
    @Test func rf64HugeDataSize_throws() {
        let file = Self.rf64(dataSize: UInt64(Int.max))
        #expect(Self.outOfRangeField { try TrackAnalyzer.analyze(MemoryBytes(file)) } == "ds64.data_size")
    }

    @Test func rf64AllOnesDataSize_meansToTheEnd() throws {
        let analysis = try TrackAnalyzer.analyze(MemoryBytes(Self.rf64(dataSize: .max)))
        #expect(analysis.frames == 1000 / 4, "the data runs to the end of the file")
    }

    /// RF64, 16-bit stereo at 44.1 kHz, 1000 bytes of samples, with `dataSize` in its ds64 chunk.
    static func rf64(dataSize: UInt64) -> [UInt8] {
        let size = le32(Int(dataSize & 0xFFFF_FFFF)) + le32(Int(dataSize >> 32))
        let ds64 = WAVBuilder.chunk("ds64", le64(0) + size + le64(0) + le32(0))
        return WAVBuilder.file(ds64 + WAVBuilder.fmt(), dataBytes: 1000, dataSizeField: 0xFFFF_FFFF,
                               riffSizeField: 0xFFFF_FFFF, riff: "RF64")
    }

    @Test func seekIndexBuilder_millionsOfFrames_staysBounded() {
        var builder = SeekIndexBuilder()
        let frames = 3_000_000                // 8.3 hours of 10 ms frames → 60,000 points at 0.5 s
        for n in 0..<frames { builder.add(frameStart: Double(n) * 0.01, byte: n * 100) }
        #expect(builder.points.count == 60_000, "under the cap nothing is dropped")
        #expect(builder.interval == 0.5)
        for n in frames..<(4 * frames) { builder.add(frameStart: Double(n) * 0.01, byte: n * 100) }
        #expect(builder.points.count <= SeekIndexBuilder.maxPoints)
        #expect(builder.interval >= 1, "spacing doubled to stay under the cap")
        let times = builder.points.map(\.t)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 <= builder.interval + 0.01 + 1e-6 })
        #expect(builder.points.last.map { $0.t > Double(4 * frames) * 0.01 - builder.interval - 0.02 } == true,
                "the index reaches the end")
    }

    @Test func seekIndexBuilder_sameTimeForever_isCapped() {
        var builder = SeekIndexBuilder(interval: 0)
        for n in 0..<(SeekIndexBuilder.maxPoints + 10) { builder.add(frameStart: 1, byte: n) }
        #expect(builder.points.count <= SeekIndexBuilder.maxPoints)
    }

    // MARK: Checked

    @Test func checkedConversions() throws {
        #expect(try Checked.int(2.5, "x", "f") == 3)
        #expect(Self.outOfRangeField { try Checked.int(.nan, "x", "f.nan") } == "f.nan")
        #expect(Self.outOfRangeField { try Checked.int(1e19, "x", "f.big") } == "f.big")
        #expect(Self.outOfRangeField { try Checked.multiply(Int.max / 2, 3, "x", "f.mul") } == "f.mul")
        #expect(Self.outOfRangeField { try Checked.add(Int.max, 1, "x", "f.add") } == "f.add")
        #expect(Self.outOfRangeField { try Checked.seconds(ticks: 1, timescale: 0, "x", "f.ts") } == "f.ts")
        #expect(try Checked.samples(ticks: 44_100, timescale: 44_100, rate: 48_000, "x", "f") == 48_000)
        #expect(Self.outOfRangeField { try Checked.bytes(1 << 41, "x", "f.bytes") } == "f.bytes")
        #expect(try Checked.bitrate(bytes: 1000, seconds: 0, "x") == 0)
        #expect(FormatError.outOfRange(component: "mp4", field: "mdhd.timescale", value: "0").description
                == "mp4: mdhd.timescale out of range (0)")
    }
}
