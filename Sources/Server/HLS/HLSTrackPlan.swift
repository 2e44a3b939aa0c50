import StreamShared
import StreamHTTP
import StreamLibrary

/// Why a track cannot be offered as HLS.
public enum HLSError: Error, CustomStringConvertible, Equatable {
    /// The track's codec or container has no HLS rendition here (WAV, AIFF, Vorbis, ALAC, a
    /// chained Ogg): streamd answers 415 with the reason.
    case unsupported(String)
    /// The file's tables do not describe a usable stream.
    case invalid(String)

    /// What the refusals of `unsupported` name (until transcoded renditions exist).
    static let carried = "HLS carries MP3, AAC, FLAC and Opus"

    public var description: String {
        switch self {
        case .unsupported(let why): return "HLS not available: \(why)"
        case .invalid(let why): return "HLS: \(why)"
        }
    }
}

/// The MP4 sample table flattened for segmenting: where each sample is and when it decodes.
struct MP4SampleRun: Sendable {
    var offsets: [Int]
    var sizes: [Int]
    /// Decode time of each sample, plus the end time of the last one (count + 1 entries).
    var times: [Int]

    /// Walks stsc/stco/stsz/stts once (O(samples)); stops where the tables stop covering samples.
    init(track: MP4AudioTrack, maxSamples: Int = 20_000_000) throws(HLSError) {
        let wanted = min(track.sampleCount, maxSamples)
        guard track.sampleCount <= maxSamples else { throw .invalid("\(track.sampleCount) samples is more than this server segments") }
        offsets = []
        sizes = []
        offsets.reserveCapacity(wanted)
        sizes.reserveCapacity(wanted)
        var sample = 0
        chunks: for (i, run) in track.sampleToChunk.enumerated() where run.samplesPerChunk > 0 && run.firstChunk >= 1 {
            let nextFirst = i + 1 < track.sampleToChunk.count ? track.sampleToChunk[i + 1].firstChunk : track.chunkOffsets.count + 1
            var chunk = run.firstChunk
            while chunk < nextFirst, chunk <= track.chunkOffsets.count {
                var offset = track.chunkOffsets[chunk - 1]
                for _ in 0..<run.samplesPerChunk {
                    guard sample < wanted, let size = track.size(ofSample: sample) else { break chunks }
                    offsets.append(offset)
                    sizes.append(size)
                    offset = offset &+ size
                    sample += 1
                }
                chunk += 1
            }
        }
        times = [0]
        times.reserveCapacity(offsets.count + 1)
        var time = 0
        for run in track.timeToSample where run.count > 0 {
            for _ in 0..<run.count {
                guard times.count <= offsets.count else { break }
                time = time &+ max(0, run.delta)
                times.append(time)
            }
        }
        // Samples the time table does not cover are dropped with it.
        let count = min(offsets.count, times.count - 1)
        offsets.removeLast(offsets.count - count)
        sizes.removeLast(sizes.count - count)
        guard count > 0 else { throw .invalid("the MP4 sample tables hold no samples") }
    }
}

/// Where the samples of an fMP4 segment come from.
enum FMP4Framing: Sendable {
    /// The MP4's own sample table (AAC): spans are sample numbers.
    case table(MP4SampleRun)
    /// FLAC frames: spans are byte ranges of whole frames, cut where the seek index has a frame;
    /// `startSamples[i]` is span i's first sample (its tfdt). Frames are split when a segment is made.
    case flacFrames(streamBits: Int, startSamples: [Int])
    /// Ogg Opus packets of stream `serial`: spans are byte ranges of whole pages, each starting a
    /// packet; `startSamples[i]` is span i's first sample at 48 kHz (its tfdt, pre-skip included).
    case oggOpus(serial: UInt32, startSamples: [Int])
    /// Ogg Opus cut on a grid that need not fall on page starts (a transcoded rendition): span i
    /// starts at the page where its first packet starts, and `windows[i]` picks its packets among
    /// the audio packets completed in the span's bytes (a leading continued piece is dropped).
    case oggOpusWindows(serial: UInt32, startSamples: [Int], windows: [Range<Int>])
}

/// How one track is cut into HLS segments, from its seek index (MP3, ADTS, FLAC, Ogg Opus) or
/// sample table (MP4). Segments are whole frames copied from the file: nothing is re-encoded.
public struct HLSTrackPlan: Sendable {
    public enum Kind: Sendable, Equatable {
        /// Packed audio (RFC 8216 section 3.4): the frames with an ID3 timestamp in front.
        case packedMP3, packedAAC
        /// Fragmented MP4 (section 3.3): an init segment and moof/mdat fragments.
        case fmp4
    }

    /// The longest segment wanted (EXT-X-TARGETDURATION of the VOD playlists).
    public static let targetSeconds = 6

    public let kind: Kind
    /// The file's strong ETag when the plan was made; segments of another version are refused.
    public let fileETag: String
    /// Short token naming this version of the file in segment URLs.
    public let version: String
    /// Segment spans: byte offsets (packed audio) or sample numbers (fMP4).
    public let spans: [HLSSegmentSpan]
    public let targetDuration: Int
    /// RFC 6381 codec string for the master playlist.
    public let codec: String
    /// Byte range of the audio frames in the file (packed audio).
    public let audioRange: Range<Int>
    /// The fMP4 init segment.
    public let initSegment: [UInt8]?
    /// How fMP4 segments find their samples; nil for packed audio.
    let framing: FMP4Framing?
    public let timescale: Int
    /// Packed MP3 renditions: the frame segment 0 carries in place of the file's first frame (its
    /// Info frame, which the encoder rewrites when it ends; see `MP3InfoFrame`).
    public var headFrame: [UInt8]? = nil

    /// File extension of the media segments.
    public var segmentExtension: String {
        switch kind {
        case .packedMP3: return "mp3"
        case .packedAAC: return "aac"
        case .fmp4: return "m4s"
        }
    }

    /// Content-Type of the media segments.
    public var segmentContentType: String {
        switch kind {
        case .packedMP3: return "audio/mpeg"
        case .packedAAC: return "audio/aac"
        case .fmp4: return "audio/mp4"
        }
    }

    /// Whether `?byterange=1` playlists exist (pieces of the packed file: MP3 and ADTS).
    public var supportsByteRanges: Bool { kind != .fmp4 }

    /// Total playing time of all segments (before gapless trimming), in seconds.
    public var duration: Double { spans.reduce(0) { $0 + $1.duration } }

    /// Plans the segments of `file`, whose analysis is `analysis`.
    public static func make(file: some RandomAccessBytes, etag: String, analysis: TrackAnalysis) throws -> HLSTrackPlan {
        let target = Double(targetSeconds)
        let index = analysis.seekIndex
        switch analysis.container {
        case .mp3, .adts:
            guard let first = index.points.first, index.audioEndOffset > first.byte else {
                throw HLSError.invalid("empty seek index")
            }
            let cuts = index.points.map { HLSCutPoint(time: $0.t, position: $0.byte) }
            let end = HLSCutPoint(time: index.durationSeconds, position: index.audioEndOffset)
            let spans = HLSSegmenter.plan(points: cuts, end: end, target: target)
            guard !spans.isEmpty else { throw HLSError.invalid("no segments") }
            let kind: Kind = analysis.container == .mp3 ? .packedMP3 : .packedAAC
            let codec: String
            if kind == .packedMP3 {
                codec = ["mp1": "mp4a.40.32", "mp2": "mp4a.40.33"][analysis.codec] ?? "mp4a.40.34"
            } else {
                let probed = try TrackAnalyzer.probe(file)
                codec = "mp4a.40.\(probed.adtsHeader?.objectType ?? 2)"
            }
            return HLSTrackPlan(kind: kind, fileETag: etag, version: versionToken(etag), spans: spans,
                                targetDuration: HLSSegmenter.targetDuration(for: spans, target: targetSeconds),
                                codec: codec, audioRange: first.byte..<index.audioEndOffset, initSegment: nil,
                                framing: nil, timescale: 90_000)
        case .mp4:
            guard analysis.codec == "aac" else {
                let name = analysis.codec == "alac" ? "ALAC" : analysis.codec
                throw HLSError.unsupported("\(name) in MP4 has no HLS rendition: \(HLSError.carried)")
            }
            return try makeFMP4(file: file, etag: etag, analysis: analysis)
        case .wav:
            throw HLSError.unsupported("WAV has no HLS rendition (PCM is not carried in HLS segments): \(HLSError.carried)")
        case .aiff:
            throw HLSError.unsupported("AIFF has no HLS rendition (PCM is not carried in HLS segments): \(HLSError.carried)")
        case .flac:
            return try makeFLAC(file: file, etag: etag, analysis: analysis)
        case .ogg:
            guard analysis.codec == "opus" else {
                throw HLSError.unsupported("\(analysis.codec == "vorbis" ? "Vorbis" : analysis.codec) has no HLS rendition: \(HLSError.carried)")
            }
            return try makeOpus(file: file, etag: etag, analysis: analysis)
        }
    }

    private static func makeFMP4(file: some RandomAccessBytes, etag: String, analysis: TrackAnalysis) throws -> HLSTrackPlan {
        let top = try MP4Locator.moovRange(file)
        let moov = try file.read(at: top.lowerBound, count: top.count)
        let movie = try MP4Movie.parse(moov: moov[...])
        // A fragmented source keeps its samples in moof boxes; re-cutting those is not done here.
        guard !movie.isFragmented else { throw HLSError.unsupported("the MP4 is already fragmented (serve it as it is)") }
        guard let track = movie.audio, track.codec == "mp4a", track.timescale > 0 else {
            throw HLSError.unsupported("MP4 without an AAC track")
        }
        let asc = try AudioSpecificConfig.parse(track.decoderSpecificInfo[...])
        let samples = try MP4SampleRun(track: track)
        let scale = Double(track.timescale)
        // Every sample start is a possible cut (AAC samples are all sync samples).
        var cuts: [HLSCutPoint] = []
        cuts.reserveCapacity(samples.offsets.count)
        for i in 0..<samples.offsets.count { cuts.append(HLSCutPoint(time: Double(samples.times[i]) / scale, position: i)) }
        let end = HLSCutPoint(time: Double(samples.times[samples.offsets.count]) / scale, position: samples.offsets.count)
        let spans = HLSSegmenter.plan(points: cuts, end: end, target: Double(targetSeconds))
        guard !spans.isEmpty else { throw HLSError.invalid("no segments") }
        let objectType = asc.psPresent ? 29 : (asc.sbrPresent ? 5 : asc.objectType)
        let info = FMP4AudioTrackInfo(trackID: 1, timescale: track.timescale, channels: asc.channels,
                                      sampleRate: asc.outputSampleRate, audioSpecificConfig: track.decoderSpecificInfo,
                                      avgBitrate: analysis.bitrate, maxBitrate: track.maxBitrate ?? 0,
                                      bufferSize: samples.sizes.max() ?? 0)
        let lower = samples.offsets.min() ?? 0
        let upper = zip(samples.offsets, samples.sizes).map { $0 + $1 }.max() ?? 0
        guard upper <= file.size else { throw HLSError.invalid("MP4 samples reach past the end of the file") }
        return HLSTrackPlan(kind: .fmp4, fileETag: etag, version: versionToken(etag), spans: spans,
                            targetDuration: HLSSegmenter.targetDuration(for: spans, target: targetSeconds),
                            codec: "mp4a.40.\(objectType)", audioRange: lower..<upper,
                            initSegment: FMP4Writer.initSegment(info), framing: .table(samples), timescale: track.timescale)
    }

    /// FLAC in fMP4: `fLaC` + `dfLa` (STREAMINFO), timescale = sample rate, one frame per sample;
    /// segments cut at the seek index's frames, whose exact first samples are the tfdt values.
    private static func makeFLAC(file: some RandomAccessBytes, etag: String, analysis: TrackAnalysis) throws -> HLSTrackPlan {
        let flac = try FLACReader.read(file)
        let info = flac.streamInfo
        guard info.sampleRate > 0, info.channels > 0 else { throw HLSError.invalid("STREAMINFO has no sample rate") }
        let index = analysis.seekIndex
        let rate = Double(info.sampleRate)
        var cuts: [HLSCutPoint] = []
        var sampleAt: [Int: Int] = [:]
        for point in index.points {
            guard let sample = point.sample, point.byte >= flac.audioStart, point.byte < index.audioEndOffset else { continue }
            cuts.append(HLSCutPoint(time: Double(sample) / rate, position: point.byte))
            sampleAt[point.byte] = sample
        }
        let total = analysis.totalSamples
        let end = HLSCutPoint(time: Double(total) / rate, position: min(index.audioEndOffset, file.size))
        let spans = HLSSegmenter.plan(points: cuts, end: end, target: Double(targetSeconds))
        guard !spans.isEmpty else { throw HLSError.invalid("no segments") }
        // STREAMINFO as the file has it, with the sample count filled in when the file says 0.
        var streamInfo = MP4BoxWriter()
        streamInfo.u16(UInt16(clamping: info.minBlockSize))
        streamInfo.u16(UInt16(clamping: info.maxBlockSize))
        streamInfo.u24(UInt32(clamping: min(info.minFrameSize, 0xFF_FFFF)))
        streamInfo.u24(UInt32(clamping: min(info.maxFrameSize, 0xFF_FFFF)))
        let samples = info.totalSamples > 0 ? info.totalSamples : total
        let packed = UInt64(info.sampleRate & 0xF_FFFF) << 44 | UInt64((info.channels - 1) & 0x7) << 41
            | UInt64((info.bitsPerSample - 1) & 0x1F) << 36 | UInt64(max(0, samples)) & 0xF_FFFF_FFFF
        streamInfo.u64(packed)
        streamInfo.append(info.md5.count == 16 ? info.md5 : [UInt8](repeating: 0, count: 16))
        var track = FMP4AudioTrackInfo(timescale: info.sampleRate, channels: info.channels, sampleRate: info.sampleRate,
                                       audioSpecificConfig: [])
        track.codec = .flac(streamInfo: streamInfo.bytes, bitsPerSample: info.bitsPerSample)
        return HLSTrackPlan(kind: .fmp4, fileETag: etag, version: versionToken(etag), spans: spans,
                            targetDuration: HLSSegmenter.targetDuration(for: spans, target: targetSeconds),
                            codec: "flac", audioRange: spans[0].start..<end.position, initSegment: FMP4Writer.initSegment(track),
                            framing: .flacFrames(streamBits: info.bitsPerSample, startSamples: spans.map { sampleAt[$0.start] ?? 0 }),
                            timescale: info.sampleRate)
    }

    /// Opus in fMP4: `Opus` + `dOps`, timescale 48000, one packet per sample, the pre-skip as an
    /// edit list (and the end trim as its duration), 80 ms of pre-roll as a 'roll' group;
    /// segments cut at pages of the Ogg seek index (each starts a packet).
    private static func makeOpus(file: some RandomAccessBytes, etag: String, analysis: TrackAnalysis) throws -> HLSTrackPlan {
        let ogg = try OggReader.read(file)
        guard ogg.links.count == 1 else {
            throw HLSError.unsupported("a chained Ogg Opus file (\(ogg.links.count) links) has no HLS rendition: fMP4 carries one set of headers")
        }
        guard case .opus(let head) = ogg.first.codec, let lastGranule = ogg.first.lastGranule else {
            throw HLSError.invalid("no Opus stream with a granule position")
        }
        let serial = ogg.first.serial
        let total = analysis.totalSamples                  // the last granule less the stream's start
        let start = max(0, Int(lastGranule) - total)        // a stream cut from a live one starts above 0
        let index = analysis.seekIndex
        var cuts: [HLSCutPoint] = []
        var sampleAt: [Int: Int] = [:]
        for (i, point) in index.points.enumerated() where (point.link ?? 0) == 0 {
            guard let granule = point.sample else { continue }
            let sample = i == 0 ? 0 : max(0, granule - start)
            cuts.append(HLSCutPoint(time: Double(sample) / 48_000, position: point.byte))
            sampleAt[point.byte] = sample
        }
        let end = HLSCutPoint(time: Double(total) / 48_000, position: min(index.audioEndOffset, file.size))
        let spans = HLSSegmenter.plan(points: cuts, end: end, target: Double(targetSeconds))
        guard let first = spans.first else { throw HLSError.invalid("no segments") }
        // The roll distance in packets: enough of the first packets' length to cover 80 ms (3840 samples).
        let firstBytes = try file.read(at: first.start, count: min(first.end - first.start, 4 * OggPage.maxLength))
        let firstPacket = try opusPackets(firstBytes, serial: serial).first.flatMap { OpusPacket.samples($0[...]) } ?? 960
        let roll = -((3840 + max(120, firstPacket) - 1) / max(120, firstPacket))
        var track = FMP4AudioTrackInfo(timescale: 48_000, channels: head.channels, sampleRate: 48_000, audioSpecificConfig: [],
                                       avgBitrate: analysis.bitrate)
        track.codec = .opus(head)
        track.edit = (mediaTime: head.preSkip, duration: max(0, total - head.preSkip))
        track.rollDistance = roll
        return HLSTrackPlan(kind: .fmp4, fileETag: etag, version: versionToken(etag), spans: spans,
                            targetDuration: HLSSegmenter.targetDuration(for: spans, target: targetSeconds),
                            codec: "opus", audioRange: first.start..<end.position, initSegment: FMP4Writer.initSegment(track),
                            framing: .oggOpus(serial: serial, startSamples: spans.map { sampleAt[$0.start] ?? 0 }),
                            timescale: 48_000)
    }

    static let opusTagsMagic: [UInt8] = Array("OpusTags".utf8)

    /// The packets of stream `serial` completed in `bytes` (whole pages; damaged ones skipped).
    static func opusPackets(_ bytes: [UInt8], serial: UInt32) throws -> [[UInt8]] {
        var assembler = OggPacketAssembler(serial: serial)
        var packets: [[UInt8]] = []
        var at = 0
        while let (offset, page) = OggPage.next(in: bytes[...], from: at) {
            let bodyStart = offset + page.headerLength
            // Header packets (a span from a quick index starts at the BOS page) are not audio.
            packets += try assembler.push(page, body: bytes[bodyStart..<(bodyStart + page.bodyLength)]).map(\.data)
                .filter { !$0.starts(with: OpusHead.magic) && !$0.starts(with: Self.opusTagsMagic) }
            at = offset + page.length
        }
        return packets
    }

    /// The FLAC frames in `bytes` (whole frames from a frame start to a frame start or the
    /// audio's end): each one's length and block size; bytes between frames (damage) are skipped.
    static func flacFrames(_ bytes: [UInt8], streamBits: Int) -> [(offset: Int, length: Int, samples: Int)] {
        let scanner = FLACFrameScanner(bytes[...], isComplete: true, streamBits: streamBits)
        var frames: [(offset: Int, length: Int, samples: Int)] = []
        var offset = 0
        while offset < bytes.count {
            guard let frame = scanner.frame(at: offset) ?? scanner.nextFrame(from: offset + 1) else { break }
            frames.append((frame.offset, frame.length, frame.header.blockSize))
            offset = frame.offset + frame.length
        }
        return frames
    }

    /// FNV-1a of the ETag, as 12 hex digits: short, stable, changes with the file.
    package static func versionToken(_ etag: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in etag.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash & 0xFFFF_FFFF_FFFF, radix: 16)
        return String(repeating: "0", count: 12 - hex.count) + hex
    }

    // MARK: Segments

    /// Size of segment `i` in bytes (without generating it).
    public func segmentSize(_ i: Int) -> Int {
        let span = spans[i]
        switch kind {
        case .packedMP3, .packedAAC:
            return ID3Writer.transportStreamTimestampTag(ticks90k: 0).count + span.end - span.start
        case .fmp4:
            switch framing {
            case .table(let samples):
                return FMP4Writer.mediaHeaderSize(sampleCount: span.end - span.start) + samples.sizes[span.start..<span.end].reduce(0, +)
            case .flacFrames, .oggOpus, .oggOpusWindows:
                // Without splitting the frames: the source bytes (Ogg page headers included) and a
                // moof for a frame per 20 ms, close enough for BANDWIDTH.
                return FMP4Writer.mediaHeaderSize(sampleCount: Int(span.duration * 50)) + span.end - span.start
            case nil:
                return 0
            }
        }
    }

    /// Segment `i` of the track as a client receives it.
    /// - Parameters:
    ///   - loop: for live sources, how many times the track has played before (timestamps keep growing).
    ///   - sequence: the fMP4 fragment sequence number (mfhd), 1-based.
    public func segment(_ i: Int, from file: some RandomAccessBytes, loop: Int = 0, sequence: Int? = nil) throws -> [UInt8] {
        let media = try frames(ofSegment: i, from: file)
        switch kind {
        case .packedMP3, .packedAAC:
            return timestampTag(i, loop: loop) + media.bytes
        case .fmp4:
            let span = spans[i]
            let start: Int, loopLength: Int
            switch framing {
            case .table(let samples):
                start = samples.times[span.start]
                loopLength = samples.times[samples.offsets.count]
            case .flacFrames(_, let starts), .oggOpus(_, let starts), .oggOpusWindows(_, let starts, _):
                start = starts[i]
                loopLength = Int((duration * Double(timescale)).rounded())
            case nil:
                throw HLSError.invalid("no sample table")
            }
            let loopTicks = UInt64(max(0, loopLength)) &* UInt64(max(0, loop))
            let base = loopTicks &+ UInt64(max(0, start))
            var isOpus = false
            if case .oggOpus = framing { isOpus = true }
            if case .oggOpusWindows = framing { isOpus = true }
            return FMP4Writer.mediaSegmentHeader(sequence: sequence ?? (i + 1), trackID: 1, baseDecodeTime: base,
                                                 samples: zip(media.durations, media.sizes).map { ($0, $1) },
                                                 rollGroup: isOpus) + media.bytes
        }
    }

    /// The frames of segment `i` as the file holds them, without the tag or moof in front.
    /// fMP4: the AAC samples back to back, with each one's size and duration (timescale ticks);
    /// packed audio: the span's bytes as one run (`sizes` and `durations` empty).
    func frames(ofSegment i: Int, from file: some RandomAccessBytes) throws -> (bytes: [UInt8], sizes: [Int], durations: [Int]) {
        guard spans.indices.contains(i) else { throw HLSError.invalid("no segment \(i)") }
        let span = spans[i]
        switch kind {
        case .packedMP3, .packedAAC:
            var body = try file.read(at: span.start, count: span.end - span.start)
            guard body.count == span.end - span.start else { throw HLSError.invalid("the file is shorter than its index") }
            if i == 0, let headFrame, headFrame.count <= body.count { body.replaceSubrange(0..<headFrame.count, with: headFrame) }
            return (body, [], [])
        case .fmp4:
            switch framing {
            case .table(let samples): return try tableFrames(span, samples, from: file)
            case .flacFrames(let bits, _):
                let bytes = try file.read(at: span.start, count: span.end - span.start)
                guard bytes.count == span.end - span.start else { throw HLSError.invalid("the file is shorter than its index") }
                let frames = Self.flacFrames(bytes, streamBits: bits)
                guard !frames.isEmpty else { throw HLSError.invalid("segment \(i) holds no FLAC frame") }
                // Damage between frames (skipped by the index too) is left out of the fragment.
                if frames.reduce(0, { $0 + $1.length }) == bytes.count { return (bytes, frames.map(\.length), frames.map(\.samples)) }
                var out: [UInt8] = []
                for frame in frames { out += bytes[frame.offset..<(frame.offset + frame.length)] }
                return (out, frames.map(\.length), frames.map(\.samples))
            case .oggOpus(let serial, _), .oggOpusWindows(let serial, _, _):
                let bytes = try file.read(at: span.start, count: span.end - span.start)
                guard bytes.count == span.end - span.start else { throw HLSError.invalid("the file is shorter than its index") }
                var out: [UInt8] = [], sizes: [Int] = [], durations: [Int] = []
                var packets = try Self.opusPackets(bytes, serial: serial)
                if case .oggOpusWindows(_, _, let windows) = framing {
                    let window = windows[i].clamped(to: 0..<packets.count)
                    packets = Array(packets[window])
                }
                for packet in packets {
                    // An empty packet (a lost frame the encoder marked) has no TOC: nothing to play.
                    guard let samples = OpusPacket.samples(packet[...]) else { continue }
                    out += packet
                    sizes.append(packet.count)
                    durations.append(samples)
                }
                guard !sizes.isEmpty else { throw HLSError.invalid("segment \(i) holds no Opus packet") }
                return (out, sizes, durations)
            case nil:
                throw HLSError.invalid("no sample table")
            }
        }
    }

    /// The AAC samples of `span` from the MP4's sample table.
    private func tableFrames(_ span: HLSSegmentSpan, _ samples: MP4SampleRun, from file: some RandomAccessBytes) throws
        -> (bytes: [UInt8], sizes: [Int], durations: [Int]) {
        var out: [UInt8] = []
        // Read runs of samples that sit back to back in one go.
        var s = span.start
        while s < span.end {
            var runEnd = s + 1
            var length = samples.sizes[s]
            while runEnd < span.end, samples.offsets[runEnd] == samples.offsets[s] + length, length < 4 << 20 {
                length += samples.sizes[runEnd]
                runEnd += 1
            }
            let bytes = try file.read(at: samples.offsets[s], count: length)
            guard bytes.count == length else { throw HLSError.invalid("the file is shorter than its sample table") }
            out += bytes
            s = runEnd
        }
        let durations = (span.start..<span.end).map { samples.times[$0 + 1] - samples.times[$0] }
        return (out, Array(samples.sizes[span.start..<span.end]), durations)
    }

    /// The ID3 PRIV timestamp that starts packed segment `i` (RFC 8216 section 3.4): its
    /// start in 90 kHz ticks (33 bits, as in MPEG-TS), counting `loop` earlier plays.
    func timestampTag(_ i: Int, loop: Int = 0) -> [UInt8] {
        let start = Double(max(0, loop)) * duration + spans[i].startTime - spans[0].startTime
        let ticks = (start * 90_000).rounded()
        // Out-of-range times (a huge loop count) wrap like the 33-bit field instead of trapping.
        let wrapped = ticks.isFinite && ticks > 0 ? ticks.truncatingRemainder(dividingBy: 0x1p33) : 0
        return ID3Writer.transportStreamTimestampTag(ticks90k: UInt64(wrapped))
    }

    // MARK: The packed file (byte-range playlists)

    /// Where each packed segment starts in the packed file (`packed.mp3` / `packed.aac`): the
    /// segments exactly as `segment(_:)` makes them, back to back. A byte range of it is a whole
    /// segment that starts with its ID3 timestamp, as RFC 8216 requires of packed audio; ranges
    /// of the original file cannot be (the tag is not in it), so there are none of those.
    public var packedOffsets: [Int] {
        var offsets: [Int] = []
        offsets.reserveCapacity(spans.count + 1)
        var at = 0
        for i in spans.indices {
            offsets.append(at)
            at += segmentSize(i)
        }
        offsets.append(at)
        return offsets
    }

    /// File name of the packed file ("packed.mp3").
    public var packedFileName: String { "packed.\(segmentExtension)" }

    /// The packed file as response parts: each segment's tag in memory, its frames as a span of
    /// `file` (sent with sendfile). Packed audio only; empty for fMP4.
    public func packedParts(of file: OpenFile) -> [BodyPart] {
        guard kind != .fmp4 else { return [] }
        var parts: [BodyPart] = []
        parts.reserveCapacity(spans.count * 2)
        for (i, span) in spans.enumerated() {
            parts.append(.bytes(timestampTag(i)))
            if i == 0, let headFrame, headFrame.count <= span.end - span.start {
                parts.append(.bytes(headFrame))
                parts.append(.file(file, offset: span.start + headFrame.count, length: span.end - span.start - headFrame.count))
                continue
            }
            parts.append(.file(file, offset: span.start, length: span.end - span.start))
        }
        return parts
    }

    // MARK: Playlists

    /// Name of media segment `i` ("seg-3.mp3").
    public func segmentName(_ i: Int) -> String { "seg-\(i).\(segmentExtension)" }

    /// The VOD media playlist; `query` is appended to every generated URI ("?v=…" on the server, "" in a package).
    /// `growing`: an EVENT playlist without ENDLIST, for an encode under way (its whole segments so far).
    public func mediaPlaylist(query: String, growing: Bool = false) -> HLSMediaPlaylist {
        var playlist = HLSMediaPlaylist(targetDuration: targetDuration, playlistType: growing ? .event : .vod, endList: !growing)
        if growing { playlist.startOffset = 0 }
        if kind == .fmp4 { playlist.mapURI = "init.mp4" + query }
        playlist.segments = spans.indices.map { HLSSegmentEntry(duration: spans[$0].duration, uri: segmentName($0) + query) }
        return playlist
    }

    /// The VOD playlist of byte ranges of the packed file at `fileURI` (MP3 and ADTS): each
    /// range is one whole segment, ID3 timestamp first.
    public func byteRangePlaylist(fileURI: String) -> HLSMediaPlaylist {
        var playlist = HLSMediaPlaylist(targetDuration: targetDuration, playlistType: .vod, endList: true)
        let offsets = packedOffsets
        playlist.segments = spans.indices.map {
            HLSSegmentEntry(duration: spans[$0].duration, uri: fileURI, byteRange: (offsets[$0 + 1] - offsets[$0], offsets[$0]))
        }
        return playlist
    }

    /// The master playlist with one variant, `index.m3u8` (plus `query`).
    public func masterPlaylist(query: String) -> HLSMasterPlaylist {
        var peak = 0.0, bytes = 0
        for i in spans.indices {
            let size = segmentSize(i)
            bytes += size
            if spans[i].duration > 0.5 { peak = max(peak, Double(size * 8) / spans[i].duration) }
        }
        let average = Int((Double(bytes * 8) / max(duration, 1e-6)).rounded())
        let bandwidth = max(Int(peak.rounded(.up)), average)
        return HLSMasterPlaylist(variants: [HLSVariant(bandwidth: bandwidth, averageBandwidth: average, codecs: [codec],
                                                       uri: "index.m3u8" + query)])
    }
}
