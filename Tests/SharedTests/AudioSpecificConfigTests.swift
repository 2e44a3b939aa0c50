import Testing
@testable import StreamShared

/// Writes bits MSB first, the order of MPEG headers and configs.
/// (Distinct from `BitWriter` in AACTests.swift, which other tests use.)
struct MSBBitWriter {
    var bytes: [UInt8] = []
    var bitCount = 0

    mutating func write(_ value: Int, _ width: Int) {
        for i in stride(from: width - 1, through: 0, by: -1) {
            if bitCount % 8 == 0 { bytes.append(0) }
            if (value >> i) & 1 == 1 { bytes[bytes.count - 1] |= UInt8(0x80) >> UInt8(bitCount % 8) }
            bitCount += 1
        }
    }

    /// Zero bits up to the next byte boundary.
    mutating func align() { write(0, (8 - bitCount % 8) % 8) }
}

/// AudioSpecificConfig bit strings, built the way ISO 14496-3 1.6.2.1 lays them out.
enum ASCBits {
    /// GetAudioObjectType(): 5 bits, or 31 then 6 bits for types from 32.
    static func objectType(_ w: inout MSBBitWriter, _ type: Int) {
        if type >= 32 { w.write(31, 5); w.write(type - 32, 6) } else { w.write(type, 5) }
    }

    /// Index, or index 15 and a 24-bit rate.
    static func rate(_ w: inout MSBBitWriter, index: Int, explicit: Int? = nil) {
        w.write(index, 4)
        if let explicit { w.write(explicit, 24) }
    }

    /// GASpecificConfig: frameLengthFlag, dependsOnCoreCoder (+14-bit delay), extensionFlag.
    static func ga(_ w: inout MSBBitWriter, frameLength960: Bool = false, coreCoderDelay: Int? = nil) {
        w.write(frameLength960 ? 1 : 0, 1)
        if let coreCoderDelay { w.write(1, 1); w.write(coreCoderDelay, 14) } else { w.write(0, 1) }
        w.write(0, 1)
    }

    /// A plain config: object type, rate index, channel configuration, GA flags.
    static func plain(type: Int = 2, rateIndex: Int = 4, channels: Int = 2, frameLength960: Bool = false) -> MSBBitWriter {
        var w = MSBBitWriter()
        objectType(&w, type); rate(&w, index: rateIndex); w.write(channels, 4)
        ga(&w, frameLength960: frameLength960)
        return w
    }

    /// Explicit HE-AAC (type 5) or HE-AAC v2 (type 29): core rate, channels, SBR rate, core type.
    static func explicitSBR(type: Int, coreRateIndex: Int, channels: Int, sbrRateIndex: Int, core: Int = 2) -> [UInt8] {
        var w = MSBBitWriter()
        objectType(&w, type); rate(&w, index: coreRateIndex); w.write(channels, 4)
        rate(&w, index: sbrRateIndex); objectType(&w, core)
        ga(&w)
        return w.bytes
    }

    /// LC core, then the 0x2B7 SBR sync extension and optionally the 0x548 PS one.
    static func backwardCompatible(coreRateIndex: Int = 6, channels: Int = 1, sbrFlag: Bool = true,
                                   sbrRateIndex: Int = 3, ps: Bool? = true) -> [UInt8] {
        var w = plain(rateIndex: coreRateIndex, channels: channels)
        w.write(0x2B7, 11); objectType(&w, 5); w.write(sbrFlag ? 1 : 0, 1)
        if sbrFlag {
            rate(&w, index: sbrRateIndex)
            if let ps { w.write(0x548, 11); w.write(ps ? 1 : 0, 1) }
        }
        return w.bytes
    }

    /// A 5.1 program config element (C, L/R, Ls/Rs, LFE) after an LC config with configuration 0.
    static func programConfig51(comment: [UInt8] = []) -> [UInt8] {
        var w = MSBBitWriter()
        objectType(&w, 2); rate(&w, index: 3); w.write(0, 4)
        ga(&w)
        w.write(0, 4); w.write(1, 2); w.write(3, 4)                 // tag, profile LC, 48 kHz
        w.write(2, 4); w.write(0, 4); w.write(1, 4); w.write(1, 2)  // 2 front, 0 side, 1 back, 1 LFE
        w.write(0, 3); w.write(0, 4)                                // no assoc data, no cc
        w.write(0, 1); w.write(0, 1); w.write(0, 1)                 // no mixdowns
        w.write(0, 1); w.write(0, 4)                                // front: SCE (centre)
        w.write(1, 1); w.write(0, 4)                                // front: CPE (L/R)
        w.write(1, 1); w.write(1, 4)                                // back: CPE (Ls/Rs)
        w.write(0, 4)                                               // LFE tag
        w.align()
        w.write(comment.count, 8)
        for byte in comment { w.write(Int(byte), 8) }
        return w.bytes
    }
}

@Suite struct AudioSpecificConfigParseTests {
    func parse(_ bytes: [UInt8]) throws -> AudioSpecificConfig {
        try AudioSpecificConfig.parse(bytes[...])
    }

    @Test func lcStereo44k() throws {
        let asc = try parse([0x12, 0x10])
        #expect(asc.objectType == 2)
        #expect(asc.coreObjectType == 2)
        #expect(asc.sampleRateIndex == 4)
        #expect(asc.sampleRate == 44_100)
        #expect(asc.outputSampleRate == 44_100)
        #expect(asc.channelConfiguration == 2)
        #expect(asc.channels == 2)
        #expect(!asc.sbrPresent)
        #expect(!asc.psPresent)
        #expect(asc.extensionSampleRate == nil)
        #expect(asc.samplesPerFrame == 1024)
    }

    /// dependsOnCoreCoder set with no coreCoderDelay after it (the config ends): libfaad2 and
    /// ffmpeg play such files, so the flag is taken without its delay.
    @Test func dependsOnCoreCoderWithoutDelayBits_isTolerated() throws {
        let asc = try parse([0x12, 0x12])      // LC, 44.1 kHz, stereo, dependsOnCoreCoder = 1, then nothing
        #expect(asc.coreObjectType == 2)
        #expect(asc.sampleRate == 44_100)
        #expect(asc.channels == 2)
        // With the delay present it is skipped as before.
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 2); ASCBits.rate(&w, index: 3); w.write(1, 4); ASCBits.ga(&w, coreCoderDelay: 1234); w.align()
        #expect(try parse(w.bytes).sampleRate == 48_000)
    }

    @Test func explicitSampleRate() throws {
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 2); ASCBits.rate(&w, index: 15, explicit: 37_800); w.write(1, 4); ASCBits.ga(&w)
        let asc = try parse(w.bytes)
        #expect(asc.sampleRateIndex == 15)
        #expect(asc.sampleRate == 37_800)
        #expect(asc.channels == 1)
    }

    @Test func explicitSampleRateZero_throws() {
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 2); ASCBits.rate(&w, index: 15, explicit: 0); w.write(2, 4); ASCBits.ga(&w)
        #expect(throws: FormatError.self) { try AudioSpecificConfig.parse(w.bytes[...]) }
    }

    @Test(arguments: [13, 14])
    func reservedSampleRateIndex_throws(index: Int) {
        let w = ASCBits.plain(rateIndex: index)
        #expect(throws: FormatError.self) { try AudioSpecificConfig.parse(w.bytes[...]) }
    }

    @Test func escapedObjectType_isDecoded() throws {
        // 31, then 6 bits: 32 + 10 = 42 (USAC), which this parser names but does not handle.
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 42); ASCBits.rate(&w, index: 4); w.write(2, 4); w.write(0, 8)
        var reader = BitReader(w.bytes)
        #expect(try AudioSpecificConfig.readObjectType(&reader) == 42)
        #expect(reader.bitOffset == 11)
        #expect(throws: FormatError.unsupported(component: "aac-asc", reason: "audio object type 42")) {
            try AudioSpecificConfig.parse(w.bytes[...])
        }
    }

    @Test func escapedObjectTypeShiftsTheRestOfTheConfig() throws {
        // The rate and channels are read after the 11-bit escaped type, not the 5-bit one.
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 32 + 7); ASCBits.rate(&w, index: 3); w.write(1, 4)
        var reader = BitReader(w.bytes)
        _ = try AudioSpecificConfig.readObjectType(&reader)
        let rate = try AudioSpecificConfig.readSampleRate(&reader)
        #expect(rate.index == 3)
        #expect(rate.rate == 48_000)
        #expect(try reader.read(4) == 1)
    }

    @Test func heAACExplicit() throws {
        // Object type 5: core 22.05 kHz stereo LC, SBR at 44.1 kHz.
        let asc = try parse(ASCBits.explicitSBR(type: 5, coreRateIndex: 7, channels: 2, sbrRateIndex: 4))
        #expect(asc.objectType == 5)
        #expect(asc.coreObjectType == 2)
        #expect(asc.sbrPresent)
        #expect(!asc.psPresent)
        #expect(asc.sampleRate == 22_050)
        #expect(asc.extensionSampleRate == 44_100)
        #expect(asc.outputSampleRate == 44_100)
        #expect(asc.channels == 2)
        #expect(asc.samplesPerFrame == 2048)
    }

    @Test func heAACv2Explicit() throws {
        // Object type 29: core 24 kHz mono LC, SBR at 48 kHz, PS makes it stereo.
        let asc = try parse(ASCBits.explicitSBR(type: 29, coreRateIndex: 6, channels: 1, sbrRateIndex: 3))
        #expect(asc.objectType == 29)
        #expect(asc.coreObjectType == 2)
        #expect(asc.sbrPresent)
        #expect(asc.psPresent)
        #expect(asc.channelConfiguration == 1)
        #expect(asc.channels == 2)
        #expect(asc.outputSampleRate == 48_000)
        #expect(asc.samplesPerFrame == 2048)
    }

    @Test func explicitSBRWithExplicitExtensionRate() throws {
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 5); ASCBits.rate(&w, index: 8); w.write(2, 4)
        ASCBits.rate(&w, index: 15, explicit: 32_000); ASCBits.objectType(&w, 2); ASCBits.ga(&w)
        let asc = try parse(w.bytes)
        #expect(asc.sampleRate == 16_000)
        #expect(asc.outputSampleRate == 32_000)
    }

    @Test func backwardCompatibleSBRAndPS() throws {
        // LC 24 kHz mono, sync 0x2B7 + type 5 + SBR at 48 kHz, sync 0x548 + PS.
        let asc = try parse(ASCBits.backwardCompatible())
        #expect(asc.objectType == 2, "old decoders see plain LC")
        #expect(asc.coreObjectType == 2)
        #expect(asc.sbrPresent)
        #expect(asc.psPresent)
        #expect(asc.sampleRate == 24_000)
        #expect(asc.extensionSampleRate == 48_000)
        #expect(asc.outputSampleRate == 48_000)
        #expect(asc.channels == 2)
        #expect(asc.samplesPerFrame == 2048)
    }

    @Test func backwardCompatibleSBROnly() throws {
        let asc = try parse(ASCBits.backwardCompatible(channels: 2, ps: nil))
        #expect(asc.sbrPresent)
        #expect(!asc.psPresent)
        #expect(asc.channels == 2)
    }

    @Test func backwardCompatiblePSFlagZero() throws {
        let asc = try parse(ASCBits.backwardCompatible(ps: false))
        #expect(asc.sbrPresent)
        #expect(!asc.psPresent)
        #expect(asc.channels == 1)
    }

    @Test func backwardCompatibleSBRFlagZero_meansNoSBR() throws {
        let asc = try parse(ASCBits.backwardCompatible(sbrFlag: false))
        #expect(!asc.sbrPresent)
        #expect(asc.outputSampleRate == 24_000)
        #expect(asc.samplesPerFrame == 1024)
    }

    @Test func fewerThan16BitsAfterCore_noExtensionRead() throws {
        // A 17-bit core (extensionFlag set, so extensionFlag3 follows) leaves 15 bits in 4 bytes:
        // 0x2B7 is there, but with under 16 bits left the spec says not to look (reading on
        // would run out of bits in the object type).
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 2); ASCBits.rate(&w, index: 6); w.write(1, 4)
        w.write(0, 1); w.write(0, 1); w.write(1, 1); w.write(0, 1)
        w.write(0x2B7, 11)
        #expect(w.bytes.count * 8 - 17 == 15)
        let asc = try parse(w.bytes)
        #expect(!asc.sbrPresent)
        #expect(asc.channels == 1)
    }

    @Test func extensionFlag_readsExtensionFlag3() throws {
        // LC with extensionFlag: one more bit, then a backward-compatible extension that only
        // lines up if that bit was consumed.
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 2); ASCBits.rate(&w, index: 6); w.write(2, 4)
        w.write(0, 1); w.write(0, 1); w.write(1, 1); w.write(0, 1)
        w.write(0x2B7, 11); ASCBits.objectType(&w, 5); w.write(1, 1); w.write(3, 4)
        #expect(try parse(w.bytes).outputSampleRate == 48_000)
    }

    @Test func otherSyncExtension_isIgnored() throws {
        var w = ASCBits.plain()
        w.write(0x123, 11); w.write(5, 5); w.write(1, 1); w.write(3, 4)
        #expect(try !parse(w.bytes).sbrPresent)
    }

    @Test func frameLengthFlag960() throws {
        let asc = try parse(ASCBits.plain(frameLength960: true).bytes)
        #expect(asc.frameLengthFlag)
        #expect(asc.samplesPerFrame == 960)
    }

    @Test func frameLengthFlag960WithSBR() throws {
        var w = ASCBits.plain(rateIndex: 6, channels: 1, frameLength960: true)
        w.write(0x2B7, 11); ASCBits.objectType(&w, 5); w.write(1, 1); w.write(3, 4)
        #expect(try parse(w.bytes).samplesPerFrame == 1920)
    }

    @Test func aacLD_halvesTheFrame() throws {
        // ER AAC-LD (23): 512-sample frames, 480 with the flag; ER types end with epConfig.
        var w = ASCBits.plain(type: 23, rateIndex: 3, channels: 1)
        w.write(0, 2)
        #expect(try parse(w.bytes).samplesPerFrame == 512)
        var short = ASCBits.plain(type: 23, rateIndex: 3, channels: 1, frameLength960: true)
        short.write(0, 2)
        #expect(try parse(short.bytes).samplesPerFrame == 480)
    }

    @Test func dependsOnCoreCoder_skips14Bits() throws {
        // If the delay were not skipped, the SBR sync after it would be read misaligned.
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 2); ASCBits.rate(&w, index: 6); w.write(2, 4)
        ASCBits.ga(&w, coreCoderDelay: 0x2B7)
        w.write(0x2B7, 11); ASCBits.objectType(&w, 5); w.write(1, 1); w.write(3, 4)
        let asc = try parse(w.bytes)
        #expect(asc.sbrPresent)
        #expect(asc.outputSampleRate == 48_000)
    }

    @Test(arguments: [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 8), (11, 7), (12, 8), (13, 24), (14, 8)])
    func channelConfigurations(configuration: Int, channels: Int) throws {
        #expect(try parse(ASCBits.plain(channels: configuration).bytes).channels == channels)
    }

    @Test(arguments: [8, 9, 10, 15])
    func reservedChannelConfiguration_throws(configuration: Int) {
        #expect(throws: FormatError.self) { try AudioSpecificConfig.parse(ASCBits.plain(channels: configuration).bytes[...]) }
    }

    @Test func programConfigElement_51() throws {
        // Channel configuration 0: the PCE lists the elements (chosen: parsed, not refused).
        let asc = try parse(ASCBits.programConfig51())
        #expect(asc.channelConfiguration == 0)
        let pce = try #require(asc.programConfig)
        #expect(pce.frontChannels == 3)
        #expect(pce.sideChannels == 0)
        #expect(pce.backChannels == 2)
        #expect(pce.lfeChannels == 1)
        #expect(pce.sampleRateIndex == 3)
        #expect(pce.profile == 1)
        #expect(asc.channels == 6)
    }

    @Test func programConfigElement_commentIsSkipped() throws {
        var bytes = ASCBits.programConfig51(comment: Array("made by a test".utf8))
        // A backward-compatible SBR extension after the comment proves the PCE's length was right.
        var w = MSBBitWriter()
        w.write(0x2B7, 11); ASCBits.objectType(&w, 5); w.write(1, 1); w.write(3, 4)
        bytes += w.bytes
        let asc = try parse(bytes)
        #expect(asc.channels == 6)
        #expect(asc.sbrPresent)
    }

    @Test func programConfigElement_truncated_throws() {
        let bytes = ASCBits.programConfig51(comment: [1, 2, 3])
        for n in 0..<bytes.count {
            #expect(throws: FormatError.self) { try AudioSpecificConfig.parse(bytes.prefix(n)) }
        }
    }

    @Test func programConfigElement_withoutChannels_throws() {
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 2); ASCBits.rate(&w, index: 4); w.write(0, 4); ASCBits.ga(&w)
        w.write(0, 4 + 2 + 4 + 4 + 4 + 4 + 2 + 3 + 4 + 3)   // every count zero, no mixdowns
        w.align()
        w.write(0, 8)
        #expect(throws: FormatError.self) { try AudioSpecificConfig.parse(w.bytes[...]) }
    }

    @Test func truncatedConfig_throwsTruncated() {
        let error = #expect(throws: FormatError.self) { try AudioSpecificConfig.parse([0x12][...]) }
        #expect(error?.isTruncation == true)
        #expect(throws: FormatError.self) { try AudioSpecificConfig.parse([][...]) }
    }

    @Test func unsupportedObjectType_throwsUnsupported() {
        // Object type 8 (CELP) has no GASpecificConfig.
        var w = MSBBitWriter()
        ASCBits.objectType(&w, 8); ASCBits.rate(&w, index: 4); w.write(1, 4); w.write(0, 3)
        let error = #expect(throws: FormatError.self) { try AudioSpecificConfig.parse(w.bytes[...]) }
        if case .unsupported = error {} else { Issue.record("expected .unsupported, got \(String(describing: error))") }
    }
}
