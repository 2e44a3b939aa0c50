internal import CSonic
import StreamAudio

/// libsonic (Apache-2.0) as a time stretcher, wrapped once, here. Sonic overlaps single pitch
/// periods (found by AMDF), which suits speech and is very cheap.
public final class SonicStretcher: TimeStretcher {
    private var stream: OpaquePointer
    private let sampleRate: Int
    private let channels: Int
    private var scratch: [Float] = []

    public init(sampleRate: Int, channels: Int, speed: Double = 1) throws(DSPError) {
        guard let created = sonicCreateStream(Int32(sampleRate), Int32(channels)) else {
            throw DSPError("libsonic: cannot create a stream for \(sampleRate) Hz, \(channels) ch")
        }
        stream = created
        self.sampleRate = sampleRate
        self.channels = max(1, channels)
        self.speed = speed
        sonicSetSpeed(stream, Float(speed))
    }

    deinit { sonicDestroyStream(stream) }

    public var speed: Double {
        didSet { sonicSetSpeed(stream, Float(speed)) }
    }

    /// Sonic keeps up to two of its longest pitch periods (1/65 s) before it can overlap.
    public var latencyFrames: Int { 2 * sampleRate / 65 }

    public func process(_ input: UnsafeBufferPointer<Float>, into output: inout [Float]) {
        if let base = input.baseAddress, input.count >= channels {
            _ = sonicWriteFloatToStream(stream, UnsafeMutablePointer(mutating: base), Int32(input.count / channels))
        }
        drain(into: &output)
    }

    public func flush(into output: inout [Float]) {
        _ = sonicFlushStream(stream)
        drain(into: &output)
    }

    public func reset() {
        // Sonic has no reset call: a new stream with the same settings.
        if let fresh = sonicCreateStream(Int32(sampleRate), Int32(channels)) {
            sonicDestroyStream(stream)
            stream = fresh
            sonicSetSpeed(stream, Float(speed))
        }
    }

    private func drain(into output: inout [Float]) {
        // Bounded by what sonic holds: each pass takes everything available.
        for _ in 0..<1_000 {
            let available = Int(sonicSamplesAvailable(stream))
            guard available > 0 else { return }
            if scratch.count < available * channels { scratch = [Float](repeating: 0, count: available * channels) }
            let read = scratch.withUnsafeMutableBufferPointer { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return Int(sonicReadFloatFromStream(stream, base, Int32(available)))
            }
            guard read > 0 else { return }
            output.append(contentsOf: scratch[0..<(read * channels)])
        }
    }
}
