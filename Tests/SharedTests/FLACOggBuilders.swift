@testable import StreamShared

/// Builds FLAC and Ogg bytes for the tests: real checksums, made-up audio payloads.
enum FLACOggBuilders {
    static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func be32(_ v: Int) -> [UInt8] { (0..<4).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func be16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }

    /// A STREAMINFO body.
    static func streamInfo(minBlock: Int = 4096, maxBlock: Int = 4096, rate: Int = 44_100, channels: Int = 2, bits: Int = 16,
                           totalSamples: Int, md5: [UInt8] = Array(1...16)) -> [UInt8] {
        let packed = UInt64(rate) << 44 | UInt64(channels - 1) << 41 | UInt64(bits - 1) << 36 | UInt64(totalSamples)
        return be16(minBlock) + be16(maxBlock) + [0, 0, 0] + [0, 0, 0] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: packed >> (8 * UInt64($0))) } + md5
    }

    /// A metadata block: header (last flag, type, 24-bit length) and body.
    static func block(_ type: Int, _ body: [UInt8], last: Bool = false, length: Int? = nil) -> [UInt8] {
        let n = length ?? body.count
        return [UInt8(type) | (last ? 0x80 : 0), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)] + body
    }

    /// UTF-8-style coding of a frame or sample number.
    static func codedNumber(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        var bytes: [UInt8] = []
        var value = n
        var count = 1
        while true {
            bytes.insert(0x80 | UInt8(value & 0x3F), at: 0)
            value >>= 6
            count += 1
            // The lead byte holds 7 - count bits (count bytes in all).
            if value < 1 << (7 - count) || count == 7 { break }
        }
        let lead: UInt8 = count == 7 ? 0xFE : UInt8((0xFF00 >> count) & 0xFF) | UInt8(value)
        return [lead] + bytes
    }

    /// A frame header with a correct CRC-8 (fixed block size 4096 at 44.1 kHz, stereo, 16 bits unless told).
    static func frameHeader(number: Int, variable: Bool = false, blockCode: UInt8 = 12, rateCode: UInt8 = 9,
                            channelCode: UInt8 = 1, bitsCode: UInt8 = 4, extra: [UInt8] = []) -> [UInt8] {
        var header: [UInt8] = [0xFF, variable ? 0xF9 : 0xF8, blockCode << 4 | rateCode, channelCode << 4 | bitsCode << 1]
        header += codedNumber(number) + extra
        return header + [FLACCRC.crc8(header[...])]
    }

    /// A whole frame: header, `payload` (not real subframes: this reads no audio), CRC-16.
    static func frame(header: [UInt8], payload: [UInt8]) -> [UInt8] {
        let body = header + payload
        return body + be16(Int(FLACCRC.crc16(body[...])))
    }

    /// Payload bytes free of sync codes.
    static func payload(_ n: Int, seed: UInt8 = 0) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 * 7 + Int(seed)) & 0x7F } }

    /// A FLAC file of `frames` frames of 4096 samples (the last `lastBlock`), STREAMINFO saying `declaredTotal`.
    static func flacFile(frames: Int = 3, lastBlock: Int = 1000, declaredTotal: Int? = nil, blocks: [[UInt8]] = []) -> [UInt8] {
        let total = (frames - 1) * 4096 + lastBlock
        var bytes = Array("fLaC".utf8) + block(0, streamInfo(totalSamples: declaredTotal ?? total), last: blocks.isEmpty)
        for (i, b) in blocks.enumerated() {
            var b = b
            if i == blocks.count - 1 { b[0] |= 0x80 }
            bytes += b
        }
        for n in 0..<frames {
            let header = n == frames - 1
                ? frameHeader(number: n, blockCode: 7, extra: be16(lastBlock - 1))
                : frameHeader(number: n)
            bytes += frame(header: header, payload: payload(200 + n, seed: UInt8(n)))
        }
        return bytes
    }

    /// A Vorbis comment block body.
    static func vorbisComment(vendor: String = "test", _ fields: [String]) -> [UInt8] {
        var bytes = le32(vendor.utf8.count) + Array(vendor.utf8) + le32(fields.count)
        for field in fields { bytes += le32(field.utf8.count) + Array(field.utf8) }
        return bytes
    }

    /// A PICTURE block body.
    static func picture(type: Int = 3, mime: String = "image/png", data: [UInt8]) -> [UInt8] {
        be32(type) + be32(mime.utf8.count) + Array(mime.utf8) + be32(4) + Array("desc".utf8)
            + be32(1) + be32(2) + be32(24) + be32(0) + be32(data.count) + data
    }

    /// One Ogg page with a correct CRC-32.
    static func oggPage(serial: Int, sequence: Int, granule: Int64, flags: UInt8 = 0, lacing: [UInt8], body: [UInt8]) -> [UInt8] {
        var page = Array("OggS".utf8) + [0, flags]
        page += (0..<8).map { UInt8(truncatingIfNeeded: granule >> (8 * Int64($0))) }
        page += le32(serial) + le32(sequence) + [0, 0, 0, 0] + [UInt8(lacing.count)] + lacing + body
        let crc = OggCRC.crc32(page[...])
        page.replaceSubrange(22..<26, with: le32(Int(crc)))
        return page
    }

    /// Lacing values for whole packets on one page.
    static func lacing(_ packets: [[UInt8]]) -> [UInt8] {
        var values: [UInt8] = []
        for p in packets { values += Array(repeating: 255, count: p.count / 255) + [UInt8(p.count % 255)] }
        return values
    }

    /// A logical stream as pages: each packet on its own page(s), split at 255 × 255 bytes;
    /// the header packets with granule 0, the audio packets with `granules`.
    static func oggStream(serial: Int, headers: [[UInt8]], audio: [[UInt8]], granules: [Int64], eos: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        var sequence = 0
        let all = headers + audio
        for (i, packet) in all.enumerated() {
            let granule: Int64 = i < headers.count ? 0 : granules[i - headers.count]
            var rest = packet[...]
            var continued = false
            repeat {
                let piece = rest.prefix(255 * 255)
                rest = rest.dropFirst(piece.count)
                let finishes = rest.isEmpty && piece.count < 255 * 255
                var lacing = Array(repeating: UInt8(255), count: piece.count / 255)
                if finishes { lacing.append(UInt8(piece.count % 255)) }
                var flags: UInt8 = continued ? 1 : 0
                if i == 0 { flags |= 2 }
                if eos, i == all.count - 1, finishes { flags |= 4 }
                out += oggPage(serial: serial, sequence: sequence, granule: finishes ? granule : -1, flags: flags,
                               lacing: lacing, body: Array(piece))
                sequence += 1
                continued = true
                if !finishes, rest.isEmpty {
                    // A packet of exactly 255 × 255 × n bytes ends with an empty piece.
                    out += oggPage(serial: serial, sequence: sequence, granule: granule, flags: 1, lacing: [0], body: [])
                    sequence += 1
                    break
                }
            } while !rest.isEmpty
        }
        return out
    }

    static func opusHead(channels: Int = 2, preSkip: Int = 312, rate: Int = 44_100, gain: Int16 = 0,
                         family: UInt8 = 0, mapping: [UInt8] = []) -> [UInt8] {
        Array("OpusHead".utf8) + [1, UInt8(channels)] + [UInt8(preSkip & 0xFF), UInt8(preSkip >> 8)] + le32(rate)
            + [UInt8(truncatingIfNeeded: gain), UInt8(truncatingIfNeeded: gain >> 8), family] + mapping
    }

    static func opusTags(_ fields: [String]) -> [UInt8] { Array("OpusTags".utf8) + vorbisComment(fields) }

    static func vorbisID(channels: Int = 2, rate: Int = 44_100) -> [UInt8] {
        [1] + Array("vorbis".utf8) + le32(0) + [UInt8(channels)] + le32(rate) + le32(0) + le32(128_000) + le32(0) + [0xB8, 1]
    }
}
