import StreamShared
import StreamAudio

/// The player's DSP chain: ReplayGain → rate/pitch → EQ (with limiter) → resampling to the output rate, an
/// ordered list of `AudioProcessor`s over interleaved float PCM. At rate 1, pitch 0, a flat EQ
/// and equal rates every stage is bypassed and buffers pass untouched (bit-exact). A change that
/// switches a stage in or out ramps the output down over 10 ms, switches, and ramps back up,
/// so it never clicks; changes within an active stage are seamless on their own.
public final class DSPChain {
    /// The track's ReplayGain, first so the EQ's limiter sees the level that is played.
    public let replayGain = ReplayGainStage()
    public let timePitch: TimePitch
    public let equalizer: Equalizer
    public let resampler: SoxrResampler
    /// The stages in order.
    public var stages: [any AudioProcessor] { [replayGain, timePitch, equalizer, resampler] }
    public private(set) var inputFormat = AudioFormat(sampleRate: 44_100, channels: 2)
    public private(set) var outputFormat = AudioFormat(sampleRate: 44_100, channels: 2)

    private var pendingRate: Double?
    private var pendingSemitones: Double?
    private var pendingEQ: EQSettings?
    /// Frames of fade-in still to apply, and the ramp length (10 ms at the output rate).
    private var fadeIn = 0
    private var rampFrames = 441

    public init(rate: Double = 1, semitones: Double = 0, eq: EQSettings = .flat, outputRate: Int? = nil,
                engine: TimePitch.Engine = .wsola) {
        timePitch = TimePitch(engine: engine, rate: rate, semitones: semitones)
        equalizer = Equalizer(eq)
        resampler = SoxrResampler(outputRate: outputRate)
    }

    /// Prepares every stage for `input` (again for a new track: a new rate rebuilds the
    /// resampler) and returns the format the chain puts out.
    @discardableResult
    public func configure(input: AudioFormat) throws -> AudioFormat {
        inputFormat = input
        var format = input
        for stage in stages { format = try stage.configure(input: format) }
        outputFormat = format
        rampFrames = max(1, format.sampleRate / 100)
        fadeIn = 0
        return format
    }

    public var rate: Double { pendingRate ?? timePitch.rate }
    public var semitones: Double { pendingSemitones ?? timePitch.semitones }
    public var eq: EQSettings { pendingEQ ?? equalizer.settings }

    /// Asks for a new rate (0.1...16), applied at the next buffer.
    public func set(rate: Double) { pendingRate = min(16, max(0.1, rate)) }
    /// Asks for a new pitch shift in semitones (-12...12), applied at the next buffer.
    public func set(semitones: Double) { pendingSemitones = min(12, max(-12, semitones)) }
    /// Asks for a new EQ setting, applied at the next buffer.
    public func set(eq: EQSettings) { pendingEQ = eq }

    // The per-buffer questions below name the three stages one by one: `stages` builds an
    // array of existentials, an allocation each time, and they are asked for every buffer.

    /// Every stage passes samples through and no ramp is running.
    public var isBypassed: Bool {
        pendingRate == nil && pendingSemitones == nil && pendingEQ == nil && fadeIn == 0
            && replayGain.isBypassed && timePitch.isBypassed && equalizer.isBypassed && resampler.isBypassed
    }

    /// Source frames per output frame (the playback rate, with the resampling ratio).
    public var sourceFramesPerOutputFrame: Double {
        1.0 / timePitch.frameRatio / equalizer.frameRatio / resampler.frameRatio
    }

    /// Frames held inside the chain, in source frames: where the last output frame sits
    /// behind the last input frame.
    public var latencySourceFrames: Double {
        var ratio = 1.0, total = 0.0
        func add(_ stage: some AudioProcessor) {
            guard !stage.isBypassed else { return }
            total += Double(stage.latencyFrames) / ratio
            ratio *= stage.frameRatio
        }
        add(timePitch)
        add(equalizer)
        add(resampler)
        return total
    }

    /// Runs `buffer` through the chain, replacing it with the output.
    public func process(_ buffer: inout [Float]) {
        if isBypassed { return }
        if switchesStage() {
            // Finish with the old settings, ramping down over the last 10 ms, then switch.
            run(&buffer)
            let channels = outputFormat.channels
            let frames = buffer.count / channels
            let ramp = min(rampFrames, frames)
            for f in 0..<ramp {
                let g = Float(ramp - 1 - f) / Float(ramp)
                for c in 0..<channels { buffer[(frames - ramp + f) * channels + c] *= g }
            }
            applyPending()
            // What the stages still hold belongs to the old settings (and was ramped away):
            // every stage starts clean, so nothing old follows the ramp back up.
            for stage in stages { stage.reset() }
            fadeIn = rampFrames
            return
        }
        applyPending()
        run(&buffer)
        if fadeIn > 0 {
            let channels = outputFormat.channels
            let frames = buffer.count / channels
            var f = 0
            while f < frames, fadeIn > 0 {
                let g = Float(rampFrames - fadeIn) / Float(rampFrames)
                for c in 0..<channels { buffer[f * channels + c] *= g }
                fadeIn -= 1
                f += 1
            }
        }
    }

    /// End of stream: appends what the stages still hold.
    public func flush(into buffer: inout [Float]) {
        applyPending()
        var tail: [Float] = []
        for stage in stages where !stage.isBypassed {
            stage.process(&tail)
            stage.flush(into: &tail)
        }
        buffer.append(contentsOf: tail)
    }

    /// A seek: drops held samples and filter state.
    public func reset() {
        applyPending()
        for stage in stages { stage.reset() }
        fadeIn = 0
    }

    private func run(_ buffer: inout [Float]) {
        if !replayGain.isBypassed { replayGain.process(&buffer) }
        if !timePitch.isBypassed { timePitch.process(&buffer) }
        if !equalizer.isBypassed { equalizer.process(&buffer) }
        if !resampler.isBypassed { resampler.process(&buffer) }
    }

    /// Whether the pending settings switch a stage in or out.
    private func switchesStage() -> Bool {
        let r = pendingRate ?? timePitch.rate, s = pendingSemitones ?? timePitch.semitones
        let eq = pendingEQ ?? equalizer.settings
        let timeBypassed = r == 1 && s == 0
        return timeBypassed != timePitch.isBypassed || eq.isFlat != equalizer.settings.isFlat
    }

    private func applyPending() {
        if pendingRate != nil || pendingSemitones != nil {
            timePitch.set(rate: pendingRate ?? timePitch.rate, semitones: pendingSemitones ?? timePitch.semitones)
        }
        if let eq = pendingEQ { equalizer.set(eq) }
        pendingRate = nil
        pendingSemitones = nil
        pendingEQ = nil
    }
}
