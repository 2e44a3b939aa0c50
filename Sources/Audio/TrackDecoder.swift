import StreamShared

/// Decodes one track to interleaved float PCM for a radio channel that transcodes: the bytes
/// read block by block, the codec through the same converters streamplay uses (MP3, AAC, WAV,
/// Ogg Opus/Vorbis, FLAC, AIFF, ALAC; 24-bit samples stay exact in the floats), and the gapless
/// trim applied (MP3: LAME delay + the decoder's 529 and the padding; MP4: the edit list's or
/// iTunSMPB's priming beyond the frame libfaad2 keeps back, and the padding; Ogg: pre-skip and
/// the last granule; FLAC, AIFF: the declared sample count), so tracks join without the
/// encoders' silence. Reads through `RandomAccessBytes`, so the fuzzer drives it
/// on bytes in memory (Fuzz target `decode`); streamd runs it only in a decode worker process.
public struct TrackDecoder {
    /// What the catalog's analysis of the file says (the file is probed again here: it may have
    /// changed since).
    public struct Hints: Sendable, Equatable {
        /// Where the audio frames end (tags after them); 0: the end of the file.
        public var audioEnd: Int
        /// Where the audio frames start (MP4 without a sample table entry falls back to it).
        public var audioStart: Int
        /// Gapless facts of an MP4: priming and padding samples, all samples before trimming.
        public var encoderDelay: Int
        public var encoderPadding: Int
        public var totalSamples: Int

        public init(audioStart: Int = 0, audioEnd: Int = 0, encoderDelay: Int = 0, encoderPadding: Int = 0,
                    totalSamples: Int = 0) {
            self.audioStart = audioStart
            self.audioEnd = audioEnd
            self.encoderDelay = encoderDelay
            self.encoderPadding = encoderPadding
            self.totalSamples = totalSamples
        }
    }

    private let source: any RandomAccessBytes
    private var converter: any PacketConverter
    /// The format the header declares; the decoder's own (AAC with SBR/PS) wins once known.
    private let declared: AudioFormat
    /// Next offset to read, and where the audio ends.
    private var readOffset: Int
    private var end: Int
    private var window = TrimWindow()
    /// The container as probed now (the file may have changed since the catalog read it).
    public let container: Container
    /// WAVE_FORMAT_EXTENSIBLE's speaker mask of the decoded channels (WAV's own; FLAC's, ALAC's
    /// and Vorbis' orders as the converters put them out); nil: mono, stereo or none declared.
    public private(set) var wavChannelMask: UInt32?
    static let blockSize = 64 * 1024
    /// Samples decoded before a start point's target so the decoder is warm when the kept output
    /// begins (MP3: 4 frames, the bit reservoir and overlap; AAC: 3 access units, libfaad2's
    /// first output is the second; Opus: 80 ms of pre-roll, RFC 7845 §4.6, plus a 120 ms packet;
    /// Vorbis: two long blocks); 0: the container restarts exactly (FLAC, AIFF, WAV, ALAC).
    private var warmUp = 0
    /// Ogg: the first link's codec (its header packets are read again at a start point).
    private var oggCodec: OggCodec?

    /// Plans the decoding of `source`; throws `FormatError` (the bytes are not what the catalog
    /// saw, or not audio at all), `DecoderError`, or what the source's reads throw.
    public init(source: any RandomAccessBytes, hints: Hints) throws {
        self.source = source
        let stream = try TrackAnalyzer.probe(source)
        container = stream.container
        end = min(source.size, hints.audioEnd > 0 ? hints.audioEnd : source.size)
        switch stream.container {
        case .mp3:
            guard let first = stream.mpegFrame else {
                throw FormatError.invalid(component: "mpeg", reason: "no first frame", offset: 0)
            }
            converter = try MP3Converter()
            readOffset = first.offset + (stream.vbrHeader != nil ? first.length : 0)
            declared = AudioFormat(sampleRate: first.header.sampleRate, channels: first.header.channels)
            warmUp = 4 * first.header.samplesPerFrame
            // The trim only when the LAME tag says (as mpg123 and streamplay do), counted from the
            // file's own Xing frame count (the file as it is now, not as the catalog saw it).
            if let gapless = stream.vbrHeader?.gapless, let frames = stream.vbrHeader?.frameCount, frames > 0 {
                let (total, overflow) = frames.multipliedReportingOverflow(by: first.header.samplesPerFrame)
                window.keepFrom = gapless.encoderDelay + 529
                if !overflow { window.keepUntil = window.keepFrom + max(0, total - gapless.encoderDelay - gapless.encoderPadding) }
            }
        case .adts:
            guard let header = stream.adtsHeader else {
                throw FormatError.invalid(component: "adts", reason: "no first frame", offset: 0)
            }
            converter = try ADTSConverter(first: header)
            readOffset = stream.firstFrameOffset
            warmUp = 3 * 1024
            declared = AudioFormat(sampleRate: header.sampleRate, channels: header.audioSpecificConfig.channels)
        case .mp4:
            let moovRange = try MP4Locator.moovRange(source)
            let movie = try MP4Movie.parse(moov: try source.read(at: moovRange.lowerBound, count: moovRange.count)[...])
            guard let audio = movie.audio, audio.codec == "mp4a" || audio.codec == "alac", !movie.isFragmented else {
                throw FormatError.unsupported(component: "mp4", reason: movie.isFragmented ? "fragmented MP4" : "no AAC or ALAC track")
            }
            readOffset = audio.sampleLocation(0)?.offset ?? hints.audioStart
            if audio.codec == "alac" {
                // Apple Lossless: no priming, only what an edit list trims; the file's own tables
                // (as they are now) give the length.
                let config = try ALACSpecificConfig.parse(cookie: audio.decoderSpecificInfo[...])
                converter = try MP4ALACConverter(track: audio, config: config)
                try converter.restart(at: readOffset)
                let rate = config.sampleRate > 0 ? config.sampleRate : audio.sampleRate
                declared = AudioFormat(sampleRate: rate, channels: config.numChannels)
                wavChannelMask = MP4ALACConverter.wavOrder(channels: config.numChannels)?.mask
                let total = try Checked.samples(ticks: audio.totalTicks, timescale: audio.timescale, rate: rate, "mp4", "stts.sample_delta")
                let gapless = movie.gapless(outputSampleRate: rate)
                window.keepFrom = gapless?.encoderDelay ?? 0
                window.keepUntil = window.keepFrom + max(0, total - window.keepFrom - (gapless?.encoderPadding ?? 0))
                break
            }
            let asc = try AudioSpecificConfig.parse(audio.decoderSpecificInfo[...])
            converter = try MP4Converter(track: audio, declaredChannels: asc.channels)
            try converter.restart(at: readOffset)
            declared = AudioFormat(sampleRate: asc.outputSampleRate, channels: asc.channels)
            warmUp = 3 * asc.samplesPerFrame
            // libfaad2 outputs nothing for the first access unit: that frame is the usual priming.
            window.keepFrom = max(0, hints.encoderDelay - asc.samplesPerFrame)
            window.keepUntil = window.keepFrom + max(0, hints.totalSamples - hints.encoderDelay - hints.encoderPadding)
        case .wav:
            guard let wav = stream.wav else {
                throw FormatError.invalid(component: "wav", reason: "no fmt chunk", offset: 0)
            }
            converter = WAVConverter(format: wav.format)
            wavChannelMask = wav.format.channelMask
            readOffset = wav.dataOffset
            declared = AudioFormat(sampleRate: wav.format.sampleRate, channels: wav.format.channels)
        case .flac:
            // libFLAC through FLACConverter, 24-bit as floats (exact); STREAMINFO's count ends the
            // track (trailing ID3v1/APE tags are not frames); 0: the decoder's last frame does.
            guard let flac = stream.flac else { throw FormatError.invalid(component: "flac", reason: "no STREAMINFO", offset: 0) }
            let info = flac.streamInfo
            converter = try FLACConverter(streamInfo: info, audioStart: stream.firstFrameOffset)
            wavChannelMask = FLACConverter.wavChannelMask(channels: info.channels)
            readOffset = stream.firstFrameOffset
            declared = AudioFormat(sampleRate: info.sampleRate, channels: info.channels)
            if info.totalSamples > 0 { window.keepUntil = info.totalSamples }
        case .aiff:
            // The SSND chunk's whole frames only: chunks after it (ID3, comments) are not samples.
            guard let aiff = stream.aiff else { throw FormatError.invalid(component: "aiff", reason: "no COMM chunk", offset: 0) }
            converter = AIFFConverter(format: aiff.format)
            readOffset = stream.firstFrameOffset
            let leadingTags = stream.id3v2.reduce(0) { $0 + $1.totalSize }
            let frames = aiff.frameCount(fileSize: source.size - leadingTags)
            end = min(end, readOffset + frames * max(1, aiff.format.blockAlign))
            window.keepUntil = frames
            declared = AudioFormat(sampleRate: Int(aiff.format.sampleRate.rounded()), channels: aiff.format.channels)
        case .ogg:
            // The converter cuts the pre-skip and each link's end by the granules itself.
            guard let codec = stream.oggCodec else { throw FormatError.invalid(component: "ogg", reason: "no codec header", offset: 0) }
            converter = OggConverter()
            oggCodec = codec
            switch codec {
            case .vorbis(let id): warmUp = 2 * id.blockSizes.long
            default: warmUp = 3840 + 5760
            }
            wavChannelMask = VorbisChannelOrder.channelMask(channels: codec.channels)
            readOffset = stream.firstFrameOffset
            declared = AudioFormat(sampleRate: codec.sampleRate, channels: codec.channels)
        }
        if stream.container != .mp4 { try converter.restart(at: readOffset) }
        guard declared.sampleRate > 0, declared.channels > 0 else {
            throw FormatError.invalid(component: "decoder", reason: "no sample rate or channels", offset: 0)
        }
    }

    /// The channel count the header declares.
    public var declaredChannels: Int { declared.channels }

    /// The format of the samples `decode` appends (known for certain after the first call).
    public var format: AudioFormat { converter.decodedFormat ?? declared }

    /// Appends the next samples of the track (interleaved, in `format`, trimmed) to `output`;
    /// false at the end of the track. Throws on a read error or a stream the decoder refuses.
    public mutating func decode(into output: inout [Float]) throws -> Bool {
        let before = output.count
        while output.count == before {
            let isComplete = readOffset >= end
            // The format as the decoder knows it before this unit (AAC's first unit, which fixes
            // it, gives no samples).
            let format = self.format
            var window = self.window
            let declaredRate = declared.sampleRate
            let converted = try converter.convertNext(isComplete: isComplete) { samples in
                window.keep(samples, format: format, declaredRate: declaredRate, into: &output)
            }
            self.window = window
            if converted {
                if window.isPastEnd { return output.count > before }
                continue
            }
            if isComplete { return output.count > before }
            try read()
        }
        return true
    }

    /// Starts the output at `sample` (per channel, counted in the trimmed track, as `decode`
    /// gives it): from `point` (a seek-index point at a frame start) where it lies far enough
    /// before the target for the decoder to warm up (`warmUp`), else by decoding from the start
    /// and dropping what comes before (exact in every container, only slower). The point's
    /// sample is counted as the container counts it: FLAC, AIFF, WAV, MP3 and AAC the untrimmed
    /// sample its frame starts at (MP3 and AAC: the index's time by the declared rate); Ogg the
    /// granule of the page before it (first link only). Output after a start point is the same
    /// as the whole decode's from the warm-up on. Call before `decode`.
    public mutating func start(atSample sample: Int, from point: (byte: Int, sample: Int)?) throws {
        guard sample > 0 else { return }
        let target = window.keepFrom > Int.max - sample ? Int.max : window.keepFrom + sample
        if let point, point.sample >= 0, point.byte >= readOffset, point.byte < end {
            switch container {
            case .flac, .aiff, .wav, .mp3, .adts, .mp4:
                if point.sample <= target - warmUp {
                    readOffset = point.byte
                    try converter.restart(at: point.byte)
                    window.moved(to: point.sample)
                }
            case .ogg:
                try startOgg(at: point, target: target)
            }
        }
        window.keepFrom = target
    }

    /// An Ogg start point: the first link's header pages are read again (its serial and header
    /// packets), then the converter restarts at the point's page, its output placed at the
    /// point's sample on the trimmed timeline (the granule less Opus's pre-skip).
    private mutating func startOgg(at point: (byte: Int, sample: Int), target: Int) throws {
        guard let codec = oggCodec, window.keepFrom == 0 else { return }
        let origin = codec.preSkip
        let timeline = point.sample - origin
        guard timeline >= 0, timeline <= target - warmUp else { return }
        let headerPackets: Int
        switch codec {
        case .opus: headerPackets = 2
        case .vorbis: headerPackets = 3
        default: return
        }
        guard let (serial, headerEnd) = try Self.oggHeaderPages(source, from: readOffset, packets: headerPackets, limit: end),
              point.byte >= headerEnd else { return }
        let headers = try source.read(at: readOffset, count: headerEnd - readOffset)
        var seeking = OggConverter(links: [OggConverter.Link(serial: serial, headers: headers, firstSample: 0)])
        try seeking.restart(at: point.byte, sample: timeline)
        converter = seeking
        readOffset = point.byte
        window.moved(to: timeline)
    }

    /// The first page's serial and where the page completing the stream's `packets` header
    /// packets ends (page headers only are read); nil when the pages are not that.
    static func oggHeaderPages(_ source: any RandomAccessBytes, from start: Int, packets: Int, limit: Int) throws -> (UInt32, Int)? {
        var offset = start
        var serial: UInt32?
        var completed = 0
        var pages = 0
        while completed < packets {
            pages += 1
            guard pages <= 4096, offset + 27 <= limit else { return nil }
            let head = try source.read(at: offset, count: 27)
            guard head.count == 27, head[0] == 0x4F, head[1] == 0x67, head[2] == 0x67, head[3] == 0x53 else { return nil }
            let pageSerial = UInt32(head[14]) | UInt32(head[15]) << 8 | UInt32(head[16]) << 16 | UInt32(head[17]) << 24
            if serial == nil { serial = pageSerial }
            let segments = Int(head[26])
            let lacing = try source.read(at: offset + 27, count: segments)
            guard lacing.count == segments else { return nil }
            if pageSerial == serial { completed += lacing.reduce(0) { $0 + ($1 < 255 ? 1 : 0) } }
            offset += 27 + segments + lacing.reduce(0) { $0 + Int($1) }
        }
        guard let serial else { return nil }
        return (serial, offset)
    }

    private mutating func read() throws {
        let bytes = try source.read(at: readOffset, count: min(Self.blockSize, end - readOffset))
        if bytes.isEmpty {
            readOffset = end          // the file shrank: its end
            return
        }
        readOffset += bytes.count
        converter.append(bytes)
    }
}

/// Which decoded samples of a track are kept: the gapless window, in untrimmed samples per
/// channel at the declared rate until the decoded rate is known (then scaled once).
struct TrimWindow {
    var keepFrom = 0
    var keepUntil = Int.max
    /// Untrimmed samples (per channel) decoded so far.
    private(set) var position = 0
    private var scaled = false

    var isPastEnd: Bool { position >= keepUntil }

    /// Where a restart placed `position` (before any sample came).
    private var movedTo: Int?

    /// The next samples decoded are those from `sample` on (a restart at a seek point).
    mutating func moved(to sample: Int) {
        position = sample
        movedTo = sample
    }

    /// Appends the part of `samples` (interleaved, in `format`) inside the window to `output`.
    mutating func keep(_ samples: UnsafeBufferPointer<Float>, format: AudioFormat, declaredRate: Int,
                       into output: inout [Float]) {
        if !scaled, format.sampleRate != declaredRate, declaredRate > 0 {
            // Implicit SBR: the trim was counted at the declared rate.
            scaled = true
            let ratio = Double(format.sampleRate) / Double(declaredRate)
            keepFrom = Int(Double(keepFrom) * ratio)
            if keepUntil != Int.max { keepUntil = Int(Double(keepUntil) * ratio) }
            // A start point's sample was counted at the declared rate too (only a restart's: the
            // whole decode's position stays as it always was).
            if let movedTo, position == movedTo { position = Int(Double(position) * ratio) }
        }
        let channels = max(1, format.channels)
        let frames = samples.count / channels
        let start = position
        position += frames
        let lower = max(keepFrom, start), upper = min(keepUntil, position)
        guard lower < upper else { return }
        output.append(contentsOf: samples[((lower - start) * channels)..<((upper - start) * channels)])
    }
}
