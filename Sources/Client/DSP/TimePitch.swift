#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StreamShared
import StreamAudio

/// Playback rate (0.1-16×, pitch kept) and pitch shift (±12 semitones, tempo kept) as one stage:
/// a time stretcher at speed rate / p, then band-limited resampling by p = 2^(semitones/12).
/// Bypassed at rate 1 and pitch 0. Rate and pitch changes between active settings take effect
/// at the next window, without a discontinuity.
public final class TimePitch: AudioProcessor {
    /// Which time stretcher to build (the engines compared in docs/DSP.md).
    public enum Engine: String, Sendable, CaseIterable {
        case wsola, sonic
    }

    public static let rateRange = 0.1...16.0
    public static let semitoneRange = -12.0...12.0

    public private(set) var rate: Double
    public private(set) var semitones: Double
    private let makeStretcher: (AudioFormat) throws -> any TimeStretcher
    private var stretcher: (any TimeStretcher)?
    private var interpolator: SincInterpolator?
    private var channels = 2
    /// Output frames the input so far should give (input / rate), and those given.
    private var expected = 0.0
    private var produced = 0
    private var scratch: [Float] = []
    /// Output not yet given out (it would run ahead of input / rate).
    private var held: [Float] = []

    /// A stage with one of the built-in engines.
    public convenience init(engine: Engine = .wsola, rate: Double = 1, semitones: Double = 0) {
        self.init(rate: rate, semitones: semitones) { format in
            switch engine {
            case .wsola: return WSOLAStretcher(sampleRate: format.sampleRate, channels: format.channels)
            case .sonic: return try SonicStretcher(sampleRate: format.sampleRate, channels: format.channels)
            }
        }
    }

    /// A stage around any stretcher (the bench passes librubberband's here).
    public init(rate: Double = 1, semitones: Double = 0, makeStretcher: @escaping (AudioFormat) throws -> any TimeStretcher) {
        self.rate = min(Self.rateRange.upperBound, max(Self.rateRange.lowerBound, rate))
        self.semitones = min(Self.semitoneRange.upperBound, max(Self.semitoneRange.lowerBound, semitones))
        self.makeStretcher = makeStretcher
    }

    public func configure(input: AudioFormat) throws -> AudioFormat {
        channels = input.channels
        format = input
        stretcher = nil
        interpolator = nil
        // The engines (a windowed-sinc table, the stretcher's buffers) are built when the stage is
        // first needed: a queue configures a chain per track, and most play at rate 1, pitch 0.
        if !isBypassed { try buildEngines() }
        apply()
        reset()
        return input
    }

    /// The format `configure` gave, for engines built later.
    private var format: AudioFormat?

    private func buildEngines() throws {
        guard stretcher == nil, let format else { return }
        stretcher = try makeStretcher(format)
        interpolator = SincInterpolator(channels: format.channels, ratio: pitchRatio)
    }

    public var isBypassed: Bool { rate == 1 && semitones == 0 }
    /// Frequency factor of the pitch shift.
    public var pitchRatio: Double { pow(2, semitones / 12) }
    public var frameRatio: Double { 1 / rate }
    public var latencyFrames: Int {
        guard !isBypassed, let stretcher else { return 0 }
        return stretcher.latencyFrames + Int(Double(interpolator?.latencyFrames ?? 0) * rate / pitchRatio)
            + Int(Double(held.count / channels) * rate)
    }

    /// Changes rate and pitch (clamped to their ranges); takes effect at the next window.
    public func set(rate newRate: Double, semitones newSemitones: Double) {
        rate = min(Self.rateRange.upperBound, max(Self.rateRange.lowerBound, newRate))
        semitones = min(Self.semitoneRange.upperBound, max(Self.semitoneRange.lowerBound, newSemitones))
        if !isBypassed && stretcher == nil {
            // An engine that cannot be made (libsonic failing) leaves the stage passing samples through.
            try? buildEngines()
            reset()
        }
        apply()
    }

    private func apply() {
        stretcher?.speed = rate / pitchRatio
        interpolator?.ratio = pitchRatio
    }

    public func process(_ buffer: inout [Float]) {
        guard !isBypassed, let stretcher else { return }
        expected += Double(buffer.count / channels) / rate
        scratch.removeAll(keepingCapacity: true)
        buffer.withUnsafeBufferPointer { stretcher.process($0, into: &scratch) }
        // Always through the interpolator (a plain copy at pitch 0) so a pitch change later
        // finds its history in place.
        if let interpolator {
            scratch.withUnsafeBufferPointer { interpolator.process($0, into: &held) }
        } else {
            held.append(contentsOf: scratch)
        }
        // Never ahead of input / rate: a window can stand for input not all of which arrived
        // yet (at 16× one 20 ms window covers 320 ms); the surplus waits for the next buffer.
        let give = max(0, min(held.count / channels, Int(expected) - produced))
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: held[0..<(give * channels)])
        held.removeFirst(give * channels)
        produced += give
    }

    public func flush(into buffer: inout [Float]) {
        guard !isBypassed, let stretcher else { return }
        scratch.removeAll(keepingCapacity: true)
        stretcher.flush(into: &scratch)
        if let interpolator {
            scratch.withUnsafeBufferPointer { interpolator.process($0, into: &held) }
            interpolator.flush(into: &held)
        } else {
            held.append(contentsOf: scratch)
        }
        // Exactly input / rate frames in all: trim what the engines' padding added, or pad.
        let missing = max(0, Int(expected.rounded()) - produced)
        let take = min(missing * channels, held.count)
        buffer.append(contentsOf: held[0..<take])
        buffer.append(contentsOf: repeatElement(0, count: missing * channels - take))
        held.removeAll(keepingCapacity: true)
        produced += missing
    }

    public func reset() {
        stretcher?.reset()
        interpolator?.reset()
        expected = 0
        produced = 0
        held.removeAll(keepingCapacity: true)
    }
}
