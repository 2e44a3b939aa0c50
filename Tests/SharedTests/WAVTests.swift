import Testing
@testable import StreamShared

/// Builds RIFF/WAVE files for tests.
enum WAVBuilder {
    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }

    static func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
        Array(id.utf8) + le32(body.count) + body + (body.count % 2 == 1 ? [0] : [])
    }

    static func fmt(tag: Int = 1, channels: Int = 2, rate: Int = 44_100, bits: Int = 16, blockAlign: Int? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * bits / 8
        return chunk("fmt ", le16(tag) + le16(channels) + le32(rate) + le32(rate * align) + le16(align) + le16(bits))
    }

    static func extensible(channels: Int = 2, bits: Int = 24, valid: Int = 24, subformat: Int = 1) -> [UInt8] {
        let align = channels * bits / 8
        let guidTail: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        return chunk("fmt ", le16(0xFFFE) + le16(channels) + le32(48_000) + le32(48_000 * align) + le16(align) + le16(bits)
                     + le16(22) + le16(valid) + le32(3) + le16(subformat) + guidTail)
    }

    static func file(_ chunks: [UInt8], dataBytes: Int = 16, dataSizeField: Int? = nil) -> [UInt8] {
        let data = Array("data".utf8) + le32(dataSizeField ?? dataBytes) + [UInt8](repeating: 0, count: dataBytes)
        let body = Array("WAVE".utf8) + chunks + data
        return Array("RIFF".utf8) + le32(body.count) + body
    }
}

@Suite struct WAVTests {
    func info(_ bytes: [UInt8]) throws -> WAVInfo {
        try #require(try WAV.parse(prefix: bytes[...]))
    }

    @Test(arguments: [8, 16, 24, 32])
    func integerPCM(bits: Int) throws {
        let i = try info(WAVBuilder.file(WAVBuilder.fmt(bits: bits)))
        #expect(i.format.kind == .integer)
        #expect(i.format.bitsPerSample == bits)
        #expect(i.format.blockAlign == 2 * bits / 8)
        #expect(i.dataOffset == 44)
        #expect(i.dataSize == 16)
    }

    @Test(arguments: [32, 64])
    func floatPCM(bits: Int) throws {
        let i = try info(WAVBuilder.file(WAVBuilder.fmt(tag: 3, bits: bits)))
        #expect(i.format.kind == .float)
        #expect(Probe.pcmCodecName(i.format) == "pcm_f\(bits)le")
    }

    @Test func extensiblePCMAndFloat() throws {
        let pcm = try info(WAVBuilder.file(WAVBuilder.extensible(bits: 32, valid: 24)))
        #expect(pcm.format.kind == .integer)
        #expect(pcm.format.validBitsPerSample == 24)
        #expect(pcm.format.channelMask == 3)
        let float = try info(WAVBuilder.file(WAVBuilder.extensible(bits: 32, valid: 32, subformat: 3)))
        #expect(float.format.kind == .float)
    }

    @Test func oddChunkBeforeFmt_isPadded() throws {
        let odd = WAVBuilder.chunk("junk", [1, 2, 3])        // 3 bytes + pad byte
        let i = try info(WAVBuilder.file(odd + WAVBuilder.fmt()))
        #expect(i.dataOffset == 12 + 12 + 24 + 8)
    }

    @Test func listInfoTags() throws {
        let list = WAVBuilder.chunk("LIST", Array("INFO".utf8) + WAVBuilder.chunk("INAM", Array("Name\u{0}".utf8))
                                      + WAVBuilder.chunk("IART", Array("Who\u{0}".utf8)))
        let i = try info(WAVBuilder.file(WAVBuilder.fmt() + list))
        #expect(i.tags.title == "Name")
        #expect(i.tags.artist == "Who")
    }

    @Test func unknownChunks_areSkipped() throws {
        let i = try info(WAVBuilder.file(WAVBuilder.chunk("bext", [UInt8](repeating: 1, count: 100)) + WAVBuilder.fmt()
                                         + WAVBuilder.chunk("fact", WAVBuilder.le32(4))))
        #expect(i.format.channels == 2)
    }

    @Test(arguments: [0, 0xFFFF_FFFF])
    func streamedDataSize_meansToTheEnd(field: Int) throws {
        let bytes = WAVBuilder.file(WAVBuilder.fmt(), dataBytes: 400, dataSizeField: field)
        let i = try info(bytes)
        #expect(i.dataSize == nil)
        #expect(i.frameCount(fileSize: bytes.count) == 100)
    }

    @Test func missingFmt_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file([])[...]) }
    }

    @Test func notRIFF_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: Array("RIFX\0\0\0\0WAVEfmt ".utf8)[...]) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: Array("RIFF\0\0\0\0AVI LIST".utf8)[...]) }
    }

    @Test func truncatedBeforeData_isNil() throws {
        let bytes = WAVBuilder.file(WAVBuilder.fmt())
        #expect(try WAV.parse(prefix: bytes.prefix(30)) == nil)
        #expect(try WAV.parse(prefix: bytes.prefix(40)) == nil)
    }

    @Test func blockAlignMismatch_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(blockAlign: 3))[...]) }
    }

    @Test func unsupportedBits_throw() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(bits: 12, blockAlign: 3))[...]) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(tag: 3, bits: 16))[...]) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(tag: 2))[...]) }
    }

    @Test(.timeLimit(.minutes(1))) func truncationsAndMutations() {
        let list = WAVBuilder.chunk("LIST", Array("INFO".utf8) + WAVBuilder.chunk("INAM", Array("T\u{0}".utf8)))
        let sample = WAVBuilder.file(WAVBuilder.chunk("odd", [9]) + WAVBuilder.extensible() + list, dataBytes: 60)
        var outcomes = 0
        Fuzz.forEachTruncation(of: sample) { prefix in
            _ = try? WAV.parse(prefix: prefix)
            outcomes += 1
        }
        var values = 0, errors = 0
        Fuzz.forEachMutation(of: sample, count: 10_000) { mutated in
            do { _ = try WAV.parse(prefix: mutated[...]); values += 1 } catch { errors += 1 }
        }
        #expect(outcomes == sample.count)
        #expect(values + errors == 10_000)
        #expect(values > 0 && errors > 0)
    }
}
