/// The STREAMINFO metadata block (RFC 9639 §8.2).
public struct FLACStreamInfo: Sendable, Equatable {
    public var minBlockSize: Int
    public var maxBlockSize: Int
    /// Smallest and largest frame in bytes; 0 when the encoder did not know.
    public var minFrameSize: Int
    public var maxFrameSize: Int
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int
    /// Samples per channel in the stream; 0 when unknown.
    public var totalSamples: Int
    /// MD5 of the decoded samples; all zero when not computed.
    public var md5: [UInt8]

    public static let length = 34
    static let component = "flac-streaminfo"

    /// Parses a STREAMINFO body (exactly 34 bytes). Block sizes below 16 (but for a one-frame
    /// stream), min above max, rate 0 and bit depths below 4 are refused.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(FormatError) -> FLACStreamInfo {
        guard bytes.count == length else {
            if bytes.count < length {
                throw FormatError.truncated(component: component, offset: bytes.count, needed: length - bytes.count)
            }
            throw FormatError.invalid(component: component, reason: "STREAMINFO of \(bytes.count) bytes, not 34", offset: 0)
        }
        var reader = ByteReader(bytes, component: component)
        let minBlock = Int(try reader.readU16BE()), maxBlock = Int(try reader.readU16BE())
        let minFrame = Int(try reader.readU24BE()), maxFrame = Int(try reader.readU24BE())
        let packed = try reader.readU64BE()   // rate 20, channels-1 3, bits-1 5, total samples 36
        let md5 = Array(try reader.readBytes(16))
        let info = FLACStreamInfo(minBlockSize: minBlock, maxBlockSize: maxBlock, minFrameSize: minFrame, maxFrameSize: maxFrame,
                                  sampleRate: Int(packed >> 44), channels: Int((packed >> 41) & 0x7) + 1,
                                  bitsPerSample: Int((packed >> 36) & 0x1F) + 1, totalSamples: Int(packed & 0xF_FFFF_FFFF),
                                  md5: md5)
        func invalid(_ reason: String, _ at: Int) -> FormatError {
            FormatError.invalid(component: component, reason: reason, offset: at)
        }
        guard info.minBlockSize <= info.maxBlockSize else { throw invalid("min block size \(minBlock) > max \(maxBlock)", 0) }
        guard info.maxBlockSize >= 16 || info.totalSamples == info.maxBlockSize else {
            throw invalid("max block size \(maxBlock) below 16", 2)
        }
        guard info.minFrameSize == 0 || info.maxFrameSize == 0 || info.minFrameSize <= info.maxFrameSize else {
            throw invalid("min frame size \(minFrame) > max \(maxFrame)", 4)
        }
        guard info.sampleRate > 0 else { throw invalid("sample rate 0", 10) }
        guard info.bitsPerSample >= 4 else { throw invalid("\(info.bitsPerSample) bits per sample", 12) }
        if info.totalSamples > 0 {
            try Checked.seconds(ticks: info.totalSamples, timescale: info.sampleRate, component, "total_samples")
        }
        return info
    }

    /// The MD5 when the encoder computed one.
    public var md5IfSet: [UInt8]? { md5.allSatisfy { $0 == 0 } ? nil : md5 }
}

/// One SEEKTABLE point (RFC 9639 §8.5).
public struct FLACSeekPoint: Sendable, Equatable {
    /// First sample of the target frame; nil for a placeholder point.
    public var sampleNumber: Int?
    /// Offset of the target frame from the first frame's header.
    public var byteOffset: Int
    public var sampleCount: Int

    static let length = 18

    /// The points of a SEEKTABLE body; placeholders are kept, offsets beyond `InputLimits` refused.
    public static func parseTable(_ bytes: ArraySlice<UInt8>) throws(FormatError) -> [FLACSeekPoint] {
        guard bytes.count % length == 0 else {
            throw FormatError.invalid(component: "flac-seektable", reason: "\(bytes.count) bytes is not a whole number of points",
                                      offset: 0)
        }
        var reader = ByteReader(bytes, component: "flac-seektable")
        var points: [FLACSeekPoint] = []
        points.reserveCapacity(bytes.count / length)
        while !reader.isAtEnd {
            let sample = try reader.readU64BE(), offset = try reader.readU64BE(), count = Int(try reader.readU16BE())
            if sample == .max {
                points.append(FLACSeekPoint(sampleNumber: nil, byteOffset: 0, sampleCount: count))
                continue
            }
            guard sample < 1 << 36, offset <= UInt64(InputLimits.maxBytes) else {
                throw FormatError.outOfRange(component: "flac-seektable", field: "seek point", value: "\(sample) @ \(offset)")
            }
            points.append(FLACSeekPoint(sampleNumber: Int(sample), byteOffset: Int(offset), sampleCount: count))
        }
        return points
    }
}

/// What a FLAC file holds: its metadata, where its audio lies, and how long it plays.
public struct FLACStream: Sendable, Equatable {
    public var streamInfo: FLACStreamInfo
    /// SEEKTABLE points, placeholders included.
    public var seekPoints: [FLACSeekPoint]
    /// The VORBIS_COMMENT block (the first, when a file has several).
    public var comment: VorbisComment?
    public var pictures: [FLACPicture]
    /// Types of the metadata blocks in file order (0 STREAMINFO ... 6 PICTURE, others as found).
    public var blockTypes: [Int]
    /// Bytes of ID3v2 tags in front of "fLaC".
    public var leadingTagBytes: Int
    /// Offset of the first byte after the metadata blocks.
    public var metadataEnd: Int
    /// Offset of the first frame (normally `metadataEnd`).
    public var audioStart: Int
    /// Offset just past the last frame: the file's end less trailing ID3v1/APE/Lyrics3 tags.
    public var audioEnd: Int
    /// Samples per channel: STREAMINFO's, or counted to the end of the last frame when it says 0;
    /// nil when neither is known.
    public var totalSamples: Int?
    /// The first frame's header.
    public var firstFrame: FLACFrameHeader
    /// VORBIS_COMMENT and PICTURE blocks that did not parse (skipped: a bad tag costs only itself).
    public var unreadableBlocks: Int

    /// Playing time in seconds, when the sample count is known.
    public var durationSeconds: Double? {
        totalSamples.map { Double($0) / Double(streamInfo.sampleRate) }
    }

    /// Tags from the Vorbis comment, with the cover's size from a PICTURE block.
    public var tags: TrackTags {
        var tags = comment?.tags ?? TrackTags()
        if tags.coverArtBytes == nil { tags.coverArtBytes = FLACPicture.cover(pictures)?.data.count }
        return tags
    }
}

/// Reads a FLAC file (RFC 9639): optional ID3v2 tags, "fLaC", the metadata blocks, the first
/// frame (confirmed by its CRC-8 and CRC-16, and agreeing with STREAMINFO), trailing tags, and
/// the last frame when STREAMINFO does not give the sample count.
public enum FLACReader {
    /// Most bytes of metadata blocks kept (pictures, comments); larger ones are refused.
    public static let maxKeptMetadataBytes = 64 << 20
    /// Most metadata blocks.
    public static let maxBlocks = 4096
    /// How far past the metadata the first frame may start.
    public static let maxGapBeforeAudio = 64 << 10
    static let component = "flac"

    public static let marker: [UInt8] = Array("fLaC".utf8)

    /// Reads `source` as a FLAC file; a typed `FormatError` when it is not one or lies.
    public static func read(_ source: some RandomAccessBytes) throws -> FLACStream {
        let size = source.size
        try Checked.bytes(size, component, "file size")
        // ID3v2 tags in front (some writers put two).
        var offset = 0
        for _ in 0..<4 {
            let head = try source.read(at: offset, count: 10)
            guard let tag = try ID3v2.totalSize(atStartOf: head[...]), tag > 0 else { break }
            offset += tag
        }
        let leading = offset
        let marker = try source.read(at: offset, count: 4)
        guard marker == Self.marker else {
            if marker.count < 4 { throw FormatError.truncated(component: component, offset: offset, needed: 4) }
            throw FormatError.notAudio(reason: "no fLaC marker at offset \(offset)")
        }
        offset += 4

        var streamInfo: FLACStreamInfo?
        var seekPoints: [FLACSeekPoint] = []
        var comment: VorbisComment?
        var pictures: [FLACPicture] = []
        var types: [Int] = []
        var kept = 0
        var unreadable = 0
        while true {
            guard types.count < maxBlocks else {
                throw FormatError.outOfRange(component: component, field: "metadata blocks", value: "more than \(maxBlocks)")
            }
            let head = try source.read(at: offset, count: 4)
            guard head.count == 4 else { throw FormatError.truncated(component: component, offset: offset, needed: 4) }
            let isLast = head[0] & 0x80 != 0, type = Int(head[0] & 0x7F)
            let length = Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
            guard type != 127 else { throw FormatError.invalid(component: component, reason: "metadata block type 127", offset: offset) }
            let body = offset + 4
            guard length <= size - body else {
                throw FormatError.truncated(component: component, offset: body, needed: length)
            }
            types.append(type)
            if [0, 3, 4, 6].contains(type) {
                kept += length
                guard kept <= maxKeptMetadataBytes else {
                    throw FormatError.outOfRange(component: component, field: "metadata", value: "\(kept) bytes")
                }
                let bytes = try source.read(at: body, count: length)[...]
                switch type {
                case 0:
                    guard streamInfo == nil else {
                        throw FormatError.invalid(component: component, reason: "a second STREAMINFO", offset: offset)
                    }
                    streamInfo = try FLACStreamInfo.parse(bytes)
                case 3:
                    seekPoints += try FLACSeekPoint.parseTable(bytes)
                case 4:
                    // A broken tag block costs the tags, not the audio.
                    guard let parsed = try? VorbisComment.parse(bytes) else { unreadable += 1; break }
                    if comment == nil { comment = parsed }
                    pictures += parsed.pictures
                default:
                    guard let picture = try? FLACPicture.parse(bytes) else { unreadable += 1; break }
                    pictures.append(picture)
                }
            }
            offset = body + length
            if isLast { break }
        }
        guard let info = streamInfo else {
            throw FormatError.invalid(component: component, reason: "no STREAMINFO block", offset: leading + 4)
        }
        let metadataEnd = offset

        // Trailing tags: a lying APE size costs the tag, not the file.
        let tailLength = min(size - metadataEnd, 128 << 10)
        let tail = try source.read(at: size - tailLength, count: tailLength)
        let trailing = (try? TrailingTags.scan(tail: tail[...], fileSize: size))?.trailingBytes ?? 0
        let audioEnd = max(metadataEnd, size - min(trailing, tailLength))

        // The first frame, confirmed, and in agreement with STREAMINFO.
        let streamMax = info.maxBlockSize * info.channels * (info.bitsPerSample + 1) / 8 + 1024
        let headLength = min(audioEnd - metadataEnd, maxGapBeforeAudio + 2 * streamMax)
        let head = try source.read(at: metadataEnd, count: headLength)
        let scanner = FLACFrameScanner(head[...], isComplete: metadataEnd + headLength == audioEnd, streamBits: info.bitsPerSample)
        // A file cut inside its first frame cannot confirm it: a header right after the
        // metadata is believed on its CRC-8 alone (where a frame must be, not found by a search).
        let cutShort = scanner.header(at: 0).map { FLACFrame(offset: 0, length: headLength, header: $0) }
        guard let first = scanner.nextFrame(from: 0, through: maxGapBeforeAudio) ?? cutShort, first.offset <= maxGapBeforeAudio else {
            throw FormatError.invalid(component: component, reason: "no FLAC frame after the metadata", offset: metadataEnd)
        }
        let header = first.header
        guard header.channels == info.channels, header.sampleRate.map({ $0 == info.sampleRate }) ?? true,
              header.bitsPerSample.map({ $0 == info.bitsPerSample }) ?? true else {
            throw FormatError.invalid(component: component,
                                      reason: "first frame (\(header.channels) ch, \(header.sampleRate.map(String.init) ?? "-") Hz, "
                                        + "\(header.bitsPerSample.map(String.init) ?? "-") bits) disagrees with STREAMINFO",
                                      offset: metadataEnd + first.offset)
        }

        var total: Int? = info.totalSamples > 0 ? info.totalSamples : nil
        if total == nil {
            let window = min(audioEnd - metadataEnd, streamMax + 64)
            let end = try source.read(at: audioEnd - window, count: window)
            if let last = FLACFrameScanner(end[...], isComplete: true, streamBits: info.bitsPerSample).lastFrame(window: window) {
                let samples = last.header.firstSample(nominalBlockSize: info.maxBlockSize) + last.header.blockSize
                try Checked.seconds(ticks: samples, timescale: info.sampleRate, component, "last frame's sample number")
                total = samples
            }
        }
        return FLACStream(streamInfo: info, seekPoints: seekPoints, comment: comment, pictures: pictures, blockTypes: types,
                          leadingTagBytes: leading, metadataEnd: metadataEnd, audioStart: metadataEnd + first.offset,
                          audioEnd: audioEnd, totalSamples: total, firstFrame: header, unreadableBlocks: unreadable)
    }
}
