#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StreamShared
import StreamAudio

/// A second-order IIR section with RBJ Audio EQ Cookbook coefficients (normalised by a0),
/// run in Double so low bands at high rates keep their precision.
struct Biquad {
    var b0 = 1.0, b1 = 0.0, b2 = 0.0, a1 = 0.0, a2 = 0.0

    init(_ band: EQSettings.Band, sampleRate: Int) {
        let a = pow(10, band.gainDB / 40)
        let w0 = 2 * Double.pi * band.frequency / Double(sampleRate)
        let cosw = cos(w0)
        let alpha = sin(w0) / (2 * band.q)
        var (nb0, nb1, nb2, na0, na1, na2): (Double, Double, Double, Double, Double, Double)
        switch band.kind {
        case .peaking:
            (nb0, nb1, nb2) = (1 + alpha * a, -2 * cosw, 1 - alpha * a)
            (na0, na1, na2) = (1 + alpha / a, -2 * cosw, 1 - alpha / a)
        case .lowShelf:
            let s = 2 * a.squareRoot() * alpha
            (nb0, nb1, nb2) = (a * ((a + 1) - (a - 1) * cosw + s), 2 * a * ((a - 1) - (a + 1) * cosw), a * ((a + 1) - (a - 1) * cosw - s))
            (na0, na1, na2) = ((a + 1) + (a - 1) * cosw + s, -2 * ((a - 1) + (a + 1) * cosw), (a + 1) + (a - 1) * cosw - s)
        case .highShelf:
            let s = 2 * a.squareRoot() * alpha
            (nb0, nb1, nb2) = (a * ((a + 1) + (a - 1) * cosw + s), -2 * a * ((a - 1) + (a + 1) * cosw), a * ((a + 1) + (a - 1) * cosw - s))
            (na0, na1, na2) = ((a + 1) - (a - 1) * cosw + s, 2 * ((a - 1) - (a + 1) * cosw), (a + 1) - (a - 1) * cosw - s)
        }
        b0 = nb0 / na0; b1 = nb1 / na0; b2 = nb2 / na0; a1 = na1 / na0; a2 = na2 / na0
    }
}

/// The bands of one EQ setting at one rate, with per-channel state (transposed direct form II).
struct BiquadBank {
    var sections: [Biquad]
    var preamp: Float
    /// Two state values per section per channel.
    var state: [Double]
    let channels: Int

    init(_ settings: EQSettings, sampleRate: Int, channels: Int) {
        // Bands at or above 0.45·rate cannot be realised by a biquad below Nyquist: left out.
        sections = settings.bands.filter { $0.gainDB != 0 && $0.frequency < 0.45 * Double(sampleRate) }
            .map { Biquad($0, sampleRate: sampleRate) }
        preamp = Float(pow(10, settings.preampDB / 20))
        self.channels = channels
        state = [Double](repeating: 0, count: sections.count * channels * 2)
    }

    /// Keeps the filter memory of `other` where the band layout matches, so a setting change
    /// does not restart the filters from silence.
    mutating func adoptState(of other: BiquadBank) {
        if other.state.count == state.count { state = other.state }
    }

    mutating func process(_ samples: UnsafeMutableBufferPointer<Float>) {
        let frames = samples.count / channels
        if preamp != 1 { for i in 0..<samples.count { samples[i] *= preamp } }
        state.withUnsafeMutableBufferPointer { z in
            for (s, q) in sections.enumerated() {
                for c in 0..<channels {
                    let k = (s * channels + c) * 2
                    var z1 = z[k], z2 = z[k + 1]
                    var i = c
                    for _ in 0..<frames {
                        let x = Double(samples[i])
                        let y = q.b0 * x + z1
                        z1 = q.b1 * x - q.a1 * y + z2
                        z2 = q.b2 * x - q.a2 * y
                        samples[i] = Float(y)
                        i += channels
                    }
                    // Denormals and silence: let decayed state go to zero exactly.
                    z[k] = abs(z1) < 1e-30 ? 0 : z1
                    z[k + 1] = abs(z2) < 1e-30 ? 0 : z2
                }
            }
        }
    }
}

/// The EQ stage: preamp and biquad bands, then a look-ahead limiter so boosts never clip.
/// A flat setting bypasses it (bit-exact); a change between non-flat settings runs the old and
/// new filters side by side for 20 ms and cross-fades, so there is no click.
public final class Equalizer: AudioProcessor {
    public private(set) var settings: EQSettings
    private var format = AudioFormat(sampleRate: 44_100, channels: 2)
    private var bank: BiquadBank
    private var fadingOut: BiquadBank?
    private var fadePosition = 0
    private var fadeFrames = 882
    private var limiter: Limiter
    private var scratch: [Float] = []

    public init(_ settings: EQSettings = .flat) {
        self.settings = settings
        bank = BiquadBank(settings, sampleRate: 44_100, channels: 2)
        limiter = Limiter(sampleRate: 44_100, channels: 2)
    }

    public func configure(input: AudioFormat) throws -> AudioFormat {
        format = input
        bank = BiquadBank(settings, sampleRate: input.sampleRate, channels: input.channels)
        fadingOut = nil
        fadeFrames = max(1, input.sampleRate / 50)
        limiter = Limiter(sampleRate: input.sampleRate, channels: input.channels)
        return input
    }

    public var isBypassed: Bool { settings.isFlat && fadingOut == nil }
    public var latencyFrames: Int { isBypassed ? 0 : limiter.lookahead }
    public var frameRatio: Double { 1 }

    /// Changes the setting; the next 20 ms cross-fade from the old filters to the new ones.
    public func set(_ new: EQSettings) {
        guard new != settings else { return }
        var next = BiquadBank(new, sampleRate: format.sampleRate, channels: format.channels)
        next.adoptState(of: bank)
        // Between two active settings: cross-fade. Switching in or out: the chain ramps.
        if !settings.isFlat && !new.isFlat {
            fadingOut = bank
            fadePosition = 0
        }
        bank = next
        settings = new
    }

    public func process(_ buffer: inout [Float]) {
        guard !isBypassed, !buffer.isEmpty else { return }
        let channels = format.channels
        if var old = fadingOut {
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: buffer)
            scratch.withUnsafeMutableBufferPointer { old.process($0) }
            buffer.withUnsafeMutableBufferPointer { bank.process($0) }
            let frames = buffer.count / channels
            for f in 0..<frames where fadePosition + f < fadeFrames {
                let g = Float(fadePosition + f) / Float(fadeFrames)
                for c in 0..<channels {
                    let i = f * channels + c
                    buffer[i] = scratch[i] + (buffer[i] - scratch[i]) * g
                }
            }
            fadePosition += frames
            fadingOut = fadePosition >= fadeFrames ? nil : old
        } else {
            buffer.withUnsafeMutableBufferPointer { bank.process($0) }
        }
        limiter.process(&buffer)
    }

    public func flush(into buffer: inout [Float]) {
        guard latencyFrames > 0 else { return }
        limiter.flush(into: &buffer)
    }

    public func reset() {
        bank = BiquadBank(settings, sampleRate: format.sampleRate, channels: format.channels)
        fadingOut = nil
        limiter.reset()
    }
}

/// A look-ahead peak limiter with a hard ceiling: the gain reaches what a peak needs before the
/// peak leaves the delay line (minimum over the look-ahead, then a moving average of the same
/// length, which can only be lower), and recovers over about 100 ms. Transparent (gain exactly
/// 1) while the signal stays below the ceiling.
struct Limiter {
    /// -0.1 dBFS.
    static let ceiling: Float = 0.988_553
    let lookahead: Int
    private let channels: Int
    private let sampleRate: Int
    private let release: Double
    /// Delay line of `lookahead` frames (interleaved), circular.
    private var delay: [Float]
    private var delayIndex = 0
    /// Monotonic queue for the sliding minimum of the needed gain: (frame number, gain).
    private var minQueue: [(Int, Double)] = []
    private var minHead = 0
    /// The last `lookahead` held gains and their sum (the moving average).
    private var held: [Double]
    private var heldIndex = 0
    private var heldSum: Double
    private var released = 1.0
    private var frame = 0

    init(sampleRate: Int, channels: Int) {
        lookahead = max(8, sampleRate * 3 / 2000)     // 1.5 ms
        self.channels = channels
        self.sampleRate = sampleRate
        release = 1 - exp(-1 / (0.1 * Double(sampleRate)))
        delay = [Float](repeating: 0, count: lookahead * channels)
        held = [Double](repeating: 1, count: lookahead)
        heldSum = Double(lookahead)
        minQueue.reserveCapacity(lookahead + 2)
    }

    mutating func reset() { self = Limiter(sampleRate: sampleRate, channels: channels) }

    /// Limits `buffer` in place; the first `lookahead` frames after a reset only fill the
    /// delay line, so the buffer comes back that much shorter once (the flush gives it back).
    mutating func process(_ buffer: inout [Float]) {
        let frames = buffer.count / channels
        let ceiling = Self.ceiling
        var written = 0
        for f in 0..<frames {
            var peak: Float = 0
            for c in 0..<channels { peak = max(peak, abs(buffer[f * channels + c])) }
            let need = peak > ceiling ? Double(ceiling / peak) : 1
            // Sliding minimum over the last lookahead + 1 frames.
            while minQueue.count > minHead, minQueue[minQueue.count - 1].1 >= need { minQueue.removeLast() }
            minQueue.append((frame, need))
            while minQueue[minHead].0 < frame - lookahead { minHead += 1 }
            if minHead > 64 { minQueue.removeFirst(minHead); minHead = 0 }
            let hold = minQueue[minHead].1
            released = min(hold, released + (1 - released) * release)
            heldSum += released - held[heldIndex]
            held[heldIndex] = released
            heldIndex = heldIndex + 1 == lookahead ? 0 : heldIndex + 1
            let gain = Float(min(1, heldSum / Double(lookahead)))
            // Out goes the frame from `lookahead` frames ago, in comes this one.
            let primed = frame >= lookahead
            for c in 0..<channels {
                let d = delayIndex * channels + c
                let out = delay[d] * gain
                delay[d] = buffer[f * channels + c]
                if primed { buffer[written * channels + c] = max(-ceiling, min(ceiling, out)) }
            }
            if primed { written += 1 }
            delayIndex = delayIndex + 1 == lookahead ? 0 : delayIndex + 1
            frame += 1
        }
        buffer.removeLast((frames - written) * channels)
    }

    /// Pushes silence through to get the delayed tail out.
    mutating func flush(into buffer: inout [Float]) {
        var silence = [Float](repeating: 0, count: lookahead * channels)
        process(&silence)
        buffer.append(contentsOf: silence)
    }
}
