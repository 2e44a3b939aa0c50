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
                if commands.withLock({ stopRequested }) { throw PlaybackError(message: "player: stopped", exitCode: 0) }
            }
        }
        return nil
    }

    /// The decode thread's work: probe, seek if asked, then parse → convert → trim → DSP → ring.
    func decode(into ring: SPSCRing, outputLoop: OutputLoop, started: Monotonic) throws {
        let plan: StreamPlan
        switch prepared {
        case .success(let ready)?: plan = ready
        case .failure(let error)?: throw error
        case nil: plan = try makePlan(try probeStream())
        }
        let hlsTimeline = source.segments?.timeline(timeout: 10)
        // The transport knows once the response head arrived, before the first byte was probed.
        let live = control.live.info
        let format = plan.format
        let channels = format.channels
        let sampleRate = format.sampleRate
        continuation.yield(.format(format, codec: plan.stream.codec))
        continuation.yield(.metadata(plan.tags))
        commands.withLock { playedTagsStorage = plan.tags }
        commands.withLock {
            statsStorage.codec = plan.stream.codec
            statsStorage.container = plan.stream.container.rawValue
            statsStorage.sampleRate = sampleRate
            statsStorage.channels = channels
            duration = plan.trimmedLength.map { Double($0) / Double(sampleRate) } ?? estimatedDuration(plan)
            if let timeline = hlsTimeline {
                // HLS: the playlist's duration (none for live); Xing gapless numbers stay first.
                statsStorage.container = "hls"
                if timeline.isLive { duration = nil } else if plan.trimmedLength == nil { duration = timeline.duration }
            }
            if live != nil { duration = nil }
            isLiveStorage = live != nil || hlsTimeline?.isLive == true
            statsStorage.durationSeconds = duration
        }
        var converter = try makeConverter(plan)
        // DSP: rate/pitch → EQ → resampling to the output rate, then the volume.
        // The device's rate: --output-rate, else what the output asks for (a queue's file keeps
        // the rate it was started at, and the track is resampled to it).
        let deviceRate = options.outputSampleRate ?? output.sampleRate(for: format, following: outputLoop.lastFormat)
        // Rate, pitch, EQ and volume as set last (a queue carries them over from the track before).
        let (startRate, startSemitones, startEQ, startVolume) = commands.withLock { () -> (Double, Double, EQSettings, Float) in
            defer { pendingVolume = nil }
            return (rateSetting, semitoneSetting, eqSetting, pendingVolume ?? options.volume)
        }
        let dsp = DSPChain(rate: startRate, semitones: startSemitones, eq: startEQ,
                           outputRate: deviceRate, engine: options.stretchEngine)
        let outputFormat: AudioFormat
        do { outputFormat = try dsp.configure(input: format) } catch {
            throw PlaybackError(message: "\(error)", exitCode: 1)
        }
        applyReplayGain(plan, to: dsp)
        var gain = Gain(volume: startVolume)
        gain.sampleRate = outputFormat.sampleRate
        // Output frames → source frames since the last seek, for the position in source time.
        var positionMap = PositionMap()
        var sourceFramesIn = 0, outputFramesOut = 0
        // Untrimmed sample index of the next converted sample, and the window to keep.
        var position = 0
        var keepFrom = plan.trimStart
        // The end of the window: the header's length, unless the header is a hint (MP3: the
        // holdback finds the real end); --duration may shorten it.
        let headerEnd = plan.tailTrim > 0 || plan.totalUnits != nil ? Int.max : plan.trimmedLength.map { plan.trimStart + $0 } ?? Int.max
        var keepUntil = headerEnd
        var holdback = TailHoldback(capacity: plan.tailTrim * channels)
        let blockSamples = format.framesPerBuffer * channels
        var pending: [Float] = []
        pending.reserveCapacity(blockSamples)
        var fullBlocks: [[Float]] = []
        var outputStarted = false
        /// Where the track's timeline starts (a `--start` position), in frames.
        var startFrame = 0
        var nearEndSignalled = queueHooks == nil
        let crossfade = queueHooks?.crossfade
        let serial = queueHooks?.serial ?? 0
        var streamEnded = false
        /// Samples go from the decoder straight into the ring (no block, no chain, no gain);
        /// decided once per batch of input.
        var passThrough = false

        func limitDuration() {
            if let limit = options.duration {
                // The command line bounds --duration to a week; a library caller is clamped the same way.
                let frames = Int((min(max(0, limit), InputLimits.maxDurationSeconds) * Double(sampleRate)).rounded())
                keepUntil = min(headerEnd, keepFrom + frames)
            }
        }

        /// Moves the read position to `seconds`: throttle reset, a new request from an exact
        /// unit start a little early (decoder warm-up), samples dropped to the exact spot.
        func seekTo(_ seconds: Double) throws {
            // Seek targets come from the command line and the keys: finite, clamped to a week.
            let clamped = seconds.isFinite ? min(max(0, seconds), InputLimits.maxDurationSeconds) : 0
            let target = plan.trimStart + Int((clamped * Double(sampleRate)).rounded())
            let (unit, byte) = try locateUnit(atOrBefore: max(0, target / plan.samplesPerUnit - plan.warmUpUnits), plan: plan)
            throttle.reset(to: byte)
            control.seek(to: byte)
            try converter.restart(at: byte)
            position = unit * plan.samplesPerUnit
            holdback.reset()
            keepFrom = max(plan.trimStart, target)
            dsp.reset()
            positionMap.reset()
            sourceFramesIn = 0
            outputFramesOut = 0
            if outputStarted {
                crossfade?.reset()
                outputLoop.flush(resumingAt: keepFrom - plan.trimStart)
            } else {
                startFrame = keepFrom - plan.trimStart
            }
            limitDuration()
            streamEnded = false
            log("parser", "seek to \(seconds) s: unit \(unit) at byte \(byte)")
        }

        /// Keeps reading from where the probe stopped and converts from the first byte of audio.
        /// The probe may stop short of it (an MP4 read exactly to the end of a large moov, with
        /// box headers before the first sample): the MP4 converters then skip to it themselves,
        /// as they place samples by absolute offsets.
        func startAtFirstAudioByte() throws {
            let start = min(plan.audioStart, probePrefix.count)
            try converter.restart(at: start)
            limitDuration()
            converter.append(Array(probePrefix.dropFirst(start)))
        }

        /// Samples leaving the holdback, in stream order: those inside the window go straight
        /// into the ring when nothing would change them (the chain bypassed, unity volume), else
        /// they fill fixed-size blocks, and a full block goes down the chain.
        func keepInWindow(_ samples: UnsafeBufferPointer<Float>) {
            let frames = samples.count / channels
            let start = position
            position += frames
            let lower = max(keepFrom, start), upper = min(keepUntil, position)
            guard lower < upper else { return }
            var from = (lower - start) * channels
            let to = (upper - start) * channels
            if passThrough, let base = samples.baseAddress {
                sourceFramesIn += upper - lower
                outputFramesOut += upper - lower
                pushToRing(UnsafeBufferPointer(start: base + from, count: to - from))
                return
            }
            while from < to {
                let take = min(to - from, blockSamples - pending.count)
                pending.append(contentsOf: samples[from..<(from + take)])
                from += take
                if pending.count == blockSamples {
                    fullBlocks.append(pending)
                    pending.removeAll(keepingCapacity: true)
                }
            }
        }

        if let live {
            log("player", "live stream" + (live.station.map { " '\($0)'" } ?? "") + (live.genre.map { " (\($0))" } ?? "")
                + (live.metaint.map { ", ICY metadata every \($0) bytes" } ?? ", no ICY metadata") + ": no length, no seeking")
        }
        if options.start > 0, hlsTimeline?.isLive == true || live != nil {
            log("player", "--start ignored: a live stream starts at its live edge")
            try startAtFirstAudioByte()
        } else if options.start > 0 {
            commands.withLock { seekStartedMs = Monotonic.now.milliseconds(since: started) }
            try seekTo(options.start)
        } else {
            try startAtFirstAudioByte()
        }
        probePrefix = []

        func emit(_ buffer: inout [Float]) throws {
            guard !buffer.isEmpty else { return }
            if !outputStarted {
                log("converter", "first PCM buffer: \(buffer.count / channels) frames")
                log("output", "opening \(type(of: output)) for \(outputFormat)")
                if outputFormat.sampleRate != format.sampleRate {
                    log("dsp", "resampling \(format.sampleRate) Hz → \(outputFormat.sampleRate) Hz (libsoxr)")
                }
                crossfade?.begin(format: outputFormat, play: pushRaw)
                try outputLoop.beginTrack(serial: serial, format: outputFormat, timelineStart: startFrame)
                outputStarted = true
                setState(.playing)
            }
            applyControls()
            sourceFramesIn += buffer.count / channels
            dsp.process(&buffer)
            try write(&buffer)
        }

        /// Volume, then the ring; records where the written audio sits in source time.
        func write(_ buffer: inout [Float]) throws {
            guard !buffer.isEmpty else { return }
            let outChannels = outputFormat.channels
            outputFramesOut += buffer.count / outChannels
            positionMap.record(output: outputFramesOut, source: Double(sourceFramesIn) - dsp.latencySourceFrames,
                               slope: dsp.sourceFramesPerOutputFrame)
            gain.process(&buffer, channels: outChannels)
            buffer.withUnsafeBufferPointer { pushToRing($0) }
            buffer.removeAll(keepingCapacity: true)
        }

        /// Copies `samples` into the ring, waiting for space (not past a stop or a seek).
        func pushRaw(_ samples: UnsafeBufferPointer<Float>) {
            var offset = 0
            while offset < samples.count {
                let written = ring.write(UnsafeBufferPointer(rebasing: samples[offset...]))
                offset += written
                framesPushed += written / outputFormat.channels
                if written == 0 {
                    if commands.withLock({ stopRequested || pendingSeek != nil }) || outputLoop.hasStopped { break }
                    outputLoop.waitForRoom(samples.count - offset)
                }
            }
        }

        /// Into the ring, through the crossfade when a queue has one.
        func pushToRing(_ samples: UnsafeBufferPointer<Float>) {
            if let crossfade { crossfade.push(samples, play: pushRaw) } else { pushRaw(samples) }
        }

        /// Takes the DSP and volume settings asked for since the last call.
        func applyControls() {
            if let change = commands.withLock({ () -> (Double, Double, EQSettings)? in
                defer { dspChanged = false }
                return dspChanged ? (rateSetting, semitoneSetting, eqSetting) : nil
            }) {
                dsp.set(rate: change.0)
                dsp.set(semitones: change.1)
                dsp.set(eq: change.2)
                continuation.yield(.dsp(rate: change.0, semitones: change.1, eq: change.2.description))
            }
            if let volume = commands.withLock({ () -> Float? in defer { pendingVolume = nil }; return pendingVolume }) {
                gain.set(volume)
            }
        }

        let ringSpace: () -> UnsafeMutableBufferPointer<Float>? = { ring.freeSpan() }
        // One input buffer for the whole play: reading from the throttle allocates nothing.
        var input: [UInt8] = []
        input.reserveCapacity(64 * 1024)
        while true {
            if commands.withLock({ stopRequested }) {
                // A queue's track left with n/p/q: what it queued goes; the output stays.
                if queueHooks != nil {
                    crossfade?.reset()
                    outputLoop.discardQueued()
                } else {
                    outputLoop.abort()
                }
                break
            }
            // Until the output reaches this track (a queue's track decoded while the one before
            // still plays), it is heard at its start.
            let heard = outputLoop.heardSerial != serial || !outputStarted ? Double(startFrame) / Double(sampleRate)
                : (Double(outputLoop.timelineStart)
                   + positionMap.source(atOutput: outputLoop.playedSinceFlushFrames)) / Double(sampleRate)
            if !nearEndSignalled, throttle.sourceEnded || keepUntil != Int.max && keepUntil - position < Int(Self.nearEndSeconds) * sampleRate
                || plan.trimmedLength.map({ plan.trimStart + $0 - position < Int(Self.nearEndSeconds) * sampleRate }) == true {
                nearEndSignalled = true
                queueHooks?.onNearEnd()
            }
            commands.withLock { self.position = heard }
            continuation.yield(.progress(position: heard, duration: commands.withLock { duration }))
            if let seconds = commands.withLock({ () -> Double? in defer { pendingSeek = nil }; return pendingSeek }) {
                if hlsTimeline?.isLive == true || live != nil {
                    log("player", "seek to \(seconds) s ignored: a live stream cannot seek")
                } else {
                    setState(.seeking)
                    pending.removeAll(keepingCapacity: true)
                    try seekTo(seconds)
                    setState(.playing)
                }
            }
            // The output has started and nothing changes the samples: the samples after what
            // is pending go straight into the ring (the anchor for this batch is recorded below).
            if outputStarted {
                applyControls()
                passThrough = dsp.isBypassed && gain.isIdentity
                if passThrough { try emit(&pending) }
            }
            // Passed through and not held back: the decoder writes into the ring's free space,
            // and pushToRing then only publishes what it wrote.
            converter.destination = passThrough && holdback.capacity == 0 && crossfade == nil ? ringSpace : nil
            // Convert every whole unit buffered; keep the samples inside the window.
            while try converter.convertNext(isComplete: streamEnded, { samples in
                holdback.push(samples, release: keepInWindow)
            }) {
                for var block in fullBlocks { try emit(&block) }
                fullBlocks.removeAll(keepingCapacity: true)
                if position >= keepUntil { break }
            }
            if passThrough {
                positionMap.record(output: outputFramesOut, source: Double(sourceFramesIn), slope: 1)
                passThrough = false
            }
            outputLoop.batchEnded()
            // Titles whose place in the stream has been read (the probe may have read it).
            if live != nil { applyTitles(through: throttle.availableRange.lowerBound, position: Double(position) / Double(sampleRate)) }
            if position >= keepUntil || streamEnded { break }
            switch throttle.read(into: &input, max: 64 * 1024, timeout: 0.05) {
            case .filled:
                converter.append(input)
                continuation.yield(.buffer(fill: throttle.fill, capacity: throttle.capacity))
            case .end:
                streamEnded = true
            case .failed(let error):
                throw PlaybackError(sourceFailure: error)
            case .timedOut:
                continue
            }
        }
        // The header's frame count is a hint: a stream that holds fewer frames was cut short, so
        // its end is no padding and every decoded sample plays (as mpg123 does), with a warning.
        let decodedSamples = position + holdback.count / channels
        if let expected = plan.totalUnits, streamEnded, !commands.withLock({ stopRequested }),
           decodedSamples < expected * plan.samplesPerUnit {
            if decodedSamples == 0 {
                throw PlaybackError(message: "parser: stream ended before its first whole frame (\(expected) frames promised)",
                                    exitCode: 1)
            }
            holdback.releaseAll(keepInWindow)
            for var block in fullBlocks { try emit(&block) }
            fullBlocks.removeAll(keepingCapacity: true)
            warn("parser: stream ended after \(decodedSamples / plan.samplesPerUnit) of \(expected) frames "
                 + "(truncated file or wrong Xing header); played what it holds")
        }
        try emit(&pending)
        if outputStarted && !commands.withLock({ stopRequested }) {
            var tail: [Float] = []
            dsp.flush(into: &tail)
            try write(&tail)
            crossfade?.endTrack(play: pushRaw)
        }
        log("throttle", "peak fill \(throttle.peakFill) of \(throttle.capacity) bytes; transfer paused \(control.pauses) times")
    }

    /// ICY title updates whose place in the stream has been read: the title event, the status
    /// line's title, `--verbose` and `--stats`.
    func applyTitles(through offset: Int, position: Double) {
        for update in control.live.take(through: offset) {
            if let text = update.unparsedText { log("icy", "metadata block not in Key='value'; form: '\(text)'") }
            // Servers repeat the title (at each track start, to new listeners): only changes count.
            guard let title = update.title, title != commands.withLock({ streamTitleStorage }) else { continue }
            log("icy", "title '\(title)' at \(JSONObjectWriter.number(position, decimals: 1)) s")
            commands.withLock {
                statsStorage.titles.append(StreamTitleChange(atSeconds: position, title: title))
                if statsStorage.titles.count > 1000 { statsStorage.titles.removeFirst() }
                streamTitleStorage = title
                var tags = playedTagsStorage ?? TrackTags()
                tags.title = title.isEmpty ? nil : title
                playedTagsStorage = tags
            }
            continuation.yield(.title(title))
        }
    }

    /// A problem that does not stop playback: logged, and printed by streamplay at exit.
    func warn(_ message: String) {
        log("warning", message)
        commands.withLock { statsStorage.warnings.append(message) }
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
        switch stream.container {
        case .mp3:
            guard let first = stream.mpegFrame else { break }
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
        case .wav:
            guard let wav = stream.wav else { break }
            let available = control.totalSize.map { max(0, $0 - stream.firstFrameOffset) }
            let dataBytes = wav.dataSize.map { size in available.map { min(size, $0) } ?? size } ?? available
            log("parser", "\(stream.codec) \(wav.format.sampleRate) Hz, \(wav.format.channels) ch, data at \(stream.firstFrameOffset)")
            return StreamPlan(stream: stream, format: AudioFormat(sampleRate: wav.format.sampleRate, channels: wav.format.channels,
                                                                  sampleType: Self.sampleType(of: wav.format)),
                              audioStart: stream.firstFrameOffset, samplesPerUnit: 1, trimStart: 0,
                              trimmedLength: dataBytes.map { $0 / wav.format.blockAlign }, totalUnits: nil, warmUpUnits: 0,
                              mpegHeader: nil, wav: wav, adts: nil)
        case .adts:
            guard let header = stream.adtsHeader else { break }
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
        case .mp4:
            let (movie, fragmentsStart) = try loadMovie()
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
            // Everything below is in samples at the rate the decoder really outputs.
            let rate = plan.format.sampleRate
            let spu = asc.samplesPerFrame * rate / asc.outputSampleRate
            /// Media ticks as output samples; MP4Movie.parse bounds the tables' times to a week,
            /// and anything else (an mfra table, a fragment) is checked here.
            func samples(_ ticks: Int, timescale: Int, _ field: String) throws -> Int {
                do { return try Checked.samples(ticks: ticks, timescale: timescale, rate: rate, "mp4", field) } catch {
                    throw PlaybackError(message: "parser: \(error)", exitCode: 1)
                }
            }
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
                // The length comes from mehd when the muxer wrote one, else from the mfra table and
                // the last fragment (fetched with Range requests); the fragments are not read ahead.
                var fromMehd: Int?
                if let ticks = movie.fragmentDuration, movie.movieTimescale > 0 {
                    fromMehd = try samples(ticks, timescale: movie.movieTimescale, "mehd.fragment_duration")
                }
                var fromMfra: Int?
                if fromMehd == nil, source.hasByteRanges,
                   let ticks = fragmentedLength(track: track, defaults: movie.audioTrackExtends) {
                    // Only the length for the status line: a table that lies costs the length, not the play.
                    do { fromMfra = try samples(ticks, timescale: track.timescale, "tfra.time") } catch {
                        log("parser", "no length from the mfra table: \(error)")
                    }
                }
                plan.trimmedLength = (fromMehd ?? fromMfra).map { max(0, $0 - delay - padding) }
                log("parser", "aac (fragmented MP4) \(declared), delay \(delay)"
                    + (movie.gapless == nil ? " (assumed)" : "") + ", fragments from byte \(first)")
            } else {
                let total = try samples(track.totalTicks, timescale: track.timescale, "stts.sample_delta")
                plan.trimmedLength = max(0, total - delay - padding)
                log("parser", "aac (MP4) \(declared), \(track.sampleCount) samples, delay \(delay), padding \(padding)")
            }
            return plan
        }
        throw PlaybackError(message: "converter: unsupported format: \(stream.container.rawValue)/\(stream.codec) (MP3, AAC in ADTS or MP4, and WAV so far)",
                            exitCode: 1)
    }

    /// The movie box: from the bytes already read when it sits at the front (faststart),
    /// else fetched with a Range request (moov after mdat).
    /// Also returns where a fragmented movie's boxes start: after the moov when it comes first,
    /// else at the start of the file (moof/mdat before the moov).
    func loadMovie() throws -> (MP4Movie, fragmentsStart: Int) {
        func parse(_ bytes: ArraySlice<UInt8>, mediaFirst: Bool) throws -> (MP4Movie, fragmentsStart: Int) {
            do { return (try MP4Movie.parse(moov: bytes), mediaFirst ? 0 : bytes.count) } catch {
                throw PlaybackError(message: "parser: \(error)", exitCode: 1)
            }
        }
        // The file's size bounds every top-level box: a streamed 200 does not tell it, so ask once
        // (a one-byte Range request), so a box that overruns the file fails the same way as from a path.
        if control.totalSize == nil, source.hasByteRanges, let size = try? source.resourceSize() {
            control.setTotalSize(size)
        }
        for _ in 0..<100_000 {
            let size = control.totalSize
            let layout: MP4TopLevel
            let nextOffset: Int?
            do { (layout, nextOffset) = try MP4TopLevel.scan(prefix: probePrefix[...], fileSize: size) } catch {
                throw PlaybackError(message: "parser: \(error)", exitCode: 1)
            }
            if let moov = layout.moovRange {
                let mediaFirst = layout.boxes.prefix { $0.type != "moov" }.contains { $0.type == "mdat" || $0.type == "moof" }
                if moov.upperBound <= probePrefix.count {
                    var (movie, start) = try parse(probePrefix[moov], mediaFirst: mediaFirst)
                    if !mediaFirst { start = moov.upperBound }
                    return (movie, start)
                }
                if layout.mdatRange == nil {
                    try readMore(upTo: moov.upperBound)       // moov first: it is coming
                    continue
                }
                return try parse(try fetch(moov)[...], mediaFirst: true)
            }
            guard let next = nextOffset else {
                throw PlaybackError(message: "parser: MP4 without a moov box", exitCode: 1)
            }
            if layout.mdatRange == nil {
                try readMore(upTo: next + 16)
                continue
            }
            // moov after mdat: walk the remaining top-level boxes with small Range reads.
            var offset = next
            for _ in 0..<10_000 {
                let head = try fetch(offset..<(offset + 16))
                guard let header = try? MP4BoxHeader.parse(head[...], at: 0) else { break }
                let boxSize = header.size ?? ((size ?? offset) - offset)
                // Sizes come from the file: the box must end inside it (or within 2^40 bytes when
                // the length is unknown), and a moov is read into memory only up to 64 MiB.
                let (end, overflow) = offset.addingReportingOverflow(boxSize)
                guard !overflow, end <= size ?? InputLimits.maxBytes else {
                    throw PlaybackError(message: "parser: MP4 box '\(header.type)' of \(boxSize) bytes at byte \(offset) overruns the file",
                                        exitCode: 1)
                }
                if header.type == "moov" {
                    guard boxSize <= 64 << 20 else {
                        throw PlaybackError(message: "parser: moov of \(boxSize) bytes is too large", exitCode: 1)
                    }
                    log("parser", "moov at the end (byte \(offset)): fetched with a Range request")
                    return try parse(try fetch(offset..<end)[...], mediaFirst: true)
                }
                guard boxSize > 0 else { break }
                offset = end
            }
            throw PlaybackError(message: "parser: MP4 without a moov box", exitCode: 1)
        }
        throw PlaybackError(message: "parser: MP4 with too many top-level boxes", exitCode: 1)
    }

    private func fetch(_ range: Range<Int>) throws -> [UInt8] {
        if let cached = source.cachedBytes(range) { return cached }
        do { return try source.readRange(range) } catch {
            throw PlaybackError(message: "\(error) (needed for the MP4 index at the end of the file)", exitCode: 3)
        }
    }

    /// Reads from the throttle until `probePrefix` holds `count` bytes (bounded).
    private func readMore(upTo count: Int) throws {
        guard count <= 64 * 1024 * 1024 else {
            throw PlaybackError(message: "parser: MP4 header of \(count) bytes is too large", exitCode: 1)
        }
        while probePrefix.count < count {
            switch throttle.read(max: count - probePrefix.count, timeout: 0.1) {
            case .bytes(let bytes, _): probePrefix += bytes
            case .end: throw PlaybackError(message: "parser: truncated MP4 (\(probePrefix.count) bytes)", exitCode: 1)
            case .failed(let error): throw PlaybackError(sourceFailure: error)
            case .timedOut:
                if commands.withLock({ stopRequested }) { throw PlaybackError(message: "player: stopped", exitCode: 0) }
            }
        }
    }

    /// Reads from the throttle until Probe can tell what the stream is.
    func probeStream() throws -> ProbedStream {
        var ended = false
        while true {
            if commands.withLock({ stopRequested }) { throw PlaybackError(message: "player: stopped", exitCode: 0) }
            if !probePrefix.isEmpty || ended {
                let outcome: Probe.Result
                do {
                    outcome = try Probe.probe(probePrefix[...], isComplete: ended)
                } catch let error as FormatError {
                    throw PlaybackError(message: error.isTruncation ? "parser: truncated stream (\(error))" : "\(error)",
                                        exitCode: 1)
                }
                switch outcome {
                case .audio(let stream):
                    return stream
                case .needMore(let atLeast):
                    if ended {
                        throw PlaybackError(message: "parser: truncated stream (\(probePrefix.count) bytes)", exitCode: 1)
                    }
                    if atLeast > 64 * 1024 * 1024 {
                        throw PlaybackError(message: "parser: needs \(atLeast) bytes before the audio", exitCode: 1)
                    }
                }
            }
            switch throttle.read(max: 64 * 1024, timeout: 0.05) {
            case .bytes(let bytes, _): probePrefix += bytes
            case .end:
                if probePrefix.isEmpty { throw PlaybackError(message: "parser: not an audio stream (empty)", exitCode: 1) }
                ended = true
            case .failed(let error):
                throw PlaybackError(sourceFailure: error)
            case .timedOut: continue
            }
        }
    }
}
