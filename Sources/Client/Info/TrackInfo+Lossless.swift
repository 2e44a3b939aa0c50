import StreamShared

extension TrackInfo {
    /// `--info` for the formats streamplay plays but the catalog's analyzer does not read yet
    /// (FLAC, AIFF/AIFF-C, ALAC in MP4): the facts from their headers (FLACReader with the last
    /// frame when STREAMINFO has no count, the COMM/SSND chunks, the moov). nil for any other
    /// format, whose analyzer error stands. `frames` counts PCM frames, as for WAV.
    static func describeLossless(_ source: some RandomAccessBytes) throws -> TrackAnalysis? {
        let stream = try TrackAnalyzer.probe(source)
        switch stream.container {
        case .flac:
            let flac = try FLACReader.read(source)
            let info = flac.streamInfo
            let samples = flac.totalSamples ?? 0
            return lossless(stream, rate: info.sampleRate, channels: info.channels, samples: samples,
                            audio: flac.audioStart..<flac.audioEnd, tags: stream.tags.merged(with: flac.tags),
                            notes: flac.totalSamples == nil ? ["length unknown: STREAMINFO has no sample count and the last frame was not found"]
                                : info.totalSamples == 0 ? ["length from the last frame (STREAMINFO has no sample count)"] : [])
        case .aiff:
            guard let aiff = stream.aiff else { return nil }
            let start = stream.firstFrameOffset
            let frames = aiff.frameCount(fileSize: source.size - (start - aiff.dataOffset))
            return lossless(stream, rate: Int(aiff.format.sampleRate.rounded()), channels: aiff.format.channels, samples: frames,
                            audio: start..<(start + frames * aiff.format.blockAlign), tags: stream.tags, notes: [])
        case .mp4:
            let range = try MP4Locator.moovRange(source)
            let movie = try MP4Movie.parse(moov: try source.read(at: range.lowerBound, count: range.count)[...])
            guard let track = movie.audio, track.codec == "alac", !movie.isFragmented else { return nil }
            let config = try ALACSpecificConfig.parse(cookie: track.decoderSpecificInfo[...])
            let rate = config.sampleRate > 0 ? config.sampleRate : track.sampleRate
            let samples = try Checked.samples(ticks: track.totalTicks, timescale: track.timescale, rate: rate, "mp4", "stts.sample_delta")
            let first = track.sampleLocation(0)?.offset ?? 0
            let last = track.sampleCount > 0 ? track.sampleLocation(track.sampleCount - 1) : nil
            var analysis = lossless(stream, rate: rate, channels: config.numChannels, samples: samples,
                                    audio: first..<max(first, last.map { $0.offset + $0.size } ?? first), tags: movie.tags, notes: [])
            analysis.codec = "alac"
            return analysis
        default:
            return nil
        }
    }

    private static func lossless(_ stream: ProbedStream, rate: Int, channels: Int, samples: Int, audio: Range<Int>,
                                 tags: TrackTags, notes: [String]) -> TrackAnalysis {
        let seconds = rate > 0 ? Double(samples) / Double(rate) : 0
        let bitrate = seconds > 0 ? Int(Double(audio.count) * 8 / seconds) : 0
        let index = SeekIndex(points: [SeekPoint(t: 0, byte: audio.lowerBound)], firstFrameOffset: audio.lowerBound,
                              audioEndOffset: audio.upperBound, encoderDelay: 0, encoderPadding: 0, durationSeconds: seconds)
        return TrackAnalysis(container: stream.container, codec: stream.codec, sampleRate: rate, channels: channels,
                             durationSeconds: seconds, bitrate: bitrate, frames: samples, firstFrameOffset: audio.lowerBound,
                             encoderDelay: 0, encoderPadding: 0, totalSamples: samples, tags: tags, seekIndex: index, notes: notes)
    }
}
