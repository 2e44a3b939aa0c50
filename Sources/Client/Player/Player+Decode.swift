import StreamShared
import StreamAudio

extension Player {
    /// The decode thread's work, stage by stage: probe the stream and plan its decoding, tell
    /// what it is, open the converter and the DSP chain, seek to the start, then turns of
    /// convert → process → output until the end or a stop, and the track's last samples.
    func decode(outputLoop: OutputLoop, started: Monotonic) throws {
        let plan = try probedPlan()
        let liveness = announce(plan)
        let pipeline = try openPipeline(plan, following: outputLoop.lastFormat)
        let session = DecodeSession(player: self, plan: plan, liveness: liveness, pipeline: pipeline, outputLoop: outputLoop)
        try session.start(at: options.start, started: started)
        while try session.runTurn() {}
        try session.finish()
    }

    /// Probe and plan: the plan `prepare()` made ahead (or its error), else one made now.
    func probedPlan() throws -> StreamPlan {
        switch prepared {
        case .success(let ready)?: return ready
        case .failure(let error)?: throw error
        case nil: return try makePlan(try probeStream())
        }
    }

    /// Whether a stream is live, and a radio stream's facts.
    struct Liveness {
        /// A live ICY stream's station facts (nil for anything else).
        var live: LiveStreamInfo?
        /// Radio or live HLS: no length, no seeking.
        var isLive: Bool
    }

    /// Tells what the stream is: the format and tags events, and the stats' codec, container and
    /// duration (a segmented source's playlist gives it; a live stream has none).
    func announce(_ plan: StreamPlan) -> Liveness {
        let timeline = source.segments?.timeline(timeout: 10)
        // The transport knows once the response head arrived, before the first byte was probed.
        let live = control.live.info
        let format = plan.format
        continuation.yield(.format(format, codec: plan.stream.codec))
        continuation.yield(.metadata(plan.tags))
        commands.withLock { _ in playedTagsStorage = plan.tags }
        commands.withLock { _ in
            statsStorage.codec = plan.stream.codec
            statsStorage.container = plan.stream.container.rawValue
            statsStorage.sampleRate = format.sampleRate
            statsStorage.channels = format.channels
            duration = plan.trimmedLength.map { Double($0) / Double(format.sampleRate) } ?? estimatedDuration(plan)
            if let timeline {
                // HLS: the playlist's duration (none for live); Xing gapless numbers stay first.
                statsStorage.container = "hls"
                if timeline.isLive { duration = nil } else if plan.trimmedLength == nil { duration = timeline.duration }
            }
            if live != nil { duration = nil }
            isLiveStorage = live != nil || timeline?.isLive == true
            statsStorage.durationSeconds = duration
        }
        return Liveness(live: live, isLive: live != nil || timeline?.isLive == true)
    }

    /// The converter and the DSP chain opened for a stream, and the volume to start at.
    struct Pipeline {
        var converter: any PacketConverter
        var dsp: DSPChain
        /// What leaves the chain (the output's rate).
        var outputFormat: AudioFormat
        var volume: Float
    }

    /// Opens the converter and the DSP chain: rate/pitch → EQ → resampling to the output's
    /// rate, with the ReplayGain stage set; the volume follows the chain.
    func openPipeline(_ plan: StreamPlan, following running: AudioFormat?) throws -> Pipeline {
        let converter = try makeConverter(plan)
        // The device's rate: --output-rate, else what the output asks for (a queue's file keeps
        // the rate it was started at, and the track is resampled to it).
        let deviceRate = options.outputSampleRate ?? output.sampleRate(for: plan.format, following: running)
        // Rate, pitch, EQ and volume as set last (a queue carries them over from the track before).
        let (startRate, startSemitones, startEQ, startVolume) = commands.withLock { (_) -> (Double, Double, EQSettings, Float) in
            defer { pendingVolume = nil }
            return (rateSetting, semitoneSetting, eqSetting, pendingVolume ?? options.volume)
        }
        let dsp = DSPChain(rate: startRate, semitones: startSemitones, eq: startEQ,
                           outputRate: deviceRate, engine: options.stretchEngine)
        let outputFormat: AudioFormat
        do { outputFormat = try dsp.configure(input: plan.format) } catch {
            throw PlaybackError(message: "\(error)", exitCode: 1)
        }
        applyReplayGain(plan, to: dsp)
        return Pipeline(converter: converter, dsp: dsp, outputFormat: outputFormat, volume: startVolume)
    }

    /// ICY title updates whose place in the stream has been read: the title event, the status
    /// line's title, `--verbose` and `--stats`.
    func applyTitles(through offset: Int, position: Double) {
        for update in control.live.take(through: offset) {
            if let text = update.unparsedText { log("icy", "metadata block not in Key='value'; form: '\(text)'") }
            guard let title = update.title else { continue }
            applyStreamTitle(title, position: position, from: "icy")
        }
    }

    /// A live stream's title as read (ICY, or an Ogg link's comments): the title event, the
    /// status line's title, `--verbose` and `--stats`; only changes count.
    func applyStreamTitle(_ title: String, position: Double, from origin: String) {
        // Servers repeat the title (at each track start, to new listeners).
        guard title != commands.withLock({ _ in streamTitleStorage }) else { return }
        log(origin, "title '\(title)' at \(JSONObjectWriter.number(position, decimals: 1)) s")
        commands.withLock { _ in
            statsStorage.titles.append(StreamTitleChange(atSeconds: position, title: title))
            if statsStorage.titles.count > 1000 { statsStorage.titles.removeFirst() }
            streamTitleStorage = title
            var tags = playedTagsStorage ?? TrackTags()
            tags.title = title.isEmpty ? nil : title
            playedTagsStorage = tags
        }
        continuation.yield(.title(title))
    }

    /// A problem that does not stop playback: logged, and printed by streamplay at exit.
    func warn(_ message: String) {
        log("warning", message)
        commands.withLock { _ in statsStorage.warnings.append(message) }
    }
}
