import Testing
@testable import StreamShared

/// The Xing/Info tag of a first frame whose header has the CRC bit set: encoders disagree on
/// whether the tag follows the side info directly or the 2 CRC bytes as well.
@Suite struct VBRHeaderCRCTests {
    /// An MPEG-1 layer III stereo frame with a CRC, its Info + LAME tag written `at`.
    static func crcFrame(tagAt at: Int) -> (bytes: [UInt8], header: MPEGFrameHeader)? {
        let raw = MPEGBuilder.header(crc: true)
        guard let header = MPEGFrameHeader(raw: raw) else { return nil }
        let plain = MPEGBuilder.xingFrame(kind: "Info", frames: 200, bytes: 83_400, lameDelay: 576, lamePadding: 1_200)
        var frame = MPEGBuilder.bytes(raw) + [UInt8](repeating: 0, count: plain.count - 4)
        let tag = plain[36...].prefix(160)
        for (i, b) in tag.enumerated() where at + i < frame.count { frame[at + i] = b }
        return (frame, header)
    }

    @Test(arguments: [36, 38])
    func infoTagBehindCRC_isFound(offset: Int) throws {
        let (bytes, header) = try #require(Self.crcFrame(tagAt: offset))
        #expect(header.hasCRC)
        let vbr = try #require(try VBRHeader.parse(frame: bytes[...], header: header))
        #expect(vbr.kind == .info)
        #expect(vbr.frameCount == 200)
        #expect(vbr.gapless == GaplessInfo(encoderDelay: 576, encoderPadding: 1_200))
    }
}
