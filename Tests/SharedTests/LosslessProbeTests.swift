import Testing
@testable import StreamShared

/// Probe on FLAC and AIFF prefixes: what it tells, when it asks for more, what it refuses.
@Suite struct LosslessProbeTests {
    typealias B = FLACOggBuilders

    static func stream(_ bytes: [UInt8], isComplete: Bool = true) throws -> ProbedStream {
        guard case .audio(let stream) = try Probe.probe(bytes[...], isComplete: isComplete) else {
            throw FormatError.notAudio(reason: "probe asked for more")
        }
        return stream
    }

    @Test func flac_streamInfoSeekTableAndComment() throws {
        let seek = B.be32(0) + B.be32(0) + B.be32(0) + B.be32(0) + B.be16(4096)      // point at sample 0
            + B.be32(0) + B.be32(4096) + B.be32(0) + B.be32(300) + B.be16(4096)           // sample 4096 at +300
            + [UInt8](repeating: 0xFF, count: 8) + [UInt8](repeating: 0, count: 10)       // a placeholder
        let file = B.flacFile(blocks: [B.block(3, seek), B.block(4, B.vorbisComment(["TITLE=Probe", "ARTIST=Us"]))])
        let stream = try Self.stream(file)
        #expect(stream.container == .flac && stream.codec == "flac")
        let flac = try #require(stream.flac)
        #expect(flac.streamInfo.sampleRate == 44_100 && flac.streamInfo.channels == 2 && flac.streamInfo.bitsPerSample == 16)
        #expect(flac.seekPoints.map(\.sampleNumber) == [0, 4096] && flac.seekPoints[1].byteOffset == 300)
        #expect(stream.tags.title == "Probe" && stream.tags.artist == "Us")
        // The first frame follows the metadata.
        #expect(stream.firstFrameOffset == flac.metadataEnd)
        #expect(FLACFrameHeader.isSync(file[stream.firstFrameOffset], file[stream.firstFrameOffset + 1]))
        #expect(Container.flac.mimeType == "audio/flac")
    }

    @Test func flac_behindID3_andAskingForMore() throws {
        let tag = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, 23] + Array("TIT2".utf8) + [0, 0, 0, 13, 0, 0, 0] + Array("ID3 in front".utf8)
        let file = tag + B.flacFile(blocks: [B.block(6, B.picture(data: [UInt8](repeating: 7, count: 5000)))])
        let stream = try Self.stream(file)
        #expect(stream.container == .flac && stream.firstFrameOffset == tag.count + 4 + 38 + 4 + B.picture(data: [UInt8](repeating: 7, count: 5000)).count)
        #expect(stream.tags.title == "ID3 in front")
        // Cut inside the picture: decided (a picture is skipped, its length is in its header).
        #expect(try Self.stream(Array(file[..<(tag.count + 200)]), isComplete: false).firstFrameOffset == stream.firstFrameOffset)
        // Cut inside STREAMINFO: a longer prefix is asked for, never a guess.
        guard case .needMore(let atLeast) = try Probe.probe(file[..<(tag.count + 20)], isComplete: false) else {
            Issue.record("a cut prefix was decided")
            return
        }
        #expect(atLeast > tag.count + 20)
        #expect(throws: FormatError.self) { try Probe.probe(file[..<(tag.count + 20)], isComplete: true) }
    }

    @Test func flac_brokenMetadataIsATypedError() {
        for bytes in [Array("fLaC".utf8) + [0xFF] + [UInt8](repeating: 0xFF, count: 64),           // type 127
                      Array("fLaC".utf8) + B.block(4, B.vorbisComment([]), last: true),            // no STREAMINFO
                      Array("fLaC".utf8) + B.block(0, [1, 2, 3], last: true)] {                   // short STREAMINFO
            #expect(throws: FormatError.self) { try Probe.probe(bytes[...], isComplete: true) }
        }
    }

    @Test func aiff_andAIFC_sowt() throws {
        let samples = [UInt8](repeating: 1, count: 400)
        let plain = try Self.stream(AIFFTests.form(AIFFTests.comm(frames: 100) + AIFFTests.ssnd(samples)))
        #expect(plain.container == .aiff && plain.codec == "pcm_s16be" && plain.aiff?.format.channels == 2)
        #expect(plain.firstFrameOffset == 12 + 26 + 16)
        let sowt = try Self.stream(AIFFTests.form("AIFC", AIFFTests.comm(frames: 100, compression: "sowt") + AIFFTests.ssnd(samples)))
        #expect(sowt.codec == "pcm_s16le" && sowt.aiff?.isAIFC == true)
        let float = try Self.stream(AIFFTests.form("AIFC", AIFFTests.comm(frames: 50, bits: 32, compression: "fl32") + AIFFTests.ssnd(samples)))
        #expect(float.codec == "pcm_f32be")
        // COMM after the samples, in a prefix that stops inside them: more is asked for.
        let late = AIFFTests.form(AIFFTests.ssnd([UInt8](repeating: 0, count: 100_000)) + AIFFTests.comm(frames: 25_000))
        guard case .needMore = try Probe.probe(late[..<4096], isComplete: false) else {
            Issue.record("a prefix without COMM was decided")
            return
        }
        #expect(try Self.stream(late).container == .aiff)
        #expect(throws: FormatError.self) { try Probe.probe(AIFFTests.form(AIFFTests.ssnd(samples))[...], isComplete: true) }
    }
}
