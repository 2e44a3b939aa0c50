/// Everything known about a track after reading it through once: format, duration,
/// gapless trim, tags and a seek index.
public struct TrackAnalysis: Sendable, Equatable {
    public var container: Container
    public var codec: String
    /// Output sample rate of the decoded audio.
    public var sampleRate: Int
    public var channels: Int
    /// Playing time in seconds after gapless trimming (encoder delay and padding removed).
    public var durationSeconds: Double
    /// Average bitrate of the audio in bit/s.
    public var bitrate: Int
    /// Number of codec frames (MPEG frames, ADTS frames, MP4 samples, FLAC frames: counted by the
    /// full read, estimated from the block size by the quick one) or PCM frames for WAV and AIFF;
    /// 0 for Ogg, whose packets are not counted.
    public var frames: Int
    public var firstFrameOffset: Int
    public var encoderDelay: Int
    public var encoderPadding: Int
    /// Samples per channel before trimming (frames × samples per frame).
    public var totalSamples: Int
    public var tags: TrackTags
    public var seekIndex: SeekIndex
    /// Notes worth showing a user ("gapless trim assumed: 1024 priming samples").
    public var notes: [String] = []
    /// AAC in MP4: the AudioSpecificConfig a decoder starts from.
    public var audioSpecificConfig: [UInt8]? = nil
    /// Bits per sample of lossless and PCM audio (FLAC, ALAC, AIFF, WAV); nil for lossy codecs.
    public var bitsPerSample: Int? = nil

    public init(container: Container, codec: String, sampleRate: Int, channels: Int, durationSeconds: Double,
                bitrate: Int, frames: Int, firstFrameOffset: Int, encoderDelay: Int, encoderPadding: Int,
                totalSamples: Int, tags: TrackTags, seekIndex: SeekIndex, notes: [String] = [],
                audioSpecificConfig: [UInt8]? = nil) {
        self.container = container
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.durationSeconds = durationSeconds
        self.bitrate = bitrate
        self.frames = frames
        self.firstFrameOffset = firstFrameOffset
        self.encoderDelay = encoderDelay
        self.encoderPadding = encoderPadding
        self.totalSamples = totalSamples
        self.tags = tags
        self.seekIndex = seekIndex
        self.notes = notes
        self.audioSpecificConfig = audioSpecificConfig
    }
}

/// Reads a whole track once and works out its `TrackAnalysis`.
public enum TrackAnalyzer {
    /// Bytes read per step while walking frames; bounds memory whatever the file size.
    static let window = 1 << 20

    /// - Parameter scanFrames: walk every MP3 frame (exact count, seek index). When false, MP3
    ///   facts come from the Xing/VBRI header or CBR arithmetic, reading only the first
    ///   frames and the tail (what `--info URL` needs over the network).
    public static func analyze(_ source: some RandomAccessBytes, scanFrames: Bool = true) throws -> TrackAnalysis {
        let stream = try probe(source)
        switch stream.container {
        case .mp3: return scanFrames ? try analyzeMPEG(source, stream) : try describeMPEG(source, stream)
        case .adts: return try analyzeADTS(source, stream)
        case .wav: return try analyzeWAV(source, stream)
        case .mp4: return try analyzeMP4(source)
        case .flac: return try analyzeFLAC(source, stream, scanFrames: scanFrames)
        case .ogg: return try analyzeOgg(source, scanFrames: scanFrames)
        case .aiff: return try analyzeAIFF(source, stream)
        }
    }

    /// The catalog's quick read: format, duration, gapless trim and tags from the headers, never
    /// the whole file. MP3 from the Xing/VBRI/LAME frame or CBR arithmetic (a free-format
    /// stream without a Xing header has no other way: it is scanned), MP4 from the moov, WAV
    /// from its chunks, ADTS from the frames in the first `adtsWindow` bytes (extrapolated past
    /// that, with a note; the exact count comes with the seek index). The seek index holds only
    /// the first point: exact indexes are built when a client needs one. FLAC from its metadata
    /// blocks (and the last frame when STREAMINFO has no sample count), Ogg from its first pages
    /// and its last page, AIFF from its chunks.
    public static func describe(_ source: some RandomAccessBytes, adtsWindow: Int = 256 * 1024) throws -> TrackAnalysis {
        let stream = try probe(source)
        var analysis: TrackAnalysis
        switch stream.container {
        case .mp3:
            do {
                analysis = try describeMPEG(source, stream)
            } catch FormatError.unsupported {
                analysis = try analyzeMPEG(source, stream)
            }
        case .adts: analysis = try analyzeADTS(source, stream, window: adtsWindow)
        case .wav: analysis = try analyzeWAV(source, stream)
        case .mp4: analysis = try analyzeMP4(source)
        case .flac: analysis = try analyzeFLAC(source, stream, scanFrames: false)
        case .ogg: analysis = try analyzeOgg(source, scanFrames: false)
        case .aiff: analysis = try analyzeAIFF(source, stream)
        }
        analysis.seekIndex.points = Array(analysis.seekIndex.points.prefix(1))
        return analysis
    }


    /// Probes a growing prefix until Probe decides.
    public static func probe(_ source: some RandomAccessBytes) throws -> ProbedStream {
        var want = min(source.size, 64 * 1024)
        var prefix: [UInt8] = []
        while true {
            prefix = try source.read(at: 0, count: want)
            let complete = prefix.count >= source.size
            switch try Probe.probe(prefix[...], isComplete: complete) {
            case .audio(let stream):
                return stream
            case .needMore(let atLeast):
                guard !complete, atLeast > prefix.count else {
                    throw FormatError.truncated(component: "probe", offset: prefix.count, needed: atLeast - prefix.count)
                }
                want = min(source.size, max(atLeast, want * 2))
            }
        }
    }

    /// Bytes at the end of the file that are tags, not audio.
    static func trailingTags(_ source: some RandomAccessBytes, after start: Int) throws -> TrailingTags {
        let tailLength = min(64 * 1024, source.size - start)
        guard tailLength > 0 else { return TrailingTags(trailingBytes: 0, id3v1: nil, apeSize: 0) }
        let tail = try source.read(at: source.size - tailLength, count: tailLength)
        var result = try TrailingTags.scan(tail: tail[...], fileSize: source.size)
        result.trailingBytes = min(result.trailingBytes, source.size - start)
        return result
    }

    // MARK: MPEG audio

    /// MP3 facts from the headers alone: Xing/VBRI frame count, or CBR arithmetic.
    static func describeMPEG(_ source: some RandomAccessBytes, _ stream: ProbedStream) throws -> TrackAnalysis {
        guard let first = stream.mpegFrame else {
            throw FormatError.invalid(component: "mpeg", reason: "no first frame", offset: 0)
        }
        let trailing = try trailingTags(source, after: first.offset)
        let audioEnd = source.size - trailing.trailingBytes
        let header = first.header
        let audioStart = first.offset + (stream.vbrHeader != nil ? first.length : 0)
        let frames: Int
        var bitrate = header.bitrate
        if let count = stream.vbrHeader?.frameCount, count > 0 {
            frames = count
            if stream.vbrHeader?.kind != .info, let bytes = stream.vbrHeader?.byteCount {
                let seconds = Double(count) * Double(header.samplesPerFrame) / Double(header.sampleRate)
                bitrate = try Checked.bitrate(bytes: bytes, seconds: seconds, "mpeg")
            }
        } else if header.bitrate > 0 {
            let frameBytes = Double(header.samplesPerFrame / 8 * header.bitrate) / Double(header.sampleRate)
            frames = try Checked.int(Double(audioEnd - audioStart) / frameBytes, "mpeg", "frame count")
        } else {
            throw FormatError.unsupported(component: "mpeg", reason: "free-format stream without a Xing header: needs a full scan")
        }
        let samples = try Checked.multiply(frames, header.samplesPerFrame, "mpeg", "xing.frames")
        // The Xing count is a claim: past a week of audio it is a lie.
        try Checked.duration(Double(samples) / Double(header.sampleRate), "mpeg",
                             stream.vbrHeader?.frameCount != nil ? "xing.frames" : "frame count")
        let gapless = stream.vbrHeader?.gapless ?? GaplessInfo(encoderDelay: 0, encoderPadding: 0)
        let trimmed = max(0, samples - gapless.encoderDelay - gapless.encoderPadding)
        let seek = SeekIndex(points: [SeekPoint(t: 0, byte: audioStart)], firstFrameOffset: stream.firstFrameOffset,
                             audioEndOffset: audioEnd, encoderDelay: gapless.encoderDelay,
                             encoderPadding: gapless.encoderPadding,
                             durationSeconds: Double(samples) / Double(header.sampleRate))
        var analysis = TrackAnalysis(container: .mp3, codec: stream.codec, sampleRate: header.sampleRate,
                                     channels: header.channels, durationSeconds: Double(trimmed) / Double(header.sampleRate),
                                     bitrate: bitrate, frames: frames, firstFrameOffset: stream.firstFrameOffset,
                                     encoderDelay: gapless.encoderDelay, encoderPadding: gapless.encoderPadding,
                                     totalSamples: samples, tags: stream.tags.merged(with: trailing.tags), seekIndex: seek)
        if stream.vbrHeader?.frameCount == nil { analysis.notes.append("frame count from CBR arithmetic (no Xing header)") }
        return analysis
    }

    static func analyzeMPEG(_ source: some RandomAccessBytes, _ stream: ProbedStream) throws -> TrackAnalysis {
        guard let first = stream.mpegFrame else {
            throw FormatError.invalid(component: "mpeg", reason: "no first frame", offset: 0)
        }
        let trailing = try trailingTags(source, after: first.offset)
        let audioEnd = source.size - trailing.trailingBytes
        let header = first.header
        // The Xing/Info/VBRI frame is not audio: mpg123 and ffmpeg skip it.
        var offset = first.offset
        if stream.vbrHeader != nil { offset += first.length }

        var scanner = MPEGFrameScanner(maxJunk: 1 << 20)
        var index = SeekIndexBuilder()
        var frames = 0
        var samples = 0
        var audioBytes = 0
        // Re-prime the scanner on the stream's first real frame (same header rules as Probe).
        var buffer: [UInt8] = []
        var bufferStart = offset
        var primed = false
        var complete = false
        while !complete {
            let readAt = bufferStart + buffer.count
            let chunk = try source.read(at: readAt, count: min(window, max(0, audioEnd - readAt)))
            buffer += chunk
            complete = chunk.isEmpty || bufferStart + buffer.count >= audioEnd
            var position = 0
            if !primed {
                guard let frame = try scanner.findFirstFrame(in: buffer[...], confirmations: 1, isComplete: complete) else {
                    continue
                }
                position = frame.offset
                primed = true
            }
            while case .frame(let frame, _) = try scanner.next(in: buffer[position...], isComplete: complete) {
                let frameStart = position + frame.offset
                index.add(frameStart: Double(samples) / Double(header.sampleRate), byte: bufferStart + frameStart)
                frames += 1
                samples += frame.header.samplesPerFrame
                audioBytes += frame.length
                position = frameStart + frame.length
            }
            // Keep the unread tail (a partial frame) for the next window.
            buffer.removeFirst(min(position, buffer.count))
            bufferStart += position
            if buffer.count > window * 4 {
                throw FormatError.invalid(component: "mpeg", reason: "lost sync", offset: bufferStart)
            }
        }
        guard frames > 0 else { throw FormatError.notAudio(reason: "no MPEG audio frames") }

        let gapless = stream.vbrHeader?.gapless ?? GaplessInfo(encoderDelay: 0, encoderPadding: 0)
        // mpg123 and ffmpeg both add the decoder's 529-sample delay to the LAME delay; the
        // trimmed length is what the encoder was given.
        let trimmed = max(0, samples - gapless.encoderDelay - gapless.encoderPadding)
        let duration = try Checked.duration(Double(samples) / Double(header.sampleRate), "mpeg", "frame count")
        var tags = stream.tags.merged(with: trailing.tags)
        if tags.isEmpty { tags = TrackTags() }
        let seek = SeekIndex(points: index.points, firstFrameOffset: stream.firstFrameOffset, audioEndOffset: audioEnd,
                             encoderDelay: gapless.encoderDelay, encoderPadding: gapless.encoderPadding,
                             durationSeconds: duration)
        let isCBR = stream.vbrHeader?.kind != .xing && stream.vbrHeader?.kind != .vbri && header.bitrate > 0
        let bitrate = isCBR ? header.bitrate : try Checked.bitrate(bytes: audioBytes, seconds: duration, "mpeg")
        return TrackAnalysis(container: .mp3, codec: stream.codec, sampleRate: header.sampleRate,
                             channels: header.channels, durationSeconds: Double(trimmed) / Double(header.sampleRate),
                             bitrate: bitrate, frames: frames, firstFrameOffset: stream.firstFrameOffset,
                             encoderDelay: gapless.encoderDelay, encoderPadding: gapless.encoderPadding,
                             totalSamples: samples, tags: tags, seekIndex: seek)
    }
}

extension TrackAnalyzer {
    // MARK: AAC in ADTS

    /// With a `window`, only the frames in that many bytes are walked and the counts are
    /// extrapolated to the whole file (a note says so).
    static func analyzeADTS(_ source: some RandomAccessBytes, _ stream: ProbedStream, window limit: Int? = nil) throws -> TrackAnalysis {
        guard let first = stream.adtsHeader else {
            throw FormatError.invalid(component: "adts", reason: "no first frame", offset: 0)
        }
        let trailing = try trailingTags(source, after: stream.firstFrameOffset)
        let fileAudioEnd = source.size - trailing.trailingBytes
        let audioEnd = limit.map { min(fileAudioEnd, stream.firstFrameOffset + max(4096, $0)) } ?? fileAudioEnd
        var index = SeekIndexBuilder()
        var frames = 0
        var samples = 0
        var audioBytes = 0
        var buffer: [UInt8] = []
        var bufferStart = stream.firstFrameOffset
        var complete = false
        while !complete {
            let readAt = bufferStart + buffer.count
            let chunk = try source.read(at: readAt, count: min(window, max(0, audioEnd - readAt)))
            buffer += chunk
            complete = chunk.isEmpty || bufferStart + buffer.count >= audioEnd
            var position = 0
            while position < buffer.count {
                let rest = buffer[position...]
                let header: ADTSHeader?
                do { header = try ADTSHeader.parse(rest) } catch { header = nil }
                if let header, header.sampleRateIndex == first.sampleRateIndex,
                   header.channelConfiguration == first.channelConfiguration {
                    guard header.frameLength <= rest.count else { break }   // partial frame: read more
                    index.add(frameStart: Double(samples) / Double(first.sampleRate), byte: bufferStart + position)
                    frames += 1
                    samples += header.samplesPerFrame
                    audioBytes += header.frameLength
                    position += header.frameLength
                    continue
                }
                if rest.count < 9 && !complete { break }
                // Lost sync: find the next confirmed frame.
                guard let skip = try ADTSSync.findFirstFrame(in: ArraySlice(rest.dropFirst()), confirmations: 1) else {
                    if complete { position = buffer.count }
                    break
                }
                position += 1 + skip
            }
            buffer.removeFirst(min(position, buffer.count))
            bufferStart += position
            if buffer.count > window * 4 {
                throw FormatError.invalid(component: "adts", reason: "lost sync", offset: bufferStart)
            }
        }
        guard frames > 0 else { throw FormatError.notAudio(reason: "no ADTS frames") }
        var estimated = false
        if audioEnd < fileAudioEnd, audioBytes > 0 {
            // Frames past the window: as many as their share of the bytes, at the window's average size.
            let scale = Double(fileAudioEnd - stream.firstFrameOffset) / Double(max(1, audioEnd - stream.firstFrameOffset))
            frames = try Checked.int(Double(frames) * scale, "adts", "frame count")
            samples = try Checked.multiply(frames, first.samplesPerFrame, "adts", "frame count")
            audioBytes = try Checked.int(Double(audioBytes) * scale, "adts", "frame bytes")
            estimated = true
        }
        let asc = first.audioSpecificConfig
        let duration = try Checked.duration(Double(samples) / Double(first.sampleRate), "adts", "frame count")
        let seek = SeekIndex(points: index.points, firstFrameOffset: stream.firstFrameOffset, audioEndOffset: fileAudioEnd,
                             encoderDelay: 0, encoderPadding: 0, durationSeconds: duration)
        // ADTS carries no gapless information: assume the usual one frame of encoder priming
        // (what AAC encoders add and what the player drops), and say so.
        let priming = min(samples, 1024)
        var analysis = TrackAnalysis(container: .adts, codec: "aac", sampleRate: first.sampleRate, channels: asc.channels,
                                     durationSeconds: Double(samples - priming) / Double(first.sampleRate),
                                     bitrate: try Checked.bitrate(bytes: audioBytes, seconds: duration, "adts"),
                                     frames: frames, firstFrameOffset: stream.firstFrameOffset, encoderDelay: priming,
                                     encoderPadding: 0, totalSamples: samples, tags: stream.tags.merged(with: trailing.tags),
                                     seekIndex: seek)
        analysis.notes.append("encoder delay assumed: \(priming) priming samples (ADTS carries no gapless information)")
        if estimated { analysis.notes.append("frame count estimated from the first \(audioEnd - stream.firstFrameOffset) bytes") }
        return analysis
    }

    // MARK: WAV

    static func analyzeWAV(_ source: some RandomAccessBytes, _ stream: ProbedStream) throws -> TrackAnalysis {
        guard let wav = stream.wav else {
            throw FormatError.invalid(component: "wav", reason: "no format chunk", offset: 0)
        }
        let format = wav.format
        let dataStart = stream.firstFrameOffset
        let available = max(0, source.size - dataStart)
        let dataBytes = min(wav.dataSize ?? available, available)
        let frames = dataBytes / max(1, format.blockAlign)
        let duration = try Checked.duration(Double(frames) / Double(format.sampleRate), "wav", "data size")
        // Spacing grows with the file (see SeekIndexBuilder.maxPoints): a WAV at 1 Hz gets a
        // bounded index, and this loop a bounded number of steps.
        var index = SeekIndexBuilder()
        var t = 0.0
        while t < duration {
            let frame = Int((t * Double(format.sampleRate)).rounded(.down))
            index.add(frameStart: Double(frame) / Double(format.sampleRate), byte: dataStart + frame * format.blockAlign)
            t += index.interval
        }
        if index.points.isEmpty { index.add(frameStart: 0, byte: dataStart) }
        let seek = SeekIndex(points: index.points, firstFrameOffset: dataStart, audioEndOffset: dataStart + frames * format.blockAlign,
                             encoderDelay: 0, encoderPadding: 0, durationSeconds: duration)
        var analysis = TrackAnalysis(container: .wav, codec: stream.codec, sampleRate: format.sampleRate, channels: format.channels,
                                     durationSeconds: duration, bitrate: format.sampleRate * format.blockAlign * 8, frames: frames,
                                     firstFrameOffset: dataStart, encoderDelay: 0, encoderPadding: 0, totalSamples: frames,
                                     tags: stream.tags.merged(with: wavTrailingTags(source, wav, dataStart: dataStart)), seekIndex: seek)
        analysis.bitsPerSample = format.validBitsPerSample
        return analysis
    }

    /// Tags in chunks after the samples (LIST/INFO, `id3 `), which many taggers append there.
    /// Reads at most 16 MiB (an ID3 chunk may hold cover art); the chunks before `data` win.
    static func wavTrailingTags(_ source: some RandomAccessBytes, _ wav: WAVInfo, dataStart: Int) -> TrackTags {
        guard let dataSize = wav.dataSize else { return TrackTags() }
        // WAV.parse bounds dataSize to 2^40, but a WAVInfo built elsewhere may not be: checked sums.
        let (padded, overflow1) = dataSize.addingReportingOverflow(dataSize & 1)
        let (end, overflow2) = dataStart.addingReportingOverflow(padded)
        guard !overflow1, !overflow2, end < source.size - 8, let tail = try? source.read(at: end, count: min(source.size - end, 16 << 20)) else {
            return TrackTags()
        }
        return WAV.trailingTags(tail[...], bigEndian: wav.format.bigEndian)
    }
}

extension TrackAnalyzer {
    // MARK: MP4

    static func analyzeMP4(_ source: some RandomAccessBytes) throws -> TrackAnalysis {
        // Walk top-level box headers with small reads until moov is found (it may follow mdat);
        // a fragmented file's moof boxes are remembered for the second pass.
        var offset = 0
        var moovRange: Range<Int>?
        var mdatStart: Int?
        var moofRanges: [Range<Int>] = []
        var boxes = 0
        while offset < source.size {
            boxes += 1
            guard boxes <= maxTopLevelBoxes else {
                throw FormatError.invalid(component: "mp4", reason: "more than \(maxTopLevelBoxes) top-level boxes", offset: offset)
            }
            let head = try source.read(at: offset, count: 16)
            guard let header = try MP4BoxHeader.parse(head[...], at: 0) else { break }
            let size = header.size ?? (source.size - offset)
            guard size <= source.size - offset else {
                throw FormatError.invalid(component: "mp4", reason: "box '\(header.type)' overruns the file", offset: offset)
            }
            switch header.type {
            case "moov": moovRange = offset..<(offset + size)
            case "mdat": if mdatStart == nil { mdatStart = offset + header.headerSize }
            case "moof": moofRanges.append(offset..<(offset + size))
            default: break
            }
            offset += size
        }
        guard let moovRange else { throw FormatError.invalid(component: "mp4", reason: "no moov box", offset: 0) }
        guard moovRange.count <= 256 * 1024 * 1024 else {
            throw FormatError.unsupported(component: "mp4", reason: "moov of \(moovRange.count) bytes")
        }
        let moov = try source.read(at: moovRange.lowerBound, count: moovRange.count)
        let movie = try MP4Movie.parse(moov: moov[...])
        guard let track = movie.audio else { throw FormatError.notAudio(reason: "MP4 without an audio track") }
        // ALAC: rate, channels and depth from its magic cookie; no priming, every sample is audio.
        let alac = track.codec == "alac" ? try track.alacConfig() : nil
        guard track.codec == "mp4a" || alac != nil else {
            throw FormatError.unsupported(component: "mp4", reason: "audio codec '\(track.codec)'")
        }
        let asc: AudioSpecificConfig? = alac == nil ? try AudioSpecificConfig.parse(track.decoderSpecificInfo[...]) : nil
        let rate = alac?.sampleRate ?? asc?.outputSampleRate ?? track.sampleRate
        // Every sample takes at least one byte of the file: a larger count is a lie, and walking
        // it would take billions of steps.
        guard track.sampleCount <= source.size else {
            throw FormatError.outOfRange(component: "mp4", field: "stsz.sample_count",
                                         value: "\(track.sampleCount) samples in a \(source.size)-byte file")
        }

        // Samples in the moov's tables first (a fragmented file may start with some), then every fragment's.
        var index = SeekIndexBuilder()
        var ticks = 0
        var bytes = 0
        var sampleCount = 0
        var cursor = MP4SampleCursor(track: track)
        for run in track.timeToSample {
            // A lying stts count must not spin: never walk past the samples that exist.
            for _ in 0..<max(0, min(run.count, track.sampleCount - sampleCount)) {
                if let location = cursor.next() {
                    index.add(frameStart: Double(ticks) / Double(track.timescale), byte: location.offset)
                    bytes = satAdd(bytes, location.size)
                }
                ticks = satAdd(ticks, run.delta)
                sampleCount += 1
            }
        }
        var firstFrameOffset = track.sampleLocation(0)?.offset
        var fragments = SeekIndexBuilder(interval: 0)
        for range in moofRanges {
            guard range.count <= maxMoofBytes else {
                throw FormatError.unsupported(component: "mp4", reason: "moof of \(range.count) bytes")
            }
            let moof = try source.read(at: range.lowerBound, count: range.count)
            let fragment = try MP4Fragment.parse(moof: moof[...], at: range.lowerBound, trackID: track.trackID,
                                                 defaults: movie.audioTrackExtends)
            guard !fragment.samples.isEmpty else { continue }
            sampleCount += fragment.samples.count
            guard sampleCount <= source.size else {
                throw FormatError.outOfRange(component: "mp4", field: "trun.sample_count",
                                             value: "\(sampleCount) samples in a \(source.size)-byte file")
            }
            // A fragment is decoded from its moof: that is where a seek must start reading.
            fragments.add(frameStart: Double(ticks) / Double(track.timescale), byte: range.lowerBound)
            firstFrameOffset = firstFrameOffset ?? fragment.samples.first?.offset
            for s in fragment.samples {
                ticks = satAdd(ticks, s.duration)
                bytes = satAdd(bytes, s.size)
            }
        }
        let durationField = moofRanges.isEmpty ? "stts.sample_delta" : "trun.sample_duration"
        let totalTicks = ticks
        let untrimmed = try Checked.seconds(ticks: totalTicks, timescale: track.timescale, "mp4", durationField)
        let totalSamples = try Checked.samples(ticks: totalTicks, timescale: track.timescale, rate: rate, "mp4", durationField)
        try Checked.bytes(bytes, "mp4", moofRanges.isEmpty ? "stsz.sample_size" : "trun.sample_size")
        // Priming and padding: iTunSMPB first, else the edit list, else the usual one frame.
        var delay = 0, padding = 0
        var notes: [String] = []
        if let alac {
            // An edit list may still cut the end (a lossless rip keeps every sample; afconvert's
            // last packet is short instead).
            if let editDuration = track.editDuration, editDuration > 0, movie.movieTimescale > 0,
               let kept = try? Checked.samples(ticks: editDuration, timescale: movie.movieTimescale, rate: rate, "mp4",
                                               "elst.segment_duration") {
                padding = max(0, totalSamples - kept)
            }
            let seek = SeekIndex(points: index.points, firstFrameOffset: firstFrameOffset ?? (mdatStart ?? 0),
                                 audioEndOffset: source.size, encoderDelay: 0, encoderPadding: padding, durationSeconds: untrimmed)
            var analysis = TrackAnalysis(container: .mp4, codec: "alac", sampleRate: rate, channels: alac.numChannels,
                                         durationSeconds: Double(max(0, totalSamples - padding)) / Double(rate),
                                         bitrate: try Checked.bitrate(bytes: bytes, seconds: untrimmed, "mp4"),
                                         frames: sampleCount, firstFrameOffset: seek.firstFrameOffset, encoderDelay: 0,
                                         encoderPadding: padding, totalSamples: totalSamples, tags: movie.tags, seekIndex: seek)
            analysis.bitsPerSample = alac.bitDepth
            if !moofRanges.isEmpty { analysis.notes.append("fragmented MP4: \(moofRanges.count) fragments") }
            return analysis
        }
        guard let asc else { throw FormatError.invalid(component: "mp4", reason: "no AudioSpecificConfig", offset: 0) }
        if let gapless = movie.gapless(outputSampleRate: rate) {
            delay = gapless.encoderDelay
            padding = gapless.encoderPadding
            if movie.gaplessSource == .editList, track.editMediaTime != nil,
               let editDuration = track.editDuration, editDuration > 0, movie.movieTimescale > 0 {
                // The padding again, against all samples, fragments included.
                let kept = try Checked.samples(ticks: editDuration, timescale: movie.movieTimescale, rate: rate,
                                               "mp4", "elst.segment_duration")
                padding = max(0, totalSamples - delay - kept)
            }
            if delay < asc.samplesPerFrame {
                // The decoder outputs nothing for the first frame (it is the encoder's priming):
                // an edit that starts inside it, as ffmpeg's remux of ADTS does at 0, cannot be met.
                notes.append("edit list starts at \(delay): the first frame (\(asc.samplesPerFrame) samples) is not played")
                delay = asc.samplesPerFrame
            }
        } else {
            delay = asc.samplesPerFrame
            notes.append("encoder delay assumed: \(delay) priming samples (no edit list or iTunSMPB)")
        }
        if !moofRanges.isEmpty, !MP4Movie.isFragmentPadding(padding, samplesPerFrame: asc.samplesPerFrame) {
            notes.append("edit list covers only part of the fragmented samples: the length comes from moov + moof")
            padding = 0
        }
        // iTunSMPB counts are 32-bit and hex: a week bounds them like every other count.
        delay = min(max(0, delay), totalSamples)
        padding = min(max(0, padding), totalSamples)
        let trimmed = max(0, totalSamples - delay - padding)
        let duration = Double(trimmed) / Double(rate)
        var points = index.points
        if !fragments.points.isEmpty {
            // One index for the file: moov samples and fragments together, under the same bound.
            var merged = SeekIndexBuilder(interval: 0)
            for point in points + fragments.points { merged.add(frameStart: point.t, byte: point.byte) }
            points = merged.points
        }
        let seek = SeekIndex(points: points,
                             firstFrameOffset: firstFrameOffset ?? (mdatStart ?? 0),
                             audioEndOffset: source.size, encoderDelay: delay, encoderPadding: padding,
                             durationSeconds: untrimmed)
        var analysis = TrackAnalysis(container: .mp4, codec: "aac", sampleRate: rate, channels: asc.channels,
                                     durationSeconds: duration,
                                     bitrate: try Checked.bitrate(bytes: bytes, seconds: untrimmed, "mp4"),
                                     frames: sampleCount, firstFrameOffset: seek.firstFrameOffset, encoderDelay: delay,
                                     encoderPadding: padding, totalSamples: totalSamples, tags: movie.tags, seekIndex: seek)
        analysis.notes = notes
        analysis.audioSpecificConfig = track.decoderSpecificInfo
        if !moofRanges.isEmpty || movie.isFragmented { analysis.notes.append("fragmented MP4: \(moofRanges.count) fragments") }
        return analysis
    }

    /// Most top-level boxes walked (a 4-hour fragmented file with 1 s fragments has about 30,000).
    static let maxTopLevelBoxes = 200_000
    /// Largest moof read: real audio fragments take a few kilobytes.
    static let maxMoofBytes = 16 << 20
}
