import StreamShared
import StreamAudio

/// The ReplayGain stage of the DSP chain: one constant gain per track, set before the track's
/// first sample (so it needs no ramp). Bypassed, bit-exact, at a factor of 1.
public final class ReplayGainStage: AudioProcessor {
    /// The linear factor applied to every sample.
    public private(set) var factor: Float = 1
    private var channels = 2

    public init(factor: Float = 1) {
        self.factor = factor
    }

    /// Sets the factor for the next samples (a new track); values that are not finite or not
    /// positive play at unity rather than silence or noise.
    public func set(factor: Float) {
        self.factor = factor.isFinite && factor > 0 ? factor : 1
    }

    public func configure(input: AudioFormat) throws -> AudioFormat {
        channels = input.channels
        return input
    }

    public var isBypassed: Bool { factor == 1 }

    public func process(_ buffer: inout [Float]) {
        let g = factor
        buffer.withUnsafeMutableBufferPointer { samples in
            for i in samples.indices { samples[i] *= g }
        }
    }

    public func flush(into buffer: inout [Float]) {}
    public func reset() {}
    public var latencyFrames: Int { 0 }
    public var frameRatio: Double { 1 }
}
