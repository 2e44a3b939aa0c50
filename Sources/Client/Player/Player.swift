import StreamShared

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
    private let log: (@Sendable (String) -> Void)?
    let commands = ConditionLock()
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
    public var playedTags: TrackTags? { commands.withLock { playedTagsStorage } }
    var streamTitleStorage: String?
    var isLiveStorage = false
    /// The title a live stream's ICY metadata gave last (nil before the first, or for a file).
    public var streamTitle: String? { commands.withLock { streamTitleStorage } }
    /// The live stream's station facts (`icy-name`, …), nil for anything else.
    public var liveStream: LiveStreamInfo? { control.live.info }
    /// False for a live stream (radio or live HLS): seeks are ignored.
    public var canSeek: Bool { commands.withLock { !isLiveStorage } }

    public init(url: String, output: AudioOutput, options: PlayerOptions = PlayerOptions(),
                log: (@Sendable (String) -> Void)? = nil) throws {
        (events, continuation) = AsyncStream.makeStream(of: PlayerEvent.self, bufferingPolicy: .bufferingNewest(256))
        self.url = url
        self.options = options
        self.output = output
        self.log = log
        rateSetting = options.rate
        semitoneSetting = options.semitones
        eqSetting = options.eq
        throttle = Throttle(capacity: max(64 * 1024, options.bufferBytes))
        if HLSSource.isPlaylist(url) {
            let hls = HLSSource(url: url, options: options.hls, http: options.http)
            if let log {
                // Timed like the player's own lines: HLS fetches are most of the time to first audio.
                let start = Monotonic.now
                hls.log = { message in
                    let ms = Monotonic.now.milliseconds(since: start)
                    log("[\(JSONObjectWriter.number(ms, decimals: 1)) ms] \(message)")
                }
            }
            source = hls
        } else if url.contains("://") {
            let http = HTTPSource(url: url, options: options.http)
            http.log = log
            source = http
        } else {
            source = try FileSource(path: url)
        }
    }

    // MARK: Commands (any thread)

    public func togglePause() { commands.withLock { paused.toggle() } }
    public func seek(to seconds: Double) { commands.withLock { pendingSeek = max(0, seconds) } }
    public func seek(by seconds: Double) { commands.withLock { pendingSeek = max(0, (pendingSeek ?? position) + seconds) } }
    public func setVolume(_ volume: Float) { commands.withLock { pendingVolume = min(2, max(0, volume)) } }
    /// Playback rate 0.1...16, pitch kept; applied within one buffer without a click.
    public func setRate(_ rate: Double) {
        commands.withLock { rateSetting = min(16, max(0.1, rate)); dspChanged = true }
    }
    /// Pitch shift in semitones, -12...12, tempo kept.
    public func setPitch(semitones: Double) {
        commands.withLock { semitoneSetting = min(12, max(-12, semitones)); dspChanged = true }
    }
    public func setEQ(_ eq: EQSettings) { commands.withLock { eqSetting = eq; dspChanged = true } }
    public var rate: Double { commands.withLock { rateSetting } }
    public var semitones: Double { commands.withLock { semitoneSetting } }
    public var eq: EQSettings { commands.withLock { eqSetting } }
    public func stop() { commands.withLock { stopRequested = true } }
    public var isPaused: Bool { commands.withLock { paused } }
    public var volume: Float { commands.withLock { pendingVolume ?? options.volume } }
    /// Position and duration in seconds, for a status line.
    public var progress: (position: Double, duration: Double?) { commands.withLock { (position, duration) } }
    public var bufferFill: Int { throttle.fill }
    public var bufferCapacity: Int { throttle.capacity }

    func setState(_ new: PlayerState) {
        commands.withLock { state = new }
        continuation.yield(.state(new))
    }

    // MARK: Running

    /// Plays to the end (or `stop()`), blocking the calling thread; returns the stats.
    public func run() throws(PlaybackError) -> PlayerStats {
        let started = Monotonic.now
        setState(.buffering)
        throttle.reset(to: 0)
        do {
            try NativeThread.detach(name: "streamplay-network") { [source, throttle, control] in
                source.run(into: throttle, from: 0, control: control)
            }
        } catch {
            setState(.failed)
            continuation.finish()
            throw PlaybackError(message: "player: \(error)", exitCode: 1)
        }
        // 28 MPEG frames of 1152 stereo samples (every MPEG frame size divides it): whole frames
        // decoded into the ring end exactly at its wrap, so each one finds contiguous room.
        let ring = SPSCRing(capacity: 28 * 2304)
        let outputLoop = OutputLoop(output: output, ring: ring, realtime: options.realtime || output.isRealtime,
                                    started: started, isPaused: { [weak self] in self?.isPaused ?? false })
        var failure: PlaybackError?
        do {
            try decode(into: ring, outputLoop: outputLoop, started: started)
        } catch let error as PlaybackError {
            failure = error
        } catch {
            failure = PlaybackError(message: "\(error)", exitCode: 1)
        }
        outputLoop.finish()
        control.stop()
        if let error = outputLoop.error, failure == nil {
            failure = PlaybackError(message: "\(error)", exitCode: 1)
        }
        var stats = commands.withLock { statsStorage }
        stats.framesOut = outputLoop.framesWritten
        stats.ttfaMs = outputLoop.firstAudioMs
        if let first = outputLoop.firstAudioMs, let seekStarted = commands.withLock({ seekStartedMs }) {
            stats.seekMs = first - seekStarted
        }
        stats.underruns = outputLoop.underruns + ((output as? ALSAOutput)?.underruns ?? 0)
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

    /// Stats of a run that threw.
    public private(set) var lastStats: PlayerStats?

    func log(_ component: String, _ message: @autoclosure () -> String) {
        guard let log else { return }
        let ms = Monotonic.now.milliseconds(since: created)
        log("[\(JSONObjectWriter.number(ms, decimals: 1)) ms] \(component): \(message())")
    }
}
