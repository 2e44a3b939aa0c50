import Testing
@testable import StreamShared

/// FLAC on crafted bytes: STREAMINFO, frame headers (every code), the frame scanner's CRC
/// checks against false syncs, tags around the stream, and lying sizes.
@Suite struct FLACTests {
    typealias B = FLACOggBuilders

    @Test func streamInfo_readsEveryField() throws {
        let info = try FLACStreamInfo.parse(B.streamInfo(minBlock: 1152, maxBlock: 4608, rate: 96_000, channels: 6, bits: 24,
                                                         totalSamples: 96_000 * 86_400 + 17)[...])
        #expect(info.minBlockSize == 1152 && info.maxBlockSize == 4608)
        #expect(info.sampleRate == 96_000 && info.channels == 6 && info.bitsPerSample == 24)
        #expect(info.totalSamples == 96_000 * 86_400 + 17)
        #expect(info.md5 == Array(1...16) && info.md5IfSet != nil)
    }

    @Test func streamInfo_refusesBadValues() {
        #expect(throws: FormatError.self) { try FLACStreamInfo.parse(B.streamInfo(rate: 0, totalSamples: 0)[...]) }
        #expect(throws: FormatError.self) { try FLACStreamInfo.parse(B.streamInfo(minBlock: 4096, maxBlock: 1024, totalSamples: 0)[...]) }
        #expect(throws: FormatError.self) { try FLACStreamInfo.parse(B.streamInfo(totalSamples: 0).dropLast()) }
        #expect(throws: FormatError.self) { try FLACStreamInfo.parse(B.streamInfo(bits: 3, totalSamples: 0)[...]) }
        // 2^36 - 1 samples at 1 Hz is beyond a week.
        #expect(throws: FormatError.self) { try FLACStreamInfo.parse(B.streamInfo(rate: 1, totalSamples: (1 << 36) - 1)[...]) }
    }

    @Test func frameHeader_blockSizeCodes() throws {
        let expected: [UInt8: Int] = [1: 192, 2: 576, 3: 1152, 4: 2304, 5: 4608, 8: 256, 9: 512, 10: 1024, 11: 2048,
                                      12: 4096, 13: 8192, 14: 16384, 15: 32768]
        for (code, size) in expected {
            let header = try #require(try FLACFrameHeader.parse(B.frameHeader(number: 0, blockCode: code)[...]))
            #expect(header.blockSize == size, "code \(code)")
        }
        let eight = try #require(try FLACFrameHeader.parse(B.frameHeader(number: 0, blockCode: 6, extra: [99])[...]))
        #expect(eight.blockSize == 100)
        let sixteen = try #require(try FLACFrameHeader.parse(B.frameHeader(number: 0, blockCode: 7, extra: [0xFF, 0xFE])[...]))
        #expect(sixteen.blockSize == 65535)
        // 0xFFFF + 1 = 65536 is codable but forbidden; code 0 is reserved.
        #expect(throws: FormatError.self) { try FLACFrameHeader.parse(B.frameHeader(number: 0, blockCode: 7, extra: [0xFF, 0xFF])[...]) }
        #expect(throws: FormatError.self) { try FLACFrameHeader.parse(B.frameHeader(number: 0, blockCode: 0)[...]) }
    }

    @Test func frameHeader_rateChannelAndBitCodes() throws {
        let rates: [UInt8: Int?] = [0: nil, 1: 88_200, 2: 176_400, 3: 192_000, 4: 8000, 5: 16_000, 6: 22_050, 7: 24_000,
                                    8: 32_000, 9: 44_100, 10: 48_000, 11: 96_000]
        for (code, rate) in rates {
            let header = try #require(try FLACFrameHeader.parse(B.frameHeader(number: 0, rateCode: code)[...]))
            #expect(header.sampleRate == rate, "rate code \(code)")
        }
        #expect(try FLACFrameHeader.parse(B.frameHeader(number: 0, rateCode: 12, extra: [50])[...])?.sampleRate == 50_000)
        #expect(try FLACFrameHeader.parse(B.frameHeader(number: 0, rateCode: 13, extra: [0x8A, 0x8B])[...])?.sampleRate == 35_467)
        #expect(try FLACFrameHeader.parse(B.frameHeader(number: 0, rateCode: 14, extra: [0x11, 0x3A])[...])?.sampleRate == 44_100)
        #expect(throws: FormatError.self) { try FLACFrameHeader.parse(B.frameHeader(number: 0, rateCode: 15)[...]) }

        for code in UInt8(0)...7 {
            let header = try #require(try FLACFrameHeader.parse(B.frameHeader(number: 0, channelCode: code)[...]))
            #expect(header.channels == Int(code) + 1 && header.channelAssignment == .independent)
        }
        let stereo: [UInt8: FLACFrameHeader.ChannelAssignment] = [8: .leftSide, 9: .rightSide, 10: .midSide]
        for (code, assignment) in stereo {
            let header = try #require(try FLACFrameHeader.parse(B.frameHeader(number: 0, channelCode: code)[...]))
            #expect(header.channels == 2 && header.channelAssignment == assignment)
        }
        #expect(throws: FormatError.self) { try FLACFrameHeader.parse(B.frameHeader(number: 0, channelCode: 11)[...]) }

        let bits: [UInt8: Int?] = [0: nil, 1: 8, 2: 12, 4: 16, 5: 20, 6: 24, 7: 32]
        for (code, depth) in bits {
            #expect(try FLACFrameHeader.parse(B.frameHeader(number: 0, bitsCode: code)[...])?.bitsPerSample == depth, "bits code \(code)")
        }
        #expect(throws: FormatError.self) { try FLACFrameHeader.parse(B.frameHeader(number: 0, bitsCode: 3)[...]) }
    }

    @Test func frameHeader_codedNumbers() throws {
        for n in [0, 127, 128, 2047, 2048, 65535, 1 << 20, (1 << 31) - 1] {
            let header = try #require(try FLACFrameHeader.parse(B.frameHeader(number: n)[...]))
            #expect(header.codedNumber == n && !header.isVariableBlockSize)
            #expect(header.firstSample(nominalBlockSize: 4096) == n * 4096)
        }
        // A 36-bit sample number needs the 7-byte form, allowed only in variable-block-size streams.
        let sample = (1 << 36) - 5
        let variable = try #require(try FLACFrameHeader.parse(B.frameHeader(number: sample, variable: true)[...]))
        #expect(variable.codedNumber == sample && variable.firstSample(nominalBlockSize: 4096) == sample)
        #expect(throws: FormatError.self) { try FLACFrameHeader.parse(B.frameHeader(number: sample)[...]) }
        // A continuation byte that is not 10xxxxxx.
        var bad = B.frameHeader(number: 300)
        bad[5] = 0x40
        #expect(throws: FormatError.self) { try FLACFrameHeader.parse(bad[...]) }
    }

    @Test func frameHeader_crc8MismatchAndTruncation() throws {
        var header = B.frameHeader(number: 7)
        header[header.count - 1] ^= 0x01
        #expect(throws: FormatError.invalid(component: "flac-frame", reason: "header CRC-8 mismatch", offset: 5)) {
            try FLACFrameHeader.parse(header[...])
        }
        let whole = B.frameHeader(number: 1 << 20, rateCode: 13, extra: [0x8A, 0x8B])
        for cut in 0..<whole.count {
            #expect(try FLACFrameHeader.parse(whole.prefix(cut)) == nil, "cut at \(cut)")
        }
    }

    /// A payload holding a sync code and a header with a valid CRC-8: the scanner must not end
    /// the frame there, since the CRC-16 up to it does not hold.
    @Test func scanner_falseSyncInsideAFrameIsNotBelieved() throws {
        let fake = B.frameHeader(number: 1)
        let first = B.frame(header: B.frameHeader(number: 0), payload: B.payload(50) + fake + B.payload(60))
        let second = B.frame(header: B.frameHeader(number: 1), payload: B.payload(80, seed: 3))
        let bytes = first + second
        let scanner = FLACFrameScanner(bytes[...], isComplete: true)
        let frame = try #require(scanner.frame(at: 0))
        #expect(frame.length == first.count)
        let next = try #require(scanner.nextFrame(from: 1))
        #expect(next.offset == first.count && next.length == second.count)
        // From inside the first frame, the fake header is a sync with a valid CRC-8 but no frame ends right.
        #expect(scanner.frame(at: 4 + 50) == nil)
        let last = try #require(scanner.lastFrame(window: bytes.count))
        #expect(last.offset == first.count && last.header.codedNumber == 1)
    }

    /// Headers with a valid CRC-8 but no frame behind them: a search tries 64 of them, not all.
    @Test func scanner_boundsTheHeadersItTries() throws {
        let fake = B.frameHeader(number: 0) + [0x11, 0x22]
        let real = B.frame(header: B.frameHeader(number: 0), payload: B.payload(30))
        let bytes = Array([[UInt8]](repeating: fake, count: 100).joined()) + real
        let scanner = FLACFrameScanner(bytes[...], isComplete: true)
        #expect(scanner.nextFrame(from: 0) == nil)
        #expect(scanner.nextFrame(from: 0, maxTries: 101)?.offset == 100 * fake.count)
        #expect(scanner.nextFrame(from: 0, through: 99 * fake.count, maxTries: 1000) == nil)
    }

    @Test func scanner_crc16MismatchRefusesTheFrame() {
        var bytes = B.frame(header: B.frameHeader(number: 0), payload: B.payload(100))
        bytes[30] ^= 0x10
        let scanner = FLACFrameScanner(bytes[...], isComplete: true)
        #expect(scanner.frame(at: 0) == nil)
        #expect(scanner.nextFrame(from: 0) == nil)
        #expect(scanner.lastFrame(window: bytes.count) == nil)
        // Not complete: the frame's end cannot be known, so it is not believed either.
        let good = B.frame(header: B.frameHeader(number: 0), payload: B.payload(100))
        #expect(FLACFrameScanner(good[...], isComplete: false).frame(at: 0) == nil)
        #expect(FLACFrameScanner(good[...], isComplete: true).frame(at: 0)?.length == good.count)
    }

    @Test func reader_readsMetadataBlocks() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47] + Array(repeating: 7, count: 20)
        let seek = B.be32(0) + B.be32(0) + B.be32(0) + B.be32(0) + B.be16(4096)
            + Array(repeating: 0xFF, count: 8) + Array(repeating: 0, count: 10)
        let comment = B.vorbisComment(["TITLE=Song", "artist=Band", "ALBUM=Record", "ALBUMARTIST=Various", "TRACKNUMBER=3",
                                       "TRACKTOTAL=12", "DISCNUMBER=1", "DATE=2004-05-01", "GENRE=Jazz",
                                       "REPLAYGAIN_TRACK_GAIN=-6.5 dB", "REPLAYGAIN_TRACK_PEAK=0.98", "R128_ALBUM_GAIN=-1280",
                                       "no equals sign"])
        let file = B.flacFile(blocks: [B.block(3, seek), B.block(4, comment), B.block(2, [1, 2, 3, 4]),
                                       B.block(6, B.picture(data: png)), B.block(1, Array(repeating: 0, count: 100))])
        let stream = try FLACReader.read(MemoryBytes(file))
        #expect(stream.blockTypes == [0, 3, 4, 2, 6, 1])
        #expect(stream.seekPoints == [FLACSeekPoint(sampleNumber: 0, byteOffset: 0, sampleCount: 4096),
                                      FLACSeekPoint(sampleNumber: nil, byteOffset: 0, sampleCount: 0)])
        #expect(stream.totalSamples == 2 * 4096 + 1000)
        #expect(stream.audioStart == stream.metadataEnd && stream.audioEnd == file.count)
        let tags = stream.tags
        #expect(tags.title == "Song" && tags.artist == "Band" && tags.album == "Record" && tags.albumArtist == "Various")
        #expect(tags.track == "3/12" && tags.disc == "1" && tags.date == "2004-05-01" && tags.genre == "Jazz")
        #expect(tags.replayGain == ReplayGain(trackGain: -6.5, trackPeak: 0.98, albumGain: -5 + 5))
        #expect(tags.coverArtBytes == png.count)
        #expect(stream.pictures.first?.embedded.mimeType == "image/png")
        #expect(stream.comment?.r128AlbumGain == -5)
    }

    @Test func reader_id3InFrontAndTagsBehind_totalSamplesZeroFromTheLastFrame() throws {
        let audio = B.flacFile(frames: 4, lastBlock: 333, declaredTotal: 0)
        let id3 = Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 20] + Array(repeating: 0, count: 20)
        let ape = Array("APETAGEX".utf8) + B.le32(2000) + B.le32(32) + B.le32(0) + B.le32(0) + Array(repeating: 0, count: 8)
        let id3v1 = Array("TAG".utf8) + Array(repeating: 0x20, count: 125)
        let file = id3 + audio + ape + id3v1
        let stream = try FLACReader.read(MemoryBytes(file))
        #expect(stream.leadingTagBytes == 30)
        #expect(stream.audioEnd == file.count - 32 - 128)
        #expect(stream.streamInfo.totalSamples == 0)
        #expect(stream.totalSamples == 3 * 4096 + 333)
        #expect(stream.durationSeconds == Double(3 * 4096 + 333) / 44_100)
    }

    @Test func reader_refusesLyingAndMissingBlocks() {
        // A block length beyond the file.
        var oversize = B.flacFile()
        oversize[5] = 0x7F
        #expect(throws: FormatError.self) { try FLACReader.read(MemoryBytes(oversize)) }
        // Cut inside the metadata.
        let whole = B.flacFile(blocks: [B.block(4, B.vorbisComment(["TITLE=x"]))])
        #expect(throws: FormatError.truncated(component: "flac", offset: 46, needed: 23)) { try FLACReader.read(MemoryBytes(Array(whole.prefix(50)))) }
        // No STREAMINFO, and STREAMINFO twice.
        let noInfo = Array("fLaC".utf8) + B.block(1, [0, 0], last: true) + B.frame(header: B.frameHeader(number: 0), payload: B.payload(10))
        #expect(throws: FormatError.invalid(component: "flac", reason: "no STREAMINFO block", offset: 4)) { try FLACReader.read(MemoryBytes(noInfo)) }
        let twice = B.flacFile(blocks: [B.block(0, B.streamInfo(totalSamples: 5))])
        #expect(throws: FormatError.self) { try FLACReader.read(MemoryBytes(twice)) }
        // Block type 127 and a SEEKTABLE that is not whole points.
        #expect(throws: FormatError.self) { try FLACReader.read(MemoryBytes(B.flacFile(blocks: [B.block(127, [])]))) }
        #expect(throws: FormatError.self) { try FLACReader.read(MemoryBytes(B.flacFile(blocks: [B.block(3, Array(repeating: 0, count: 17))]))) }
        // Not FLAC at all.
        #expect(throws: FormatError.notAudio(reason: "no fLaC marker at offset 0")) { try FLACReader.read(MemoryBytes(Array("RIFF....".utf8))) }
    }

    @Test func reader_firstFrameMustAgreeWithStreamInfo() {
        var file = Array("fLaC".utf8) + B.block(0, B.streamInfo(channels: 1, totalSamples: 4096), last: true)
        file += B.frame(header: B.frameHeader(number: 0), payload: B.payload(40))   // a stereo frame
        #expect(throws: FormatError.self) { try FLACReader.read(MemoryBytes(file)) }
        // A frame whose CRC-16 is wrong and is not at the metadata's end: nothing believable.
        var damaged = Array("fLaC".utf8) + B.block(0, B.streamInfo(totalSamples: 4096), last: true) + [0, 0]
        var frame = B.frame(header: B.frameHeader(number: 0), payload: B.payload(40))
        frame[frame.count - 1] ^= 1
        damaged += frame
        #expect(throws: FormatError.invalid(component: "flac", reason: "no FLAC frame after the metadata", offset: 42)) {
            try FLACReader.read(MemoryBytes(damaged))
        }
    }

    @Test func reader_badTagBlocksCostOnlyThemselves() throws {
        let lying = B.le32(4) + Array("test".utf8) + B.le32(1000)   // 1000 fields in no bytes
        let file = B.flacFile(blocks: [B.block(4, lying), B.block(6, [0, 0, 0, 3])])
        let stream = try FLACReader.read(MemoryBytes(file))
        #expect(stream.unreadableBlocks == 2 && stream.comment == nil && stream.pictures.isEmpty)
        #expect(stream.totalSamples == 2 * 4096 + 1000)
    }

    @Test func vorbisComment_namesMatchInAnyASCIICaseOnly() throws {
        let comment = try VorbisComment.parse(B.vorbisComment(["title=lower", "Artist=Mixed", "replaygain_track_gain=-3.5 dB",
                                                               "ALBUM=", "album=second wins over an empty first"])[...])
        #expect(comment.value("TITLE") == "lower" && comment.value("artist") == "Mixed")
        #expect(comment.value("ALBUM") == "second wins over an empty first")
        #expect(comment.tags.replayGain?.trackGain == -3.5)
        #expect(VorbisComment.sameName("MetaData_Block_Picture", "METADATA_BLOCK_PICTURE"))
        // Only letters fold: '_' (0x5F) and DEL (0x7F) differ by the case bit, as do '[' and '{'.
        #expect(!VorbisComment.sameName("A_B", "A\u{7F}B") && !VorbisComment.sameName("[", "{"))
        #expect(!VorbisComment.sameName("TITLE", "TITLES") && !VorbisComment.sameName("TITLE", "TITLF"))
    }

    @Test func vorbisComment_picturesAndLimits() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 1, 2, 3]
        let encoded = base64(B.picture(type: 4, data: png) )
        let comment = try VorbisComment.parse(B.vorbisComment(["METADATA_BLOCK_PICTURE=" + encoded,
                                                               "METADATA_BLOCK_PICTURE=!!notbase64", "TITLE=t"])[...])
        #expect(comment.pictures.count == 1 && comment.pictures[0].data == png && comment.pictures[0].pictureType == 4)
        #expect(comment.fields == [VorbisComment.Field(name: "TITLE", value: "t")])
        #expect(comment.tags.coverArtBytes == png.count)
        // A field length past the end, and a count larger than the bytes could hold.
        #expect(throws: FormatError.self) { try VorbisComment.parse((B.le32(0) + B.le32(1) + B.le32(50) + [65])[...]) }
        #expect(throws: FormatError.self) { try VorbisComment.parse((B.le32(0) + B.le32(0x7FFF_FFFF))[...]) }
        #expect(Base64.decode(Array("TWE=".utf8)[...]) == Array("Ma".utf8))
        #expect(Base64.decode(Array("TWFu".utf8)[...]) == Array("Man".utf8))
        #expect(Base64.decode(Array("T".utf8)[...]) == nil)
        #expect(Base64.decode(Array("TW=u".utf8)[...]) == nil)
    }

    /// Standard base64 with padding, written here for the test's input.
    func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var out = ""
        var i = 0
        while i < bytes.count {
            let chunk = Array(bytes[i..<min(i + 3, bytes.count)])
            let n = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
            for k in 0..<4 { out.append(k <= chunk.count ? alphabet[(n >> (18 - 6 * k)) & 63] : "=") }
            i += 3
        }
        return out
    }
}
