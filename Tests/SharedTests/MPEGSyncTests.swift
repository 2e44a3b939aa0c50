import Testing
@testable import StreamShared

@Suite struct MPEGSyncTests {
    let raw = MPEGBuilder.header()

    @Test func findsFrameAtStart() throws {
        var scanner = MPEGFrameScanner()
        let bytes = MPEGBuilder.frames(raw, count: 4)
        let frame = try #require(try scanner.findFirstFrame(in: bytes[...]))
        #expect(frame.offset == 0)
        #expect(frame.length == 417)
    }

    @Test func falseSyncInJunk_isRejected() throws {
        // Junk holding a valid-looking header whose "next frame" does not line up.
        var junk: [UInt8] = [0x00, 0x11] + MPEGBuilder.bytes(raw) + [UInt8](repeating: 0x22, count: 300)
        junk += MPEGBuilder.bytes(MPEGBuilder.header(version: 2, bitrateIndex: 3)) + [0x33, 0x44]
        let bytes = junk + MPEGBuilder.frames(raw, count: 3)
        var scanner = MPEGFrameScanner()
        let frame = try #require(try scanner.findFirstFrame(in: bytes[...]))
        #expect(frame.offset == junk.count)
    }

    @Test func incompatibleNextFrame_isNotConfirmed() throws {
        // A 44.1 kHz frame followed by a 48 kHz one: not the same stream.
        let bytes = MPEGBuilder.frame(raw) + MPEGBuilder.frames(MPEGBuilder.header(sampleRateIndex: 1), count: 3)
        var scanner = MPEGFrameScanner()
        let frame = try #require(try scanner.findFirstFrame(in: bytes[...]))
        #expect(frame.offset == 417, "the lone 44.1 kHz frame must be skipped")
        #expect(frame.header.sampleRate == 48_000)
    }

    @Test func shortInput_needsMore() throws {
        var scanner = MPEGFrameScanner()
        let bytes = MPEGBuilder.frames(raw, count: 2)
        #expect(try scanner.findFirstFrame(in: bytes[...]) == nil)
        #expect(scanner.reference == nil)
    }

    @Test func completeShortStream_isAccepted() throws {
        var scanner = MPEGFrameScanner()
        let bytes = MPEGBuilder.frames(raw, count: 2)
        let frame = try #require(try scanner.findFirstFrame(in: bytes[...], isComplete: true))
        #expect(frame.offset == 0)
    }

    @Test func junkBeyondLimit_isNotAudio() {
        var scanner = MPEGFrameScanner(maxJunk: 1000)
        let bytes = [UInt8](repeating: 0x41, count: 5000)
        #expect(throws: FormatError.notAudio(reason: "no MPEG audio frame in the first 1000 bytes")) {
            try scanner.findFirstFrame(in: bytes[...])
        }
    }

    @Test func freeFormat_lengthFromNextSync() throws {
        // Free format: 500-byte frames, then a padded 501-byte frame.
        let free = MPEGBuilder.header(bitrateIndex: 0)
        let padded = MPEGBuilder.header(bitrateIndex: 0, padding: true)
        let bytes = MPEGBuilder.frame(free, length: 500, fill: 0) + MPEGBuilder.frame(free, length: 500, fill: 0)
            + MPEGBuilder.frame(padded, length: 501, fill: 0) + MPEGBuilder.frame(free, length: 500, fill: 0)
        var scanner = MPEGFrameScanner()
        let first = try #require(try scanner.findFirstFrame(in: bytes[...]))
        #expect(first.length == 500)
        #expect(scanner.freeFormatBaseLength == 500)
        var offset = 0
        var lengths: [Int] = []
        while case .frame(let f, _) = try scanner.next(in: bytes[offset...], isComplete: true) {
            lengths.append(f.length)
            offset += f.offset + f.length
        }
        #expect(lengths == [500, 500, 501, 500])
    }

    @Test func next_resyncsPastGarbage() throws {
        let bytes = MPEGBuilder.frames(raw, count: 3) + [0xDE, 0xAD, 0xBE, 0xEF, 0xFF, 0xFB] + MPEGBuilder.frames(raw, count: 3)
        var scanner = MPEGFrameScanner()
        var offset = 0
        var count = 0
        var skippedTotal = 0
        while case .frame(let f, let skipped) = try scanner.next(in: bytes[offset...], isComplete: true) {
            count += 1
            skippedTotal += skipped
            offset += f.offset + f.length
        }
        #expect(count == 6)
        #expect(skippedTotal == 6)
    }

    @Test func next_partialFrame_needsMore() throws {
        let bytes = MPEGBuilder.frames(raw, count: 3)
        var scanner = MPEGFrameScanner()
        _ = try scanner.findFirstFrame(in: bytes[...])
        #expect(try scanner.next(in: bytes[0..<400], isComplete: false) == .needMore)
        #expect(try scanner.next(in: bytes[0..<400], isComplete: true) == .end)
    }
}

@Suite struct VBRHeaderTests {
    @Test func xingWithLAMETag() throws {
        let f = MPEGBuilder.xingFrame(frames: 1000, bytes: 417_000)
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header()))
        let vbr = try #require(try VBRHeader.parse(frame: f[...], header: h))
        #expect(vbr.kind == .xing)
        #expect(vbr.frameCount == 1000)
        #expect(vbr.byteCount == 417_000)
        #expect(vbr.xingTOC?.count == 100)
        #expect(vbr.quality == 80)
        #expect(vbr.lame?.encoder == "LAME3.100")
        #expect(vbr.gapless == GaplessInfo(encoderDelay: 576, encoderPadding: 1000))
        #expect(vbr.lame?.musicLength == 123_456)
    }

    @Test func infoTagWithoutTOC() throws {
        let f = MPEGBuilder.xingFrame(kind: "Info", frames: 50, bytes: 20_850, toc: false)
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header()))
        let vbr = try #require(try VBRHeader.parse(frame: f[...], header: h))
        #expect(vbr.kind == .info)
        #expect(vbr.xingTOC == nil)
        #expect(vbr.gapless?.encoderDelay == 576)
    }

    @Test func xingWithoutLAME_hasNoGapless() throws {
        let f = MPEGBuilder.xingFrame(frames: 10, bytes: 4170, lameDelay: nil)
        let h = try #require(MPEGFrameHeader(raw: MPEGBuilder.header()))
        let vbr = try #require(try VBRHeader.parse(frame: f[...], header: h))
        #expect(vbr.lame == nil)
        #expect(vbr.gapless == nil)
    }

    @Test func plainFrame_hasNoTag() throws {
        let raw = MPEGBuilder.header()
        let h = try #require(MPEGFrameHeader(raw: raw))
        #expect(try VBRHeader.parse(frame: MPEGBuilder.frame(raw)[...], header: h) == nil)
    }

    @Test func vbriHeader() throws {
        let raw = MPEGBuilder.header()
        var f = MPEGBuilder.frame(raw, fill: 0)
        var tag: [UInt8] = Array("VBRI".utf8) + [0, 1, 0x02, 0x40, 0, 75]
        tag += MPEGBuilder.be32(100_000) + MPEGBuilder.be32(240)
        tag += [0, 3, 0, 1, 0, 2, 0, 80]          // 3 entries, scale 1, 2 bytes each, 80 frames/entry
        tag += [0x82, 0x35, 0x82, 0x35, 0x80, 0x00]
        for (i, b) in tag.enumerated() { f[36 + i] = b }
        let h = try #require(MPEGFrameHeader(raw: raw))
        let vbr = try #require(try VBRHeader.parse(frame: f[...], header: h))
        #expect(vbr.kind == .vbri)
        #expect(vbr.frameCount == 240)
        #expect(vbr.byteCount == 100_000)
        #expect(vbr.vbriDelay == 576)
        #expect(vbr.vbriTOC == [0x8235, 0x8235, 0x8000])
        #expect(vbr.vbriFramesPerEntry == 80)
    }

    @Test func vbriWithLyingEntryCount_throws() throws {
        let raw = MPEGBuilder.header()
        var f = MPEGBuilder.frame(raw, fill: 0)
        var tag: [UInt8] = Array("VBRI".utf8) + [0, 1, 0, 0, 0, 75]
        tag += MPEGBuilder.be32(1) + MPEGBuilder.be32(1)
        tag += [0xFF, 0xFF, 0, 1, 0, 4, 0, 1]    // 65535 entries of 4 bytes cannot fit in the frame
        for (i, b) in tag.enumerated() { f[36 + i] = b }
        let h = try #require(MPEGFrameHeader(raw: raw))
        #expect(throws: FormatError.self) { try VBRHeader.parse(frame: f[...], header: h) }
    }
}
