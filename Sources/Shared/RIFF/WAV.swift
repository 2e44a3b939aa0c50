/// The sample format from a WAVE `fmt ` chunk.
public struct WAVFormat: Sendable, Equatable {
    /// Integer or IEEE float samples.
    public enum SampleKind: Sendable, Equatable { case integer, float }

    /// 1 PCM, 3 IEEE float, 0xFFFE extensible (then the subformat decides `kind`).
    public var formatTag: UInt16
    public var kind: SampleKind
    public var channels: Int
    public var sampleRate: Int
    /// Container bits per sample: 8/16/24/32 for integers, 32/64 for floats.
    public var bitsPerSample: Int
    /// Bits that carry signal (extensible files may say fewer than the container holds).
    public var validBitsPerSample: Int
    /// Bytes per frame (all channels of one sample instant).
    public var blockAlign: Int
    /// Speaker positions (extensible files only).
    public var channelMask: UInt32?
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

/// Reads RIFF/WAVE headers up to the `data` chunk.
public enum WAV {
    static let component = "wav"
    /// Chunks walked before giving up on finding `data` (a hostile file could hold millions).
    static let maxChunks = 10_000
    /// The largest possible fmt chunk: 18 bytes plus a 16-bit cbSize of extra bytes.
    static let maxFormatChunk = 18 + 0xFFFF

    /// Parses the chunks from the start of a file up to the data chunk. nil when `prefix`
    /// ends before the data chunk header; throws when the bytes are not a usable WAVE file.
    /// The RIFF size is not used (streamed files write 0 or 0xFFFFFFFF, others get it wrong);
    /// every chunk before `data` must be present in full, and `data` itself is not read.
    public static func parse(prefix: ArraySlice<UInt8>) throws -> WAVInfo? {
        var reader = ByteReader(prefix, component: component)
        guard prefix.count >= 12 else {
            // Rule out non-RIFF bytes now rather than asking for more of them.
            let known = Array(prefix.prefix(4))
            guard Array("RIFF".utf8).starts(with: known) || Array("RF64".utf8).starts(with: known) else {
                throw FormatError.invalid(component: component, reason: "not a RIFF file", offset: 0)
            }
            if prefix.count > 8 && !Array("WAVE".utf8).starts(with: Array(prefix.dropFirst(8))) {
                throw FormatError.invalid(component: component, reason: "RIFF file is not WAVE", offset: 8)
            }
            return nil
        }
        let riff = try reader.readFourCC()
        guard riff == "RIFF" || riff == "RF64" else {
            throw FormatError.invalid(component: component, reason: "not a RIFF file", offset: 0)
        }
        _ = try reader.readU32LE()   // RIFF size: 0/0xFFFFFFFF in streamed files, so not relied on
        guard try reader.readFourCC() == "WAVE" else {
            throw FormatError.invalid(component: component, reason: "RIFF file is not WAVE", offset: 8)
        }
        var format: WAVFormat?
        var tags = TrackTags()
        var rf64DataSize: Int?
        for _ in 0..<maxChunks {
            guard reader.remaining >= 8 else { return nil }
            let chunkStart = reader.offset
            let id = try reader.readFourCC()
            let size = Int(try reader.readU32LE())
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
            let body = try reader.subReader(size)
            if size & 1 == 1 { try reader.skip(1) }
            switch id {
            case "fmt ": format = try parseFormat(body, at: chunkStart)
            case "LIST": tags = tags.merged(with: try parseInfoList(body))
            case "id3 ", "ID3 ":
                // Tags are optional: a damaged ID3 chunk costs the tags, not the audio.
                tags = tags.merged(with: try? ID3v2.parse(body.rest).tags)
            case "ds64":
                var ds = body
                _ = try ds.readU64LE()     // RIFF size
                rf64DataSize = Int(clamping: try ds.readU64LE())
            default: break
            }
        }
        throw FormatError.invalid(component: component, reason: "no data chunk in the first \(maxChunks) chunks", offset: reader.offset)
    }

    static func parseFormat(_ chunk: ByteReader, at offset: Int) throws -> WAVFormat {
        var r = chunk
        guard r.count >= 16 else {
            throw FormatError.invalid(component: component, reason: "fmt chunk of \(r.count) bytes", offset: offset)
        }
        let tag = try r.readU16LE()
        let channels = Int(try r.readU16LE())
        let rate = Int(try r.readU32LE())
        _ = try r.readU32LE()                    // byte rate, derivable
        let blockAlign = Int(try r.readU16LE())
        let bits = Int(try r.readU16LE())
        var kind: WAVFormat.SampleKind
        var validBits = bits
        var mask: UInt32?
        switch tag {
        case 1: kind = .integer
        case 3: kind = .float
        case 0xFFFE:
            guard r.remaining >= 24 else {
                throw FormatError.invalid(component: component, reason: "short WAVE_FORMAT_EXTENSIBLE", offset: offset)
            }
            let extraSize = try r.readU16LE()
            guard extraSize >= 22 else {
                throw FormatError.invalid(component: component, reason: "WAVE_FORMAT_EXTENSIBLE with cbSize \(extraSize)",
                                          offset: offset)
            }
            validBits = Int(try r.readU16LE())
            mask = try r.readU32LE()
            let subformat = try r.readU16LE()    // first two bytes of the GUID hold the format tag
            switch subformat {
            case 1: kind = .integer
            case 3: kind = .float
            default: throw FormatError.unsupported(component: component, reason: "extensible subformat \(subformat)")
            }
            if validBits == 0 || validBits > bits { validBits = bits }
        default:
            throw FormatError.unsupported(component: component, reason: "format tag 0x\(String(tag, radix: 16)) (only PCM and float)")
        }
        guard (1...64).contains(channels) else {
            throw FormatError.invalid(component: component, reason: "\(channels) channels", offset: offset)
        }
        guard (1...1_536_000).contains(rate) else {
            throw FormatError.invalid(component: component, reason: "sample rate \(rate)", offset: offset)
        }
        let allowed = kind == .integer ? [8, 16, 24, 32] : [32, 64]
        guard allowed.contains(bits) else {
            throw FormatError.unsupported(component: component, reason: "\(bits)-bit \(kind == .integer ? "integer" : "float") samples")
        }
        guard blockAlign == channels * bits / 8 else {
            throw FormatError.invalid(component: component, reason: "block align \(blockAlign) for \(channels)×\(bits) bits",
                                      offset: offset)
        }
        return WAVFormat(formatTag: tag, kind: kind, channels: channels, sampleRate: rate, bitsPerSample: bits,
                         validBitsPerSample: validBits, blockAlign: blockAlign, channelMask: mask)
    }

    /// LIST chunks of type INFO hold NUL-terminated text subchunks.
    static func parseInfoList(_ chunk: ByteReader) throws -> TrackTags {
        var r = chunk
        guard r.remaining >= 4, try r.readFourCC() == "INFO" else { return TrackTags() }
        var tags = TrackTags()
        while r.remaining >= 8 {
            let id = try r.readFourCC()
            let size = Int(try r.readU32LE())
            guard size <= r.remaining else { break }
            let raw = try r.readBytes(size)
            if size & 1 == 1, r.remaining > 0 { try r.skip(1) }
            let text = infoText(raw)
            guard !text.isEmpty else { continue }
            switch id {
            case "INAM": tags.title = tags.title ?? text
            case "IART": tags.artist = tags.artist ?? text
            case "IPRD": tags.album = tags.album ?? text
            case "ITRK", "IPRT": tags.track = tags.track ?? text
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
