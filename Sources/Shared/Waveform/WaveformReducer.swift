/// Reduces decoded samples to the waveform's base resolution: one min/max pair per
/// `pairFrames` frames, the peak over all channels, on the 16-bit scale (-32768...32767).
///
/// Samples are floats as the decoders give them (full scale ±1.0): 16-bit sources come back
/// exact (s / 32768 · 32768), 24-bit and float ones are rounded to the nearest 16-bit step and
/// clamped. NaN samples are left out of the peak (a pair of nothing but NaN is 0, 0).
public struct WaveformReducer: Sendable {
    /// Frames of the base pair: what `WaveformPyramid` takes as its raw input.
    public static let pairFrames = 256

    /// Frames taken in so far.
    public private(set) var frames = 0
    /// The extremes of the pair being filled, and how many frames it holds.
    private var low = Float.infinity
    private var high = -Float.infinity
    private var filled = 0

    public init() {}

    /// Takes interleaved samples of `channels` channels (a trailing partial frame is ignored)
    /// and appends each pair they complete to `pairs` as min, max.
    public mutating func add(_ samples: UnsafeBufferPointer<Float>, channels: Int, into pairs: inout [Int16]) {
        let channels = max(1, channels)
        let total = samples.count / channels
        guard total > 0, let base = samples.baseAddress else { return }
        var frame = 0
        while frame < total {
            let take = min(total - frame, Self.pairFrames - filled)
            let (lo, hi) = Self.extremes(base + frame * channels, count: take * channels)
            if lo < low { low = lo }
            if hi > high { high = hi }
            filled += take
            frame += take
            if filled == Self.pairFrames { emit(into: &pairs) }
        }
        frames += total
    }

    /// Appends the last, partial pair (when frames are left over) to `pairs`.
    public mutating func finish(into pairs: inout [Int16]) {
        if filled > 0 { emit(into: &pairs) }
    }

    private mutating func emit(into pairs: inout [Int16]) {
        if low <= high {
            pairs.append(Self.level(low))
            pairs.append(Self.level(high))
        } else {
            pairs.append(0)
            pairs.append(0)
        }
        low = .infinity
        high = -.infinity
        filled = 0
    }

    /// The smallest and largest of `count` floats; NaN never wins a comparison, so it is left
    /// out. Four lanes side by side, which the compiler turns into vector min/max.
    static func extremes(_ start: UnsafePointer<Float>, count: Int) -> (Float, Float) {
        var lo = (Float.infinity, Float.infinity, Float.infinity, Float.infinity)
        var hi = (-Float.infinity, -Float.infinity, -Float.infinity, -Float.infinity)
        var i = 0
        while i + 4 <= count {
            let a = start[i], b = start[i + 1], c = start[i + 2], d = start[i + 3]
            lo.0 = a < lo.0 ? a : lo.0
            lo.1 = b < lo.1 ? b : lo.1
            lo.2 = c < lo.2 ? c : lo.2
            lo.3 = d < lo.3 ? d : lo.3
            hi.0 = a > hi.0 ? a : hi.0
            hi.1 = b > hi.1 ? b : hi.1
            hi.2 = c > hi.2 ? c : hi.2
            hi.3 = d > hi.3 ? d : hi.3
            i += 4
        }
        while i < count {
            let x = start[i]
            lo.0 = x < lo.0 ? x : lo.0
            hi.0 = x > hi.0 ? x : hi.0
            i += 1
        }
        let low = min(min(lo.0, lo.1), min(lo.2, lo.3))
        let high = max(max(hi.0, hi.1), max(hi.2, hi.3))
        return (low, high)
    }

    /// A float sample on the 16-bit scale, rounded to the nearest step and clamped; infinities
    /// clamp, and NaN (never passed here) would be 0.
    public static func level(_ sample: Float) -> Int16 {
        let scaled = (sample * 32768).rounded()
        guard scaled == scaled else { return 0 }
        if scaled <= -32768 { return -32768 }
        if scaled >= 32767 { return 32767 }
        return Int16(scaled)
    }
}
