import Testing
import TestSupport
@testable import StreamShared

/// The PCM variants found in real-world WAV test collections: big-endian RIFX, samples narrower
/// than their container, 64-bit integers, G.711, and tags written after the samples.
@Suite struct WAVVariantTests {
    /// A RIFX file: every header field big-endian. `data` holds the sample bytes as given.
    static func rifx(channels: Int = 2, rate: Int = 44_100, bits: Int = 16, data: [UInt8]) -> [UInt8] {
        let align = channels * bits / 8
        let fmt = Array("fmt ".utf8) + be32(16) + be16(1) + be16(channels) + be32(rate) + be32(rate * align) + be16(align) + be16(bits)
        let body = Array("WAVE".utf8) + fmt + Array("data".utf8) + be32(data.count) + data
        return Array("RIFX".utf8) + be32(body.count) + body
    }

    @Test func rifx_isParsedBigEndian() throws {
        let i = try #require(try WAV.parse(prefix: Self.rifx(data: [0, 1, 0, 2])[...]))
        #expect(i.format.bigEndian)
        #expect(i.format.channels == 2)
        #expect(i.format.sampleRate == 44_100)
        #expect(i.format.bitsPerSample == 16)
        #expect(i.dataSize == 4)
        #expect(i.format.codecName == "pcm_s16be")
    }

    /// RIFX samples are full of byte pairs that look like MPEG Layer I syncs (0xFFFx): the RIFF
    /// signature must win, never a sync scan into the PCM.
    @Test func rifxWithMPEGLikeSamples_probesAsWAV() throws {
        // A Layer I header (FF FF) repeated: a scan would confirm three frames in a row.
        let layer1Header: [UInt8] = [0xFF, 0xFF, 0x90, 0x00]
        var samples: [UInt8] = []
        for _ in 0..<4096 { samples += layer1Header }
        guard case .audio(let stream) = try Probe.probe(Self.rifx(data: samples)[...], isComplete: true) else {
            Issue.record("probe wants more bytes of a complete file")
            return
        }
        #expect(stream.container == .wav)
        #expect(stream.codec == "pcm_s16be")
    }

    @Test(arguments: [(12, 2), (20, 3)])
    func narrowSamplesInWiderContainers(bits: Int, container: Int) throws {
        let i = try #require(try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(bits: bits, blockAlign: 2 * container))[...]))
        #expect(i.format.kind == .integer)
        #expect(i.format.bitsPerSample == bits)
        #expect(i.format.bytesPerSample == container)
        #expect(i.format.codecName == "pcm_s\(container * 8)le")
    }

    @Test func sixtyFourBitIntegers() throws {
        let i = try #require(try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(bits: 64))[...]))
        #expect(i.format.bytesPerSample == 8)
        #expect(i.format.codecName == "pcm_s64le")
    }

    @Test(arguments: [(7, "pcm_mulaw"), (6, "pcm_alaw")])
    func g711(tag: Int, codec: String) throws {
        let i = try #require(try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(tag: tag, channels: 1, bits: 8, cbSize: 0))[...]))
        #expect(i.format.kind == (tag == 7 ? .muLaw : .aLaw))
        #expect(i.format.codecName == codec)
    }

    @Test func bitsWiderThanTheContainer_throw() {
        // 24 bits cannot sit in a 2-byte container.
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(bits: 24, blockAlign: 4))[...]) }
        // G.711 is 8 bits a sample.
        #expect(throws: FormatError.self) { try WAV.parse(prefix: WAVBuilder.file(WAVBuilder.fmt(tag: 7, bits: 16))[...]) }
    }

    /// Reference points of ITU-T G.711 (Table 2a/2b decoder outputs, scaled to 16 bits as every
    /// decoder does): the largest and smallest magnitudes and the sign.
    @Test func g711_decodesTheTableEnds() {
        #expect(G711.muLawToLinear(0x00) == -32124)
        #expect(G711.muLawToLinear(0x80) == 32124)
        #expect(G711.muLawToLinear(0xFF) == 0)
        #expect(G711.muLawToLinear(0x7F) == 0)
        #expect(G711.muLawToLinear(0xFE) == 8)
        #expect(G711.aLawToLinear(0xD5) == 8)        // smallest positive step
        #expect(G711.aLawToLinear(0x55) == -8)
        #expect(G711.aLawToLinear(0xAA) == 32256)
        #expect(G711.aLawToLinear(0x2A) == -32256)
        // Both codings are monotonic over their magnitude codes.
        let mu = (0...127).map { Int(G711.muLawToLinear(UInt8(0x80 | $0))) }
        #expect(zip(mu, mu.dropFirst()).allSatisfy { $0 > $1 }, "mu-law magnitudes fall as the code rises")
    }

    /// Taggers (and ffmpeg's -write_id3v2 / bext writers) put LIST/INFO and `id3 ` after the samples.
    @Test func tagsAfterTheDataChunk_areRead() throws {
        let id3 = ID3Builder.tag(version: 3, body: ID3Builder.frame("TALB", ID3Builder.latin1("After Album"), version: 3))
        let trailing = WAVBuilder.info([("INAM", "After Title"), ("IART", "After Artist")]) + WAVBuilder.chunk("id3 ", id3)
        let file = WAVBuilder.file(WAVBuilder.fmt() + WAVBuilder.info([("INAM", "Front Title")]), dataBytes: 40) + trailing
        let analysis = try TrackAnalyzer.analyze(MemoryBytes(file))
        #expect(analysis.tags.title == "Front Title", "the chunks before the data win")
        #expect(analysis.tags.artist == "After Artist")
        #expect(analysis.tags.album == "After Album")
        #expect(analysis.frames == 10)
    }

    @Test func trailingTags_ignoreCutAndHostileChunks() {
        // A LIST chunk whose size runs past the end, then garbage: no tags, no trap.
        let cut = Array("LIST".utf8) + le32(1 << 30) + Array("INFO".utf8)
        #expect(WAV.trailingTags(cut[...], bigEndian: false).isEmpty)
        #expect(WAV.trailingTags([0xFF, 0xFF, 0xFF][...], bigEndian: true).isEmpty)
    }

    @Test(arguments: [("MAC ", "Monkey's Audio"), ("wvpk", "WavPack"), (".snd", "Sun/NeXT au")])
    func unsupportedContainers_areRefusedByName(signature: String, name: String) {
        // Bytes that would otherwise be scanned for MPEG syncs.
        let bytes = Array(signature.utf8) + [UInt8](repeating: 0xFF, count: 64)
        let error = #expect(throws: FormatError.self) { try Probe.probe(bytes[...], isComplete: true) }
        #expect(String(describing: error).contains(name), "\(String(describing: error))")
    }

    /// FLAC, Ogg and AIFF signatures are read as those formats: broken ones are refused by their
    /// own parsers, never scanned for MPEG syncs.
    @Test(arguments: [("fLaC", "flac"), ("OggS", "ogg"), ("FORM\0\0\0\u{4}AIFF", "aiff")])
    func brokenLosslessSignatures_areRefusedByTheirParser(signature: String, component: String) {
        let bytes = Array(signature.utf8) + [UInt8](repeating: 0xFF, count: 64)
        let error = #expect(throws: FormatError.self) { try Probe.probe(bytes[...], isComplete: true) }
        let text = error.map { String(describing: $0) } ?? ""
        #expect(text.hasPrefix(component), "\(text)")
    }
}
