import Testing
import TestSupport
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

// Header, sync and AudioSpecificConfig edge cases: ADTSTests.swift and AudioSpecificConfigTests.swift.

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
    @Test(.timeLimit(.scaledMinutes(5))) func adts_truncationsAndMutations() {
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

    @Test(.timeLimit(.scaledMinutes(5))) func asc_mutations() {
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
