import StreamShared

/// Volume with 20 ms linear ramps on every change (volume, pause, resume, seek), so there are
/// no clicks, and a soft-clip guard for gains above 1. At unity gain with no ramp pending
/// the samples pass through untouched (bit-exact).
struct Gain {
    private(set) var current: Float = 1
    private var target: Float = 1
    private var step: Float = 0
    private var rampFrames = 0
    var sampleRate: Int = 44_100

    init(volume: Float) {
        current = volume
        target = volume
    }

    var isIdentity: Bool { current == 1 && target == 1 && rampFrames == 0 }

    /// Ramps to `volume` over 20 ms.
    mutating func set(_ volume: Float) {
        target = volume
        rampFrames = max(1, sampleRate / 50)
        step = (target - current) / Float(rampFrames)
    }

    /// Jumps without a ramp (before the first sample plays).
    mutating func jump(to volume: Float) {
        current = volume
        target = volume
        rampFrames = 0
    }

    mutating func process(_ samples: inout [Float], channels: Int) {
        if isIdentity { return }
        samples.withUnsafeMutableBufferPointer { process($0, channels: channels) }
    }

    /// Applies the gain in place to interleaved samples.
    mutating func process(_ samples: UnsafeMutableBufferPointer<Float>, channels: Int) {
        if isIdentity { return }
        let frames = samples.count / max(1, channels)
        var index = 0
        for _ in 0..<frames {
            if rampFrames > 0 {
                current += step
                rampFrames -= 1
                if rampFrames == 0 { current = target }
            }
            for _ in 0..<channels {
                var x = samples[index] * current
                if current > 1 {
                    // Soft clip above -3 dBFS so boosts never wrap or hard-clip.
                    let knee: Float = 0.707
                    if x > knee { x = knee + (1 - knee) * tanhApprox((x - knee) / (1 - knee)) }
                    else if x < -knee { x = -knee - (1 - knee) * tanhApprox((-x - knee) / (1 - knee)) }
                }
                samples[index] = x
                index += 1
            }
        }
    }

    /// A cheap tanh for the clip guard (exact enough for a limiter, always within -1...1).
    private func tanhApprox(_ x: Float) -> Float {
        let x2 = x * x
        return min(1, max(-1, x * (27 + x2) / (27 + 9 * x2)))
    }
}
