import Testing
@testable import StreamShared

@Suite struct MPEGHeaderTests {
    @Test func mpeg1Layer3_128k_44k() throws {
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header()))
        #expect(h.version == .mpeg1)
        #expect(h.layer == .layer3)
        #expect(h.bitrate == 128_000)
        #expect(h.sampleRate == 44_100)
        #expect(h.samplesPerFrame == 1152)
        #expect(h.frameLength == 417)
        #expect(!h.hasCRC)
        #expect(h.channels == 2)
    }

    @Test func paddingAddsOneSlot() throws {
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header(padding: true)))
        #expect(h.frameLength == 418)
    }

    @Test func layer1_padsByFourBytes() throws {
        // MPEG-1 layer I, 384 kbit/s (index 12), 48 kHz: 12*384000/48000 = 96 slots = 384 bytes.
        let plain = try #require(MPEGFrameHeader(raw: MPEGBuilder.header(layer: 1, bitrateIndex: 12, sampleRateIndex: 1)))
        #expect(plain.frameLength == 384)
        #expect(plain.samplesPerFrame == 384)
        let padded = try #require(MPEGFrameHeader(raw: MPEGBuilder.header(layer: 1, bitrateIndex: 12, sampleRateIndex: 1, padding: true)))
        #expect(padded.frameLength == 388)
    }

    @Test func layer2_usesLayer2Table() throws {
        // MPEG-1 layer II index 14 = 384 kbit/s (layer III would be 320).
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header(layer: 2, bitrateIndex: 14)))
        #expect(h.bitrate == 384_000)
        #expect(h.samplesPerFrame == 1152)
        #expect(h.frameLength == 144 * 384_000 / 44_100)
    }

    @Test func mpeg2Layer3_halvesRateAndSamples() throws {
        // MPEG-2 layer III, index 8 = 64 kbit/s, 22.05 kHz, mono.
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header(version: 2, bitrateIndex: 8, mode: 3)))
        #expect(h.version == .mpeg2)
        #expect(h.sampleRate == 22_050)
        #expect(h.samplesPerFrame == 576)
        #expect(h.bitrate == 64_000)
        #expect(h.frameLength == 72 * 64_000 / 22_050)
        #expect(h.sideInfoLength == 9)
        #expect(h.channels == 1)
    }

    @Test func mpeg25_quartersRate() throws {
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header(version: 0, bitrateIndex: 4, sampleRateIndex: 2)))
        #expect(h.version == .mpeg25)
        #expect(h.sampleRate == 8_000)
        #expect(h.bitrate == 32_000)
        #expect(h.frameLength == 72 * 32_000 / 8_000)
    }

    @Test func crcFlagAddsTwoBytesOfHeader() throws {
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header(crc: true)))
        #expect(h.hasCRC)
        #expect(h.headerLength == 6)
    }

    @Test func freeFormat_hasNoFixedLength() throws {
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header(bitrateIndex: 0)))
        #expect(h.isFreeFormat)
        #expect(h.frameLength == nil)
    }

    @Test(arguments: [
        MPEGBuilder.header(bitrateIndex: 15),           // bad bitrate
        MPEGBuilder.header(sampleRateIndex: 3),         // reserved rate
        MPEGBuilder.header(version: 1),                 // reserved version
        MPEGBuilder.header() & ~UInt32(0x6_0000),       // layer bits 00: reserved
        MPEGBuilder.header() | 2,                       // reserved emphasis
        UInt32(0x4944_3304),                            // "ID3\u{4}"
    ])
    func reservedFields_areNotHeaders(raw: UInt32) {
        #expect(MPEGFrameHeader(raw: raw) == nil)
    }

    @Test func parse_needsFourBytes() throws {
        #expect(try MPEGFrameHeader.parse([0xFF, 0xFB, 0x90][...]) == nil)
        #expect(throws: FormatError.self) { try MPEGFrameHeader.parse([0x00, 0x01, 0x02, 0x03][...]) }
    }
}
