/// The sample format from a WAVE `fmt ` chunk.
public struct WAVFormat: Sendable, Equatable {
    /// 1 PCM, 3 IEEE float, 6 A-law, 7 mu-law, 0xFFFE extensible (then the subformat decides `kind`).
    public var formatTag: UInt16
    public var kind: PCMCoding
    public var channels: Int
    public var sampleRate: Int
    /// Bits per sample as the header states them: 8/16/24/32/64 for integers, or fewer than the
    /// container (12 bits in 2 bytes, 20 in 3), 32/64 for floats, 8 for G.711.
    public var bitsPerSample: Int
    /// Bits that carry signal (extensible files may say fewer than the container holds).
    public var validBitsPerSample: Int
    /// Bytes per frame (all channels of one sample instant).
    public var blockAlign: Int
    /// Speaker positions (extensible files only).
    public var channelMask: UInt32?
    /// RIFX files store samples (and every header field) big-endian.
    public var bigEndian: Bool = false

    /// Bytes each sample occupies in a frame (the container: 2 for 12-bit samples).
    public var bytesPerSample: Int { blockAlign / max(1, channels) }
    /// ffmpeg's codec name: the container width decides (12-bit samples are pcm_s16le); 8-bit is unsigned.
    public var codecName: String { kind.codecName(bytesPerSample: bytesPerSample, bigEndian: bigEndian, unsignedBytes: true) }
}

/// Where the samples are in a WAVE file, and its tags.
public struct WAVInfo: Sendable, Equatable {
    public var format: WAVFormat
    /// Offset of the first sample.
    public var dataOffset: Int
    /// Size of the data chunk; nil when the header says 0 or 0xFFFFFFFF (a streamed file: "to the end").
    public var dataSize: Int?
    /// LIST/INFO tags: INAM title, IART artist, IPRD album, ITRK/IPRT track.
    public var tags: TrackTags

    /// Whole frames of audio: `dataSize` when known, else what the file holds after the header.
    /// A known `fileSize` also caps `dataSize`, so a truncated file reports the frames it has.
    public func frameCount(fileSize: Int?) -> Int? {
        let available = fileSize.map { max(0, $0 - dataOffset) }
        guard let bytes = dataSize.map({ size in available.map { min(size, $0) } ?? size }) ?? available else { return nil }
        return bytes / max(1, format.blockAlign)
    }
}

/// Reads RIFF/WAVE headers up to the `data` chunk (RIFF, RF64 and big-endian RIFX).
public enum WAV {
    static let component = "wav"
    /// Chunks walked before giving up on finding `data` (a hostile file could hold millions).
    static let maxChunks = 10_000
    /// The largest possible fmt chunk: 18 bytes plus a 16-bit cbSize of extra bytes.
    static let maxFormatChunk = 18 + 0xFFFF
    /// The file signatures this parser reads.
    static let signatures = ["RIFF", "RF64", "RIFX"]

    /// Reads 16- and 32-bit header fields in the file's byte order (RIFX is big-endian throughout).
    struct FieldReader {
        var reader: ByteReader
        let bigEndian: Bool

        var remaining: Int { reader.remaining }
        var offset: Int { reader.offset }
        mutating func u16() throws -> Int { Int(bigEndian ? try reader.readU16BE() : try reader.readU16LE()) }
        mutating func u32() throws -> Int { Int(bigEndian ? try reader.readU32BE() : try reader.readU32LE()) }
        mutating func u64() throws -> UInt64 { bigEndian ? try reader.readU64BE() : try reader.readU64LE() }
        mutating func fourCC() throws -> String { try reader.readFourCC() }
        mutating func skip(_ n: Int) throws { try reader.skip(n) }
        mutating func sub(_ n: Int) throws -> FieldReader { FieldReader(reader: try reader.subReader(n), bigEndian: bigEndian) }
    }

    /// Parses the chunks from the start of a file up to the data chunk. nil when `prefix`
    /// ends before the data chunk header; throws when the bytes are not a usable WAVE file.
    /// The RIFF size is not used (streamed files write 0 or 0xFFFFFFFF, others get it wrong);
    /// every chunk before `data` must be present in full, and `data` itself is not read.
    public static func parse(prefix: ArraySlice<UInt8>) throws -> WAVInfo? {
        guard prefix.count >= 12 else {
            // Rule out non-RIFF bytes now rather than asking for more of them.
            let known = Array(prefix.prefix(4))
            guard signatures.contains(where: { Array($0.utf8).starts(with: known) }) else {
                throw FormatError.invalid(component: component, reason: "not a RIFF file", offset: 0)
            }
            if prefix.count > 8 && !Array("WAVE".utf8).starts(with: Array(prefix.dropFirst(8))) {
                throw FormatError.invalid(component: component, reason: "RIFF file is not WAVE", offset: 8)
            }
            return nil
        }
        var plain = ByteReader(prefix, component: component)
        let riff = try plain.readFourCC()
        guard signatures.contains(riff) else {
            throw FormatError.invalid(component: component, reason: "not a RIFF file", offset: 0)
        }
        var reader = FieldReader(reader: plain, bigEndian: riff == "RIFX")
        _ = try reader.u32()   // RIFF size: 0/0xFFFFFFFF in streamed files, so not relied on
        guard try reader.fourCC() == "WAVE" else {
            throw FormatError.invalid(component: component, reason: "RIFF file is not WAVE", offset: 8)
        }
        var format: WAVFormat?
        var tags = TrackTags()
        var rf64DataSize: Int?
        for _ in 0..<maxChunks {
            guard reader.remaining >= 8 else { return nil }
            let chunkStart = reader.offset
            let id = try reader.fourCC()
            let size = try reader.u32()
            if id == "data" {
                guard let format else {
                    throw FormatError.invalid(component: component, reason: "data chunk before fmt chunk", offset: chunkStart)
                }
                var dataSize: Int? = (size == 0 || size == 0xFFFF_FFFF) ? nil : size
                if riff == "RF64", let big = rf64DataSize { dataSize = big }
                return WAVInfo(format: format, dataOffset: reader.offset, dataSize: dataSize, tags: tags)
            }
            // cbSize is 16 bits, so no fmt chunk can be larger; refusing here keeps a lying size
            // from making the caller fetch gigabytes waiting for the chunk to end.
            if id == "fmt ", size > maxFormatChunk {
                throw FormatError.invalid(component: component, reason: "fmt chunk of \(size) bytes", offset: chunkStart)
            }
            // Other chunks must be present in full to be read; unknown ones are skipped.
            let padded = size + (size & 1)
            guard reader.remaining >= padded else { return nil }
            let body = try reader.sub(size)
            if size & 1 == 1 { try reader.skip(1) }
            switch id {
            case "fmt ":
                format = try parseFormat(body, at: chunkStart)
            case "ds64":
                var ds = body
                _ = try ds.u64()     // RIFF size
                // All ones means "unknown" as 0xFFFFFFFF does in a data chunk; past 2^40 bytes the
                // size is a lie that would overflow every offset computed from it.
                let big = try ds.u64()
                if big != 0, big != UInt64.max {
                    guard big <= UInt64(InputLimits.maxBytes) else {
                        throw FormatError.outOfRange(component: component, field: "ds64.data_size", value: "\(big) bytes")
                    }
                    rf64DataSize = Int(big)
                }
            default:
                tags = tags.merged(with: try tagChunk(id: id, body: body))
            }
        }
        throw FormatError.invalid(component: component, reason: "no data chunk in the first \(maxChunks) chunks", offset: reader.offset)
    }

    /// Tags from the chunks that follow the data chunk (`bytes` starts at the first of them):
    /// LIST/INFO and `id3 `/`ID3 ` are often written after the samples. Chunks cut short by the
    /// end of `bytes` are ignored.
    public static func trailingTags(_ bytes: ArraySlice<UInt8>, bigEndian: Bool) -> TrackTags {
        var reader = FieldReader(reader: ByteReader(bytes, component: component), bigEndian: bigEndian)
        var tags = TrackTags()
        for _ in 0..<maxChunks {
            guard reader.remaining >= 8, let id = try? reader.fourCC(), let size = try? reader.u32(),
                  size <= reader.remaining, let body = try? reader.sub(size) else { break }
            if size & 1 == 1, reader.remaining > 0 { try? reader.skip(1) }
            if let found = try? tagChunk(id: id, body: body) { tags = tags.merged(with: found) }
        }
        return tags
    }

    /// The tags a LIST/INFO or ID3 chunk holds; other chunks hold none.
    static func tagChunk(id: String, body: FieldReader) throws -> TrackTags {
        switch id {
        case "LIST": return try parseInfoList(body)
        // Tags are optional: a damaged ID3 chunk costs the tags, not the audio.
        case "id3 ", "ID3 ": return (try? ID3v2.parse(body.reader.rest).tags) ?? TrackTags()
        default: return TrackTags()
        }
    }

    static func parseFormat(_ chunk: FieldReader, at offset: Int) throws -> WAVFormat {
        var r = chunk
        guard r.reader.count >= 16 else {
            throw FormatError.invalid(component: component, reason: "fmt chunk of \(r.reader.count) bytes", offset: offset)
        }
        let tag = UInt16(try r.u16())
        let channels = try r.u16()
        let rate = try r.u32()
        _ = try r.u32()                    // byte rate, derivable
        let blockAlign = try r.u16()
        let bits = try r.u16()
        var kind: PCMCoding
        var validBits = bits
        var mask: UInt32?
        switch tag {
        case 1: kind = .integer
        case 3: kind = .float
        case 6: kind = .aLaw
        case 7: kind = .muLaw
        case 0xFFFE:
            guard r.remaining >= 24 else {
                throw FormatError.invalid(component: component, reason: "short WAVE_FORMAT_EXTENSIBLE", offset: offset)
            }
            let extraSize = try r.u16()
            guard extraSize >= 22 else {
                throw FormatError.invalid(component: component, reason: "WAVE_FORMAT_EXTENSIBLE with cbSize \(extraSize)",
                                          offset: offset)
            }
            validBits = try r.u16()
            mask = UInt32(try r.u32())
            let subformat = try r.u16()    // first two bytes of the GUID hold the format tag
            switch subformat {
            case 1: kind = .integer
            case 3: kind = .float
            case 6: kind = .aLaw
            case 7: kind = .muLaw
            default: throw FormatError.unsupported(component: component, reason: "extensible subformat \(subformat)")
            }
            if validBits == 0 || validBits > bits { validBits = bits }
        default:
            throw FormatError.unsupported(component: component,
                                          reason: "format tag 0x\(String(tag, radix: 16)) (only PCM, float, mu-law and A-law)")
        }
        guard (1...64).contains(channels) else {
            throw FormatError.invalid(component: component, reason: "\(channels) channels", offset: offset)
        }
        guard (1...1_536_000).contains(rate) else {
            throw FormatError.invalid(component: component, reason: "sample rate \(rate)", offset: offset)
        }
        // The container is what block align gives each sample; the stated bits must fit in it
        // (12-bit samples in 2 bytes and 20-bit in 3 are plain PCM with zero low bits).
        let container = blockAlign / channels
        guard blockAlign == channels * container, container * 8 >= bits, bits > 0 else {
            throw FormatError.invalid(component: component, reason: "block align \(blockAlign) for \(channels)×\(bits) bits",
                                      offset: offset)
        }
        let supported: Bool
        switch kind {
        case .integer: supported = [1, 2, 3, 4, 8].contains(container) && bits > (container - 1) * 8
        case .float: supported = (bits == 32 && container == 4) || (bits == 64 && container == 8)
        case .muLaw, .aLaw: supported = bits == 8 && container == 1
        }
        guard supported else {
            let name = kind == .integer ? "integer" : kind == .float ? "float" : kind == .muLaw ? "mu-law" : "A-law"
            throw FormatError.unsupported(component: component, reason: "\(bits)-bit \(name) samples in \(container)-byte containers")
        }
        return WAVFormat(formatTag: tag, kind: kind, channels: channels, sampleRate: rate, bitsPerSample: bits,
                         validBitsPerSample: min(validBits, bits), blockAlign: blockAlign, channelMask: mask,
                         bigEndian: chunk.bigEndian)
    }

    /// LIST chunks of type INFO hold NUL-terminated text subchunks.
    static func parseInfoList(_ chunk: FieldReader) throws -> TrackTags {
        var r = chunk
        guard r.remaining >= 4, try r.fourCC() == "INFO" else { return TrackTags() }
        var tags = TrackTags()
        while r.remaining >= 8 {
            let id = try r.fourCC()
            let size = try r.u32()
            guard size <= r.remaining else { break }
            let raw = try r.reader.readBytes(size)
            if size & 1 == 1, r.remaining > 0 { try r.skip(1) }
            let text = infoText(raw)
            guard !text.isEmpty else { continue }
            switch id {
            case "INAM": tags.title = tags.title ?? text
            case "IART": tags.artist = tags.artist ?? text
            case "IPRD": tags.album = tags.album ?? text
            case "ITRK", "IPRT": tags.track = tags.track ?? text
            case "IGNR": tags.genre = tags.genre ?? text
            case "ICRD": tags.date = tags.date ?? text
            default: break
            }
        }
        return tags
    }

    /// INFO text is NUL-terminated with no declared encoding: UTF-8 when the bytes are valid
    /// UTF-8, else Latin-1 (what older Windows tools wrote), so no byte turns into U+FFFD.
    static func infoText(_ raw: ArraySlice<UInt8>) -> String {
        let text = raw.prefix { $0 != 0 }
        if let utf8 = String(validating: text, as: UTF8.self) { return utf8 }
        return String(String.UnicodeScalarView(text.map { Unicode.Scalar($0) }))
    }
}
