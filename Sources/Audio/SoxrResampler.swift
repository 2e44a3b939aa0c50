internal import CSoxr
import StreamShared

/// Sample-rate conversion to the output device's rate through libsoxr (LGPL-2.1, wrapped once,
/// here). Bypassed when the rates are equal; a new input rate (the next track) rebuilds it.
public final class SoxrResampler: AudioProcessor {
    /// The rate to convert to; nil keeps the source's rate.
    public let outputRate: Int?
    private var handle: OpaquePointer?
    private var channels = 2
    private var ratio = 1.0
    private var scratch: [Float] = []

    public init(outputRate: Int?) { self.outputRate = outputRate }

    /// The output rates it converts to; input rates below them are refused too (see `configure`).
    public static let rates = 1_000...768_000

    deinit { if let handle { soxr_delete(handle) } }

    public func configure(input: AudioFormat) throws -> AudioFormat {
        if let handle { soxr_delete(handle) }
        handle = nil
        channels = input.channels
        guard let outputRate, outputRate != input.sampleRate else { ratio = 1; return input }
        // The input rate has the output's floor: the output of a call is the input times the
        // ratio, so a WAV header's 1 Hz (which RIFF allows) would turn one 4096-frame block into
        // 180 million frames at 44.1 kHz (1.4 GB).
        guard Self.rates.contains(outputRate), input.sampleRate >= Self.rates.lowerBound else {
            throw DSPError("cannot resample \(input.sampleRate) Hz to \(outputRate) Hz")
        }
        // 'High quality' (20-bit, soxr's default recipe): passband to 91.3% of Nyquist, so
        // 20 kHz at 44.1 kHz, and stopband rejection far below -90 dB.
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var runtime = soxr_runtime_spec(1)
        var error: soxr_error_t?
        let created = soxr_create(Double(input.sampleRate), Double(outputRate), UInt32(input.channels), &error,
                                  &io, &quality, &runtime)
        guard error == nil, let created else {
            throw DSPError("libsoxr: \(error.map { String(cString: $0) } ?? "cannot create a resampler")")
        }
        handle = created
        ratio = Double(outputRate) / Double(input.sampleRate)
        var output = input
        output.sampleRate = outputRate
        return output
    }

    public var isBypassed: Bool { handle == nil }
    public var frameRatio: Double { ratio }
    public var latencyFrames: Int { handle.map { Int(soxr_delay($0) / ratio) } ?? 0 }

    public func process(_ buffer: inout [Float]) {
        guard let handle, !buffer.isEmpty else { return }
        scratch.removeAll(keepingCapacity: true)
        buffer.withUnsafeBufferPointer { run(handle, input: $0) }
        swap(&buffer, &scratch)
    }

    public func flush(into buffer: inout [Float]) {
        guard let handle else { return }
        scratch.removeAll(keepingCapacity: true)
        run(handle, input: UnsafeBufferPointer(start: nil, count: 0))
        buffer.append(contentsOf: scratch)
    }

    /// Feeds `input` (all of it; an empty input means end of stream) and appends what comes out.
    private func run(_ handle: OpaquePointer, input: UnsafeBufferPointer<Float>) {
        let inFrames = input.count / channels
        var consumed = 0
        let chunk = Int(Double(max(inFrames, 1024)) * ratio) + 256
        // Bounded: each pass consumes input or produces output; an end-of-stream pass stops
        // when nothing more comes out.
        for _ in 0..<10_000 {
            let start = scratch.count
            scratch.append(contentsOf: repeatElement(0, count: chunk * channels))
            var done = 0, produced = 0
            let remaining = inFrames - consumed
            let failed: Bool = scratch.withUnsafeMutableBufferPointer { out in
                guard let outStart = out.baseAddress else { return true }
                let outBase = UnsafeMutableRawPointer(outStart + start)
                guard inFrames > 0, let inStart = input.baseAddress else {
                    return soxr_process(handle, nil, 0, nil, outBase, chunk, &produced) != nil
                }
                let inBase = UnsafeRawPointer(inStart + consumed * channels)
                return soxr_process(handle, inBase, remaining, &done, outBase, chunk, &produced) != nil
            }
            scratch.removeLast((chunk - produced) * channels)
            consumed += done
            if failed { return }
            if inFrames == 0 ? produced == 0 : (consumed >= inFrames && produced < chunk) { return }
        }
    }

    public func reset() {
        if let handle { soxr_clear(handle) }
    }
}
