@testable import StreamShared

/// Builds MPEG audio frames byte by byte for tests.
enum MPEGBuilder {
    /// Header bits: version 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5; layer 1...3.
    static func header(version: UInt32 = 3, layer: Int = 3, crc: Bool = false, bitrateIndex: UInt32 = 9,
                       sampleRateIndex: UInt32 = 0, padding: Bool = false, mode: UInt32 = 0) -> UInt32 {
        let layerBits: UInt32 = UInt32(4 - layer)
        var raw: UInt32 = 0xFFE0_0000
        raw |= version << 19
        raw |= layerBits << 17
        raw |= (crc ? 0 : 1) << 16
        raw |= bitrateIndex << 12
        raw |= sampleRateIndex << 10
        raw |= (padding ? 1 : 0) << 9
        raw |= mode << 6
        return raw
    }

    static func bytes(_ raw: UInt32) -> [UInt8] {
        [UInt8(raw >> 24), UInt8(raw >> 16 & 0xFF), UInt8(raw >> 8 & 0xFF), UInt8(raw & 0xFF)]
    }

    /// One frame of the given length (or the header's own length), body filled with `fill`.
    static func frame(_ raw: UInt32, length: Int? = nil, fill: UInt8 = 0x55) -> [UInt8] {
        let header = MPEGFrameHeader(raw: raw)
        let n = length ?? header?.frameLength ?? 417
        return bytes(raw) + [UInt8](repeating: fill, count: max(0, n - 4))
    }

    static func frames(_ raw: UInt32, count: Int) -> [UInt8] {
        (0..<count).flatMap { _ in frame(raw) }
    }

    static func be32(_ v: UInt32) -> [UInt8] { bytes(v) }

    /// A first frame carrying a Xing/Info header (+ LAME tag) for an MPEG-1 layer III stereo stream.
    static func xingFrame(kind: String = "Xing", frames: UInt32, bytes byteCount: UInt32, toc: Bool = true,
                          lameDelay: Int? = 576, lamePadding: Int = 1000) -> [UInt8] {
        let raw = header()
        var f = frame(raw, fill: 0)
        var tag: [UInt8] = Array(kind.utf8)
        tag += be32(toc ? 0x0F : 0x0B)
        tag += be32(frames)
        tag += be32(byteCount)
        if toc { tag += (0..<100).map { UInt8($0 * 255 / 100) } }
        tag += be32(80) // quality
        if let delay = lameDelay {
            tag += Array("LAME3.100".utf8)
            tag += [0x24, 0xA0]          // revision 2 / method 4, lowpass 16 kHz
            tag += [UInt8](repeating: 0, count: 8 + 2)
            tag += [UInt8(delay >> 4), UInt8((delay & 0xF) << 4 | (lamePadding >> 8)), UInt8(lamePadding & 0xFF)]
            tag += [0, 0, 0, 0]
            tag += be32(123_456)
            tag += [0, 0, 0, 0]
        }
        let at = 4 + 32
        for (i, b) in tag.enumerated() where at + i < f.count { f[at + i] = b }
        return f
    }
}
