import StreamShared
import StreamAudio

extension Player {
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
}
