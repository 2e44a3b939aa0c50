/// The container a track's bytes are stored in.
public enum Container: String, Sendable, Codable, CaseIterable {
    /// A bare MPEG audio stream (.mp3, .mp2), possibly wrapped in ID3/APE tags.
    case mp3
    /// AAC in ADTS frames (.aac).
    case adts
    /// ISO base media / MPEG-4 (.m4a, .mp4), including fragmented MP4.
    case mp4
    /// RIFF/WAVE (.wav).
    case wav
    /// FLAC (.flac), possibly behind ID3v2 tags.
    case flac
    /// AIFF and AIFF-C (.aif, .aiff, .aifc).
    case aiff
    /// Ogg (.ogg, .opus, .oga) holding Opus or Vorbis.
    case ogg

    /// The HTTP Content-Type a server sends for this container.
    public var mimeType: String {
        switch self {
        case .mp3: return "audio/mpeg"
        case .adts: return "audio/aac"
        case .mp4: return "audio/mp4"
        case .wav: return "audio/wav"
        case .flac: return "audio/flac"
        case .aiff: return "audio/aiff"
        case .ogg: return "audio/ogg"
        }
    }
}

/// What `Probe` learned from the first bytes of a stream.
public struct ProbedStream: Sendable, Equatable {
    public var container: Container
    /// Codec name: "mp1", "mp2", "mp3", "aac", "alac", "flac", "opus", "vorbis", or "pcm_s16le"-style
    /// names for WAV and AIFF ("pcm_s16be").
    public var codec: String
    /// Offset of the first audio frame (MP3/ADTS), of the first sample (WAV, AIFF), of the
    /// "fLaC" marker (FLAC: the frames follow its metadata blocks), of the first page (Ogg), or 0
    /// for MP4 (whose sample offsets come from its sample tables).
    public var firstFrameOffset: Int
    /// ID3v2 tags in front of the audio (an MP3 or ADTS file may carry several).
    public var id3v2: [ID3v2Tag] = []
    /// The first MPEG frame and the Xing/VBRI header it holds, for MP3.
    public var mpegFrame: MPEGFrame?
    public var vbrHeader: VBRHeader?
    /// The first ADTS header, for AAC in ADTS.
    public var adtsHeader: ADTSHeader?
    /// The format chunk and data location, for WAV.
    public var wav: WAVInfo?
    /// The metadata blocks before the first frame, for FLAC.
    public var flac: FLACMetadataPrefix?
    /// The COMM chunk and SSND location, for AIFF/AIFF-C.
    public var aiff: AIFFInfo?
    /// The audio stream's codec and headers, for Ogg.
    public var oggCodec: OggCodec?

    /// Tags found in the prefix, the first ID3v2 tag winning.
    public var tags: TrackTags {
        var result = TrackTags()
        for tag in id3v2 { result = result.merged(with: tag.tags) }
        if let wav { result = result.merged(with: wav.tags) }
        if let flac { result = result.merged(with: flac.tags) }
        if let aiff { result = result.merged(with: aiff.tags) }
        return result
    }
}

/// Sniffs a byte prefix: which container and codec, and where the audio starts.
public enum Probe {
    /// Outcome of probing a prefix.
    public enum Result: Sendable, Equatable {
        /// The prefix is too short to decide: call again with at least `atLeast` bytes from the start.
        case needMore(atLeast: Int)
        case audio(ProbedStream)
    }

    /// How far into the audio part the search for a first frame may go before giving up.
    public static let maxJunk = 256 * 1024
    /// The largest ID3v2 tag accepted in front of the audio (cover art can be large).
    public static let maxID3Size = 64 * 1024 * 1024

    /// Probes `prefix`, the first bytes of a stream. `isComplete` says the prefix is the whole stream.
    public static func probe(_ prefix: ArraySlice<UInt8>, isComplete: Bool) throws -> Result {
        let bytes = prefix.startIndex == 0 ? prefix : ArraySlice(prefix)
        if bytes.isEmpty {
            if isComplete { throw FormatError.notAudio(reason: "empty") }
            return .needMore(atLeast: 16)
        }
        // Skip any number of ID3v2 tags in front of the audio.
        var offset = 0
        var tags: [ID3v2Tag] = []
        while true {
            guard let size = try ID3v2.totalSize(atStartOf: bytes[offset...]) else {
                if isComplete { break }
                return .needMore(atLeast: offset + 10)
            }
            if size == 0 { break }
            guard size <= maxID3Size else {
                throw FormatError.unsupported(component: "id3v2", reason: "tag of \(size) bytes")
            }
            guard offset + size <= bytes.count else {
                if isComplete { throw FormatError.truncated(component: "id3v2", offset: offset, needed: size) }
                return .needMore(atLeast: offset + size + 16 * 1024)
            }
            tags.append(try ID3v2.parse(bytes[offset..<(offset + size)]))
            offset += size
        }
        let body = bytes[offset...]
        if body.isEmpty {
            if isComplete { throw FormatError.notAudio(reason: tags.isEmpty ? "empty" : "tags but no audio") }
            return .needMore(atLeast: offset + 4096)
        }
        if let text = textPrefix(body) {
            throw FormatError.notAudio(reason: "starts with '\(text)'")
        }
        // Containers with a signature.
        if body.count < 12 && !isComplete { return .needMore(atLeast: offset + 12) }
        // A RIFF signature wins over any MPEG-like bytes in the samples behind it.
        if WAV.signatures.contains(where: { hasPrefix(body, $0) }) {
            guard let info = try WAV.parse(prefix: body) else {
                if isComplete { throw FormatError.truncated(component: "wav", offset: offset, needed: 1) }
                return .needMore(atLeast: max(bytes.count * 2, offset + 4096))
            }
            var stream = ProbedStream(container: .wav, codec: info.format.codecName,
                                      firstFrameOffset: offset + info.dataOffset)
            stream.id3v2 = tags
            stream.wav = info
            return .audio(stream)
        }
        if offset == 0, body.count >= 8, isMP4BoxType(body.dropFirst(4).prefix(4)) {
            return .audio(ProbedStream(container: .mp4, codec: mp4Codec(body), firstFrameOffset: 0))
        }
        if hasPrefix(body, "fLaC") { return try probeFLAC(body, tags: tags, isComplete: isComplete) }
        if isAIFF(body) { return try probeAIFF(body, tags: tags, isComplete: isComplete) }
        if hasPrefix(body, "OggS") {
            guard let codec = try oggCodec(body, isComplete: isComplete) else { return .needMore(atLeast: max(bytes.count * 2, offset + 4096)) }
            var stream = ProbedStream(container: .ogg, codec: codec.name, firstFrameOffset: offset)
            stream.id3v2 = tags
            stream.oggCodec = codec
            return .audio(stream)
        }
        // Formats with a signature that are not played: refused by name, never scanned for
        // MPEG syncs (their samples are full of them).
        if let name = unsupportedContainer(body) {
            throw FormatError.unsupported(component: "parser",
                                          reason: "\(name) files are not supported (MP3, AAC, ALAC, WAV, FLAC, AIFF, and Ogg Opus/Vorbis)")
        }
        // Frame-based streams: the earliest confirmed MPEG or ADTS frame wins.
        var scanner = MPEGFrameScanner(maxJunk: maxJunk)
        let mpeg: MPEGFrame?
        do { mpeg = try scanner.findFirstFrame(in: body, isComplete: isComplete) } catch let error as FormatError where !error.isTruncation {
            mpeg = nil
        }
        let adtsOffset = try? ADTSSync.findFirstFrame(in: body, limit: maxJunk)
        if let adtsOffset = adtsOffset ?? nil, mpeg.map({ adtsOffset < $0.offset }) ?? true {
            guard let header = try ADTSHeader.parse(body.dropFirst(adtsOffset)) else {
                return .needMore(atLeast: offset + adtsOffset + 16)
            }
            var stream = ProbedStream(container: .adts, codec: "aac", firstFrameOffset: offset + adtsOffset)
            stream.id3v2 = tags
            stream.adtsHeader = header
            return .audio(stream)
        }
        if let mpeg {
            let frameEnd = mpeg.offset + mpeg.length
            guard frameEnd <= body.count else {
                return .needMore(atLeast: offset + frameEnd)
            }
            var stream = ProbedStream(container: .mp3, codec: mpeg.header.layer.codecName,
                                      firstFrameOffset: offset + mpeg.offset)
            stream.id3v2 = tags
            stream.mpegFrame = MPEGFrame(offset: offset + mpeg.offset, length: mpeg.length, header: mpeg.header)
            stream.vbrHeader = try VBRHeader.parse(frame: body.dropFirst(mpeg.offset).prefix(mpeg.length), header: mpeg.header)
            return .audio(stream)
        }
        if isComplete || body.count > maxJunk {
            throw FormatError.notAudio(reason: "no MP3, AAC, MP4, WAV, FLAC, AIFF or Ogg signature or frames found")
        }
        return .needMore(atLeast: min(offset + maxJunk + 8192, max(bytes.count * 2, offset + 8192)))
    }

    /// The codec of an Ogg file's first audio stream, from the BOS pages at its start (a video
    /// or skeleton stream may come first); nil when the prefix ends before it is known. Ogg FLAC
    /// and Speex are refused by name.
    static func oggCodec(_ body: ArraySlice<UInt8>, isComplete: Bool) throws -> OggCodec? {
        var position = body.startIndex
        // Bounded: a link has one BOS page per multiplexed stream, and real files have a few.
        for _ in 0..<64 {
            if position == body.endIndex, isComplete, position > body.startIndex {
                throw FormatError.unsupported(component: "ogg", reason: "no Opus or Vorbis stream in the Ogg file")
            }
            guard let page = try OggPage.parse(body[position...]) else {
                if isComplete { throw FormatError.truncated(component: "ogg", offset: position, needed: OggPage.minHeaderLength) }
                return nil
            }
            guard page.isBeginningOfStream else {
                throw FormatError.unsupported(component: "ogg", reason: "no Opus or Vorbis stream in the Ogg file")
            }
            let first = body[(position + page.headerLength)...].prefix(page.pieces.first?.length ?? 0)
            if let codec = try OggCodec.identify(first) {
                switch codec {
                case .opus, .vorbis: return codec
                case .flac, .speex:
                    throw FormatError.unsupported(component: "ogg",
                                                  reason: "Ogg \(codec.name == "flac" ? "FLAC" : "Speex") is not supported (Ogg Opus and Vorbis are)")
                }
            }
            position += page.length
        }
        throw FormatError.unsupported(component: "ogg", reason: "no Opus or Vorbis stream among the Ogg file's first 64 streams")
    }

    /// Names the container when the bytes open with the signature of an audio format this
    /// project does not play.
    static func unsupportedContainer(_ bytes: ArraySlice<UInt8>) -> String? {
        if hasPrefix(bytes, "MAC ") { return "Monkey's Audio" }
        if hasPrefix(bytes, "wvpk") { return "WavPack" }
        if hasPrefix(bytes, ".snd") { return "Sun/NeXT au" }
        if bytes.starts(with: [0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11]) { return "ASF/WMA" }
        if bytes.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) { return "Matroska/WebM" }
        return nil
    }

    static func hasPrefix(_ bytes: ArraySlice<UInt8>, _ text: String) -> Bool {
        bytes.starts(with: text.utf8)
    }

    /// Top-level MP4 box types that can open a file.
    private static let mp4OpeningBoxes: Set<String> = ["ftyp", "moov", "mdat", "free", "skip", "wide", "styp", "pnot"]

    private static func isMP4BoxType(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count == 4, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return false }
        return mp4OpeningBoxes.contains(String(decoding: bytes, as: UTF8.self))
    }

    /// When the bytes look like text (HTML, JSON, XML, a playlist), returns their first
    /// characters for the error message; audio never starts with these.
    static func textPrefix(_ bytes: ArraySlice<UInt8>) -> String? {
        let head = bytes.prefix(64)
        guard let first = head.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else {
            return nil
        }
        // Printable ASCII, whitespace, or UTF-8 (any byte from 0x80 up): no other control bytes.
        let looksTextual = head.allSatisfy { ($0 >= 0x20 && $0 != 0x7F) || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        let opener = first == UInt8(ascii: "<") || first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
            || first == UInt8(ascii: "#")
        guard opener, looksTextual else { return nil }
        let shown = head.prefix { $0 != 0x0A && $0 != 0x0D }.prefix(20)
        return String(decoding: shown, as: UTF8.self)
    }
}
