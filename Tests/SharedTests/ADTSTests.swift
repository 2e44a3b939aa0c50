import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// One ADTS frame described field by field, so each test names the field it bends.
/// (Distinct from `ADTSBuilder` in AACTests.swift, which other tests use.)
struct ADTSFrameSpec {
    var sync = 0xFFF
    var mpeg2 = false
    var layer = 0
    var crc = false
    var profile = 1                // object type - 1: AAC-LC
    var rateIndex = 4              // 44.1 kHz
    var channels = 2
    var length = 200
    var fullness = 0x7FF
    var blocks = 1

    /// The 7-byte fixed + variable header (ISO 13818-7 table 6), plus a 2-byte CRC field.
    var header: [UInt8] {
        var w = MSBBitWriter()
        w.write(sync, 12); w.write(mpeg2 ? 1 : 0, 1); w.write(layer, 2); w.write(crc ? 0 : 1, 1)
        w.write(profile, 2); w.write(rateIndex, 4); w.write(0, 1); w.write(channels, 3)
        w.write(0, 4)                                   // original/copy, home, copyright bits
        w.write(length, 13); w.write(fullness, 11); w.write(blocks - 1, 2)
        if crc { w.write(0xBEEF, 16) }
        return w.bytes
    }

    /// Header plus filler up to `length` (filler 0x21 never looks like a sync).
    var frame: [UInt8] { header + [UInt8](repeating: 0x21, count: max(0, length - header.count)) }

    static func stream(_ specs: [ADTSFrameSpec]) -> [UInt8] { specs.flatMap(\.frame) }
    static func stream(count: Int, _ spec: ADTSFrameSpec = ADTSFrameSpec()) -> [UInt8] {
        stream([ADTSFrameSpec](repeating: spec, count: count))
    }
}

@Suite struct ADTSHeaderTests {
    func parse(_ bytes: [UInt8]) throws -> ADTSHeader {
        try #require(try ADTSHeader.parse(bytes[...]))
    }

    @Test func withoutCRC_allFields() throws {
        let h = try parse(ADTSFrameSpec().frame)
        #expect(!h.isMPEG2)
        #expect(!h.hasCRC)
        #expect(h.headerLength == 7)
        #expect(h.objectType == 2)
        #expect(h.sampleRateIndex == 4)
        #expect(h.sampleRate == 44_100)
        #expect(h.channelConfiguration == 2)
        #expect(h.frameLength == 200)
        #expect(h.bufferFullness == 0x7FF)
        #expect(h.rawDataBlocks == 1)
        #expect(h.samplesPerFrame == 1024)
    }

    @Test func withCRC_headerIsNineBytes() throws {
        let h = try parse(ADTSFrameSpec(crc: true, length: 300).frame)
        #expect(h.hasCRC)
        #expect(h.headerLength == 9)
        #expect(h.frameLength == 300)
    }

    @Test func mpeg2IDBit() throws {
        let h = try parse(ADTSFrameSpec(mpeg2: true).frame)
        #expect(h.isMPEG2)
        #expect(h.objectType == 2, "the profile field means the same under both IDs")
    }

    @Test func mpeg4IDBit() throws {
        let h = try parse(ADTSFrameSpec(mpeg2: false).frame)
        #expect(!h.isMPEG2)
    }

    @Test(arguments: [(0, 1), (1, 2), (2, 3), (3, 4)])
    func profileIsObjectTypeMinusOne(profile: Int, objectType: Int) throws {
        #expect(try parse(ADTSFrameSpec(profile: profile).frame).objectType == objectType)
    }

    @Test(arguments: Array(zip(0...12, [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350])))
    func sampleRateTable(index: Int, rate: Int) throws {
        let h = try parse(ADTSFrameSpec(rateIndex: index).frame)
        #expect(h.sampleRateIndex == index)
        #expect(h.sampleRate == rate)
    }

    @Test(arguments: [13, 14, 15])
    func reservedSampleRateIndex_throws(index: Int) {
        let error = #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSFrameSpec(rateIndex: index).frame[...]) }
        #expect(error?.isTruncation == false)
    }

    @Test func badSyncWord_throws() {
        #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSFrameSpec(sync: 0xFFE).frame[...]) }
        #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSFrameSpec(sync: 0x7FF).frame[...]) }
        #expect(throws: FormatError.self) { try ADTSHeader.parse([UInt8](repeating: 0, count: 16)[...]) }
    }

    @Test func layerNotZero_throws() {
        // 0xFFFB is an MPEG-1 layer III sync: ADTS must not claim it.
        #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSFrameSpec(layer: 1).frame[...]) }
        #expect(throws: FormatError.self) { try ADTSHeader.parse([0xFF, 0xFB, 0x90, 0x64, 0, 0, 0, 0, 0][...]) }
    }

    @Test func frameShorterThanHeader_throws() {
        #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSFrameSpec(length: 6).header[...]) }
        #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSFrameSpec(crc: true, length: 8).header[...]) }
        #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSFrameSpec(length: 0).header[...]) }
    }

    @Test func frameLengthEqualToHeader_isAccepted() throws {
        #expect(try parse(ADTSFrameSpec(length: 7).header).frameLength == 7)
    }

    @Test func shortInput_isNil() throws {
        let header = ADTSFrameSpec().header
        for n in 0..<7 { #expect(try ADTSHeader.parse(header.prefix(n)) == nil, "\(n) bytes") }
        let crcHeader = ADTSFrameSpec(crc: true).header
        #expect(try ADTSHeader.parse(crcHeader.prefix(7)) == nil, "the CRC is part of the header")
        #expect(try ADTSHeader.parse(crcHeader.prefix(8)) == nil)
        #expect(try ADTSHeader.parse(crcHeader.prefix(9)) != nil)
    }

    @Test func shortJunk_throwsWithoutAskingForMore() {
        // More bytes cannot turn these into a header, so they are errors, not nil.
        #expect(throws: FormatError.self) { try ADTSHeader.parse([0x49][...]) }
        #expect(throws: FormatError.self) { try ADTSHeader.parse([0xFF, 0x00][...]) }
        #expect(throws: FormatError.self) { try ADTSHeader.parse([0xFF, 0xF1, 0x3C][...]) }   // rate index 15
    }

    @Test func severalRawDataBlocksWithCRC() throws {
        // The per-block CRC words sit after the header; the header stays 9 bytes.
        let h = try parse(ADTSFrameSpec(crc: true, length: 800, blocks: 4).frame)
        #expect(h.rawDataBlocks == 4)
        #expect(h.samplesPerFrame == 4096)
        #expect(h.headerLength == 9)
    }

    @Test func channelConfigurationSpansTwoBytes() throws {
        // Configuration 7: its top bit is in byte 2, the other two in byte 3.
        let h = try parse(ADTSFrameSpec(channels: 7).frame)
        #expect(h.channelConfiguration == 7)
        #expect(h.audioSpecificConfig.channels == 8)
    }

    @Test func largestFrameLengthAndFullness() throws {
        let h = try parse(ADTSFrameSpec(length: 8191, fullness: 0x123).frame)
        #expect(h.frameLength == 8191)
        #expect(h.bufferFullness == 0x123)
    }

    @Test func sliceWithNonZeroStartIndex() throws {
        let bytes = [0x00, 0x00, 0x00] + ADTSFrameSpec(rateIndex: 3).frame
        #expect(try ADTSHeader.parse(bytes[3...])?.sampleRate == 48_000)
    }

    @Test func audioSpecificConfigEquivalent() throws {
        let h = try parse(ADTSFrameSpec(rateIndex: 11, channels: 1).frame)
        let asc = h.audioSpecificConfig
        #expect(asc.objectType == 2)
        #expect(asc.sampleRate == 8_000)
        #expect(asc.channelConfiguration == 1)
        #expect(asc.channels == 1)
        #expect(!asc.sbrPresent)
        #expect(asc.samplesPerFrame == 1024)
    }

    @Test func audioSpecificConfigBytes_lcStereo44k() throws {
        #expect(try parse(ADTSFrameSpec().frame).audioSpecificConfigBytes == [0x12, 0x10])
    }

    @Test(arguments: [(0, 3, 1), (1, 4, 2), (3, 11, 6), (1, 0, 7)])
    func audioSpecificConfigBytes_roundTrip(profile: Int, rateIndex: Int, channels: Int) throws {
        let h = try parse(ADTSFrameSpec(profile: profile, rateIndex: rateIndex, channels: channels).frame)
        #expect(try AudioSpecificConfig.parse(h.audioSpecificConfigBytes[...]) == h.audioSpecificConfig)
    }
}

@Suite struct ADTSSyncTests {
    @Test func frameAtStart() throws {
        #expect(try ADTSSync.findFirstFrame(in: ADTSFrameSpec.stream(count: 3)[...]) == 0)
    }

    @Test func skipsJunkWithAFakeSync() throws {
        // The junk holds a well-formed header whose frame length points into more junk.
        let fake = ADTSFrameSpec(length: 40).header
        let junk: [UInt8] = [0x00, 0x13] + fake + [UInt8](repeating: 0x77, count: 60)
        let stream = junk + ADTSFrameSpec.stream(count: 4)
        #expect(try ADTSSync.findFirstFrame(in: stream[...]) == junk.count)
    }

    @Test func fakeSyncThatLinesUpWithAnotherStream_isRejected() throws {
        // The fake header's length lands exactly on the real first frame, but the real frames
        // are 48 kHz and the fake says 44.1 kHz, so it is not their stream.
        let junkLength = 50
        let fake = ADTSFrameSpec(rateIndex: 4, length: junkLength).header
        let junk = fake + [UInt8](repeating: 0x55, count: junkLength - fake.count)
        let stream = junk + ADTSFrameSpec.stream(count: 4, ADTSFrameSpec(rateIndex: 3))
        #expect(try ADTSSync.findFirstFrame(in: stream[...]) == junkLength)
    }

    @Test func slicedInput_offsetIsRelative() throws {
        let bytes = [UInt8](repeating: 0x01, count: 10) + [0x99, 0x98] + ADTSFrameSpec.stream(count: 3)
        #expect(try ADTSSync.findFirstFrame(in: bytes[10...]) == 2)
    }

    @Test func fewerThanThreeFrames_isNil() throws {
        let two = ADTSFrameSpec.stream(count: 2)
        #expect(try ADTSSync.findFirstFrame(in: two[...]) == nil)
        let twoAndAHalf = two + ADTSFrameSpec().frame.prefix(5)
        #expect(try ADTSSync.findFirstFrame(in: twoAndAHalf[...]) == nil)
    }

    @Test func completeShortStream_isAccepted() throws {
        let two = ADTSFrameSpec.stream(count: 2)
        #expect(try ADTSSync.findFirstFrame(in: two[...], isComplete: true) == 0)
        #expect(try ADTSSync.findFirstFrame(in: ADTSFrameSpec().frame[...], isComplete: true) == 0)
    }

    @Test func confirmationsCount() throws {
        let one = ADTSFrameSpec().frame + [UInt8](repeating: 0x77, count: 20)
        #expect(try ADTSSync.findFirstFrame(in: one[...], confirmations: 0) == 0)
        #expect(try ADTSSync.findFirstFrame(in: one[...], confirmations: 1, isComplete: true) == nil)
        let two = ADTSFrameSpec.stream(count: 2) + [0xFF]
        #expect(try ADTSSync.findFirstFrame(in: two[...], confirmations: 1) == 0)
    }

    @Test func nextHeaderWithCRCCutShort_isNil() throws {
        // 8 bytes of a 9-byte CRC header: wait for the ninth instead of rejecting the frame.
        let bytes = ADTSFrameSpec().frame + ADTSFrameSpec(crc: true).frame.prefix(8)
        #expect(try ADTSSync.findFirstFrame(in: bytes[...]) == nil)
        let whole = ADTSFrameSpec().frame + ADTSFrameSpec(crc: true).frame + ADTSFrameSpec().frame
        #expect(try ADTSSync.findFirstFrame(in: whole[...]) == 0)
    }

    @Test func limitReached_throwsNotAudio() {
        let junk = [UInt8](repeating: 0x42, count: 5000)
        let error = #expect(throws: FormatError.self) { try ADTSSync.findFirstFrame(in: junk[...], limit: 4096) }
        if case .notAudio = error {} else { Issue.record("expected .notAudio, got \(String(describing: error))") }
    }

    @Test func limitNotYetReached_isNil() throws {
        let junk = [UInt8](repeating: 0x42, count: 1000)
        #expect(try ADTSSync.findFirstFrame(in: junk[...], limit: 4096) == nil)
    }

    @Test func frameJustInsideTheLimit_isFound() throws {
        let bytes = [UInt8](repeating: 0x42, count: 100) + ADTSFrameSpec.stream(count: 3)
        #expect(try ADTSSync.findFirstFrame(in: bytes[...], limit: 101) == 100)
        #expect(throws: FormatError.self) { try ADTSSync.findFirstFrame(in: bytes[...], limit: 100) }
    }

    @Test func mp3Frames_areNotADTS() {
        // MPEG-1 layer III headers share the 0xFFF sync but have layer bits set.
        let mp3 = (0..<20).flatMap { _ in [0xFF, 0xFB, 0x90, 0x64] + [UInt8](repeating: 0, count: 413) }
        #expect(throws: FormatError.self) { try ADTSSync.findFirstFrame(in: mp3[...], limit: 4096) }
    }

    @Test func oddArguments_doNotTrap() throws {
        let stream = ADTSFrameSpec.stream(count: 3)
        #expect(try ADTSSync.findFirstFrame(in: stream[...], confirmations: -3) == 0)
        #expect(try ADTSSync.findFirstFrame(in: stream[...], limit: Int.max) == 0)
        #expect(throws: FormatError.self) { try ADTSSync.findFirstFrame(in: stream[...], limit: -1) }
        #expect(try ADTSSync.findFirstFrame(in: [][...]) == nil)
    }
}

@Suite struct ADTSMediaTests {
    /// Walks every frame of a generated ADTS file by frame length: they must tile the file
    /// exactly, and ffprobe (when installed) must count the same packets.
    @Test(arguments: [("adts.aac", 44_100, 2), ("adts-8k-mono.aac", 8_000, 1)])
    func generatedADTS_framesTileTheFile(name: String, sampleRate: Int, channels: Int) throws {
        guard let bytes = try GeneratedMedia.load(name) else { return }
        let start = try #require(try ADTSSync.findFirstFrame(in: bytes[...], limit: 4096))
        #expect(start == 0, "ffmpeg's ADTS muxer writes no junk or tags")
        let first = try #require(try ADTSHeader.parse(bytes[start...]))
        #expect(first.objectType == 2, "AAC-LC")
        #expect(first.sampleRate == sampleRate)
        #expect(first.audioSpecificConfig.channels == channels)
        var offset = start
        var frames = 0, samples = 0
        while offset < bytes.count {
            let header = try #require(try ADTSHeader.parse(bytes[offset...]), "frame \(frames) cut short at \(offset)")
            #expect(header.isCompatible(with: first), "frame \(frames) at \(offset)")
            offset += header.frameLength
            frames += 1
            samples += header.samplesPerFrame
        }
        #expect(offset == bytes.count, "the last frame ends at the end of the file")
        let seconds = Double(samples) / Double(first.sampleRate)
        #expect(seconds > 5 && seconds < 120, "\(seconds) s")
        print("\(name): \(frames) frames × 1024 / \(sampleRate) = \(seconds) s")
        // ffprobe's ADTS duration is a bit-rate estimate, so it is printed, not compared;
        // its packet count is exact.
        guard let probe = GeneratedMedia.ffprobe(["-count_packets", "-select_streams", "a:0", "-show_entries",
                                               "stream=nb_read_packets,sample_rate,channels:format=duration"],
                                              file: name) else { return }
        print("ffprobe \(name): \(probe)")
        #expect(probe["nb_read_packets"].flatMap { Int($0) } == frames)
        #expect(probe["sample_rate"].flatMap { Int($0) } == sampleRate)
        #expect(probe["channels"].flatMap { Int($0) } == channels)
    }
}
