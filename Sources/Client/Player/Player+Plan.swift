import StreamShared
import StreamAudio

extension Player {
    /// A fragmented MP4's per-track defaults (moov/mvex/trex) for the converter.
    struct FragmentedMP4 {
        var defaults: MP4TrackExtends?
    }

    /// What the probe tells about a stream, in the terms the decode loop needs.
    struct StreamPlan {
        var stream: ProbedStream
        var format: AudioFormat
        /// Offset of the first byte of audio (after tags, the Xing/Info frame, the RIFF header).
        var audioStart: Int
        /// Samples per converter unit (an MPEG frame; one frame for WAV).
        var samplesPerUnit: Int
        /// Samples to drop at the start: encoder delay + the decoder's 529 (0 without a LAME tag).
        var trimStart: Int
        /// Playable samples after trimming, when the header tells.
        var trimmedLength: Int?
        /// Units the header promises (Xing frame count), to recognise a truncated stream.
        var totalUnits: Int?
        /// Samples per channel cut from the stream's real end (MP3: the LAME padding beyond the
        /// decoder's delay). They are held back while decoding, since the header's frame count is
        /// only a hint of where the end is; 0 when `trimmedLength` bounds the stream instead.
        var tailTrim = 0
        /// Units decoded before the target to warm the decoder up after a seek (bit reservoir).
        var warmUpUnits: Int
        /// MP3 only: the first frame's header, for seek arithmetic.
        var mpegHeader: MPEGFrameHeader?
        var wav: WAVInfo?
        /// ADTS only: the first frame's header.
        var adts: ADTSHeader?
        /// MP4 only: the audio track and its sample tables.
        var mp4: MP4AudioTrack? = nil
        /// Fragmented MP4 only: the trex defaults (samples live in moof boxes, not the sample table).
        var fragmented: FragmentedMP4? = nil
        /// FLAC, AIFF and ALAC-in-MP4 (units are samples; see Player+LosslessPlan.swift).
        var flac: FLACMetadataPrefix? = nil
        var aiff: AIFFInfo? = nil
        var alac: ALACSpecificConfig? = nil
        /// Ogg only: the stream's serial, codec, links and where its audio pages start.
        var ogg: OggPlan? = nil
        /// AAC only: the channels the ADTS header or AudioSpecificConfig declares (1 folds
        /// libfaad2's stereo copy of a mono stream back to mono).
        var declaredChannels = 0
        /// Tags found outside the probed prefix's ID3/RIFF tags (an MP4's moov).
        var containerTags = TrackTags()
        /// All the tags known before playing.
        var tags: TrackTags { stream.tags.merged(with: containerTags) }
    }

    /// The converter for a plan's stream.
    func makeConverter(_ plan: StreamPlan) throws -> any PacketConverter {
        if let wav = plan.wav { return WAVConverter(format: wav.format) }
        if let converter = try makeLosslessConverter(plan) { return converter }
        if let ogg = plan.ogg { return OggConverter(links: ogg.links.map(\.link)) }
        if let adts = plan.adts { return try ADTSConverter(first: adts) }
        if let track = plan.mp4 {
            if let fragmented = plan.fragmented {
                return try FragmentedMP4Converter(track: track, defaults: fragmented.defaults, audioStart: plan.audioStart,
                                                  outputSampleRate: plan.format.sampleRate,
                                                  declaredChannels: plan.declaredChannels)
            }
            return try MP4Converter(track: track, declaredChannels: plan.declaredChannels)
        }
        return try MP3Converter()
    }

    /// AAC: the format libfaad2 really produces, found by decoding the stream's first frame with
    /// a throwaway converter. SBR or PS signalled only inside the frames (implicit HE-AAC) change
    /// the rate or the channels, and no header says so. The bytes read for it stay in
    /// `probePrefix` for playback. Bounded: after 16 units or 4 MiB without a decoded frame the
    /// declared format stands (nil).
    func decodedFormat(_ plan: StreamPlan) throws -> AudioFormat? {
        var converter = try makeConverter(plan)
        let start = min(plan.audioStart, probePrefix.count)
        try converter.restart(at: start)
        converter.append(Array(probePrefix.dropFirst(start)))
        var ended = false, units = 0
        while units < 16 && probePrefix.count - start <= 4 << 20 {
            if try converter.convertNext(isComplete: ended, { _ in }) {
                units += 1
                if let format = converter.decodedFormat { return format }
                continue
            }
            if ended { return nil }
            switch throttle.read(max: 64 * 1024, timeout: 0.1) {
            case .bytes(let bytes, _):
                probePrefix += bytes
                converter.append(bytes)
            case .end: ended = true
            case .failed(let error): throw PlaybackError(sourceFailure: error)
            case .timedOut:
                if commands.withLock({ _ in stopRequested }) { throw PlaybackError(message: "player: stopped", exitCode: 0) }
            }
        }
        return nil
    }

    /// The precision a WAV source carries (8-bit, 12-bit and G.711 samples fit in 16).
    static func sampleType(of format: WAVFormat) -> AudioFormat.SampleType {
        switch (format.kind, format.bytesPerSample) {
        case (.float, 8), (.integer, 8): return .float64
        case (.float, _): return .float32
        case (.integer, 3): return .int24
        case (.integer, 4): return .int32
        default: return .int16
        }
    }

    /// Duration from CBR arithmetic when no header says it.
    func estimatedDuration(_ plan: StreamPlan) -> Double? {
        guard let size = control.totalSize, let header = plan.mpegHeader, header.bitrate > 0 else { return nil }
        return Double(size - plan.audioStart) * 8 / Double(header.bitrate)
    }

    /// Turns what Probe found into a plan, or refuses formats the pipeline cannot play yet.
    func makePlan(_ stream: ProbedStream) throws -> StreamPlan {
        let plan: StreamPlan?
        switch stream.container {
        case .mp3: plan = mp3Plan(stream)
        case .wav: plan = wavPlan(stream)
        case .adts: plan = try adtsPlan(stream)
        case .mp4: plan = try mp4Plan(stream)
        case .flac: plan = try flacPlan(stream)
        case .aiff: plan = try aiffPlan(stream)
        case .ogg: plan = try oggPlan(stream)
        }
        if let plan { return plan }
        throw PlaybackError(message: "converter: unsupported format: \(stream.container.rawValue)/\(stream.codec) (MP3, AAC, ALAC, WAV, FLAC, AIFF and Ogg Opus/Vorbis so far)",
                            exitCode: 1)
    }

    /// MP3: the first frame's format; a Xing/Info frame's count and LAME tag give the length and
    /// the gapless trims.
    private func mp3Plan(_ stream: ProbedStream) -> StreamPlan? {
        guard let first = stream.mpegFrame else { return nil }
        // A frame count of 0 says nothing (mpg123 then ignores the gapless fields too).
        let totalFrames = stream.vbrHeader?.frameCount.flatMap { $0 > 0 ? $0 : nil }
        let gapless = totalFrames == nil ? nil : stream.vbrHeader?.gapless
        let spf = first.header.samplesPerFrame
        let trimmed = totalFrames.map { frames in
            max(0, frames * spf - (gapless?.encoderDelay ?? 0) - (gapless?.encoderPadding ?? 0))
        }
        log("parser", "\(stream.codec) \(first.header.sampleRate) Hz, first frame at \(first.offset)"
            + (totalFrames.map { ", \($0) frames" } ?? ""))
        return StreamPlan(stream: stream, format: AudioFormat(sampleRate: first.header.sampleRate, channels: first.header.channels),
                          audioStart: first.offset + (stream.vbrHeader != nil ? first.length : 0), samplesPerUnit: spf,
                          trimStart: gapless.map { $0.encoderDelay + 529 } ?? 0, trimmedLength: trimmed,
                          totalUnits: totalFrames, tailTrim: max(0, (gapless?.encoderPadding ?? 0) - 529),
                          warmUpUnits: 4, mpegHeader: first.header, wav: nil, adts: nil)
    }

    /// WAV: the fmt chunk's format; the length from the data chunk, bounded by the file.
    private func wavPlan(_ stream: ProbedStream) -> StreamPlan? {
        guard let wav = stream.wav else { return nil }
        let available = control.totalSize.map { max(0, $0 - stream.firstFrameOffset) }
        let dataBytes = wav.dataSize.map { size in available.map { min(size, $0) } ?? size } ?? available
        log("parser", "\(stream.codec) \(wav.format.sampleRate) Hz, \(wav.format.channels) ch, data at \(stream.firstFrameOffset)")
        return StreamPlan(stream: stream, format: AudioFormat(sampleRate: wav.format.sampleRate, channels: wav.format.channels,
                                                              sampleType: Self.sampleType(of: wav.format)),
                          audioStart: stream.firstFrameOffset, samplesPerUnit: 1, trimStart: 0,
                          trimmedLength: dataBytes.map { $0 / wav.format.blockAlign }, totalUnits: nil, warmUpUnits: 0,
                          mpegHeader: nil, wav: wav, adts: nil)
    }

    /// AAC in ADTS: the header's format, corrected by decoding the first frame (implicit SBR/PS).
    private func adtsPlan(_ stream: ProbedStream) throws -> StreamPlan? {
        guard let header = stream.adtsHeader else { return nil }
        let declared = header.audioSpecificConfig.channels
        var plan = StreamPlan(stream: stream, format: AudioFormat(sampleRate: header.sampleRate, channels: declared),
                              audioStart: stream.firstFrameOffset, samplesPerUnit: header.samplesPerFrame, trimStart: 0,
                              trimmedLength: nil, totalUnits: nil, warmUpUnits: 2, mpegHeader: nil, wav: nil, adts: header)
        plan.declaredChannels = declared
        if let output = try decodedFormat(plan) {
            plan.format = output
            plan.samplesPerUnit = header.samplesPerFrame * output.sampleRate / header.sampleRate
        }
        log("parser", "aac (ADTS) \(header.sampleRate) Hz \(declared) ch declared, output \(plan.format), first frame at \(stream.firstFrameOffset)")
        return plan
    }

    /// AAC in MP4: the moov's audio track and its sample tables (or fragments), the format
    /// corrected by decoding the first frame, then the trims and the length.
    private func mp4Plan(_ stream: ProbedStream) throws -> StreamPlan {
        let (movie, fragmentsStart) = try loadMovie()
        if let track = movie.audio, track.codec == "alac", !movie.isFragmented {
            return try alacPlan(stream, movie: movie, track: track)
        }
        guard let track = movie.audio, track.codec == "mp4a" else {
            throw PlaybackError(message: "converter: unsupported format: mp4/\(movie.audio?.codec ?? "no audio track")",
                                exitCode: 1)
        }
        let asc: AudioSpecificConfig
        do { asc = try AudioSpecificConfig.parse(track.decoderSpecificInfo[...]) } catch {
            throw PlaybackError(message: "parser: \(error)", exitCode: 1)
        }
        var first = track.sampleLocation(0)?.offset ?? 0
        if movie.isFragmented { first = fragmentsStart }
        var plan = StreamPlan(stream: stream, format: AudioFormat(sampleRate: asc.outputSampleRate, channels: asc.channels),
                              audioStart: first, samplesPerUnit: asc.samplesPerFrame, trimStart: 0,
                              trimmedLength: nil, totalUnits: nil, warmUpUnits: 2,
                              mpegHeader: nil, wav: nil, adts: nil)
        plan.mp4 = track
        plan.containerTags = movie.tags
        plan.fragmented = movie.isFragmented ? FragmentedMP4(defaults: movie.audioTrackExtends) : nil
        plan.declaredChannels = asc.channels
        if let output = try decodedFormat(plan) { plan.format = output }
        try setMP4Length(&plan, movie: movie, track: track, config: asc)
        return plan
    }

    /// An MP4 plan's trims and length, in samples at the rate the decoder really outputs.
    private func setMP4Length(_ plan: inout StreamPlan, movie: MP4Movie, track: MP4AudioTrack, config asc: AudioSpecificConfig) throws {
        let first = plan.audioStart
        let rate = plan.format.sampleRate
        let spu = asc.samplesPerFrame * rate / asc.outputSampleRate
        // Without an edit list or iTunSMPB, one frame of priming is assumed (what AAC encoders add).
        let gapless = movie.gapless(outputSampleRate: rate)
        // libfaad2 outputs nothing for the first access unit (see below), so an edit list that
        // starts inside it cannot be met: at least that frame is the delay.
        let delay = max(gapless?.encoderDelay ?? spu, spu)
        // A fragmented file's edit list may cover only the moov's own samples (the analyzer
        // says so in its notes).
        var padding = gapless?.encoderPadding ?? 0
        if movie.isFragmented, !MP4Movie.isFragmentPadding(padding, samplesPerFrame: spu) { padding = 0 }
        // libfaad2 outputs nothing for the first access unit: that frame is the usual priming,
        // so only what the file asks beyond one frame is trimmed here.
        plan.samplesPerUnit = spu
        plan.trimStart = max(0, delay - spu)
        let declared = "\(asc.profileName) \(asc.outputSampleRate) Hz \(asc.channels) ch declared, output \(plan.format)"
        if movie.isFragmented {
            plan.trimmedLength = try fragmentedSamples(movie: movie, track: track, rate: rate).map { max(0, $0 - delay - padding) }
            log("parser", "aac (fragmented MP4) \(declared), delay \(delay)"
                + (movie.gapless == nil ? " (assumed)" : "") + ", fragments from byte \(first)")
        } else {
            let total = try Self.mp4Samples(track.totalTicks, timescale: track.timescale, rate: rate, "stts.sample_delta")
            plan.trimmedLength = max(0, total - delay - padding)
            log("parser", "aac (MP4) \(declared), \(track.sampleCount) samples, delay \(delay), padding \(padding)")
        }
    }

    /// A fragmented MP4's length in output samples: from mehd when the muxer wrote one, else from
    /// the mfra table and the last fragment (fetched with Range requests); the fragments are not
    /// read ahead.
    private func fragmentedSamples(movie: MP4Movie, track: MP4AudioTrack, rate: Int) throws -> Int? {
        if let ticks = movie.fragmentDuration, movie.movieTimescale > 0 {
            return try Self.mp4Samples(ticks, timescale: movie.movieTimescale, rate: rate, "mehd.fragment_duration")
        }
        guard canReadRanges, let ticks = fragmentedLength(track: track, defaults: movie.audioTrackExtends) else { return nil }
        // Only the length for the status line: a table that lies costs the length, not the play.
        do { return try Self.mp4Samples(ticks, timescale: track.timescale, rate: rate, "tfra.time") } catch {
            log("parser", "no length from the mfra table: \(error)")
            return nil
        }
    }

    /// Media ticks as output samples; MP4Movie.parse bounds the tables' times to a week, and
    /// anything else (an mfra table, a fragment) is checked here.
    private static func mp4Samples(_ ticks: Int, timescale: Int, rate: Int, _ field: String) throws -> Int {
        do { return try Checked.samples(ticks: ticks, timescale: timescale, rate: rate, "mp4", field) } catch {
            throw PlaybackError(message: "parser: \(error)", exitCode: 1)
        }
    }
}
