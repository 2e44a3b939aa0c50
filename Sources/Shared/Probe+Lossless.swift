/// What the metadata blocks in front of a FLAC stream's first frame say (RFC 9639 §8): enough to
/// plan playing and seeking without the rest of the file.
public struct FLACMetadataPrefix: Sendable, Equatable {
    public var streamInfo: FLACStreamInfo
    /// SEEKTABLE points (placeholders dropped), offsets counted from the first frame.
    public var seekPoints: [FLACSeekPoint]
    /// The first VORBIS_COMMENT block, when one parses.
    public var comment: VorbisComment?
    /// Offset of the first byte after the last metadata block (from the start of "fLaC").
    public var metadataEnd: Int

    /// Tags from the Vorbis comment.
    public var tags: TrackTags { comment?.tags ?? TrackTags() }

    /// Most bytes of metadata walked in a prefix (covers make them large; more is refused).
    public static let maxMetadataBytes = 64 << 20
    static let component = "flac"

    /// Walks the metadata blocks of `bytes` (which start with "fLaC"); nil when the blocks run
    /// past the prefix, with the byte count needed in `needed`.
    public static func parse(_ bytes: ArraySlice<UInt8>, needed: inout Int) throws(FormatError) -> FLACMetadataPrefix? {
        let base = bytes.startIndex
        var offset = 4
        var info: FLACStreamInfo?
        var points: [FLACSeekPoint] = []
        var comment: VorbisComment?
        for _ in 0..<FLACReader.maxBlocks {
            guard bytes.count >= offset + 4 else {
                needed = offset + 4
                return nil
            }
            let head = bytes[(base + offset)...]
            let isLast = head[head.startIndex] & 0x80 != 0, type = Int(head[head.startIndex] & 0x7F)
            let length = Int(head[head.startIndex + 1]) << 16 | Int(head[head.startIndex + 2]) << 8 | Int(head[head.startIndex + 3])
            guard type != 127 else { throw FormatError.invalid(component: component, reason: "metadata block type 127", offset: offset) }
            let end = offset + 4 + length
            guard end <= maxMetadataBytes else {
                throw FormatError.outOfRange(component: component, field: "metadata", value: "\(end) bytes")
            }
            if [0, 3, 4].contains(type) {
                guard bytes.count >= end else {
                    needed = end
                    return nil
                }
                let body = bytes[(base + offset + 4)..<(base + end)]
                switch type {
                case 0:
                    guard info == nil else { throw FormatError.invalid(component: component, reason: "a second STREAMINFO", offset: offset) }
                    info = try FLACStreamInfo.parse(body)
                case 3:
                    points += try FLACSeekPoint.parseTable(body).filter { $0.sampleNumber != nil }
                default:
                    // A broken tag block costs the tags, not the audio.
                    if comment == nil { comment = try? VorbisComment.parse(body) }
                }
            }
            offset = end
            if isLast {
                guard let info else { throw FormatError.invalid(component: component, reason: "no STREAMINFO block", offset: 4) }
                return FLACMetadataPrefix(streamInfo: info, seekPoints: points, comment: comment, metadataEnd: offset)
            }
        }
        throw FormatError.outOfRange(component: component, field: "metadata blocks", value: "more than \(FLACReader.maxBlocks)")
    }
}

extension Probe {
    /// FLAC: the metadata blocks, read whole (the first frame follows them).
    static func probeFLAC(_ body: ArraySlice<UInt8>, tags: [ID3v2Tag], isComplete: Bool) throws -> Result {
        let offset = body.startIndex
        var needed = 0
        guard let metadata = try FLACMetadataPrefix.parse(body, needed: &needed) else {
            if isComplete { throw FormatError.truncated(component: "flac", offset: offset + body.count, needed: needed - body.count) }
            return .needMore(atLeast: offset + needed + 4096)
        }
        var stream = ProbedStream(container: .flac, codec: "flac", firstFrameOffset: offset + metadata.metadataEnd)
        stream.id3v2 = tags
        stream.flac = metadata
        return .audio(stream)
    }

    /// An IFF FORM of type AIFF or AIFC.
    static func isAIFF(_ body: ArraySlice<UInt8>) -> Bool {
        guard hasPrefix(body, "FORM"), body.count >= 12 else { return false }
        let kind = body.dropFirst(8).prefix(4)
        return kind.elementsEqual("AIFF".utf8) || kind.elementsEqual("AIFC".utf8)
    }

    static let maxSniffedMoov = 1 << 20

    /// Most bytes read looking for a COMM chunk that comes after the samples.
    static let maxAIFFHeaderSearch = 64 << 20

    /// AIFF/AIFF-C: every chunk up to the samples (a COMM after SSND needs more of the file).
    static func probeAIFF(_ body: ArraySlice<UInt8>, tags: [ID3v2Tag], isComplete: Bool) throws -> Result {
        let offset = body.startIndex
        let info: AIFFInfo
        do {
            info = try AIFF.parse(body)
        } catch let error as FormatError where !isComplete && body.count < maxAIFFHeaderSearch {
            // Cut short of the COMM chunk: a longer prefix may hold it.
            var missingCommon = false
            if case .invalid(_, let reason, _) = error { missingCommon = reason == "no COMM chunk" }
            guard error.isTruncation || missingCommon else { throw error }
            return .needMore(atLeast: min(maxAIFFHeaderSearch, max(offset + body.count * 2, offset + 64 * 1024)))
        }
        var stream = ProbedStream(container: .aiff, codec: info.format.codecName, firstFrameOffset: offset + info.dataOffset)
        stream.id3v2 = tags
        stream.aiff = info
        return .audio(stream)
    }

    /// "alac" when the prefix holds the whole moov (of at most `maxSniffedMoov` bytes) and its
    /// audio track is Apple Lossless; "aac" otherwise (the player reads the moov itself and
    /// decides again, so a large moov is not parsed twice).
    static func mp4Codec(_ body: ArraySlice<UInt8>) -> String {
        var offset = 0
        for _ in 0..<64 {
            guard let header = try? MP4BoxHeader.parse(body.dropFirst(offset), at: 0), let size = header.size,
                  size >= header.headerSize else { break }
            if header.type == "moov" {
                guard offset + size <= body.count, size <= maxSniffedMoov, let movie = try? MP4Movie.parse(moov: body.dropFirst(offset).prefix(size)) else { break }
                return movie.audio?.codec == "alac" ? "alac" : "aac"
            }
            offset += size
        }
        return "aac"
    }
}
