import Testing
@testable import StreamShared

@Suite struct ICYMetadataTests {
    @Test func titleBlock_isLengthByteTimes16_NULPadded() throws {
        let block = ICYMetadata.encode(title: "Artist - Title")
        let text = "StreamTitle='Artist - Title';"
        #expect(Int(block[0]) == (text.utf8.count + 15) / 16)
        #expect(block.count == 1 + Int(block[0]) * 16)
        #expect(Array(block[1...].prefix(text.utf8.count)) == Array(text.utf8))
        #expect(block[(1 + text.utf8.count)...].allSatisfy { $0 == 0 })
    }

    @Test func textOfExactly16Bytes_needsNoPadding() {
        // "StreamTitle='';" is 15 bytes; one more character makes 16.
        let block = ICYMetadata.encode(title: "x")
        #expect(block.count == 17)
        #expect(block[0] == 1)
        #expect(block.last == UInt8(ascii: ";"))
    }

    @Test func roundTrip_keepsQuotesAndUTF8() throws {
        let title = "Sinéad O'Connor - Nothing Compares 2 U"
        let block = ICYMetadata.encode(title: title, url: "http://example.org/")
        let fields = try ICYMetadata.decode(text: block[1...])
        #expect(fields.map(\.key) == ["StreamTitle", "StreamUrl"])
        #expect(fields[0].value == title)
        #expect(fields[1].value == "http://example.org/")
    }

    @Test func quoteSemicolonInTitle_cannotEndTheValue() throws {
        let block = ICYMetadata.encode(title: "a';b'';c'\0;d")
        #expect(try ICYMetadata.title(in: block[1...]) == "a;b;c;d")
    }

    /// Found by the fuzzer: a `;` with a combining mark after it is one Character, so a quote
    /// before it was kept when the cleaning looked at Characters; readers look at bytes.
    @Test func quoteBeforeASemicolonWithACombiningMark_cannotEndTheValue() throws {
        let title = "a';\u{301}b'\r\n;c"
        let block = ICYMetadata.encode(title: title)
        #expect(try ICYMetadata.title(in: block[1...]) == "a;\u{301}b'\r\n;c", "a quote not right before the ; stays")
        // The fuzzer's input: invalid UTF-8 (replacement characters), a CR, then bytes.
        let fuzzed = String(decoding: [UInt8](repeating: 0xF3, count: 42) + [0x0D, 0xFF, 0xE1, 0x27, 0x3B, 0xCC, 0x81, 0x27], as: UTF8.self)
        let fuzzedBlock = ICYMetadata.encode(title: fuzzed)
        #expect(try ICYMetadata.title(in: fuzzedBlock[1...]) != nil)
    }

    @Test func longTitle_isCutAtACharacterBoundary() throws {
        let title = String(repeating: "é", count: 3000)   // 6000 bytes
        let block = ICYMetadata.encode(title: title)
        #expect(block[0] == 255)
        #expect(block.count == 1 + 255 * 16)
        let decoded = try #require(try ICYMetadata.title(in: block[1...]))
        #expect(decoded.allSatisfy { $0 == "é" })
        #expect(decoded.utf8.count <= ICYMetadata.maxTextBytes - "StreamTitle='';".utf8.count)
    }

    @Test func emptyBlock_isOneZeroByte() {
        #expect(ICYMetadata.empty == [0])
    }

    @Test(arguments: ["StreamTitle", "StreamTitle=x;", "StreamTitle='never ends", "='x';", "Stream Title='x';"])
    func malformedText_isAFormatError(text: String) {
        #expect(throws: FormatError.self) { try ICYMetadata.decode(text: Array(text.utf8)[...]) }
    }
}

@Suite struct AudioFrameSplitterTests {
    /// Frames the splitter keeps from `bytes` fed in pieces of `piece` bytes, and bytes skipped.
    static func split(_ bytes: [UInt8], codec: AudioFrameSplitter.Codec, piece: Int) throws -> (frames: [[UInt8]], skipped: Int) {
        var splitter = AudioFrameSplitter(codec: codec)
        var buffer: [UInt8] = []
        var fed = 0
        var frames: [[UInt8]] = []
        var skipped = 0
        var steps = 0
        while steps < 100_000 {
            steps += 1
            let complete = fed >= bytes.count
            if buffer.isEmpty && complete { break }
            switch try splitter.next(in: buffer[...], isComplete: complete) {
            case .frame(let frame):
                frames.append(Array(buffer.prefix(frame.length)))
                buffer.removeFirst(frame.length)
            case .skip(let n):
                skipped += min(n, buffer.count)
                buffer.removeFirst(min(n, buffer.count))
            case .needMore:
                let end = min(bytes.count, fed + piece)
                buffer += bytes[fed..<end]
                fed = end
                if complete { return (frames, skipped) }
            }
        }
        return (frames, skipped)
    }

    @Test(arguments: [1, 100, 4096])
    func mpeg_skipsID3AndXing_keepsEveryAudioFrame(piece: Int) throws {
        let raw = MPEGBuilder.header()
        let id3: [UInt8] = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, 20] + [UInt8](repeating: 0, count: 20)
        let xing = MPEGBuilder.xingFrame(frames: 10, bytes: 4180)
        let audio = MPEGBuilder.frames(raw, count: 10)
        let (frames, skipped) = try Self.split(id3 + xing + audio, codec: .mpeg, piece: piece)
        #expect(frames.count == 10)
        #expect(frames.joined().elementsEqual(audio))
        #expect(skipped == id3.count + xing.count)
    }

    @Test func mpeg_junkBetweenFrames_isSkipped() throws {
        let raw = MPEGBuilder.header()
        let frame = MPEGBuilder.frame(raw)
        // The first sync needs two frames behind it to be believed, so junk comes after three.
        let bytes: [UInt8] = frame + frame + frame + [1, 2, 3, 4, 5] + frame + frame + frame
        let (frames, skipped) = try Self.split(bytes, codec: .mpeg, piece: 64)
        #expect(frames.count == 6)
        #expect(skipped == 5)
    }

    @Test func mpeg_noAudioAtAll_isAnError() {
        let junk = [UInt8](repeating: 0x20, count: AudioFrameSplitter.maxJunk * 2)
        #expect(throws: FormatError.self) { try Self.split(junk, codec: .mpeg, piece: 4096) }
    }

    static func adtsFrame(length: Int) -> [UInt8] {
        // MPEG-4 AAC LC, 44.1 kHz (index 4), 2 channels, no CRC, one raw data block.
        var f = [UInt8](repeating: 0x21, count: length)
        f[0] = 0xFF
        f[1] = 0xF1
        f[2] = 0x50          // profile 1 (LC), rate index 4, private 0, channels high bit 0
        f[3] = 0x80 | UInt8((length >> 11) & 0x03)
        f[4] = UInt8((length >> 3) & 0xFF)
        f[5] = UInt8((length & 0x07) << 5) | 0x1F
        f[6] = 0xFC
        return f
    }

    @Test(arguments: [1, 50, 4096])
    func adts_framesAndSamples(piece: Int) throws {
        let frames = (0..<8).map { Self.adtsFrame(length: 200 + $0) }
        let (got, skipped) = try Self.split([9, 9, 9] + Array(frames.joined()), codec: .adts, piece: piece)
        #expect(got == frames)
        #expect(skipped == 3)
        var splitter = AudioFrameSplitter(codec: .adts)
        guard case .frame(let first) = try splitter.next(in: Array(frames.joined())[...]) else {
            Issue.record("no frame")
            return
        }
        #expect(first.samples == 1024)
        #expect(first.sampleRate == 44_100)
        #expect(first.channels == 2)
    }
}
