@testable import StreamShared

/// The ALAC magic cookie in all its wrappings (bare, `alac` atom, `frma` + `alac`), the same
/// bytes as the `alac` box of an MP4 sample entry read through `MP4Movie`, and the decoder: the
/// first 24 bytes as a bare cookie, the rest as one packet (then the packet again, halved).
enum ALACTarget {
    static func run(_ bytes: [UInt8]) {
        decode(bytes)
        if let config = try? ALACSpecificConfig.parse(cookie: bytes[...]) {
            require([16, 20, 24, 32].contains(config.bitDepth), "bit depth \(config.bitDepth)")
            require((1...ALACSpecificConfig.maxChannels).contains(config.numChannels), "channels \(config.numChannels)")
            require((1...ALACSpecificConfig.maxFrameLength).contains(config.frameLength), "frame length \(config.frameLength)")
        }
        // The input as the payload of a sample entry's 'alac' box (version/flags first).
        let movie = moov(alacBox: bytes)
        if let track = (try? MP4Movie.parse(moov: movie[...]))?.audio {
            _ = try? track.alacConfig()
        }
    }

    static func decode(_ bytes: [UInt8]) {
        guard bytes.count > ALACSpecificConfig.size,
              let config = try? ALACSpecificConfig.parse(cookie: bytes.prefix(ALACSpecificConfig.size)),
              var decoder = try? ALACDecoder(config: config) else { return }
        let packet = bytes.dropFirst(ALACSpecificConfig.size)
        var samples: [Int32] = []
        let limit = Int32(truncatingIfNeeded: Int64(1) << (config.bitDepth - 1))
        for input in [packet, packet.prefix(packet.count / 2)] {
            guard let frames = try? decoder.decode(packet: input, into: &samples) else { continue }
            require(frames <= config.frameLength, "frames \(frames)")
            require(samples.count == frames * config.numChannels, "samples \(samples.count) for \(frames) frames")
            if config.bitDepth < 32 {
                require(samples.allSatisfy { $0 >= -limit && $0 < limit }, "sample beyond \(config.bitDepth) bits")
            }
        }
    }

    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] { be32(8 + body.count) + Array(type.utf8) + body }
    static func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    /// A minimal moov whose one audio track has an `alac` sample entry holding `alacBox`.
    static func moov(alacBox: [UInt8]) -> [UInt8] {
        let entryFields: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1] + [0, 0, 0, 0] + [0, 0, 0, 0] + [0, 2, 0, 16, 0, 0, 0, 0]
            + be32(44_100 << 16)
        let entry = box("alac", entryFields + box("alac", alacBox))
        let stsd = box("stsd", [0, 0, 0, 0] + be32(1) + entry)
        let empty = [0, 0, 0, 0] + be32(0)
        let stbl = box("stbl", stsd + box("stts", empty) + box("stsc", empty) + box("stsz", [0, 0, 0, 0] + be32(0) + be32(0))
                       + box("stco", empty))
        let mdhd = box("mdhd", [0, 0, 0, 0] + be32(0) + be32(0) + be32(44_100) + be32(0) + [0x55, 0xC4, 0, 0])
        let hdlr = box("hdlr", [0, 0, 0, 0] + be32(0) + Array("soun".utf8) + [UInt8](repeating: 0, count: 13))
        let tkhd = box("tkhd", [0, 0, 0, 7] + be32(0) + be32(0) + be32(1) + [UInt8](repeating: 0, count: 68))
        let trak = box("trak", tkhd + box("mdia", mdhd + hdlr + box("minf", stbl)))
        let mvhd = box("mvhd", [0, 0, 0, 0] + be32(0) + be32(0) + be32(1000) + be32(0) + [UInt8](repeating: 0, count: 80))
        return box("moov", mvhd + trak)
    }
}
