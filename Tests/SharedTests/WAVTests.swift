import Testing
import TestSupport
@testable import StreamShared

/// Builds RIFF/WAVE files for tests. (TrackAnalyzerTests uses `file` and `fmt` too.)
enum WAVBuilder {
    /// A chunk with its pad byte when the body is odd-sized.
    static func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
        Array(id.utf8) + le32(body.count) + body + (body.count % 2 == 1 ? [0] : [])
    }

    /// A 16-byte fmt chunk (18 with `cbSize`).
    static func fmt(tag: Int = 1, channels: Int = 2, rate: Int = 44_100, bits: Int = 16, blockAlign: Int? = nil,
                    cbSize: Int? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * bits / 8
        return chunk("fmt ", le16(tag) + le16(channels) + le32(rate) + le32(rate * align) + le16(align) + le16(bits)
                     + (cbSize.map(le16) ?? []))
    }

    /// A 40-byte WAVE_FORMAT_EXTENSIBLE fmt chunk; `subformat` is the GUID's first two bytes.
    static func extensible(channels: Int = 2, bits: Int = 24, valid: Int = 24, subformat: Int = 1,
                           mask: Int = 3, cbSize: Int = 22) -> [UInt8] {
        let align = channels * bits / 8
        let guidTail: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        return chunk("fmt ", le16(0xFFFE) + le16(channels) + le32(48_000) + le32(48_000 * align) + le16(align) + le16(bits)
                     + le16(cbSize) + le16(valid) + le32(mask) + le16(subformat) + guidTail)
    }

    /// LIST/INFO with the given subchunks, each NUL-terminated.
    static func info(_ fields: [(String, [UInt8])]) -> [UInt8] {
        chunk("LIST", Array("INFO".utf8) + fields.flatMap { chunk($0.0, $0.1 + [0]) })
    }

    static func info(_ fields: [(String, String)]) -> [UInt8] {
        info(fields.map { ($0.0, Array($0.1.utf8)) })
    }

    /// RIFF header, `chunks`, then a data chunk with `dataBytes` zero bytes.
    static func file(_ chunks: [UInt8], dataBytes: Int = 16, dataSizeField: Int? = nil, riffSizeField: Int? = nil,
                     riff: String = "RIFF") -> [UInt8] {
        let data = Array("data".utf8) + le32(dataSizeField ?? dataBytes) + [UInt8](repeating: 0, count: dataBytes)
        let body = Array("WAVE".utf8) + chunks + data
        return Array(riff.utf8) + le32(riffSizeField ?? body.count) + body
    }
}

@Suite struct WAVTests {
    func info(_ bytes: [UInt8]) throws -> WAVInfo {
        try #require(try WAV.parse(prefix: bytes[...]))
    }

    @Test(arguments: [8, 16, 24, 32])
    func integerPCM(bits: Int) throws {
        let i = try info(WAVBuilder.file(WAVBuilder.fmt(bits: bits)))
        #expect(i.format.formatTag == 1)
        #expect(i.format.kind == .integer)
        #expect(i.format.channels == 2)
        #expect(i.format.sampleRate == 44_100)
        #expect(i.format.bitsPerSample == bits)
        #expect(i.format.validBitsPerSample == bits)
        #expect(i.format.blockAlign == 2 * bits / 8)
        #expect(i.format.channelMask == nil)
        #expect(i.dataOffset == 44)
        #expect(i.dataSize == 16)
        #expect(i.tags.isEmpty)
    }

    @Test(arguments: [32, 64])
    func floatPCM(bits: Int) throws {
        let i = try info(WAVBuilder.file(WAVBuilder.fmt(tag: 3, bits: bits)))
        #expect(i.format.formatTag == 3)
        #expect(i.format.kind == .float)
        #expect(i.format.bitsPerSample == bits)
        #expect(i.format.codecName == "pcm_f\(bits)le")
    }

    @Test func fmt18WithZeroCbSize() throws {
        let i = try info(WAVBuilder.file(WAVBuilder.fmt(channels: 1, bits: 16, cbSize: 0)))
        #expect(i.format.channels == 1)
        #expect(i.dataOffset == 12 + 26 + 8)
    }

    @Test func extensiblePCM() throws {
        let i = try info(WAVBuilder.file(WAVBuilder.extensible(bits: 32, valid: 24, mask: 0x3)))
        #expect(i.format.formatTag == 0xFFFE)
        #expect(i.format.kind == .integer)
        #expect(i.format.bitsPerSample == 32)
        #expect(i.format.validBitsPerSample == 24)
        #expect(i.format.channelMask == 3)
        #expect(i.dataOffset == 12 + 48 + 8)
    }

    @Test func extensibleFloat() throws {
        let i = try info(WAVBuilder.file(WAVBuilder.extensible(channels: 6, bits: 32, valid: 32, subformat: 3, mask: 0x3F)))
        #expect(i.format.kind == .float)
        #expect(i.format.channels == 6)
        #expect(i.format.blockAlign == 24)
        #expect(i.format.channelMask == 0x3F)
    }

    @Test func extensibleValidBitsZero_meansContainerBits() throws {
        #expect(try info(WAVBuilder.file(WAVBuilder.extensible(bits: 24, valid: 0))).format.validBitsPerSample == 24)
    }

    @Test func extensibleUnknownSubformat_isUnsupported() {
        let error = #expect(throws: FormatError.self) {
            try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.extensible(subformat: 2))[...])
        }
        if case .unsupported = error {} else { Issue.record("expected .unsupported, got \(String(describing: error))") }
    }

    @Test func extensibleShortCbSize_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.extensible(cbSize: 0))[...]) }
    }

    @Test func oddChunkBeforeFmt_isPadded() throws {
        let odd = WAVBuilder.chunk("junk", [1, 2, 3])        // 3 bytes + pad byte
        let i = try info(WAVBuilder.file(odd + WAVBuilder.fmt()))
        #expect(i.dataOffset == 12 + 12 + 24 + 8)
        #expect(i.format.bitsPerSample == 16)
    }

    @Test func listInfoTitleAndArtist() throws {
        let list = WAVBuilder.info([("INAM", "Name"), ("IART", "Who")])
        let i = try info(WAVBuilder.file(WAVBuilder.fmt() + list))
        #expect(i.tags.title == "Name")
        #expect(i.tags.artist == "Who")
        #expect(i.tags.album == nil)
    }

    @Test func listInfoAlbumAndTrack() throws {
        let list = WAVBuilder.info([("IPRD", "Record"), ("ITRK", "3/12"), ("ICMT", "ignored")])
        let i = try info(WAVBuilder.file(list + WAVBuilder.fmt()))
        #expect(i.tags.album == "Record")
        #expect(i.tags.track == "3/12")
        #expect(i.tags.title == nil)
    }

    @Test func listInfoIPRTIsTheTrack() throws {
        #expect(try info(WAVBuilder.file(WAVBuilder.fmt() + WAVBuilder.info([("IPRT", "7")]))).tags.track == "7")
    }

    @Test func listInfoTextEncodings() throws {
        // UTF-8 when the bytes are valid UTF-8, else Latin-1 (0xE9 alone is "é" there).
        let list = WAVBuilder.info([("INAM", Array("Ça va — chanson".utf8)), ("IART", [0x42, 0xE9, 0x61])])
        let i = try info(WAVBuilder.file(WAVBuilder.fmt() + list))
        #expect(i.tags.title == "Ça va — chanson")
        #expect(i.tags.artist == "Béa")
    }

    @Test func listInfoOddSubchunk_isPadded() throws {
        // "Ab" + NUL is 3 bytes, so a pad byte follows before IART.
        let list = WAVBuilder.info([("INAM", "Ab"), ("IART", "Cd")])
        let i = try info(WAVBuilder.file(WAVBuilder.fmt() + list))
        #expect(i.tags.title == "Ab")
        #expect(i.tags.artist == "Cd")
    }

    @Test func listOfAnotherType_isSkipped() throws {
        let adtl = WAVBuilder.chunk("LIST", Array("adtl".utf8) + WAVBuilder.chunk("labl", [1, 0, 0, 0, 0x41, 0]))
        let i = try info(WAVBuilder.file(WAVBuilder.fmt() + adtl))
        #expect(i.tags.isEmpty)
    }

    @Test func id3Chunk_tags() throws {
        // An ID3v2.3 tag with one TIT2 frame (encoding 0, "Hi").
        let frame = Array("TIT2".utf8) + [0, 0, 0, 3, 0, 0, 0, 0x48, 0x69]
        let tag = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, UInt8(frame.count)] + frame
        let i = try info(WAVBuilder.file(WAVBuilder.fmt() + WAVBuilder.chunk("id3 ", tag)))
        #expect(i.tags.title == "Hi")
    }

    @Test func unknownChunks_areSkipped() throws {
        let i = try info(WAVBuilder.file(WAVBuilder.chunk("bext", [UInt8](repeating: 1, count: 100)) + WAVBuilder.fmt()
                                         + WAVBuilder.chunk("fact", le32(4))
                                         + WAVBuilder.chunk("\u{0}\u{0}\u{0}\u{0}", [9, 9])))
        #expect(i.format.channels == 2)
        #expect(i.dataOffset == 12 + 108 + 24 + 12 + 10 + 8)
    }

    @Test func dataSizeZero_meansToTheEnd() throws {
        let bytes = WAVBuilder.file(WAVBuilder.fmt(), dataBytes: 400, dataSizeField: 0)
        let i = try info(bytes)
        #expect(i.dataSize == nil)
        #expect(i.frameCount(fileSize: bytes.count) == 100)
        #expect(i.frameCount(fileSize: nil) == nil)
    }

    @Test func dataSizeAllOnes_meansToTheEnd() throws {
        let bytes = WAVBuilder.file(WAVBuilder.fmt(), dataBytes: 400, dataSizeField: 0xFFFF_FFFF)
        let i = try info(bytes)
        #expect(i.dataSize == nil)
        #expect(i.frameCount(fileSize: bytes.count) == 100)
    }

    @Test(arguments: [0, 0xFFFF_FFFF])
    func streamedRIFFSize_isAccepted(field: Int) throws {
        let i = try info(WAVBuilder.file(WAVBuilder.fmt(), riffSizeField: field))
        #expect(i.dataSize == 16)
    }

    @Test func frameCount_wholeBlocksOnly() throws {
        let i = try info(WAVBuilder.file(WAVBuilder.fmt(bits: 24), dataBytes: 6 * 10 + 5))
        #expect(i.dataSize == 65)
        #expect(i.frameCount(fileSize: nil) == 10)
    }

    @Test func frameCount_truncatedFile_countsWhatIsThere() throws {
        let i = try info(WAVBuilder.file(WAVBuilder.fmt(), dataBytes: 400))
        #expect(i.frameCount(fileSize: i.dataOffset + 40) == 10)
        #expect(i.frameCount(fileSize: 10) == 0)
    }

    @Test func rf64_dataSizeFromDs64() throws {
        let ds64 = WAVBuilder.chunk("ds64", le64(0) + le64(5_000_000_000) + le64(0)
                                    + le32(0))
        let i = try info(WAVBuilder.file(ds64 + WAVBuilder.fmt(), dataSizeField: 0xFFFF_FFFF, riffSizeField: 0xFFFF_FFFF,
                                         riff: "RF64"))
        #expect(i.dataSize == 5_000_000_000)
    }

    @Test func missingFmt_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file([])[...]) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.info([("INAM", "x")]))[...]) }
    }

    @Test func notRIFF_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: Array("RIFY\0\0\0\0WAVEfmt ".utf8)[...]) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: Array("<html><body>not a wav".utf8)[...]) }
    }

    @Test func riffButNotWAVE_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: Array("RIFF\0\0\0\0AVI LIST".utf8)[...]) }
    }

    @Test func shortNonRIFFPrefix_throwsAtOnce() throws {
        // Four bytes are enough to know: asking for more would only fetch more HTML.
        #expect(throws: FormatError.self) { try WAV.parse(prefix: Array("<htm".utf8)[...]) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: Array("RIFF\0\0\0\0AV".utf8)[...]) }
        #expect(try WAV.parse(prefix: Array("RI".utf8)[...]) == nil)
        #expect(try WAV.parse(prefix: Array("RIFF\0\0\0\0WA".utf8)[...]) == nil)
    }

    @Test func truncatedBeforeData_isNil() throws {
        let bytes = WAVBuilder.file(WAVBuilder.info([("INAM", "t")]) + WAVBuilder.fmt())
        let dataHeaderEnd = bytes.count - 16
        for n in 0..<dataHeaderEnd {
            #expect(try WAV.parse(prefix: bytes.prefix(n)) == nil, "\(n) bytes")
        }
        #expect(try WAV.parse(prefix: bytes.prefix(dataHeaderEnd))?.dataOffset == dataHeaderEnd,
                "the data chunk's samples are not needed")
    }

    @Test func blockAlignMismatch_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(blockAlign: 3))[...]) }
    }

    @Test func zeroChannels_throws() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(channels: 0, blockAlign: 0))[...]) }
    }

    @Test func unsupportedBits_throw() {
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(bits: 12, blockAlign: 3))[...]) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(tag: 3, bits: 16))[...]) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(tag: 3, bits: 24))[...]) }
    }

    @Test func unsupportedFormatTag_throwsUnsupported() {
        // 2 is MS ADPCM: a real WAVE file this project does not decode.
        let error = #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(tag: 2))[...]) }
        if case .unsupported = error {} else { Issue.record("expected .unsupported, got \(String(describing: error))") }
    }

    @Test func shortFmtChunk_throws() {
        let fmt14 = WAVBuilder.chunk("fmt ", le16(1) + le16(2) + le32(44_100)
                                     + le32(176_400) + le16(4))
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(fmt14)[...]) }
    }

    @Test func dataBeforeFmt_throws() {
        let bytes = WAVBuilder.file([]) + WAVBuilder.fmt()
        #expect(throws: FormatError.self) { try WAV.parse(prefix: bytes[...]) }
    }

    @Test func impossibleFmtSize_throwsWithoutWaiting() {
        // A 3 GB fmt chunk cannot exist (cbSize is 16 bits): an error now, not "send 3 GB more".
        let bytes = Array("RIFF".utf8) + le32(0) + Array("WAVEfmt ".utf8) + le32(3_000_000_000)
        #expect(throws: FormatError.self) { try WAV.parse(prefix: bytes[...]) }
    }

    @Test func hugeUnknownChunk_isNilWithoutAllocating() throws {
        // A 4 GB chunk before data: nothing is allocated from the size, the parser just needs more.
        let bytes = Array(WAVBuilder.file(WAVBuilder.fmt())[0..<36]) + Array("junk".utf8) + le32(0xFFFF_FFFF) + [1, 2, 3]
        #expect(try WAV.parse(prefix: bytes[...]) == nil)
    }

    @Test func tooManyChunks_throws() {
        // 10,001 empty chunks before data: the walk stops at its cap.
        let many = (0..<10_001).flatMap { _ in WAVBuilder.chunk("pad ", []) }
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt() + many)[...]) }
    }
}

@Suite struct WAVMediaTests {
    /// media/out/pcm16.wav: 16-bit 44.1 kHz stereo with LIST/INFO title and artist.
    @Test func generatedPCM16() throws {
        guard let bytes = try GeneratedMedia.load("pcm16.wav") else { return }
        let i = try #require(try WAV.parse(prefix: bytes.prefix(4096)))
        #expect(i.format.kind == .integer)
        #expect(i.format.bitsPerSample == 16)
        #expect(i.format.channels == 2)
        #expect(i.format.sampleRate == 44_100)
        #expect(i.format.blockAlign == 4)
        #expect(i.tags.title == "Counting over Chords")
        #expect(i.tags.artist != nil)
        let dataSize = try #require(i.dataSize)
        #expect(i.dataOffset + dataSize == bytes.count, "data runs to the end of the file")
        let frames = try #require(i.frameCount(fileSize: bytes.count))
        print("pcm16.wav: \(frames) frames = \(Double(frames) / 44_100) s, data at \(i.dataOffset)")
        guard let probe = GeneratedMedia.ffprobe(["-select_streams", "a:0", "-show_entries",
                                               "stream=duration_ts,sample_rate,channels,bits_per_sample"],
                                              file: "pcm16.wav") else { return }
        print("ffprobe: \(probe)")
        #expect(probe["duration_ts"].flatMap { Int($0) } == frames)
        #expect(probe["sample_rate"].flatMap { Int($0) } == i.format.sampleRate)
        #expect(probe["channels"].flatMap { Int($0) } == i.format.channels)
        #expect(probe["bits_per_sample"].flatMap { Int($0) } == i.format.bitsPerSample)
    }

    /// The high-resolution and float files: format fields and frame count against ffprobe.
    @Test(arguments: [("pcm24-96k.wav", PCMCoding.integer, 24, 96_000, 1),
                      ("float32.wav", PCMCoding.float, 32, 44_100, 1)])
    func generatedWAV(name: String, kind: PCMCoding, bits: Int, rate: Int, channels: Int) throws {
        guard let bytes = try GeneratedMedia.load(name) else { return }
        let i = try #require(try WAV.parse(prefix: bytes.prefix(4096)))
        #expect(i.format.kind == kind)
        #expect(i.format.bitsPerSample == bits)
        #expect(i.format.sampleRate == rate)
        #expect(i.format.channels == channels)
        let frames = try #require(i.frameCount(fileSize: bytes.count))
        print("\(name): format tag \(i.format.formatTag), \(frames) frames, data at \(i.dataOffset)")
        guard let probe = GeneratedMedia.ffprobe(["-select_streams", "a:0", "-show_entries", "stream=duration_ts"],
                                              file: name) else { return }
        #expect(probe["duration_ts"].flatMap { Int($0) } == frames)
    }
}
