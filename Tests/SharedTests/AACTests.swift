import Testing
@testable import StreamShared

/// Builds ADTS frames for tests.
enum ADTSBuilder {
    static func header(length: Int, crc: Bool = false, mpeg2: Bool = false, profile: Int = 1, rateIndex: Int = 4,
                       channels: Int = 2, blocks: Int = 1) -> [UInt8] {
        var h: [UInt8] = [0xFF, 0xF0 | (mpeg2 ? 0x08 : 0) | (crc ? 0 : 1)]
        h.append(UInt8(profile << 6 | rateIndex << 2 | channels >> 2))
        h.append(UInt8((channels & 3) << 6 | (length >> 11) & 3))
        h.append(UInt8(length >> 3 & 0xFF))
        h.append(UInt8((length & 7) << 5 | 0x1F))
        h.append(UInt8(0xFC | (blocks - 1)))
        if crc { h += [0x12, 0x34] }
        return h
    }

    static func frame(length: Int = 200, crc: Bool = false, rateIndex: Int = 4, channels: Int = 2) -> [UInt8] {
        let h = header(length: length, crc: crc, rateIndex: rateIndex, channels: channels)
        return h + [UInt8](repeating: 0x21, count: length - h.count)
    }
}

@Suite struct ADTSTests {
    @Test func headerWithoutCRC() throws {
        let h = try #require(try ADTSHeader.parse(ADTSBuilder.frame()[...]))
        #expect(!h.hasCRC)
        #expect(h.headerLength == 7)
        #expect(h.objectType == 2)
        #expect(h.sampleRate == 44_100)
        #expect(h.channelConfiguration == 2)
        #expect(h.frameLength == 200)
        #expect(h.samplesPerFrame == 1024)
        #expect(h.bufferFullness == 0x7FF)
    }

    @Test func headerWithCRC() throws {
        let h = try #require(try ADTSHeader.parse(ADTSBuilder.frame(crc: true)[...]))
        #expect(h.hasCRC)
        #expect(h.headerLength == 9)
    }

    @Test func mpeg2IDBit() throws {
        let h = try #require(try ADTSHeader.parse((ADTSBuilder.header(length: 100, mpeg2: true) + [UInt8](repeating: 0, count: 93))[...]))
        #expect(h.isMPEG2)
    }

    @Test func eightKilohertzMono() throws {
        let h = try #require(try ADTSHeader.parse(ADTSBuilder.frame(rateIndex: 11, channels: 1)[...]))
        #expect(h.sampleRate == 8_000)
        #expect(h.audioSpecificConfig.channels == 1)
    }

    @Test func badSync_throws() {
        #expect(throws: FormatError.self) { try ADTSHeader.parse([0xFF, 0xE1, 0x50, 0x80, 0x19, 0x1F, 0xFC][...]) }
    }

    @Test func reservedSampleRate_throws() {
        #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSBuilder.header(length: 50, rateIndex: 13)[...]) }
    }

    @Test func frameShorterThanHeader_throws() {
        #expect(throws: FormatError.self) { try ADTSHeader.parse(ADTSBuilder.header(length: 5)[...]) }
    }

    @Test func shortInput_isNil() throws {
        #expect(try ADTSHeader.parse([0xFF, 0xF1, 0x50][...]) == nil)
        #expect(try ADTSHeader.parse(ADTSBuilder.header(length: 100, crc: true).prefix(8)) == nil)
    }

    @Test func sync_skipsJunkWithFakeSync() throws {
        // The junk holds a valid-looking header whose next "frame" does not line up.
        let junk: [UInt8] = [0x00, 0x13] + ADTSBuilder.header(length: 40) + [UInt8](repeating: 0x77, count: 60)
        let stream = junk + (0..<4).flatMap { _ in ADTSBuilder.frame() }
        #expect(try ADTSSync.findFirstFrame(in: stream[...]) == junk.count)
    }

    @Test func sync_needsThreeFrames() throws {
        let two = ADTSBuilder.frame() + ADTSBuilder.frame()
        #expect(try ADTSSync.findFirstFrame(in: two[...]) == nil)
        #expect(try ADTSSync.findFirstFrame(in: two[...], isComplete: true) == 0)
    }

    @Test func sync_limitReached_isNotAudio() {
        let junk = [UInt8](repeating: 0x42, count: 5000)
        #expect(throws: FormatError.self) { try ADTSSync.findFirstFrame(in: junk[...], limit: 4096) }
    }
}

@Suite struct AudioSpecificConfigTests {
    @Test func lcStereo44k() throws {
        let asc = try AudioSpecificConfig.parse([0x12, 0x10][...])
        #expect(asc.objectType == 2)
        #expect(asc.sampleRate == 44_100)
        #expect(asc.channels == 2)
        #expect(!asc.sbrPresent)
        #expect(asc.samplesPerFrame == 1024)
        #expect(asc.profileName == "LC")
    }

    @Test func frameLength960() throws {
        let asc = try AudioSpecificConfig.parse([0x12, 0x14][...])
        #expect(asc.frameLengthFlag)
        #expect(asc.samplesPerFrame == 960)
    }

    @Test func explicitSampleRate() throws {
        // AOT 2, index 15, rate 0x00AC44 (44100), channel config 1, GA flags 0.
        var bits = BitWriter()
        bits.write(2, 5); bits.write(15, 4); bits.write(44_100, 24); bits.write(1, 4); bits.write(0, 3)
        let asc = try AudioSpecificConfig.parse(bits.bytes[...])
        #expect(asc.sampleRate == 44_100)
        #expect(asc.sampleRateIndex == 15)
        #expect(asc.channels == 1)
    }

    @Test func escapedObjectType() throws {
        // 31 + 6 bits: 32 + 10 = 42 (USAC), not a GA type: refused as unsupported, not a trap.
        var bits = BitWriter()
        bits.write(31, 5); bits.write(10, 6); bits.write(4, 4); bits.write(2, 4)
        #expect(throws: FormatError.self) { try AudioSpecificConfig.parse(bits.bytes[...]) }
        var reader = BitReader(bits.bytes)
        #expect(try AudioSpecificConfig.readObjectType(&reader) == 42)
    }

    @Test func heAACExplicit() throws {
        // AOT 5 (SBR), core 22.05 kHz (index 7), stereo, extension 44.1 kHz (index 4), core AOT 2.
        var bits = BitWriter()
        bits.write(5, 5); bits.write(7, 4); bits.write(2, 4); bits.write(4, 4); bits.write(2, 5); bits.write(0, 3)
        let asc = try AudioSpecificConfig.parse(bits.bytes[...])
        #expect(asc.sbrPresent)
        #expect(!asc.psPresent)
        #expect(asc.coreObjectType == 2)
        #expect(asc.sampleRate == 22_050)
        #expect(asc.outputSampleRate == 44_100)
        #expect(asc.samplesPerFrame == 2048)
        #expect(asc.profileName == "HE-AAC")
    }

    @Test func heAACv2Explicit() throws {
        // AOT 29 (PS), core 24 kHz mono, extension 48 kHz: output stereo.
        var bits = BitWriter()
        bits.write(29, 5); bits.write(6, 4); bits.write(1, 4); bits.write(3, 4); bits.write(2, 5); bits.write(0, 3)
        let asc = try AudioSpecificConfig.parse(bits.bytes[...])
        #expect(asc.psPresent)
        #expect(asc.channels == 2)
        #expect(asc.outputSampleRate == 48_000)
        #expect(asc.profileName == "HE-AACv2")
    }

    @Test func backwardCompatibleSBRAndPS() throws {
        // LC 24 kHz mono, then sync 0x2B7, AOT 5, sbr flag, ext index 3 (48 kHz), sync 0x548, ps flag.
        var bits = BitWriter()
        bits.write(2, 5); bits.write(6, 4); bits.write(1, 4); bits.write(0, 3)
        bits.write(0x2B7, 11); bits.write(5, 5); bits.write(1, 1); bits.write(3, 4); bits.write(0x548, 11); bits.write(1, 1)
        let asc = try AudioSpecificConfig.parse(bits.bytes[...])
        #expect(asc.objectType == 2)
        #expect(asc.sbrPresent)
        #expect(asc.psPresent)
        #expect(asc.outputSampleRate == 48_000)
        #expect(asc.channels == 2)
    }

    @Test func truncatedConfig_throws() {
        #expect(throws: FormatError.self) { try AudioSpecificConfig.parse([0x12][...]) }
    }

    @Test func programConfigElement_isUnsupported() {
        #expect(throws: FormatError.self) { try AudioSpecificConfig.parse([0x12, 0x00][...]) }
    }
}

/// Writes bits MSB first, for building configs in tests.
struct BitWriter {
    var bytes: [UInt8] = []
    var bitCount = 0

    mutating func write(_ value: Int, _ width: Int) {
        for i in stride(from: width - 1, through: 0, by: -1) {
            if bitCount % 8 == 0 { bytes.append(0) }
            if (value >> i) & 1 == 1 { bytes[bytes.count - 1] |= UInt8(0x80) >> UInt8(bitCount % 8) }
            bitCount += 1
        }
    }
}

@Suite struct AACFuzzTests {
    @Test(.timeLimit(.minutes(1))) func adts_truncationsAndMutations() {
        let stream = [UInt8](repeating: 0x99, count: 50) + (0..<5).flatMap { i in ADTSBuilder.frame(length: 150 + i, crc: i == 2) }
        var outcomes = 0
        let walk = { (bytes: ArraySlice<UInt8>) in
            guard let start = try ADTSSync.findFirstFrame(in: bytes, limit: 4096, isComplete: true) else { return }
            var offset = bytes.startIndex + start
            var frames = 0
            while let header = try ADTSHeader.parse(bytes[offset...]), frames < 100 {
                offset += header.frameLength
                frames += 1
                if offset >= bytes.endIndex { break }
            }
        }
        Fuzz.forEachTruncation(of: stream) { prefix in
            do { try walk(prefix) } catch {}
            outcomes += 1
        }
        Fuzz.forEachMutation(of: stream, count: 10_000) { mutated in
            do { try walk(mutated[...]) } catch {}
            outcomes += 1
        }
        #expect(outcomes == stream.count + 10_000)
    }

    @Test(.timeLimit(.minutes(1))) func asc_mutations() {
        var bits = BitWriter()
        bits.write(2, 5); bits.write(6, 4); bits.write(1, 4); bits.write(0, 3)
        bits.write(0x2B7, 11); bits.write(5, 5); bits.write(1, 1); bits.write(3, 4); bits.write(0x548, 11); bits.write(1, 1)
        var values = 0, errors = 0
        for seed in [bits.bytes, [0x12, 0x10], [0xEB, 0x09, 0x88, 0x00]] {
            Fuzz.forEachMutation(of: seed, count: 3_400, seed: UInt64(seed.count)) { mutated in
                do { _ = try AudioSpecificConfig.parse(mutated[...]); values += 1 } catch { errors += 1 }
            }
        }
        #expect(values + errors == 10_200)
        #expect(values > 0 && errors > 0)
    }
}
