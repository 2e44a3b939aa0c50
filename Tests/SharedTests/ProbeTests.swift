import Testing
import TestSupport
@testable import StreamShared

@Suite struct ProbeTests {
    /// A minimal ID3v2.3 tag with one TIT2 frame.
    static func id3(title: String) -> [UInt8] {
        let text: [UInt8] = [0] + Array(title.utf8)
        let frame: [UInt8] = Array("TIT2".utf8) + MPEGBuilder.be32(UInt32(text.count)) + [0, 0] + text
        let size = frame.count
        let synchsafe: [UInt8] = [UInt8(size >> 21 & 0x7F), UInt8(size >> 14 & 0x7F), UInt8(size >> 7 & 0x7F), UInt8(size & 0x7F)]
        return Array("ID3".utf8) + [3, 0, 0] + synchsafe + frame
    }

    static func wavHeader(dataBytes: Int) -> [UInt8] {
        var b: [UInt8] = Array("RIFF".utf8) + le32(36 + dataBytes) + Array("WAVE".utf8)
        b += Array("fmt ".utf8) + le32(16) + le16(1) + le16(2) + le32(44_100) + le32(44_100 * 4) + le16(4) + le16(16)
        b += Array("data".utf8) + le32(dataBytes)
        return b
    }

    func audio(_ result: Probe.Result) throws -> ProbedStream {
        guard case .audio(let stream) = result else {
            Issue.record("expected audio, got \(result)")
            throw FormatError.notAudio(reason: "test")
        }
        return stream
    }

    @Test func mp3AfterID3v2() throws {
        let tag = Self.id3(title: "Hello")
        let bytes = tag + MPEGBuilder.frames(MPEGBuilder.header(), count: 4)
        let stream = try audio(try Probe.probe(bytes[...], isComplete: false))
        #expect(stream.container == .mp3)
        #expect(stream.codec == "mp3")
        #expect(stream.firstFrameOffset == tag.count)
        #expect(stream.tags.title == "Hello")
    }

    @Test func mp3AfterJunk() throws {
        let junk = [UInt8](repeating: 0x11, count: 333)
        let stream = try audio(try Probe.probe((junk + MPEGBuilder.frames(MPEGBuilder.header(), count: 4))[...], isComplete: false))
        #expect(stream.firstFrameOffset == 333)
    }

    @Test func xingHeaderIsRead() throws {
        let bytes = MPEGBuilder.xingFrame(frames: 3, bytes: 4 * 417) + MPEGBuilder.frames(MPEGBuilder.header(), count: 3)
        let stream = try audio(try Probe.probe(bytes[...], isComplete: true))
        #expect(stream.vbrHeader?.frameCount == 3)
        #expect(stream.vbrHeader?.gapless?.encoderDelay == 576)
    }

    @Test func layer2IsMP2() throws {
        let raw = MPEGBuilder.header(layer: 2, bitrateIndex: 10)
        let stream = try audio(try Probe.probe(MPEGBuilder.frames(raw, count: 4)[...], isComplete: false))
        #expect(stream.codec == "mp2")
    }

    @Test func wavHeader() throws {
        let bytes = Self.wavHeader(dataBytes: 400) + [UInt8](repeating: 0, count: 400)
        let stream = try audio(try Probe.probe(bytes[...], isComplete: true))
        #expect(stream.container == .wav)
        #expect(stream.codec == "pcm_s16le")
        #expect(stream.firstFrameOffset == 44)
    }

    @Test func mp4Signature() throws {
        let bytes: [UInt8] = [0, 0, 0, 24] + Array("ftypM4A ".utf8) + [0, 0, 2, 0] + Array("isomM4A ".utf8)
        let stream = try audio(try Probe.probe(bytes[...], isComplete: false))
        #expect(stream.container == .mp4)
    }

    @Test func flacAfterID3v2_isFLAC() throws {
        let file = Self.id3(title: "x") + FLACOggBuilders.flacFile()
        let stream = try audio(try Probe.probe(file[...], isComplete: true))
        #expect(stream.container == .flac && stream.codec == "flac")
        // The first frame: behind the tag, the marker and the STREAMINFO block (4 + 4 + 34 bytes).
        #expect(stream.firstFrameOffset == Self.id3(title: "x").count + 42, "the first frame's offset")
        #expect(file[stream.firstFrameOffset] == 0xFF && file[stream.firstFrameOffset + 1] & 0xFE == 0xF8)
        #expect(stream.container.mimeType == "audio/flac")
    }

    @Test func oggOpusAndVorbis_areNamedByTheirFirstPacket() throws {
        let opus = FLACOggBuilders.oggStream(serial: 7, headers: [FLACOggBuilders.opusHead(), FLACOggBuilders.opusTags([])],
                                             audio: [[0xFC]], granules: [960])
        #expect(try audio(try Probe.probe(opus[...], isComplete: true)).codec == "opus")
        let vorbis = FLACOggBuilders.oggStream(serial: 7, headers: [FLACOggBuilders.vorbisID()], audio: [], granules: [])
        let stream = try audio(try Probe.probe(vorbis[...], isComplete: true))
        #expect(stream.container == .ogg && stream.codec == "vorbis")
        // Cut inside the first page: more bytes, not a verdict.
        guard case .needMore(let atLeast) = try Probe.probe(opus.prefix(20), isComplete: false) else {
            Issue.record("a cut first page is not a verdict")
            return
        }
        #expect(atLeast > 20)
    }

    @Test func oggFLACAndSpeex_areRefusedByName() {
        let flac = FLACOggBuilders.oggStream(serial: 1, headers: [OggFLACHeader.magic + [1, 0, 0, 0] + Array("fLaC".utf8)
                                                                 + FLACOggBuilders.block(0, FLACOggBuilders.streamInfo(totalSamples: 10))],
                                             audio: [], granules: [])
        let error = #expect(throws: FormatError.self) { try Probe.probe(flac[...], isComplete: true) }
        #expect(String(describing: error).contains("Ogg FLAC"), "\(String(describing: error))")
        let theora = FLACOggBuilders.oggStream(serial: 1, headers: [[0x80] + Array("theora".utf8) + [0, 0]], audio: [], granules: [])
        let none = #expect(throws: FormatError.self) { try Probe.probe(theora[...], isComplete: true) }
        #expect(String(describing: none).contains("no Opus or Vorbis"), "\(String(describing: none))")
    }

    @Test func aiff_isBigEndianPCM() throws {
        let file = AIFFTests.form(AIFFTests.comm(frames: 2) + AIFFTests.ssnd([1, 2, 3, 4, 5, 6, 7, 8]))
        let stream = try audio(try Probe.probe(file[...], isComplete: true))
        #expect(stream.container == .aiff && stream.codec == "pcm_s16be")
        #expect(stream.firstFrameOffset == file.count - 8)
        let sowt = AIFFTests.form("AIFC", AIFFTests.comm(frames: 1, bits: 24, compression: "sowt") + AIFFTests.ssnd([1, 2, 3, 4, 5, 6]))
        #expect(try audio(try Probe.probe(sowt[...], isComplete: true)).codec == "pcm_s24le")
    }

    @Test func html_isNotAudio() {
        let page = Array("<!DOCTYPE html>\n<html><body>404</body></html>".utf8)
        #expect(throws: FormatError.notAudio(reason: "starts with '<!DOCTYPE html>'")) {
            try Probe.probe(page[...], isComplete: false)
        }
    }

    @Test func json_isNotAudio() {
        let text = Array(#"{"error": "not found"}"#.utf8)
        #expect(throws: FormatError.self) { try Probe.probe(text[...], isComplete: true) }
    }

    @Test func empty_isNotAudioWhenComplete() throws {
        #expect(throws: FormatError.notAudio(reason: "empty")) { try Probe.probe([][...], isComplete: true) }
        #expect(try Probe.probe([][...], isComplete: false) == .needMore(atLeast: 16))
    }

    @Test func partialID3_asksForTheWholeTag() throws {
        let tag = Self.id3(title: String(repeating: "x", count: 5000))
        let result = try Probe.probe(tag.prefix(100), isComplete: false)
        guard case .needMore(let atLeast) = result else {
            Issue.record("expected needMore, got \(result)")
            return
        }
        #expect(atLeast >= tag.count)
    }

    @Test func randomBytes_areNotAudio() {
        var rng = SplitMix64(seed: 42)
        let noise = (0..<(Probe.maxJunk + 10_000)).map { _ in UInt8.random(in: 0...0xFE, using: &rng) }
        #expect(throws: FormatError.self) { try Probe.probe(noise[...], isComplete: true) }
    }

    @Test(.timeLimit(.scaledMinutes(5))) func mutations_endCleanly() {
        let base = Self.id3(title: "T") + MPEGBuilder.xingFrame(frames: 5, bytes: 5 * 417)
            + MPEGBuilder.frames(MPEGBuilder.header(), count: 5)
        var outcomes = 0
        Fuzz.forEachMutation(of: base, count: 10_000, seed: 99) { mutated in
            do { _ = try Probe.probe(mutated[...], isComplete: true) } catch {}
            outcomes += 1
        }
        #expect(outcomes == 10_000)
    }
}
