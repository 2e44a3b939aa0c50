import Foundation
import Testing
import StreamClient
import StreamShared
import StreamAudio

/// The DSP chain on generated tones: rate, pitch, EQ, limiter, resampler, bypass, live changes.
@Suite struct DSPTests {
    static let rate = 44_100

    @Test(arguments: [0.1, 0.5, 1.5, 2, 4, 16])
    func rate_keepsPitch_andScalesDuration(playbackRate: Double) throws {
        // Enough input for at least 1.5 s out (and 2 s in), so both measures are steady.
        let seconds = max(2, 1.5 * playbackRate)
        let input = Signal.tone(440, seconds: seconds, rate: Self.rate)
        let chain = DSPChain(rate: playbackRate)
        try chain.configure(input: AudioFormat(sampleRate: Self.rate, channels: 2))
        let output = Signal.run(chain, input, channels: 2)
        let expected = Double(input.count / 2) / playbackRate
        let frames = Double(output.count / 2)
        #expect(abs(frames - expected) / expected <= 0.01, "rate \(playbackRate): \(frames) frames, expected \(expected)")
        print("rate \(playbackRate): \(frames) frames for \(expected)")
        for c in 0..<2 {
            let f = Signal.dominantFrequency(Signal.channel(output, c, of: 2), rate: Self.rate)
            print("rate \(playbackRate): channel \(c) at \(f) Hz")
            #expect(abs(f - 440) / 440 <= 0.01, "rate \(playbackRate), channel \(c): dominant \(f) Hz")
        }
    }

    @Test(arguments: [(12.0, 880.0), (-12.0, 220.0), (7.0, 440 * pow(2, 7 / 12.0))])
    func pitch_shiftsFrequency_keepsDuration(semitones: Double, expectedHz: Double) throws {
        let input = Signal.tone(440, seconds: 3, rate: Self.rate)
        let chain = DSPChain(semitones: semitones)
        try chain.configure(input: AudioFormat(sampleRate: Self.rate, channels: 2))
        let output = Signal.run(chain, input, channels: 2)
        let frames = Double(output.count / 2), expected = Double(input.count / 2)
        #expect(abs(frames - expected) / expected <= 0.01, "pitch \(semitones): \(frames) frames, expected \(expected)")
        let f = Signal.dominantFrequency(Signal.channel(output, 0, of: 2), rate: Self.rate)
        print("pitch \(semitones): \(f) Hz, \(frames) frames")
        #expect(abs(f - expectedHz) / expectedHz <= 0.01, "pitch \(semitones): dominant \(f) Hz, expected \(expectedHz)")
    }

    /// Rate and pitch at once, up to the extremes that ask the stretcher for 0.05× and 32×.
    @Test(arguments: [(2.0, -12.0), (0.1, 12.0), (16.0, -12.0)])
    func rateAndPitch_together_areIndependent(playbackRate: Double, semitones: Double) throws {
        let input = Signal.tone(440, seconds: max(2, 1.5 * playbackRate), rate: Self.rate)
        let chain = DSPChain(rate: playbackRate, semitones: semitones)
        try chain.configure(input: AudioFormat(sampleRate: Self.rate, channels: 2))
        let output = Signal.run(chain, input, channels: 2)
        let expected = Double(input.count / 2) / playbackRate
        #expect(abs(Double(output.count / 2) - expected) / expected <= 0.01, "\(output.count / 2) frames for \(expected)")
        let hz = 440 * pow(2, semitones / 12)
        let f = Signal.dominantFrequency(Signal.channel(output, 0, of: 2), rate: Self.rate)
        #expect(abs(f - hz) / hz <= 0.01, "rate \(playbackRate), pitch \(semitones): dominant \(f) Hz, expected \(hz)")
    }

    @Test func neutralSettings_bypassTheChain_bitExact() throws {
        // Noise and a loud tone: anything a stage did would change some bit.
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<(44_100 * 2)).map { _ in Float.random(in: -1...1, using: &generator) }
        let eq = try EQSettings.parse("31:0,1k:0,hs8k:0,preamp:0")
        let chain = DSPChain(rate: 1, semitones: 0, eq: eq, outputRate: Self.rate)
        try chain.configure(input: AudioFormat(sampleRate: Self.rate, channels: 2))
        #expect(chain.isBypassed)
        let output = Signal.run(chain, noise, channels: 2)
        #expect(output == noise)
        // Back to neutral after a change: bypassed again once the ramp is over.
        chain.set(rate: 1.5)
        var block = Array(noise[0..<8192])
        chain.process(&block)
        chain.set(rate: 1)
        for _ in 0..<3 { var b = Array(noise[0..<8192]); chain.process(&b) }
        #expect(chain.isBypassed)
        var after = Array(noise[0..<8192])
        chain.process(&after)
        #expect(after == Array(noise[0..<8192]))
    }

    @Test func eq_boostsItsBand_leavesOthers() throws {
        let eq = try EQSettings.parse("1k:+6")
        for (frequency, expectedDB) in [(1000.0, 6.0), (100.0, 0.0)] {
            let input = Signal.tone(frequency, seconds: 2, rate: Self.rate, amplitude: 0.25)
            let chain = DSPChain(eq: eq)
            try chain.configure(input: AudioFormat(sampleRate: Self.rate, channels: 2))
            let output = Signal.run(chain, input, channels: 2)
            #expect(output.count == input.count)
            let gain = 20 * log10(Signal.steadyRMS(Signal.channel(output, 0, of: 2)) / Signal.steadyRMS(Signal.channel(input, 0, of: 2)))
            print("eq 1k:+6 at \(frequency) Hz: \(gain) dB")
            #expect(abs(gain - expectedDB) <= 0.5, "\(frequency) Hz: \(gain) dB, expected \(expectedDB) ± 0.5")
        }
    }

    @Test func eq_graphicPresetsAndParametricBands_parse() throws {
        #expect(try EQSettings.parse("flat").isFlat)
        let rock = try EQSettings.parse("rock,preamp:-3")
        #expect(rock.bands.count == 10 && rock.preampDB == -3)
        let p = try EQSettings.parse("ls100:+4,hs8k:-3:0.7,2.5kHz:+2:4")
        #expect(p.bands == [EQSettings.Band(.lowShelf, frequency: 100, gainDB: 4, q: 1 / 2.0.squareRoot()),
                            EQSettings.Band(.highShelf, frequency: 8000, gainDB: -3, q: 0.7),
                            EQSettings.Band(frequency: 2500, gainDB: 2, q: 4)])
        for bad in ["", "loud", "1k", "1k:+99", "5:+3", "1k:+3:0", "1k:x", "preamp:1:2"] {
            #expect(throws: DSPError.self, "'\(bad)'") { try EQSettings.parse(bad) }
        }
    }

    @Test func eq_twelveDBBoosts_neverClip() throws {
        let eq = EQSettings.graphic(Array(repeating: 12, count: 10))
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<(44_100 * 2)).map { _ in Float.random(in: -0.99...0.99, using: &generator) }
        let signals: [(String, [Float])] = [
            ("31 Hz", Signal.tone(31, seconds: 2, rate: Self.rate, amplitude: 0.99)),
            ("1 kHz", Signal.tone(1000, seconds: 2, rate: Self.rate, amplitude: 0.99)),
            ("16 kHz", Signal.tone(16000, seconds: 2, rate: Self.rate, amplitude: 0.99)),
            ("noise", noise),
        ]
        for (name, input) in signals {
            let chain = DSPChain(eq: eq)
            try chain.configure(input: AudioFormat(sampleRate: Self.rate, channels: 2))
            let output = Signal.run(chain, input, channels: 2)
            let peak = output.reduce(Float(0)) { max($0, abs($1)) }
            print("eq +12 dB, \(name): peak \(peak)")
            #expect(peak <= 1, "\(name): peak \(peak)")
            #expect(peak > 0.9, "\(name): the limiter should hold the peak near full scale, got \(peak)")
        }
    }

    @Test func resampler_44k1To48k_flatPassband_noAliasing() throws {
        let inRate = 44_100, outRate = 48_000
        // Exponential sweep 10 Hz → 22 kHz over 1.5 s inside 2 s, with 10 ms fades.
        let total = 2 * inRate, length = Int(1.5 * Double(inRate)), start = inRate / 4
        var sweep = [Float](repeating: 0, count: total)
        let (f0, f1) = (10.0, 22_000.0)
        let k = log(f1 / f0)
        let fade = inRate / 100
        for n in 0..<length {
            let t = Double(n) / Double(inRate), T = Double(length) / Double(inRate)
            let phase = 2 * Double.pi * f0 * T / k * (exp(t / T * k) - 1)
            let edge = min(1, Double(min(n, length - 1 - n)) / Double(fade))
            sweep[start + n] = Float(0.5 * sin(phase) * (0.5 - 0.5 * cos(Double.pi * edge)))
        }
        let chain = DSPChain(outputRate: outRate)
        let out = try chain.configure(input: AudioFormat(sampleRate: inRate, channels: 1))
        #expect(out.sampleRate == outRate)
        let y = Signal.run(chain, sweep, channels: 1).map(Double.init)
        #expect(abs(Double(y.count) - Double(total) * 48 / 44.1) <= 2, "\(y.count) frames out")
        let x = sweep.map(Double.init)
        var worst = 0.0, worstAt = 0.0
        // 61 frequencies, 20 Hz to 20 kHz in sixth-octaves and a bit.
        for i in 0...60 {
            let f = 20 * pow(1000, Double(i) / 60)
            let gain = (Signal.dft(y, at: f, rate: outRate) / Double(outRate)) / (Signal.dft(x, at: f, rate: inRate) / Double(inRate))
            let db = 20 * log10(gain)
            if abs(db) > abs(worst) { worst = db; worstAt = f }
        }
        print("resampler passband: worst \(worst) dB at \(worstAt) Hz")
        #expect(abs(worst) <= 0.1, "passband deviation \(worst) dB at \(worstAt) Hz")

        // Tones across the band: everything but the tone is at least 90 dB down.
        for tone in [1_000.0, 6_000, 12_000, 17_000, 20_000] {
            let chain = DSPChain(outputRate: outRate)
            try chain.configure(input: AudioFormat(sampleRate: inRate, channels: 1))
            let y = Signal.run(chain, Signal.tone(tone, seconds: 2, rate: inRate, channels: 1), channels: 1).map(Double.init)
            let n = 1 << 16
            let p = Signal.powerSpectrum(y[(y.count - n) / 2..<((y.count - n) / 2 + n)], window: Signal.kaiser)
            let bin = Int((tone * Double(n) / Double(outRate)).rounded())
            let signal = p[max(0, bin - 16)...min(p.count - 1, bin + 16)].reduce(0, +)
            let rest = p.reduce(0, +) - signal
            let db = 10 * log10(rest / signal)
            print("resampler \(tone) Hz: everything else at \(db) dB")
            #expect(db <= -90, "\(tone) Hz: everything else at \(db) dB")
        }
    }

    /// An input rate below the output floor (a WAV header may say 1 Hz) is refused: the output
    /// of a call grows with the ratio, 44,100 times the input at 1 Hz → 44.1 kHz.
    @Test func absurdInputRate_isRefused() throws {
        let resampler = SoxrResampler(outputRate: 44_100)
        #expect(throws: DSPError.self) { try resampler.configure(input: AudioFormat(sampleRate: 1, channels: 2)) }
        #expect(throws: DSPError.self) { try resampler.configure(input: AudioFormat(sampleRate: 999, channels: 2)) }
        #expect(try resampler.configure(input: AudioFormat(sampleRate: 1_000, channels: 2)).sampleRate == 44_100)
    }

    @Test func newTrackRate_rebuildsTheResampler() throws {
        let chain = DSPChain(outputRate: 48_000)
        #expect(try chain.configure(input: AudioFormat(sampleRate: 44_100, channels: 2)).sampleRate == 48_000)
        let a = Signal.run(chain, Signal.tone(440, seconds: 1, rate: 44_100), channels: 2)
        #expect(abs(a.count / 2 - 48_000) <= 2)
        #expect(try chain.configure(input: AudioFormat(sampleRate: 32_000, channels: 2)).sampleRate == 48_000)
        let b = Signal.run(chain, Signal.tone(440, seconds: 1, rate: 32_000), channels: 2)
        #expect(abs(b.count / 2 - 48_000) <= 2)
        let f = Signal.dominantFrequency(Signal.channel(b, 0, of: 2), rate: 48_000)
        #expect(abs(f - 440) <= 1, "\(f) Hz after 32 → 48 kHz")
        // A track already at the device rate: no resampling at all.
        try chain.configure(input: AudioFormat(sampleRate: 48_000, channels: 2))
        #expect(chain.isBypassed)
    }

    @Test func changingRateWhilePlaying_staysWithinTheRamp() throws {
        let amplitude = 0.5
        let input = Signal.tone(440, seconds: 8, rate: Self.rate, amplitude: amplitude)
        let chain = DSPChain()
        try chain.configure(input: AudioFormat(sampleRate: Self.rate, channels: 2))
        let output = Signal.run(chain, input, channels: 2) { block in
            switch block {
            case 10: chain.set(rate: 2)                 // switches the stretcher in
            case 25: chain.set(rate: 0.5)               // within the stretcher
            case 40: chain.set(semitones: 5)            // pitch while stretching
            // Cuts only, so no stage may make the tone louder than A.
            case 55: chain.set(eq: .graphic([0, 0, 0, 0, -3, -3, 0, 0, 0, 0]))
            case 60: chain.set(eq: .graphic([0, 0, 0, 0, -6, -1, 0, 0, 0, 0]))  // EQ cross-fade
            case 65: chain.set(rate: 1); chain.set(semitones: 0)               // stretcher out
            default: break
            }
        }
        // A sine's largest step is A·ω (ω the highest frequency heard: 440 Hz + 5 semitones);
        // a 10 ms ramp adds at most A/441 per sample. A click (a jump of the waveform) is
        // far larger: switching with stale samples left in the limiter gave 0.083 here.
        let omega = 2 * Double.pi * 440 * pow(2, 5 / 12.0) / Double(Self.rate)
        let bound = amplitude * omega + amplitude / 441
        let x = Signal.channel(output, 0, of: 2)
        var worst = 0.0, at = 0
        for n in 1..<x.count where abs(x[n] - x[n - 1]) > worst { worst = abs(x[n] - x[n - 1]); at = n }
        print("rate change: largest step \(worst) at frame \(at), bound \(bound)")
        #expect(worst <= bound, "step \(worst) at frame \(at) exceeds \(bound)")
        #expect(output.count > input.count / 2)
    }
}
