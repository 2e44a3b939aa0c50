import Foundation
import StreamClient
import StreamShared

/// Signals and measurements for the DSP tests: generated tones, an FFT, DFT probes.
enum Signal {
    /// A sine of `frequency` Hz, `seconds` long, the same on every channel (interleaved).
    static func tone(_ frequency: Double, seconds: Double, rate: Int, channels: Int = 2, amplitude: Double = 0.5) -> [Float] {
        let frames = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: frames * channels)
        let w = 2 * Double.pi * frequency / Double(rate)
        for n in 0..<frames {
            let v = Float(amplitude * sin(w * Double(n)))
            for c in 0..<channels { out[n * channels + c] = v }
        }
        return out
    }

    /// One channel of interleaved samples.
    static func channel(_ samples: [Float], _ index: Int, of channels: Int) -> [Double] {
        stride(from: index, to: samples.count, by: channels).map { Double(samples[$0]) }
    }

    /// Feeds `input` through `chain` in blocks of `block` frames, then flushes.
    static func run(_ chain: DSPChain, _ input: [Float], channels: Int, block: Int = 4096,
                    beforeBlock: (Int) -> Void = { _ in }) -> [Float] {
        var out: [Float] = []
        var index = 0
        var offset = 0
        while offset < input.count {
            beforeBlock(index)
            var buffer = Array(input[offset..<min(input.count, offset + block * channels)])
            chain.process(&buffer)
            out += buffer
            offset += block * channels
            index += 1
        }
        chain.flush(into: &out)
        return out
    }

    /// In-place iterative radix-2 FFT (count a power of two).
    static func fft(_ re: inout [Double], _ im: inout [Double]) {
        let n = re.count
        var j = 0
        for i in 1..<n {
            var bit = n >> 1
            while j & bit != 0 { j ^= bit; bit >>= 1 }
            j |= bit
            if i < j { re.swapAt(i, j); im.swapAt(i, j) }
        }
        var length = 2
        while length <= n {
            let angle = -2 * Double.pi / Double(length)
            let (wr, wi) = (cos(angle), sin(angle))
            var start = 0
            while start < n {
                var (cr, ci) = (1.0, 0.0)
                for k in 0..<(length / 2) {
                    let a = start + k, b = a + length / 2
                    let tr = re[b] * cr - im[b] * ci
                    let ti = re[b] * ci + im[b] * cr
                    re[b] = re[a] - tr; im[b] = im[a] - ti
                    re[a] += tr; im[a] += ti
                    (cr, ci) = (cr * wr - ci * wi, cr * wi + ci * wr)
                }
                start += length
            }
            length <<= 1
        }
    }

    /// Power spectrum of `x` (length a power of two) under `window`.
    static func powerSpectrum(_ x: ArraySlice<Double>, window: (Int, Int) -> Double) -> [Double] {
        let n = x.count
        var re = x.enumerated().map { $0.element * window($0.offset, n) }
        var im = [Double](repeating: 0, count: n)
        fft(&re, &im)
        return (0..<(n / 2)).map { re[$0] * re[$0] + im[$0] * im[$0] }
    }

    static func hann(_ i: Int, _ n: Int) -> Double { 0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(n)) }

    /// Kaiser window (β = 20: side lobes below -150 dB) through the I0 series.
    static func kaiser(_ i: Int, _ n: Int) -> Double {
        func i0(_ x: Double) -> Double {
            var sum = 1.0, term = 1.0
            for k in 1..<60 { term *= (x / (2 * Double(k))) * (x / (2 * Double(k))); sum += term }
            return sum
        }
        let beta = 20.0
        let r = 2 * Double(i) / Double(n - 1) - 1
        return i0(beta * (1 - r * r).squareRoot()) / i0(beta)
    }

    /// The strongest frequency in `x` (Hann window, parabolic interpolation on log power),
    /// over the largest power-of-two stretch from the middle.
    static func dominantFrequency(_ x: [Double], rate: Int) -> Double {
        var n = 1
        while n * 2 <= min(x.count, 1 << 17) { n *= 2 }
        let start = (x.count - n) / 2
        let p = powerSpectrum(x[start..<(start + n)], window: hann)
        var k = 1
        for i in 1..<(p.count - 1) where p[i] > p[k] { k = i }
        let (a, b, c) = (log(p[k - 1] + 1e-300), log(p[k] + 1e-300), log(p[k + 1] + 1e-300))
        let delta = 0.5 * (a - c) / (a - 2 * b + c)
        return (Double(k) + delta) * Double(rate) / Double(n)
    }

    /// RMS of the middle half of `x` (steady state, away from filter start-up).
    static func steadyRMS(_ x: [Double]) -> Double {
        let part = x[(x.count / 4)..<(x.count * 3 / 4)]
        return (part.reduce(0) { $0 + $1 * $1 } / Double(part.count)).squareRoot()
    }

    /// |DFT| of `x` at `frequency` Hz (a direct sum with a rotating phasor).
    static func dft(_ x: [Double], at frequency: Double, rate: Int) -> Double {
        let w = 2 * Double.pi * frequency / Double(rate)
        let (sr, si) = (cos(w), -sin(w))
        var (cr, ci) = (1.0, 0.0)
        var (re, im) = (0.0, 0.0)
        for (n, v) in x.enumerated() {
            re += v * cr; im += v * ci
            (cr, ci) = (cr * sr - ci * si, cr * si + ci * sr)
            if n & 1023 == 1023 {
                // Keep the phasor on the unit circle.
                let m = (cr * cr + ci * ci).squareRoot()
                cr /= m; ci /= m
            }
        }
        return (re * re + im * im).squareRoot()
    }
}
