import Testing
@testable import StreamShared

@Suite struct ICYStreamReaderTests {
    /// Audio bytes 0, 1, 2, … (mod 251) with `block` after every `metaint` of them, `rounds` times.
    static func stream(metaint: Int, rounds: Int, block: (Int) -> [UInt8]) -> (stream: [UInt8], audio: [UInt8]) {
        var stream: [UInt8] = [], audio: [UInt8] = []
        for round in 0..<rounds {
            let piece = (0..<metaint).map { UInt8((round * metaint + $0) % 251) }
            audio += piece
            stream += piece + block(round)
        }
        return (stream, audio)
    }

    /// Feeds `bytes` in pieces of `step`; returns the audio and the updates.
    static func read(_ bytes: [UInt8], metaint: Int, step: Int) throws(ICYStreamError) -> ([UInt8], [ICYStreamReader.Update]) {
        var reader = try ICYStreamReader(metaint: metaint)
        var audio: [UInt8] = [], updates: [ICYStreamReader.Update] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + step)
            try reader.feed(bytes[offset..<end], audio: { audio += $0 }, update: { updates.append($0) })
            offset = end
        }
        return (audio, updates)
    }

    @Test(arguments: [1, 7, 16, 1000, 100_000])
    func audioAndTitles_comeOutTheSame_inAnyPieces(step: Int) throws {
        let (stream, audio) = Self.stream(metaint: 100, rounds: 6) { round in
            round % 2 == 0 ? ICYMetadata.encode(title: "Song \(round)") : ICYMetadata.empty
        }
        let (heard, updates) = try Self.read(stream, metaint: 100, step: step)
        #expect(heard == audio)
        #expect(updates.map(\.title) == ["Song 0", "Song 2", "Song 4"])
        #expect(updates.map(\.audioOffset) == [100, 300, 500], "a title applies after the audio before its block")
    }

    @Test func zeroLengthBlock_isNoUpdate() throws {
        let (stream, audio) = Self.stream(metaint: 8, rounds: 3) { _ in [0] }
        let (heard, updates) = try Self.read(stream, metaint: 8, step: 5)
        #expect(heard == audio)
        #expect(updates.isEmpty)
    }

    @Test func allFields_andAnEmptyTitle_areKept() throws {
        let block = ICYMetadata.encode(fields: [("StreamTitle", ""), ("StreamUrl", "http://example.org/")])
        let (_, updates) = try Self.read(Array(repeating: 1, count: 4) + block, metaint: 4, step: 3)
        let update = try #require(updates.first)
        #expect(update.title == "")
        #expect(update.fields == [.init(key: "StreamTitle", value: ""), .init(key: "StreamUrl", value: "http://example.org/")])
    }

    @Test func latin1Title_isReadAsLatin1() throws {
        // "Café" in Latin-1 (0xE9), as SHOUTcast servers send it.
        var text = Array("StreamTitle='Caf".utf8) + [0xE9] + Array("';".utf8)
        text += [UInt8](repeating: 0, count: 32 - text.count)
        let (_, updates) = try Self.read([9, 9] + [2] + text, metaint: 2, step: 100)
        #expect(updates.first?.title == "Café")
    }

    @Test func printableTextThatIsNotPairs_changesNoTitle_butIsNoError() throws {
        var text = Array("just words, no pairs".utf8)
        text += [UInt8](repeating: 0, count: 32 - text.count)
        let (audio, updates) = try Self.read([1, 2, 3] + [2] + text + [4, 5, 6], metaint: 3, step: 4)
        #expect(audio == [1, 2, 3, 4, 5, 6])
        #expect(updates.first?.title == nil)
        #expect(updates.first?.unparsedText == "just words, no pairs")
    }

    @Test func lengthByteTooLarge_readsAudioAsPadding_isTypedError() throws {
        // The block says 2 units (32 bytes) but holds 1 ("StreamTitle='';" and a NUL): 16
        // bytes of MPEG audio would be read as padding.
        let block = ICYMetadata.encode(title: "")           // 1 unit
        var stream = Array(repeating: UInt8(7), count: 10) + [2] + block.dropFirst()
        stream += [0xFF, 0xFB, 0x90, 0x64] + (0..<36).map { UInt8($0 * 37 % 256) }
        #expect(throws: ICYStreamError.notMetadata(audioOffset: 10, reason: "byte 16 of 32 follows the NUL padding")) {
            _ = try Self.read(stream, metaint: 10, step: 9)
        }
    }

    @Test func metaintThatLies_readsAudioAsABlock_isTypedError() throws {
        // The server says 16 but sends no blocks: audio byte 16 (2 here) is taken as a length,
        // and the next 32 bytes of audio as a block's text.
        var audio = (0..<200).map { UInt8(($0 * 37 + 5) % 256) }
        audio[16] = 2
        #expect(throws: ICYStreamError.self) { _ = try Self.read(audio, metaint: 16, step: 64) }
        do {
            _ = try Self.read(audio, metaint: 16, step: 64)
        } catch {
            guard case .notMetadata(let offset, _) = error else { Issue.record("\(error)"); return }
            #expect(offset == 16)
            #expect(error.description.hasPrefix("icy: the metadata block after audio byte 16 is not metadata"))
        }
    }

    @Test(arguments: ["16000", " 8192 ", "1", "16777216"])
    func metaintHeader_digitsInRange_areTaken(value: String) throws {
        #expect(try ICYStreamReader.metaint(header: value) == Int(value.filter(\.isNumber)))
    }

    @Test(arguments: ["", "0", "-1", "16777217", "12a", "+5", "99999999999999999999", "1 2"])
    func metaintHeader_otherwise_isTypedError(value: String) {
        #expect(throws: ICYStreamError.badMetaint(value)) { _ = try ICYStreamReader.metaint(header: value) }
    }

    @Test func streamCutInsideABlock_saysSo() throws {
        var reader = try ICYStreamReader(metaint: 4)
        let block = ICYMetadata.encode(title: "abc")
        try reader.feed(([1, 2, 3, 4] + block.prefix(5))[...], audio: { _ in }, update: { _ in Issue.record("no whole block yet") })
        #expect(reader.isInsideBlock)
        #expect(reader.audioBytes == 4)
    }
}
