import StreamShared
import StreamAudio

/// One track's decoding once its plan is known: what the decode loop carries from turn to turn,
/// and the stages of a turn as methods (`Player.decode` runs them in order).
///
/// A class: the converter and the holdback hand their samples back through callbacks that
/// update this state while they run.
final class DecodeSession {
    private let player: Player
    private let plan: Player.StreamPlan
    private let outputLoop: OutputLoop
    private let ring: SPSCRing
    /// A live ICY stream's facts (nil for anything else): its titles are applied as they are read.
    private let live: LiveStreamInfo?
    /// Radio or live HLS: no seeking, and `--start` is ignored.
    private let isLive: Bool
    private let channels: Int
    private let sampleRate: Int
    private var converter: any PacketConverter
    private let dsp: DSPChain
    /// What leaves the DSP chain (the output's rate).
    private let outputFormat: AudioFormat
    private var gain: Gain
    /// A queue's crossfade with the tracks around this one (nil: none).
    private let crossfade: CrossfadeLink?
    /// Which of a shared output's tracks this is (0 for a player of its own).
    private let serial: Int
    /// Output frames → source frames since the last seek, for the position in source time.
    private var positionMap = PositionMap()
    private var sourceFramesIn = 0, outputFramesOut = 0
    /// Untrimmed sample index of the next converted sample, and the window to keep.
    private var position = 0
    private var keepFrom: Int
    private var keepUntil: Int
    /// The end of the window: the header's length, unless the header is a hint (MP3: the
    /// holdback finds the real end); `--duration` may shorten it.
    private let headerEnd: Int
    private var holdback: TailHoldback
    private let blockSamples: Int
    /// Kept samples short of a whole block, and whole blocks waiting for the DSP chain.
    private var pending: [Float] = []
    private var fullBlocks: [[Float]] = []
    private var outputStarted = false
    /// Where the track's timeline starts (a `--start` position), in frames.
    private var startFrame = 0
    private var nearEndSignalled: Bool
    private var streamEnded = false
    /// Samples go from the decoder straight into the ring (no block, no chain, no gain);
    /// decided once per batch of input.
    private var passThrough = false
    /// The ring's free space, for a decoder that writes its samples straight into it.
    private let ringSpace: () -> UnsafeMutableBufferPointer<Float>?
    /// One input buffer for the whole play: reading from the throttle allocates nothing.
    private var input: [UInt8] = []

    init(player: Player, plan: Player.StreamPlan, liveness: Player.Liveness, pipeline: Player.Pipeline, outputLoop: OutputLoop) {
        let channels = plan.format.channels
        let ring = outputLoop.ring
        let headerEnd = plan.tailTrim > 0 || plan.totalUnits != nil ? Int.max
            : plan.trimmedLength.map { plan.trimStart + $0 } ?? Int.max
        self.player = player
        self.plan = plan
        live = liveness.live
        isLive = liveness.isLive
        converter = pipeline.converter
        dsp = pipeline.dsp
        outputFormat = pipeline.outputFormat
        self.outputLoop = outputLoop
        self.ring = ring
        self.channels = channels
        sampleRate = plan.format.sampleRate
        var gain = Gain(volume: pipeline.volume)
        gain.sampleRate = pipeline.outputFormat.sampleRate
        self.gain = gain
        crossfade = player.queueHooks?.crossfade
        serial = player.queueHooks?.serial ?? 0
        nearEndSignalled = player.queueHooks == nil
        keepFrom = plan.trimStart
        self.headerEnd = headerEnd
        keepUntil = headerEnd
        holdback = TailHoldback(capacity: plan.tailTrim * channels)
        blockSamples = plan.format.framesPerBuffer * channels
        ringSpace = { ring.freeSpan() }
        pending.reserveCapacity(blockSamples)
        input.reserveCapacity(64 * 1024)
    }

    // MARK: Start

    /// Seek stage at the start: to `--start` when given (a live stream starts at its live
    /// edge instead), else from the first byte of audio. The probe's bytes are let go after.
    func start(at seconds: Double, started: Monotonic) throws {
        if let live {
            player.log("player", "live stream" + (live.station.map { " '\($0)'" } ?? "") + (live.genre.map { " (\($0))" } ?? "")
                       + (live.metaint.map { ", ICY metadata every \($0) bytes" } ?? ", no ICY metadata") + ": no length, no seeking")
        }
        if seconds > 0, isLive {
            player.log("player", "--start ignored: a live stream starts at its live edge")
            try startAtFirstAudioByte()
        } else if seconds > 0 {
            player.commands.withLock { _ in player.seekStartedMs = Monotonic.now.milliseconds(since: started) }
            try seek(to: seconds)
        } else {
            try startAtFirstAudioByte()
        }
        player.probePrefix = []
    }

    /// Keeps reading from where the probe stopped and converts from the first byte of audio.
    /// The probe may stop short of it (an MP4 read exactly to the end of a large moov, with
    /// box headers before the first sample): the MP4 converters then skip to it themselves,
    /// as they place samples by absolute offsets.
    private func startAtFirstAudioByte() throws {
        let start = min(plan.audioStart, player.probePrefix.count)
        try converter.restart(at: start)
        limitDuration()
        converter.append(Array(player.probePrefix.dropFirst(start)))
    }

    /// `--duration` ends the window early.
    private func limitDuration() {
        guard let limit = player.options.duration else { return }
        // The command line bounds --duration to a week; a library caller is clamped the same way.
        let frames = Int((min(max(0, limit), InputLimits.maxDurationSeconds) * Double(sampleRate)).rounded())
        keepUntil = min(headerEnd, keepFrom + frames)
    }

    // MARK: Seek

    /// Moves the read position to `seconds`: throttle reset, a new request from an exact
    /// unit start a little early (decoder warm-up), samples dropped to the exact spot.
    private func seek(to seconds: Double) throws {
        // Seek targets come from the command line and the keys: finite, clamped to a week.
        let clamped = seconds.isFinite ? min(max(0, seconds), InputLimits.maxDurationSeconds) : 0
        let target = plan.trimStart + Int((clamped * Double(sampleRate)).rounded())
        let (unit, byte) = try player.locateUnit(atOrBefore: max(0, target / plan.samplesPerUnit - plan.warmUpUnits), plan: plan)
        player.throttle.reset(to: byte)
        player.control.seek(to: byte)
        try converter.restart(at: byte, sample: unit * plan.samplesPerUnit)
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
        player.log("parser", "seek to \(seconds) s: unit \(unit) at byte \(byte)")
    }

    /// A seek asked for with the keys since the last turn (ignored on a live stream).
    private func applyPendingSeek() throws {
        guard let seconds = player.takePendingSeek() else { return }
        if isLive {
            player.log("player", "seek to \(seconds) s ignored: a live stream cannot seek")
            return
        }
        player.setState(.seeking)
        pending.removeAll(keepingCapacity: true)
        try seek(to: seconds)
        player.setState(.playing)
    }

    // MARK: A turn of the loop

    /// One turn: a stop, the position and a seek first, then every buffered unit converted,
    /// processed and queued for the output, then more input. False when the track is done.
    func runTurn() throws -> Bool {
        if player.isStopRequested {
            leaveOnStop()
            return false
        }
        reportProgress()
        try applyPendingSeek()
        try choosePassThrough()
        try convertBuffered()
        endBatch()
        if position >= keepUntil || streamEnded { return false }
        try readInput()
        return true
    }

    /// Stopped: a queue's track (left with n/p/q) drops what it queued and the shared output
    /// stays; a player of its own stops its output at once.
    private func leaveOnStop() {
        if player.queueHooks != nil {
            crossfade?.reset()
            outputLoop.discardQueued()
        } else {
            outputLoop.abort()
        }
    }

    /// Publishes the position heard, and tells a queue once the track's end is near.
    private func reportProgress() {
        // Until the output reaches this track (a queue's track decoded while the one before
        // still plays), it is heard at its start.
        let heard = outputLoop.heardSerial != serial || !outputStarted ? Double(startFrame) / Double(sampleRate)
            : (Double(outputLoop.timelineStart)
               + positionMap.source(atOutput: outputLoop.playedSinceFlushFrames)) / Double(sampleRate)
        if !nearEndSignalled, isNearEnd {
            nearEndSignalled = true
            player.queueHooks?.onNearEnd()
        }
        player.publish(position: heard)
    }

    /// The source has delivered its last byte, or less than `nearEndSeconds` are left to decode.
    private var isNearEnd: Bool {
        let near = Int(Player.nearEndSeconds) * sampleRate
        return player.throttle.sourceEnded || keepUntil != Int.max && keepUntil - position < near
            || plan.trimmedLength.map({ plan.trimStart + $0 - position < near }) == true
    }

    /// Process stage, decided per batch: once the output has started and nothing changes the
    /// samples, those after what is pending go straight into the ring (the anchor for this
    /// batch is recorded in `endBatch`). Passed through and not held back, the decoder writes
    /// into the ring's free space and `pushToRing` then only publishes what it wrote.
    private func choosePassThrough() throws {
        if outputStarted {
            applyControls()
            passThrough = dsp.isBypassed && gain.isIdentity
            if passThrough { try emit(&pending) }
        }
        converter.destination = passThrough && holdback.capacity == 0 && crossfade == nil ? ringSpace : nil
    }

    /// Convert stage: every whole unit buffered, through the holdback into the window; full
    /// blocks go on to the DSP chain and the output.
    private func convertBuffered() throws {
        while try converter.convertNext(isComplete: streamEnded, { samples in
            holdback.push(samples, release: keepInWindow)
        }) {
            // A chained Ogg radio stream's next link may come within one batch (a burst holds
            // several): its title counts from where its samples start, not the batch's end.
            if live != nil { applyOggTitle() }
            try emitFullBlocks()
            if position >= keepUntil { break }
        }
    }

    /// The batch is queued: the pass-through anchor, the output's inline drain, live titles.
    private func endBatch() {
        if passThrough {
            positionMap.record(output: outputFramesOut, source: Double(sourceFramesIn), slope: 1)
            passThrough = false
        }
        outputLoop.batchEnded()
        // Titles whose place in the stream has been read (the probe may have read it).
        if live != nil {
            player.applyTitles(through: player.throttle.availableRange.lowerBound, position: Double(position) / Double(sampleRate))
            applyOggTitle()
        }
    }

    /// A chained Ogg radio stream carries its titles in each link's comment header (only
    /// changes count).
    private func applyOggTitle() {
        if let title = converter.streamTitle {
            player.applyStreamTitle(title, position: Double(position) / Double(sampleRate), from: "ogg")
        }
    }

    /// Reads the next input from the throttle into the converter (an end is converted on the
    /// next turn, which then ends the loop).
    private func readInput() throws {
        switch player.throttle.read(into: &input, max: 64 * 1024, timeout: 0.05) {
        case .filled:
            converter.append(input)
            player.continuation.yield(.buffer(fill: player.throttle.fill, capacity: player.throttle.capacity))
        case .end:
            streamEnded = true
        case .failed(let error):
            throw PlaybackError(sourceFailure: error)
        case .timedOut:
            break
        }
    }

    // MARK: Samples into the window

    /// Samples leaving the holdback, in stream order: those inside the window go straight
    /// into the ring when nothing would change them (the chain bypassed, unity volume), else
    /// they fill fixed-size blocks, and a full block goes down the chain.
    private func keepInWindow(_ samples: UnsafeBufferPointer<Float>) {
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

    private func emitFullBlocks() throws {
        for var block in fullBlocks { try emit(&block) }
        fullBlocks.removeAll(keepingCapacity: true)
    }

    // MARK: Process and output

    /// Output stage: a block through the DSP chain, the volume and into the ring. The first
    /// one opens the output (or marks this track's start in a shared one).
    private func emit(_ buffer: inout [Float]) throws {
        guard !buffer.isEmpty else { return }
        if !outputStarted { try beginOutput(firstFrames: buffer.count / channels) }
        applyControls()
        sourceFramesIn += buffer.count / channels
        dsp.process(&buffer)
        try write(&buffer)
    }

    private func beginOutput(firstFrames: Int) throws {
        player.log("converter", "first PCM buffer: \(firstFrames) frames")
        player.log("output", "opening \(type(of: player.output)) for \(outputFormat)")
        if outputFormat.sampleRate != sampleRate {
            player.log("dsp", "resampling \(sampleRate) Hz → \(outputFormat.sampleRate) Hz (libsoxr)")
        }
        crossfade?.begin(format: outputFormat, play: pushRaw)
        try outputLoop.beginTrack(serial: serial, format: outputFormat, timelineStart: startFrame)
        outputStarted = true
        player.setState(.playing)
    }

    /// Volume, then the ring; records where the written audio sits in source time.
    private func write(_ buffer: inout [Float]) throws {
        guard !buffer.isEmpty else { return }
        let outChannels = outputFormat.channels
        outputFramesOut += buffer.count / outChannels
        positionMap.record(output: outputFramesOut, source: Double(sourceFramesIn) - dsp.latencySourceFrames,
                           slope: dsp.sourceFramesPerOutputFrame)
        gain.process(&buffer, channels: outChannels)
        buffer.withUnsafeBufferPointer { pushToRing($0) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Into the ring, through the crossfade when a queue has one.
    private func pushToRing(_ samples: UnsafeBufferPointer<Float>) {
        if let crossfade { crossfade.push(samples, play: pushRaw) } else { pushRaw(samples) }
    }

    /// Copies `samples` into the ring, waiting for space (not past a stop or a seek).
    private func pushRaw(_ samples: UnsafeBufferPointer<Float>) {
        var offset = 0
        while offset < samples.count {
            let written = ring.write(UnsafeBufferPointer(rebasing: samples[offset...]))
            offset += written
            player.framesPushed += written / outputFormat.channels
            if written == 0 {
                if player.isStopOrSeekPending || outputLoop.hasStopped { break }
                outputLoop.waitForRoom(samples.count - offset)
            }
        }
    }

    /// Takes the DSP and volume settings asked for since the last call.
    private func applyControls() {
        if let change = player.takeDSPChange() {
            dsp.set(rate: change.rate)
            dsp.set(semitones: change.semitones)
            dsp.set(eq: change.eq)
            player.continuation.yield(.dsp(rate: change.rate, semitones: change.semitones, eq: change.eq.description))
        }
        if let volume = player.takePendingVolume() { gain.set(volume) }
    }

    // MARK: The end

    /// After the last turn: a stream cut short plays what it holds, the last partial block
    /// and the chain's tail go out, and a crossfade keeps this track's end for the next one.
    func finish() throws {
        try releaseTruncatedEnd()
        if let report = converter.damageReport { player.warn(report) }
        try emit(&pending)
        // A track whose gapless trim leaves no sample (mutagen's 552-byte lame397v9short.mp3)
        // still opens the output: a WAV file is written with its format and no frames, as
        // mpg123 -w writes it, rather than no file at all.
        if !outputStarted && streamEnded && !player.isStopRequested { try beginOutput(firstFrames: 0) }
        if outputStarted && !player.isStopRequested {
            var tail: [Float] = []
            dsp.flush(into: &tail)
            try write(&tail)
            crossfade?.endTrack(play: pushRaw)
        }
        player.log("throttle", "peak fill \(player.throttle.peakFill) of \(player.throttle.capacity) bytes; "
                   + "transfer paused \(player.control.pauses) times")
    }

    /// The header's frame count is a hint: a stream that holds fewer frames was cut short, so
    /// its end is no padding and every decoded sample plays (as mpg123 does), with a warning.
    private func releaseTruncatedEnd() throws {
        let decodedSamples = position + holdback.count / channels
        guard let expected = plan.totalUnits, streamEnded, !player.isStopRequested, decodedSamples < expected * plan.samplesPerUnit
        else { return }
        if decodedSamples == 0 {
            throw PlaybackError(message: "parser: stream ended before its first whole frame (\(expected) frames promised)",
                                exitCode: 1)
        }
        holdback.releaseAll(keepInWindow)
        try emitFullBlocks()
        player.warn("parser: stream ended after \(decodedSamples / plan.samplesPerUnit) of \(expected) frames "
                    + "(truncated file or wrong Xing header); played what it holds")
    }
}
