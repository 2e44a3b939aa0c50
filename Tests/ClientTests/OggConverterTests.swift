import Foundation
import Testing
import TestSupport
import StreamAudio
import StreamShared

/// `OggConverter` on the generated Ogg files (media/ogg), without the player: the same samples
/// whatever the size of the pieces fed, a restart at a page in mid-stream that hands out exactly
/// the linear decode's samples from the sample asked for, and the WAV-order tables.
@Suite struct OggConverterTests {
    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: TestPaths.oggMedia.appendingPathComponent(name)))
    }

    /// Everything the converter hands out for `input` fed in pieces of `piece` bytes.
    static func decode(_ input: ArraySlice<UInt8>, piece: Int, converter: inout OggConverter) throws -> [Float] {
        var out: [Float] = []
        var offset = input.startIndex
        while offset < input.endIndex {
            converter.append(Array(input[offset..<min(input.endIndex, offset + piece)]))
            offset += piece
            while try converter.convertNext(isComplete: false, { out.append(contentsOf: $0) }) {}
        }
        while try converter.convertNext(isComplete: true, { out.append(contentsOf: $0) }) {}
        return out
    }

    @Test(arguments: ["opus-stereo-48k.opus", "vorbis-stereo-44k.ogg", "chained-opus.opus"])
    func samePiecesWhateverTheirSize(name: String) throws {
        let file = try Self.bytes(name)
        var whole = OggConverter()
        try whole.restart(at: 0)
        let reference = try Self.decode(file[...], piece: file.count, converter: &whole)
        var small = OggConverter()
        try small.restart(at: 0)
        let pieces = try Self.decode(file[...], piece: 977, converter: &small)
        #expect(pieces == reference && !reference.isEmpty, "\(name): \(pieces.count) vs \(reference.count) samples")
        #expect(whole.format?.channels == 2 && whole.channelMask == 0x3)
    }

    /// A restart after a page in the middle, told the sample its next output is (the granule of
    /// the page before, less the pre-skip) and given the header pages: from the target on (past
    /// the pre-roll) the samples equal the linear decode's.
    @Test(arguments: ["opus-stereo-48k.opus", "vorbis-stereo-44k.ogg"])
    func restartInMidStreamAlignsToTheSample(name: String) throws {
        let file = try Self.bytes(name)
        var linear = OggConverter()
        try linear.restart(at: 0)
        let reference = try Self.decode(file[...], piece: 65_536, converter: &linear)
        let channels = 2, preSkip = name.hasSuffix(".opus") ? 312 : 0
        // The pages: header pages end at the last granule-0 page; pick a page in mid-file.
        var pages: [(offset: Int, page: OggPage)] = []
        var position = 0
        while let (at, page) = OggPage.next(in: file[...], from: position) {
            pages.append((at, page))
            position = at + page.length
        }
        let lastHeader = try #require(pages.last { $0.page.granulePosition == 0 })
        let headers = Array(file[0..<(lastHeader.offset + lastHeader.page.length)])
        let middle = pages.count / 2
        let before = pages[middle - 1].page.granulePosition, restartAt = pages[middle].offset
        let sample = Int(before) - preSkip
        var seeking = OggConverter(links: [OggConverter.Link(serial: pages[0].page.serial, headers: headers, firstSample: 0)])
        try seeking.restart(at: restartAt, sample: sample)
        let tail = try Self.decode(file[restartAt...], piece: 65_536, converter: &seeking)
        #expect(tail.count == reference.count - sample * channels, "\(name): \(tail.count / channels) frames after sample \(sample)")
        // Past the player's pre-roll (Opus: 80 ms and one 120 ms packet) the decoders agree with
        // the linear decode (libopus converges; Vorbis is exact after its priming packet).
        let skip = (name.hasSuffix(".opus") ? 9600 : 4096) * channels
        let got = tail.dropFirst(skip), want = reference.dropFirst(sample * channels + skip)
        var signal = 0.0, noise = 0.0
        for (a, b) in zip(got, want) {
            signal += Double(b) * Double(b)
            noise += Double(a - b) * Double(a - b)
        }
        let snr = noise == 0 ? Double.infinity : 10 * log10(signal / noise)
        #expect(snr >= (name.hasSuffix(".opus") ? 60 : 140), "\(name): SNR \(snr) dB against the linear decode after the pre-roll")
    }

    @Test func vorbisOrderToWAVOrder() {
        #expect(VorbisChannelOrder.wavOrder(channels: 2) == nil && VorbisChannelOrder.wavOrder(channels: 4) == nil)
        #expect(VorbisChannelOrder.wavOrder(channels: 3) == [0, 2, 1])
        // 5.1: L C R Ls Rs LFE → L R C LFE Ls Rs; 7.1: L C R Ls Rs Lb Rb LFE → L R C LFE Lb Rb Ls Rs.
        #expect(VorbisChannelOrder.wavOrder(channels: 6) == [0, 2, 1, 5, 3, 4])
        #expect(VorbisChannelOrder.wavOrder(channels: 8) == [0, 2, 1, 7, 5, 6, 3, 4])
        #expect((1...8).map { VorbisChannelOrder.channelMask(channels: $0) } == [0x4, 0x3, 0x7, 0x33, 0x37, 0x3F, 0x70F, 0x63F])
        #expect(VorbisChannelOrder.channelMask(channels: 9) == 0)
    }
}
