import Testing
@testable import StreamShared

@Suite struct ByteReaderTests {
    @Test func readsBigAndLittleEndian() throws {
        var r = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08])
        #expect(try r.readU16BE() == 0x0102)
        #expect(try r.readU16LE() == 0x0403)
        #expect(try r.readU32BE() == 0x0506_0708)
        #expect(r.isAtEnd)
    }

    @Test func readPastEnd_throwsTruncated() {
        var r = ByteReader([0x01, 0x02, 0x03])
        #expect(throws: FormatError.self) { try r.readU32BE() }
        #expect(r.offset == 0, "a failed read must not move the cursor")
    }

    @Test func hugeSkip_throwsWithoutTrap() {
        var r = ByteReader([UInt8](repeating: 0, count: 16))
        #expect(throws: FormatError.self) { try r.skip(Int.max) }
        #expect(throws: FormatError.self) { try r.skip(-1) }
        #expect(throws: FormatError.self) { try r.readBytes(17) }
    }

    @Test func sliceOffsetsAreRelative() throws {
        let base: [UInt8] = [9, 9, 9, 0xAB, 0xCD]
        var r = ByteReader(base[3...])
        #expect(try r.readU16BE() == 0xABCD)
        try r.seek(to: 1)
        #expect(try r.readU8() == 0xCD)
    }

    @Test func bitReaderReadsAcrossBytes() throws {
        var b = BitReader([0b1010_1100, 0b0101_0011])
        #expect(try b.read(3) == 0b101)
        #expect(try b.read(7) == 0b01100_01)
        #expect(try b.read(6) == 0b010011)
        #expect(throws: FormatError.self) { try b.read(1) }
    }

    @Test func bitReaderRejectsOversizedReads() {
        var b = BitReader([UInt8](repeating: 0xFF, count: 8))
        #expect(throws: FormatError.self) { try b.read(33) }
        #expect(throws: FormatError.self) { try b.skip(65) }
    }
}
