import StreamShared

/// Turns HLS segments into one continuous elementary stream the player's parsers read:
/// packed audio loses its leading ID3 tag, MPEG-TS is demuxed to its ADTS or MP3 payload,
/// fMP4 keeps only the init section's ftyp/moov and the media segments' moof/mdat boxes.
struct HLSSegmentUnpacker {
    /// What a segment holds, from its first bytes.
    enum Kind: String {
        case packedAudio = "packed audio"
        case transportStream = "MPEG-TS"
        case fragmentedMP4 = "fMP4"
    }

    /// Codec and layout of the audio, to refuse a format change at a discontinuity.
    struct AudioSignature: Equatable, CustomStringConvertible {
        var codec: String
        var sampleRate: Int
        var channels: Int
        var description: String { "\(codec) \(sampleRate) Hz \(channels) ch" }
    }

    private var demuxer = TSDemuxer()
    private(set) var kind: Kind?
    private var signature: AudioSignature?
    /// MP3 in fMP4 (object type 0x69/0x6B): the player's MP4 path decodes AAC only, so the
    /// samples are taken out of the moof/mdat pairs and passed on as a plain MP3 stream.
    private var mp3Track: (trackID: Int, defaults: MP4TrackExtends?)?

    /// Forgets the demuxer state (a seek or a discontinuity); the audio format must stay.
    mutating func reset() {
        demuxer.reset()
    }

    /// Elementary stream bytes of one media segment and its start time (90 kHz) when it says.
    mutating func unpack(_ bytes: [UInt8], label: String) throws -> (stream: [UInt8], timestamp: UInt64?) {
        let kind = try Self.kind(of: bytes[...], label: label)
        if let previous = self.kind, previous != kind {
            throw SourceError.hls("\(label) is \(kind.rawValue) after \(previous.rawValue) segments")
        }
        self.kind = kind
        let stream: [UInt8]
        let timestamp: UInt64?
        switch kind {
        case .packedAudio:
            let tag: PackedAudioTag?
            do { tag = try PackedAudioTag.parse(bytes[...]) } catch {
                throw SourceError.hls("\(label): \(error)")
            }
            stream = Array(bytes.dropFirst(tag?.size ?? 0))
            timestamp = tag?.timestamp
        case .transportStream:
            do {
                let demuxed = try demuxer.demux(bytes[...])
                stream = demuxed.elementaryStream
                timestamp = demuxed.firstPTS
            } catch let error as FormatError {
                throw SourceError.hls("\(label): \(error)")
            }
        case .fragmentedMP4:
            guard let track = mp3Track else {
                return (try Self.boxes(bytes, keeping: ["moof", "mdat"], label: label), nil)
            }
            stream = try Self.samples(bytes, trackID: track.trackID, defaults: track.defaults, label: label)
            timestamp = nil
        }
        try check(stream, label: label)
        return (stream, timestamp)
    }

    /// The init section (EXT-X-MAP): its ftyp and moov boxes, or nothing for MP3 in fMP4
    /// (whose segments become a plain MP3 stream).
    mutating func unpackInit(_ bytes: [UInt8], label: String) throws -> [UInt8] {
        let kept = try Self.boxes(bytes, keeping: ["ftyp", "moov"], label: label)
        mp3Track = nil
        if let moov = try? MP4TopLevel.scan(prefix: kept[...], fileSize: kept.count).0.moovRange,
           let movie = try? MP4Movie.parse(moov: kept[moov]), let track = movie.audio,
           let type = track.objectTypeIndication, type == 0x69 || type == 0x6B {
            mp3Track = (track.trackID, movie.audioTrackExtends)
            return []
        }
        return kept
    }

    /// The samples of `trackID` from the moof/mdat pairs of an fMP4 segment, joined.
    static func samples(_ bytes: [UInt8], trackID: Int, defaults: MP4TrackExtends?, label: String) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var offset = 0
        while offset < bytes.count {
            guard let header = try? MP4BoxHeader.parse(bytes[...], at: offset) else {
                throw SourceError.hls("\(label): truncated box at byte \(offset)")
            }
            let size = header.size ?? (bytes.count - offset)
            guard size >= header.headerSize, size <= bytes.count - offset else {
                throw SourceError.hls("\(label): '\(header.type)' box of \(size) bytes at byte \(offset) runs past the end")
            }
            if header.type == "moof" {
                let fragment: MP4Fragment
                do {
                    fragment = try MP4Fragment.parse(moof: bytes[offset..<(offset + size)], at: offset, trackID: trackID,
                                                     defaults: defaults)
                } catch {
                    throw SourceError.hls("\(label): \(error)")
                }
                for sample in fragment.samples {
                    guard sample.offset >= 0, sample.size >= 0, sample.offset <= bytes.count - sample.size else {
                        throw SourceError.hls("\(label): a sample at byte \(sample.offset) lies outside the segment")
                    }
                    out += bytes[sample.offset..<(sample.offset + sample.size)]
                }
            }
            offset += size
        }
        return out
    }

    /// Refuses an audio format that differs from the first segment's: the output cannot change format.
    private mutating func check(_ stream: [UInt8], label: String) throws {
        guard let found = Self.signature(of: stream[...]) else { return }
        if let first = signature, first != found {
            throw SourceError.hls("\(label) changes the audio format (\(first) → \(found)); one stream plays in one format")
        }
        signature = found
    }

    /// Codec, rate and channels from the first frame header of an ADTS or MPEG audio stream.
    static func signature(of stream: ArraySlice<UInt8>) -> AudioSignature? {
        if let header = try? ADTSHeader.parse(stream) {
            return AudioSignature(codec: "aac", sampleRate: header.sampleRate, channels: header.audioSpecificConfig.channels)
        }
        if let header = try? MPEGFrameHeader.parse(stream) {
            return AudioSignature(codec: header.layer.codecName, sampleRate: header.sampleRate, channels: header.channels)
        }
        return nil
    }

    /// What the segment is, or a clear error when it is not audio at all (HTML, a playlist).
    static func kind(of bytes: ArraySlice<UInt8>, label: String) throws -> Kind {
        guard let first = bytes.first else { throw SourceError.hls("\(label) is empty") }
        if first == 0x47, bytes.count < 189 || bytes[bytes.startIndex + 188] == 0x47 { return .transportStream }
        if bytes.starts(with: Array("ID3".utf8)) { return .packedAudio }
        if bytes.count >= 8 {
            let type = String(decoding: bytes.dropFirst(4).prefix(4), as: UTF8.self)
            if ["ftyp", "styp", "moof", "sidx", "moov", "emsg", "prft", "free", "mdat"].contains(type) { return .fragmentedMP4 }
        }
        if first == 0xFF, bytes.count >= 2, bytes[bytes.startIndex + 1] & 0xE0 == 0xE0 { return .packedAudio }
        if bytes.starts(with: Array("#EXTM3U".utf8)) {
            throw SourceError.hls("\(label) is a playlist, not a media segment")
        }
        throw SourceError.hls("\(label) is not audio (starts with \(describe(bytes)))")
    }

    /// The first bytes as text when printable (HTML, JSON), else as hex.
    static func describe(_ bytes: ArraySlice<UInt8>) -> String {
        let head = bytes.prefix(16)
        if head.allSatisfy({ (0x20..<0x7F).contains($0) || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return "'" + String(decoding: head.map { $0 < 0x20 ? UInt8(ascii: " ") : $0 }, as: UTF8.self) + "'"
        }
        return head.prefix(8).map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(separator: " ")
    }

    /// The top-level boxes of the given types, in order; the rest (styp, sidx, emsg, ...) dropped.
    static func boxes(_ bytes: [UInt8], keeping types: Set<String>, label: String) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var offset = 0
        var kept = 0
        while offset < bytes.count {
            let header: MP4BoxHeader?
            do { header = try MP4BoxHeader.parse(bytes[...], at: offset) } catch {
                throw SourceError.hls("\(label): \(error)")
            }
            guard let header else { throw SourceError.hls("\(label): truncated box at byte \(offset)") }
            let size = header.size ?? (bytes.count - offset)
            guard size <= bytes.count - offset else {
                throw SourceError.hls("\(label): '\(header.type)' box of \(size) bytes at byte \(offset) runs past the end (\(bytes.count) bytes)")
            }
            if types.contains(header.type) {
                out += bytes[offset..<(offset + size)]
                kept += 1
            }
            offset += size
        }
        guard kept > 0 else {
            throw SourceError.hls("\(label) holds none of the boxes \(types.sorted().joined(separator: ", "))")
        }
        return out
    }
}
