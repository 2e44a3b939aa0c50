import StreamShared
import Logging

/// Plays one track through the pipeline: Source → Throttle → Parser → Converter → DSP → Output,
/// on three threads (network, decode, output) joined by the throttle and a lock-free ring.
public final class Player: @unchecked Sendable {
    // @unchecked: the decode state is touched only by the decode thread; commands from other
    // threads go through `commands` (a lock) and atomics-backed rings.
    public let events: AsyncStream<PlayerEvent>
    let continuation: AsyncStream<PlayerEvent>.Continuation
    public let url: String
    /// When the player was made; log lines carry the time since.
    let created = Monotonic.now
    public let options: PlayerOptions
    let source: ByteSource
    let output: AudioOutput
    let throttle: Throttle
    let control = SourceControl()
    /// Where the component-tagged diagnostics go, at debug level (`--verbose`); nil: nowhere.
    private let logger: Logger?
    let commands = Lock(())
    var pendingSeek: Double?
    var pendingVolume: Float?
    /// The DSP settings asked for last, and whether the decode thread has yet to apply them.
    var rateSetting: Double
    var semitoneSetting: Double
    var eqSetting: EQSettings
    var dspChanged = false
    private var paused = false
    var stopRequested = false
    var statsStorage = PlayerStats()
    private(set) public var state: PlayerState = .idle
    var position: Double = 0
    /// Milliseconds after start when the initial seek (`--start`) was issued.
    var seekStartedMs: Double?
    /// The first bytes, kept between probing and decoding.
    var probePrefix: [UInt8] = []
    /// Exact frame starts, loaded on the first seek.
    var frameTable: FrameTable?
    /// A fragmented MP4's mfra table, read once (for its length at start, then for seeks).
    var fragmentIndex: MP4RandomAccess??
    var duration: Double?
    var playedTagsStorage: TrackTags?
    /// The track's tags, once it has been probed (title, artist and album for a queue's status
    /// line; the album for `--replaygain auto`).
    public var playedTags: TrackTags? { commands.withLock { _ in playedTagsStorage } }
    var streamTitleStorage: String?
    var isLiveStorage = false
    /// The title a live stream's ICY metadata gave last (nil before the first, or for a file).
    public var streamTitle: String? { commands.withLock { _ in streamTitleStorage } }
    /// The live stream's station facts (`icy-name`, …), nil for anything else.
    public var liveStream: LiveStreamInfo? { control.live.info }
    /// False for a live stream (radio or live HLS) and for a response without ranges (a streamd
    /// transcode in progress, where `--start` asks for `offset=`): seek keys are ignored.
    public var canSeek: Bool { commands.withLock { _ in !isLiveStorage } && !control.rangesRefused }
    /// What the status line says when a seek key is ignored (nil: seeks work).
    public var cannotSeekReason: String? {
        if canSeek { return nil }
        return control.rangesRefused ? "no ranges (transcode in progress): cannot seek; use --start" : "live stream: cannot seek"
    }
    /// What the queue playing this track gives it: the output stage its tracks share, the
    /// track's place in it, the crossfade, the near-end call (nil: a player of its own).
    let queueHooks: QueueHooks?
    /// The probe's outcome, when `prepare()` ran ahead of `run()` (a queue's next track).
    var prepared: Result<StreamPlan, PlaybackError>?
    private var networkStarted = false
    /// For `--replaygain auto`: the album of the track before (see `PlayerOptions`); a queue sets
    /// it when that track has been probed, which may be after this one was made.
    var replayGainPreviousAlbum: String??
    /// How long before a queue's track ends its next one is opened (`QueueHooks.onNearEnd`).
    static let nearEndSeconds = 10.0
    /// Frames this track pushed into the ring (a shared stage's count per track).
    var framesPushed = 0

    public convenience init(url: String, output: AudioOutput, options: PlayerOptions = PlayerOptions(),
                            logger: Logger? = nil) throws {
        try self.init(url: url, output: output, options: options, logger: logger, queueHooks: nil)
    }

    /// A queue's track: `queueHooks` says how it takes part in the queue.
    init(url: String, output: AudioOutput, options: PlayerOptions, logger: Logger?,
         queueHooks: QueueHooks?) throws {
        self.queueHooks = queueHooks
        replayGainPreviousAlbum = options.replayGainPreviousAlbum
        (events, continuation) = AsyncStream.makeStream(of: PlayerEvent.self, bufferingPolicy: .bufferingNewest(256))
        self.url = url
        self.options = options
        self.output = output
        self.logger = logger
        rateSetting = options.rate
        semitoneSetting = options.semitones
        eqSetting = options.eq
        throttle = Throttle(capacity: max(64 * 1024, options.bufferBytes), budget: options.throttleBudget)
        if HLSSource.isPlaylist(url) {
            let hls = HLSSource(url: url, options: options.hls, http: options.http)
            // Timed like the player's own lines: HLS fetches are most of the time to first audio.
            hls.logger = logger
            source = hls
        } else if url.contains("://") {
            let http = HTTPSource(url: url, options: options.http)
            http.logger = logger
            source = http
        } else {
            source = try FileSource(path: url)
        }
    }

    // MARK: Commands (any thread)

    public func togglePause() { commands.withLock { _ in paused.toggle() } }
    public func seek(to seconds: Double) { commands.withLock { _ in pendingSeek = max(0, seconds) } }
    public func seek(by seconds: Double) { commands.withLock { _ in pendingSeek = max(0, (pendingSeek ?? position) + seconds) } }
    public func setVolume(_ volume: Float) { commands.withLock { _ in pendingVolume = min(2, max(0, volume)) } }
    /// Playback rate 0.1...16, pitch kept; applied within one buffer without a click.
    public func setRate(_ rate: Double) {
        commands.withLock { _ in rateSetting = min(16, max(0.1, rate)); dspChanged = true }
    }
    /// Pitch shift in semitones, -12...12, tempo kept.
    public func setPitch(semitones: Double) {
        commands.withLock { _ in semitoneSetting = min(12, max(-12, semitones)); dspChanged = true }
    }
    public func setEQ(_ eq: EQSettings) { commands.withLock { _ in eqSetting = eq; dspChanged = true } }
    public var rate: Double { commands.withLock { _ in rateSetting } }
    public var semitones: Double { commands.withLock { _ in semitoneSetting } }
    public var eq: EQSettings { commands.withLock { _ in eqSetting } }
    public func stop() { commands.withLock { _ in stopRequested = true } }
    public var isPaused: Bool { commands.withLock { _ in paused } }
    public var volume: Float { commands.withLock { _ in pendingVolume ?? options.volume } }
    /// Position and duration in seconds, for a status line.
    public var progress: (position: Double, duration: Double?) { commands.withLock { _ in (position, duration) } }
    public var bufferFill: Int { throttle.fill }
    /// Whether the source can be read at any offset: not a stream (HLS), nor a response that
    /// said `Accept-Ranges: none` (a transcode in progress, whose byte offsets cannot be asked for).
    var canReadRanges: Bool { source.hasByteRanges && !control.rangesRefused }
    public var bufferCapacity: Int { throttle.capacity }

    // MARK: Commands taken by the decode thread

    /// `stop()` was called.
    var isStopRequested: Bool { commands.withLock { _ in stopRequested } }
    /// A stop or a seek is waiting: a wait for room in the ring gives way to it.
    var isStopOrSeekPending: Bool { commands.withLock { _ in stopRequested || pendingSeek != nil } }
    /// Takes the seek asked for since the last call.
    func takePendingSeek() -> Double? { commands.withLock { _ in defer { pendingSeek = nil }; return pendingSeek } }
    /// Takes the volume asked for since the last call.
    func takePendingVolume() -> Float? { commands.withLock { _ in defer { pendingVolume = nil }; return pendingVolume } }
    /// Takes the rate, pitch and EQ when they changed since the last call.
    func takeDSPChange() -> (rate: Double, semitones: Double, eq: EQSettings)? {
        commands.withLock { _ in
            defer { dspChanged = false }
            return dspChanged ? (rateSetting, semitoneSetting, eqSetting) : nil
        }
    }

    /// The position heard now, for `progress` and as an event.
    func publish(position heard: Double) {
        commands.withLock { _ in position = heard }
        continuation.yield(.progress(position: heard, duration: commands.withLock { _ in duration }))
    }

    func setState(_ new: PlayerState) {
        commands.withLock { _ in state = new }
        continuation.yield(.state(new))
    }

    // MARK: Running

    /// Starts the network thread once.
    private func startNetwork() throws(PlaybackError) {
        guard !networkStarted else { return }
        networkStarted = true
        throttle.reset(to: 0)
        do {
            try NativeThread.detach(name: "streamplay-network") { [source, throttle, control] in
                source.run(into: throttle, from: 0, control: control)
            }
        } catch {
            throw PlaybackError(message: "player: \(error)", exitCode: 1)
        }
    }

    /// Opens the source and probes it, ahead of `run()` (a queue's next track, while the one
    /// before still plays). Blocks until the stream's plan is known or it failed; `run()` then
    /// starts decoding at once, or throws the same error.
    public func prepare() {
        guard prepared == nil else { return }
        do {
            try startNetwork()
            prepared = .success(try makePlan(try probeStream()))
        } catch let error as PlaybackError {
            prepared = .failure(error)
        } catch {
            prepared = .failure(PlaybackError(message: "\(error)", exitCode: 1))
        }
    }

    /// Plays to the end (or `stop()`), blocking the calling thread; returns the stats.
    /// With a queue's shared stage it returns when the track's last sample is queued for the
    /// output (the output goes on into the next track).
    public func run() throws(PlaybackError) -> PlayerStats {
        let started = Monotonic.now
        setState(.buffering)
        do { try startNetwork() } catch {
            setState(.failed)
            continuation.finish()
            throw error
        }
        let outputLoop: OutputLoop
        if let queueHooks {
            outputLoop = queueHooks.sharedLoop
        } else {
            // 28 MPEG frames of 1152 stereo samples (every MPEG frame size divides it): whole frames
            // decoded into the ring end exactly at its wrap, so each one finds contiguous room.
            let ring = SPSCRing(capacity: Self.ringCapacity)
            outputLoop = OutputLoop(output: output, ring: ring, realtime: options.realtime || output.isRealtime,
                                    started: started, drainsInline: true, isPaused: { [weak self] in self?.isPaused ?? false })
        }
        let underrunsBefore = outputLoop.underruns
        let deviceUnderrunsBefore = deviceUnderruns
        var failure: PlaybackError?
        do {
            try decode(outputLoop: outputLoop, started: started)
        } catch let error as PlaybackError {
            failure = error
        } catch {
            failure = PlaybackError(message: "\(error)", exitCode: 1)
        }
        if queueHooks == nil { outputLoop.finish() }
        control.stop()
        if let error = outputLoop.error, failure == nil {
            failure = PlaybackError(message: "\(error)", exitCode: 1)
        }
        var stats = commands.withLock { _ in statsStorage }
        if let queueHooks {
            stats.framesOut = framesPushed
            stats.ttfaMs = queueHooks.serial == 0 ? outputLoop.firstAudioMs : nil
        } else {
            stats.framesOut = outputLoop.framesWritten
            stats.ttfaMs = outputLoop.firstAudioMs
        }
        if let first = outputLoop.firstAudioMs, let seekStarted = commands.withLock({ _ in seekStartedMs }) {
            stats.seekMs = first - seekStarted
        }
        stats.underruns = outputLoop.underruns - underrunsBefore + deviceUnderruns - deviceUnderrunsBefore
        stats.reconnects = control.reconnects
        stats.liveGapsMs = control.live.gapsMilliseconds
        stats.bytesDownloaded = control.bytesDownloaded
        stats.peakBufferBytes = throttle.peakFill
        if let failure {
            setState(.failed)
            continuation.yield(.error(failure.message))
            continuation.finish()
            lastStats = stats
            throw failure
        }
        setState(.ended)
        continuation.finish()
        return stats
    }

    /// Samples in the ring between decoding and output: 28 MPEG frames of 1152 stereo samples
    /// (every MPEG frame size divides it), so whole frames end exactly at its wrap.
    static let ringCapacity = 28 * 2304

    /// The sound card's own count of underruns it recovered from.
    private var deviceUnderruns: Int { output.deviceUnderruns }

    /// The tags the probe found, once `prepare()` has run.
    var preparedTags: TrackTags? { if case .success(let plan)? = prepared { return plan.tags } else { return nil } }

    /// For `--replaygain auto`: the album of the track played before this one.
    func setPreviousAlbum(_ album: String??) { commands.withLock { _ in replayGainPreviousAlbum = album } }

    /// A track opened ahead and not played after all: its source stops.
    func abandon() {
        stop()
        control.stop()
        continuation.finish()
    }

    /// The settings the keys change, which a queue carries from track to track.
    public struct Controls: Sendable {
        public var volume: Float
        public var rate: Double
        public var semitones: Double
        public var eq: EQSettings
        /// A pause held over a join stays a pause (the output runs on into the next track).
        public var paused: Bool
    }

    /// The volume, rate, pitch, EQ and pause as set last.
    public var controls: Controls { Controls(volume: volume, rate: rate, semitones: semitones, eq: eq, paused: isPaused) }

    /// Takes the volume, rate, pitch and EQ of the track before (a queue carries them over);
    /// before `run()`.
    public func setControls(_ controls: Controls) {
        commands.withLock { _ in
            pendingVolume = controls.volume
            rateSetting = controls.rate
            semitoneSetting = controls.semitones
            eqSetting = controls.eq
            paused = controls.paused
        }
    }

    /// Stats of a run that threw.
    public private(set) var lastStats: PlayerStats?

    func log(_ component: String, _ message: @autoclosure () -> String) {
        logger?.debug("[\(JSONObjectWriter.number(Monotonic.now.milliseconds(since: created), decimals: 1)) ms] \(component): \(message())")
    }
}
