import StreamShared
import StreamAudio

/// Plans and seeks for the lossless formats: FLAC (libFLAC), AIFF/AIFF-C (sample conversion)
/// and ALAC in MP4 (StreamShared's decoder). FLAC and AIFF count their units in samples, so a
/// seek lands on the exact sample; ALAC counts packets, located by the MP4 sample tables.
extension Player {
    /// The converter for a FLAC, AIFF or ALAC plan; nil for the other formats.
    func makeLosslessConverter(_ plan: StreamPlan) throws -> (any PacketConverter)? {
        if let flac = plan.flac { return try FLACConverter(streamInfo: flac.streamInfo, audioStart: plan.audioStart) }
        if let aiff = plan.aiff { return AIFFConverter(format: aiff.format) }
        if let alac = plan.alac, let track = plan.mp4 { return try MP4ALACConverter(track: track, config: alac) }
        return nil
    }

    /// FLAC's channel orders as a WAV speaker mask (`FLACConverter.wavChannelMask`).
    static func flacChannelMask(channels: Int) -> UInt32? { FLACConverter.wavChannelMask(channels: channels) }

    /// The sample type that keeps an integer source's precision (24-bit stays 24-bit).
    static func integerSampleType(bits: Int) -> AudioFormat.SampleType {
        bits <= 16 ? .int16 : bits <= 24 ? .int24 : .int32
    }

    /// FLAC: STREAMINFO's format and length (or the last frame's end when it says 0); units are samples.
    func flacPlan(_ stream: ProbedStream) throws -> StreamPlan {
        guard let flac = stream.flac else { throw PlaybackError(message: "parser: flac: no STREAMINFO", exitCode: 1) }
        let info = flac.streamInfo
        var plan = StreamPlan(stream: stream, format: AudioFormat(sampleRate: info.sampleRate, channels: info.channels,
                                                                  sampleType: Self.integerSampleType(bits: info.bitsPerSample)),
                              audioStart: stream.firstFrameOffset, samplesPerUnit: 1, trimStart: 0,
                              trimmedLength: info.totalSamples > 0 ? info.totalSamples : nil, totalUnits: nil, warmUpUnits: 0,
                              mpegHeader: nil, wav: nil, adts: nil)
        plan.flac = flac
        plan.format.channelMask = Self.flacChannelMask(channels: info.channels)
        if plan.trimmedLength == nil { plan.trimmedLength = flacSamplesFromLastFrame(plan) }
        log("parser", "flac \(info.sampleRate) Hz, \(info.channels) ch, \(info.bitsPerSample) bits, first frame at \(stream.firstFrameOffset)"
            + (plan.trimmedLength.map { ", \($0) samples" + (info.totalSamples == 0 ? " (from the last frame)" : "") } ?? ", length unknown")
            + ", \(flac.seekPoints.count) seek points")
        return plan
    }

    /// STREAMINFO said 0 samples: the last frame's number and size, read from the end of the
    /// file (one Range request; trailing ID3v1/APE tags skipped). nil when that cannot be read.
    private func flacSamplesFromLastFrame(_ plan: StreamPlan) -> Int? {
        guard let info = plan.flac?.streamInfo, canReadRanges,
              let size = try? control.totalSize ?? source.resourceSize(), size > plan.audioStart else { return nil }
        let bound = FLACDecoder.frameBound(info)
        let start = max(plan.audioStart, size - bound - 128 << 10)
        guard let tail = try? source.readRange(start..<size) else { return nil }
        let trailing = (try? TrailingTags.scan(tail: tail[...], fileSize: size))?.trailingBytes ?? 0
        let audio = tail.prefix(max(0, tail.count - trailing))
        guard let last = FLACFrameScanner(audio[...], isComplete: true, streamBits: info.bitsPerSample)
            .lastFrame(window: audio.count) else { return nil }
        let samples = last.header.firstSample(nominalBlockSize: info.maxBlockSize) + last.header.blockSize
        return (try? Checked.seconds(ticks: samples, timescale: info.sampleRate, "flac", "last frame")) != nil ? samples : nil
    }

    /// AIFF/AIFF-C: the COMM chunk's format, the length from the frames the SSND chunk holds.
    func aiffPlan(_ stream: ProbedStream) throws -> StreamPlan {
        guard let aiff = stream.aiff else { throw PlaybackError(message: "parser: aiff: no COMM chunk", exitCode: 1) }
        let format = aiff.format
        let rate = Int(format.sampleRate.rounded())
        let type: AudioFormat.SampleType = switch format.encoding {
        case .float: format.bytesPerSample == 8 ? .float64 : .float32
        case .integer: Self.integerSampleType(bits: format.bytesPerSample * 8)
        case .muLaw, .aLaw: .int16
        }
        var plan = StreamPlan(stream: stream, format: AudioFormat(sampleRate: rate, channels: format.channels, sampleType: type),
                              audioStart: stream.firstFrameOffset, samplesPerUnit: 1, trimStart: 0,
                              trimmedLength: aiff.frameCount(fileSize: control.totalSize.map { $0 - stream.id3v2Bytes }),
                              totalUnits: nil, warmUpUnits: 0, mpegHeader: nil, wav: nil, adts: nil)
        plan.aiff = aiff
        log("parser", "\(stream.codec) (AIFF\(aiff.isAIFC ? "-C" : "")) \(format.sampleRate) Hz, \(format.channels) ch, "
            + "samples at \(stream.firstFrameOffset), \(plan.trimmedLength ?? 0) frames")
        return plan
    }

    /// ALAC in MP4: the magic cookie, the sample tables for length and seeking (units are packets).
    func alacPlan(_ stream: ProbedStream, movie: MP4Movie, track: MP4AudioTrack) throws -> StreamPlan {
        let config: ALACSpecificConfig
        do { config = try ALACSpecificConfig.parse(cookie: track.decoderSpecificInfo[...]) } catch {
            throw PlaybackError(message: "parser: \(error)", exitCode: 1)
        }
        let rate = config.sampleRate > 0 ? config.sampleRate : track.sampleRate
        var stream = stream
        stream.codec = "alac"         // the probe may not have seen the moov (after the samples)
        var plan = StreamPlan(stream: stream, format: AudioFormat(sampleRate: rate, channels: config.numChannels,
                                                                  sampleType: Self.integerSampleType(bits: config.bitDepth)),
                              audioStart: track.sampleLocation(0)?.offset ?? 0, samplesPerUnit: max(1, config.frameLength),
                              trimStart: 0, trimmedLength: nil, totalUnits: nil, warmUpUnits: 0, mpegHeader: nil, wav: nil, adts: nil)
        plan.mp4 = track
        plan.alac = config
        plan.format.channelMask = MP4ALACConverter.wavOrder(channels: config.numChannels)?.mask
        plan.containerTags = movie.tags
        let total: Int
        do { total = try Checked.samples(ticks: track.totalTicks, timescale: track.timescale, rate: rate, "mp4", "stts.sample_delta") } catch {
            throw PlaybackError(message: "parser: \(error)", exitCode: 1)
        }
        // ALAC has no priming: an edit list trims only what it says.
        let gapless = movie.gapless(outputSampleRate: rate)
        plan.trimStart = gapless?.encoderDelay ?? 0
        plan.trimmedLength = max(0, total - plan.trimStart - (gapless?.encoderPadding ?? 0))
        log("parser", "alac (MP4) \(rate) Hz, \(config.numChannels) ch, \(config.bitDepth) bits, \(track.sampleCount) packets, "
            + "\(total) samples")
        return plan
    }

    /// FLAC and AIFF seeks, in samples. AIFF: arithmetic. FLAC: the SEEKTABLE's last point at
    /// or before the sample (over HTTP, one Range request from it, however far before the target
    /// it is: its samples are decoded and dropped), else a bisection over the frames' own sample
    /// numbers (a few small reads, then the one request to play from). A local file bisects
    /// whenever the point is more than a few frames early (reads cost no request there).
    func locateLosslessUnit(atOrBefore sample: Int, plan: StreamPlan) throws -> (unit: Int, byte: Int)? {
        if let aiff = plan.aiff {
            let last = plan.trimmedLength.map { max(0, $0 - 1) } ?? sample
            let frame = min(sample, last)
            return (frame, plan.audioStart + frame * aiff.format.blockAlign)
        }
        guard let flac = plan.flac else { return nil }
        var best = (unit: 0, byte: plan.audioStart)
        for point in flac.seekPoints {
            guard let number = point.sampleNumber, number <= sample, number >= best.unit else { continue }
            best = (number, plan.audioStart + point.byteOffset)
        }
        // A seek point within a few frames of the target is as good as a scan.
        let nearEnough = 8 * max(16, flac.streamInfo.maxBlockSize)
        let hasTable = flac.seekPoints.contains { ($0.sampleNumber ?? 0) > 0 }
        if sample - best.unit <= nearEnough || !canReadRanges || (hasTable && url.contains("://")) { return best }
        // No table over HTTP: streamd's exact index (every frame's first sample and offset) makes
        // the seek one Range request; a bisection otherwise.
        if url.contains("://"), let indexed = serverFLACPoint(atOrBefore: sample, plan: plan, info: flac.streamInfo) {
            let point = indexed.unit >= best.unit ? indexed : best
            log("parser", "flac seek by streamd's index: sample \(point.unit) at byte \(point.byte)")
            return point
        }
        if let scanned = bisectFLACFrames(atOrBefore: sample, from: best, plan: plan, info: flac.streamInfo) {
            log("parser", "flac seek by frame scan: sample \(scanned.unit) at byte \(scanned.byte)")
            return scanned
        }
        return best
    }

    /// The last point of streamd's index at or before `sample` that says its exact sample and lies
    /// in the audio; nil without one.
    private func serverFLACPoint(atOrBefore sample: Int, plan: StreamPlan, info: FLACStreamInfo) -> (unit: Int, byte: Int)? {
        let seconds = Double(sample) / Double(max(1, info.sampleRate))
        guard let index = serverSeekIndex(around: seconds, fallback: "frame bisection") else { return nil }
        var best: (unit: Int, byte: Int)?
        for point in index.points {
            guard let first = point.sample, first <= sample, point.byte >= plan.audioStart, first >= (best?.unit ?? 0) else { continue }
            best = (first, point.byte)
        }
        return best
    }

    /// Narrows `low` (a known frame start before the target) toward the target by reading a window
    /// in the middle of what is left and taking the first confirmed frame there.
    private func bisectFLACFrames(atOrBefore sample: Int, from low: (unit: Int, byte: Int), plan: StreamPlan,
                                  info: FLACStreamInfo) -> (unit: Int, byte: Int)? {
        guard let size = try? control.totalSize ?? source.resourceSize() else { return nil }
        let bound = FLACDecoder.frameBound(info)
        let window = 2 * bound + 64
        var best = low
        var high = size
        for _ in 0..<40 where high - best.byte > window {
            let middle = best.byte + (high - best.byte) / 2
            guard let bytes = try? source.readRange(middle..<min(size, middle + window)),
                  let frame = FLACFrameScanner(bytes[...], isComplete: middle + bytes.count >= size, streamBits: info.bitsPerSample)
                    .nextFrame(from: 0) else {
                high = middle
                continue
            }
            let first = frame.header.firstSample(nominalBlockSize: info.maxBlockSize)
            if first <= sample, first >= best.unit {
                best = (first, middle + frame.offset)
                if sample - first < max(16, info.maxBlockSize) * 2 { break }
            } else {
                high = middle
            }
        }
        return best
    }
}

extension ProbedStream {
    /// Bytes of the ID3v2 tags in front of the audio's container.
    var id3v2Bytes: Int { id3v2.reduce(0) { $0 + $1.totalSize } }
}
