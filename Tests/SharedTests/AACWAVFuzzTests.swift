import Testing
import TestSupport
@testable import StreamShared

/// How one fuzzed input ended. Anything else (a trap, a hang) fails the run outright.
struct FuzzOutcomes: CustomStringConvertible {
    var values = 0, nils = 0, errors = 0
    var total: Int { values + nils + errors }
    var description: String { "\(values) values, \(nils) nil, \(errors) errors" }

    /// Runs `body` and files its ending; `check` judges every value that comes back.
    mutating func record<T>(_ body: () throws -> T?, check: (T) -> Void = { _ in }) {
        do {
            if let value = try body() {
                values += 1
                check(value)
            } else {
                nils += 1
            }
        } catch {
            errors += 1
        }
    }
}

@Suite struct AACWAVFuzzTests {
    static let mutations = 10_000

    /// Junk (with a stray 0xFFF), then six frames of varied length, one with a CRC.
    static var adtsStream: [UInt8] {
        let junk: [UInt8] = [0x49, 0x44, 0x00, 0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC] + [UInt8](repeating: 0x5A, count: 40)
        let frames = (0..<6).map { i in ADTSFrameSpec(crc: i == 3, length: 120 + 7 * i) }
        return junk + ADTSFrameSpec.stream(frames)
    }

    /// Finds the first frame the way a streaming reader does, then walks frames to the end.
    /// Returns the number of frames walked; nil when more bytes would be needed.
    static func walkADTS(_ bytes: ArraySlice<UInt8>) throws -> Int? {
        guard let start = try ADTSSync.findFirstFrame(in: bytes, limit: 4096) else { return nil }
        var offset = start
        var frames = 0
        while offset < bytes.count {
            guard let header = try ADTSHeader.parse(bytes.dropFirst(offset)) else { return nil }
            #expect(header.frameLength >= header.headerLength)
            #expect(header.sampleRate > 0)
            offset += header.frameLength
            frames += 1
        }
        return frames
    }

    @Test(.timeLimit(.scaledMinutes(5))) func adts_truncationsAndMutations() {
        let stream = Self.adtsStream
        #expect((try? Self.walkADTS(stream[...])) == 6, "the seed itself walks all six frames")
        var outcomes = FuzzOutcomes()
        Fuzz.forEachTruncation(of: stream) { prefix in outcomes.record { try Self.walkADTS(prefix) } }
        Fuzz.forEachMutation(of: stream, count: Self.mutations) { mutated in
            outcomes.record { try Self.walkADTS(mutated[...]) }
        }
        print("ADTS: \(outcomes)")
        #expect(outcomes.total == stream.count + Self.mutations)
        #expect(outcomes.values > 0 && outcomes.errors > 0 && outcomes.nils > 0)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func adtsHeader_nilOnlyWhenShort() {
        // The header parser's own contract: nil means fewer than 9 bytes, never "bad bytes".
        let stream = Self.adtsStream
        var outcomes = FuzzOutcomes()
        Fuzz.forEachMutation(of: Array(stream.dropFirst(50).prefix(12)), count: Self.mutations, seed: 7) { mutated in
            do {
                if try ADTSHeader.parse(mutated[...]) == nil {
                    #expect(mutated.count < 9)
                    outcomes.nils += 1
                } else {
                    outcomes.values += 1
                }
            } catch {
                outcomes.errors += 1
            }
        }
        #expect(outcomes.total == Self.mutations)
        #expect(outcomes.values > 0 && outcomes.errors > 0)
    }

    /// LC, explicit HE-AAC v2, backward-compatible SBR+PS, and a 5.1 PCE config.
    static var ascSeeds: [[UInt8]] {
        [[0x12, 0x10],
         ASCBits.explicitSBR(type: 29, coreRateIndex: 6, channels: 1, sbrRateIndex: 3),
         ASCBits.backwardCompatible(),
         ASCBits.programConfig51(comment: [0x41, 0x42])]
    }

    @Test(.timeLimit(.scaledMinutes(5))) func asc_truncationsAndMutations() throws {
        for (n, seed) in Self.ascSeeds.enumerated() {
            #expect(throws: Never.self, "seed \(n) parses") { try AudioSpecificConfig.parse(seed[...]) }
            var outcomes = FuzzOutcomes()
            var truncations = FuzzOutcomes()
            Fuzz.forEachTruncation(of: seed) { prefix in
                truncations.record { try AudioSpecificConfig.parse(prefix) }
            }
            Fuzz.forEachMutation(of: seed, count: Self.mutations, seed: UInt64(n + 1)) { mutated in
                outcomes.record({ try AudioSpecificConfig.parse(mutated[...]) }) { asc in
                    #expect(asc.sampleRate > 0)
                    #expect(asc.outputSampleRate > 0)
                    #expect(asc.channels >= 0)
                    #expect([480, 512, 960, 1024, 1920, 2048].contains(asc.samplesPerFrame))
                }
            }
            print("ASC seed \(n): \(outcomes); truncations: \(truncations)")
            #expect(truncations.total == seed.count)
            #expect(outcomes.total == Self.mutations)
            #expect(outcomes.nils == 0, "parse never returns nil")
            #expect(outcomes.values > 0 && outcomes.errors > 0)
        }
    }

    /// LIST/INFO first, an odd-sized chunk (with its pad byte), extensible fmt, LIST again, data.
    static var wavFile: [UInt8] {
        WAVBuilder.file(WAVBuilder.info([("INAM", "Title"), ("IART", "Artist")])
                        + WAVBuilder.chunk("odd ", [1, 2, 3, 4, 5])
                        + WAVBuilder.extensible()
                        + WAVBuilder.info([("IPRD", "Album")]),
                        dataBytes: 60)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func wav_truncationsAndMutations() throws {
        let file = Self.wavFile
        let seed = try #require(try WAV.parse(prefix: file[...]))
        #expect(seed.tags.title == "Title" && seed.tags.album == "Album")
        var outcomes = FuzzOutcomes()
        let check = { (bytes: [UInt8]) in
            outcomes.record({ try WAV.parse(prefix: bytes[...]) }) { info in
                #expect(info.dataOffset <= bytes.count)
                #expect(info.format.blockAlign == info.format.channels * info.format.bitsPerSample / 8)
                #expect(info.format.channels > 0)
                #expect((info.frameCount(fileSize: bytes.count) ?? 0) >= 0)
            }
        }
        Fuzz.forEachTruncation(of: file) { prefix in check(Array(prefix)) }
        Fuzz.forEachMutation(of: file, count: Self.mutations) { mutated in check(mutated) }
        print("WAV: \(outcomes)")
        #expect(outcomes.total == file.count + Self.mutations)
        #expect(outcomes.values > 0 && outcomes.errors > 0 && outcomes.nils > 0)
    }
}
