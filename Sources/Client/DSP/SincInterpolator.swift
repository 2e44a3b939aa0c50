#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Band-limited resampling at any ratio, changeable while running: a Blackman-windowed sinc
/// read from a table (32 taps at ratios up to 1, widened when it decimates so the cut-off
/// follows). The pitch shifter's last step: reading the stretched audio `ratio` times faster
/// multiplies every frequency by `ratio`.
final class SincInterpolator {
    /// Input frames per output frame.
    var ratio: Double {
        didSet { if ratio != oldValue { buildTable() } }
    }
    private let channels: Int
    private static let zeroCrossings = 16
    private static let resolution = 256
    /// Half-width of the kernel in input frames, and the kernel over 0...halfWidth.
    private var halfWidth = 16
    private var table: [Float] = []
    /// Input kept (interleaved); `time` is the next output's position in it, in frames.
    private var input: [Float] = []
    private var time = 0.0
    private var frames: Int { input.count / channels }

    init(channels: Int, ratio: Double) {
        self.channels = max(1, channels)
        self.ratio = ratio
        buildTable()
        reset()
    }

    var latencyFrames: Int { halfWidth }

    func reset() {
        // Start with half a kernel of silence so the first output sits on the first input frame.
        input = [Float](repeating: 0, count: halfWidth * channels)
        time = Double(halfWidth)
    }

    private func buildTable() {
        let cutoff = min(1, 1 / ratio) * 0.95
        let newHalf = Int((Double(Self.zeroCrossings) / cutoff).rounded(.up))
        if newHalf > halfWidth, !input.isEmpty {
            // A wider kernel needs more history: pad the front with silence.
            input.insert(contentsOf: repeatElement(0, count: (newHalf - halfWidth) * channels), at: 0)
            time += Double(newHalf - halfWidth)
        }
        halfWidth = newHalf
        let count = halfWidth * Self.resolution + 2
        table = (0..<count).map { i in
            let x = Double(i) / Double(Self.resolution)
            guard x < Double(halfWidth) else { return 0 }
            let arg = Double.pi * cutoff * x
            let sinc = x == 0 ? 1 : sin(arg) / arg
            let w = 0.42 + 0.5 * cos(Double.pi * x / Double(halfWidth)) + 0.08 * cos(2 * Double.pi * x / Double(halfWidth))
            return Float(sinc * w)
        }
    }

    /// Appends the resampled `samples` to `output`.
    func process(_ samples: UnsafeBufferPointer<Float>, into output: inout [Float]) {
        input.append(contentsOf: samples)
        let c = channels, half = halfWidth, res = Double(Self.resolution)
        var acc = [Float](repeating: 0, count: c)
        input.withUnsafeBufferPointer { x in
            table.withUnsafeBufferPointer { h in
                while Int(time) + half < frames {
                    let i0 = Int(time)
                    let frac = time - Double(i0)
                    if ratio == 1 && frac == 0 {
                        // No pitch shift: the delayed input itself (so the shifter can come in
                        // later without a jump in its history).
                        let end = min(frames - half, i0 + 65_536)
                        output.append(contentsOf: x[(i0 * c)..<(end * c)])
                        time = Double(end)
                        continue
                    }
                    for ch in 0..<c { acc[ch] = 0 }
                    var norm: Float = 0
                    for k in (1 - half)...half {
                        let pos = abs(Double(k) - frac) * res
                        let j = Int(pos)
                        let f = Float(pos - Double(j))
                        let w = h[j] + (h[j + 1] - h[j]) * f
                        norm += w
                        let base = (i0 + k) * c
                        for ch in 0..<c { acc[ch] += w * x[base + ch] }
                    }
                    let scale = norm != 0 ? 1 / norm : 0
                    for ch in 0..<c { output.append(acc[ch] * scale) }
                    time += ratio
                }
            }
        }
        // Keep half a kernel before the next output position.
        let drop = Int(time) - half
        if drop > 8_192 {
            input.removeFirst(drop * c)
            time -= Double(drop)
        }
    }

    /// Pushes half a kernel of silence through so the last frames come out.
    func flush(into output: inout [Float]) {
        let silence = [Float](repeating: 0, count: (halfWidth + 1) * channels)
        silence.withUnsafeBufferPointer { process($0, into: &output) }
    }
}
