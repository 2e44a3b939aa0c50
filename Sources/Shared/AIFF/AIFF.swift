/// The sample format from an AIFF or AIFF-C `COMM` chunk.
public struct AIFFFormat: Sendable, Equatable {
    /// The AIFF-C compression type as the file spells it ("NONE", "sowt", "fl32", ...); "NONE" for AIFF.
    public var compressionType: String
    public var encoding: PCMCoding
    /// `sowt` files store integer samples little-endian; every other type is big-endian.
    public var littleEndian: Bool
    public var channels: Int
    /// The 80-bit extended rate, exact when a Double can hold it (always for whole-number rates).
    public var sampleRate: Double
    /// Sample frames as the header states them (the SSND chunk may hold fewer).
    public var declaredFrames: Int
    /// Bits per sample as the header states them (1-32 for integers; G.711 files often say 16).
    public var bitsPerSample: Int
    /// Bytes each sample occupies.
    public var bytesPerSample: Int

    /// Bytes per frame (all channels of one sample instant).
    public var blockAlign: Int { bytesPerSample * channels }
    /// ffmpeg's codec name (8-bit AIFF samples are signed: pcm_s8).
    public var codecName: String { encoding.codecName(bytesPerSample: bytesPerSample, bigEndian: !littleEndian, unsignedBytes: false) }

    /// The rate rounded to whole hertz (what decoders and outputs take).
    public var roundedSampleRate: Int { Int(sampleRate.rounded()) }

    /// The precision a decoder of this format delivers.
    public var sampleType: AudioFormat.SampleType {
        switch encoding {
        case .muLaw, .aLaw: return .int16
        case .float: return bytesPerSample == 8 ? .float64 : .float32
        case .integer: return bitsPerSample <= 16 ? .int16 : bitsPerSample <= 24 ? .int24 : .int32
        }
    }
}

/// What an AIFF/AIFF-C file holds: its format, where the samples are, and its text.
public struct AIFFInfo: Sendable, Equatable {
    /// FORM type AIFC (AIFF-C) rather than AIFF.
    public var isAIFC: Bool
    public var format: AIFFFormat
    /// Offset of the first sample in the file (SSND body + 8 + its offset field).
    public var dataOffset: Int
    /// Sample bytes the SSND chunk declares after `dataOffset` (0 without an SSND chunk).
    public var dataSize: Int
    /// SSND's block size (alignment hint; 0 in nearly every file).
    public var blockSize: Int
    /// FVER's timestamp (0xA2805140 for AIFF-C version 1), when present.
    public var formatVersion: UInt32?
    /// NAME, AUTH, `(c) ` and ANNO chunks, in file order.
    public var name: String?
    public var author: String?
    public var copyright: String?
    public var annotations: [String] = []
    /// The ID3 chunk's tags, with NAME/AUTH filling what it lacks.
    public var tags: TrackTags

    /// Whole frames present: the declared count, capped by the SSND size and by what a file of
    /// `fileSize` bytes can hold after `dataOffset`.
    public func frameCount(fileSize: Int?) -> Int {
        var bytes = dataSize
        if let fileSize { bytes = min(bytes, max(0, fileSize - dataOffset)) }
        return min(format.declaredFrames, bytes / max(1, format.blockAlign))
    }

    /// Seconds of audio the header declares.
    public var declaredDuration: Double { Double(format.declaredFrames) / format.sampleRate }
}

/// Reads AIFF (Apple "Audio IFF" 1.3) and AIFF-C headers: every chunk of a FORM, in any order.
public enum AIFF {
    static let component = "aiff"
    /// Chunks walked before giving up (a hostile file could hold millions of empty ones).
    static let maxChunks = 10_000
    /// Rates outside this range are broken fields (the same bound the WAV parser uses).
    static let rateRange = 1.0...1_536_000.0
    /// AIFF-C's format version 1 (FVER timestamp of the May 1990 draft).
    public static let aifcVersion1: UInt32 = 0xA280_5140

    /// Parses a whole file (or a prefix holding every chunk but the SSND samples, which may be
    /// cut short). Throws a `FormatError` for anything that is not a usable AIFF/AIFF-C file.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> AIFFInfo {
        var reader = ByteReader(bytes, component: component)
        guard bytes.count >= 12 else {
            throw FormatError.truncated(component: component, offset: 0, needed: 12)
        }
        guard try reader.readFourCC() == "FORM" else {
            throw FormatError.invalid(component: component, reason: "not an IFF FORM", offset: 0)
        }
        let formSize = Int(try reader.readU32BE())
        let formType = try reader.readFourCC()
        guard formType == "AIFF" || formType == "AIFC" else {
            throw FormatError.invalid(component: component, reason: "FORM type '\(formType)' is not AIFF or AIFC", offset: 8)
        }
        let isAIFC = formType == "AIFC"
        // The FORM size bounds the walk when it is believable; writers that never came back to fix
        // it (0, or larger than the file) leave the end of the bytes as the bound.
        let formEnd = formSize >= 4 && 8 + formSize <= bytes.count ? 8 + formSize : bytes.count

        var format: AIFFFormat?
        var sound: (offset: Int, size: Int, blockSize: Int)?
        var info = AIFFInfo(isAIFC: isAIFC, format: AIFFFormat(compressionType: "NONE", encoding: .integer, littleEndian: false,
                                                             channels: 0, sampleRate: 0, declaredFrames: 0, bitsPerSample: 0,
                                                             bytesPerSample: 0),
                            dataOffset: 0, dataSize: 0, blockSize: 0, tags: TrackTags())
        var id3 = TrackTags()
        for _ in 0..<maxChunks {
            guard formEnd - reader.offset >= 8 else { break }
            let chunkStart = reader.offset
            let id = try reader.readFourCC()
            let size = Int(try reader.readU32BE())
            let available = formEnd - reader.offset
            if id == "SSND" {
                guard sound == nil else {
                    throw FormatError.invalid(component: component, reason: "second SSND chunk", offset: chunkStart)
                }
                guard size >= 8, available >= 8 else {
                    if available < 8 { throw FormatError.truncated(component: component, offset: reader.offset, needed: 8) }
                    throw FormatError.invalid(component: component, reason: "SSND chunk of \(size) bytes", offset: chunkStart)
                }
                let offset = Int(try reader.readU32BE())
                let blockSize = Int(try reader.readU32BE())
                guard offset <= size - 8 else {
                    throw FormatError.invalid(component: component, reason: "SSND offset \(offset) past its \(size)-byte chunk",
                                              offset: chunkStart)
                }
                sound = (reader.offset + offset, size - 8 - offset, blockSize)
                // The samples may run past the end of a truncated file: the chunks after them are lost then.
                let padded = size - 8 + (size & 1)
                guard padded <= formEnd - reader.offset else { break }
                try reader.skip(padded)
                continue
            }
            guard size <= available else {
                // A chunk cut off by the end: fatal only when the format is still missing.
                if format == nil {
                    throw FormatError.truncated(component: component, offset: reader.offset, needed: size)
                }
                break
            }
            let body = try reader.subReader(size)
            if size & 1 == 1, reader.offset < formEnd { try reader.skip(1) }
            switch id {
            case "COMM":
                guard format == nil else {
                    throw FormatError.invalid(component: component, reason: "second COMM chunk", offset: chunkStart)
                }
                format = try parseCommon(body, isAIFC: isAIFC, at: chunkStart)
            case "FVER":
                var r = body
                if r.remaining >= 4 { info.formatVersion = try r.readU32BE() }
            case "NAME": info.name = info.name ?? text(body.rest)
            case "AUTH": info.author = info.author ?? text(body.rest)
            case "(c) ": info.copyright = info.copyright ?? text(body.rest)
            case "ANNO": info.annotations.append(text(body.rest))
            case "ID3 ", "id3 ":
                // Tags are optional: a damaged ID3 chunk costs the tags, not the audio.
                if let tag = try? ID3v2.parse(body.rest) { id3 = id3.merged(with: tag.tags) }
            default:
                break
            }
        }
        guard let format else {
            throw FormatError.invalid(component: component, reason: "no COMM chunk", offset: reader.offset)
        }
        info.format = format
        if let sound {
            info.dataOffset = sound.offset
            info.dataSize = sound.size
            info.blockSize = sound.blockSize
        } else if format.declaredFrames > 0 {
            throw FormatError.invalid(component: component, reason: "\(format.declaredFrames) frames but no SSND chunk",
                                      offset: reader.offset)
        }
        var fromText = TrackTags()
        fromText.title = info.name.flatMap { $0.isEmpty ? nil : $0 }
        fromText.artist = info.author.flatMap { $0.isEmpty ? nil : $0 }
        info.tags = id3.merged(with: fromText)
        return info
    }

    /// The COMM chunk: numChannels, numSampleFrames, sampleSize, sampleRate (80-bit extended), and
    /// in AIFF-C the compression type and its name.
    static func parseCommon(_ chunk: ByteReader, isAIFC: Bool, at offset: Int) throws -> AIFFFormat {
        var r = chunk
        guard r.count >= 18 else {
            throw FormatError.invalid(component: component, reason: "COMM chunk of \(r.count) bytes", offset: offset)
        }
        let channels = Int(Int16(bitPattern: try r.readU16BE()))
        let frames = Int(try r.readU32BE())
        let bits = Int(Int16(bitPattern: try r.readU16BE()))
        let exponentWord = try r.readU16BE()
        let mantissa = try r.readU64BE()
        // An AIFF-C COMM of 18 bytes (some writers) has no compression type: plain big-endian PCM.
        let type = isAIFC && r.remaining >= 4 ? try r.readFourCC() : "NONE"
        let rate = try sampleRate(exponentWord: exponentWord, mantissa: mantissa, at: offset + 16)

        guard (1...64).contains(channels) else {
            throw FormatError.invalid(component: component, reason: "\(channels) channels", offset: offset)
        }
        let encoding: PCMCoding
        let width: Int
        switch type {
        case "NONE", "sowt":
            guard (1...32).contains(bits) else {
                throw FormatError.invalid(component: component, reason: "sample size \(bits)", offset: offset)
            }
            encoding = .integer
            width = (bits + 7) / 8
        case "fl32", "FL32":
            encoding = .float
            width = 4
        case "fl64", "FL64":
            encoding = .float
            width = 8
        case "ulaw", "ULAW":
            encoding = .muLaw
            width = 1
        case "alaw", "ALAW":
            encoding = .aLaw
            width = 1
        default:
            throw FormatError.unsupported(component: component, reason: "AIFF-C compression type '\(type)'")
        }
        // The stated size of a float or G.711 file is informative (G.711 files say 16); a negative
        // or huge one is still a broken header.
        guard (0...64).contains(bits) else {
            throw FormatError.invalid(component: component, reason: "sample size \(bits)", offset: offset)
        }
        let seconds = Double(frames) / rate
        guard seconds <= InputLimits.maxDurationSeconds else {
            throw FormatError.outOfRange(component: component, field: "COMM.numSampleFrames",
                                         value: "\(frames) frames at \(rate) Hz")
        }
        guard frames <= InputLimits.maxBytes / (width * channels) else {
            throw FormatError.outOfRange(component: component, field: "COMM.numSampleFrames",
                                         value: "\(frames) frames of \(width * channels) bytes")
        }
        return AIFFFormat(compressionType: type, encoding: encoding, littleEndian: type == "sowt", channels: channels,
                          sampleRate: rate, declaredFrames: frames, bitsPerSample: bits, bytesPerSample: width)
    }

    /// An 80-bit IEEE 754 extended number (sign, 15-bit exponent biased by 16383, 64-bit
    /// significand with an explicit integer bit) as a sample rate: refused unless finite,
    /// positive and within `rateRange`. One rounding at most, so every whole-number rate is exact.
    static func sampleRate(exponentWord: UInt16, mantissa: UInt64, at offset: Int) throws -> Double {
        let negative = exponentWord & 0x8000 != 0
        let exponent = Int(exponentWord & 0x7FFF)
        guard exponent != 0x7FFF else {
            throw FormatError.invalid(component: component, reason: "sample rate is infinite or NaN", offset: offset)
        }
        guard !negative, mantissa != 0 else {
            throw FormatError.invalid(component: component, reason: "sample rate \(negative ? "negative" : "zero")", offset: offset)
        }
        // value = mantissa × 2^(exponent − 16383 − 63); a scale far outside the rate range is refused
        // before it can underflow or overflow a Double.
        let scale = exponent - 16383 - 63
        guard (-200...200).contains(scale) else {
            throw FormatError.invalid(component: component, reason: "sample rate exponent \(exponent)", offset: offset)
        }
        let rate = Double(sign: .plus, exponent: scale, significand: Double(mantissa))
        guard rate.isFinite, rateRange.contains(rate) else {
            throw FormatError.invalid(component: component, reason: "sample rate \(rate)", offset: offset)
        }
        return rate
    }

    /// Text chunks hold no declared encoding: UTF-8 when valid, else Latin-1 (so no byte becomes
    /// U+FFFD), up to the first NUL some writers add.
    static func text(_ raw: ArraySlice<UInt8>) -> String {
        WAV.infoText(raw)
    }
}
