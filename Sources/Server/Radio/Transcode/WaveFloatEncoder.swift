/// Decoded PCM as a streamed WAV file: 32-bit IEEE float samples at the source's rate, after a
/// header whose RIFF and data sizes are 0xFFFFFFFF (the length is not known while streaming, as
/// for any streamed WAV). It is `/media/<path>?format=wav`, which the page's Web Audio player
/// reads for codecs Media Source Extensions cannot carry: the decode worker's output, trimmed
/// of the encoder's delay and padding, so tracks join sample-exactly. Float keeps 24-bit sources whole.
public final class WaveFloatEncoder: AudioEncoder {
    public let sampleRate: Int
    public let channels: Int
    private var headerWritten = false

    /// The 44-byte header's length: RIFF, a 16-byte `fmt ` chunk, the `data` chunk's head.
    public static let headerLength = 44

    public init(sampleRate: Int, channels: Int) throws(EncoderError) {
        guard (1...768_000).contains(sampleRate) else { throw EncoderError(message: "sample rate \(sampleRate) is outside 1...768000") }
        guard (1...8).contains(channels) else { throw EncoderError(message: "WAV here carries 1 to 8 channels, not \(channels)") }
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public func encode(_ samples: ArraySlice<Float>, appendingTo output: inout [UInt8]) throws(EncoderError) {
        if !headerWritten { writeHeader(&output) }
        output.reserveCapacity(output.count + samples.count * 4)
        for sample in samples {
            let bits = sample.bitPattern
            output.append(UInt8(truncatingIfNeeded: bits))
            output.append(UInt8(truncatingIfNeeded: bits >> 8))
            output.append(UInt8(truncatingIfNeeded: bits >> 16))
            output.append(UInt8(truncatingIfNeeded: bits >> 24))
        }
    }

    public func finish(appendingTo output: inout [UInt8]) throws(EncoderError) {
        if !headerWritten { writeHeader(&output) }
    }

    private func writeHeader(_ output: inout [UInt8]) {
        headerWritten = true
        func u32(_ value: UInt32) { for shift in stride(from: 0, to: 32, by: 8) { output.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) } }
        func u16(_ value: UInt16) { output.append(UInt8(truncatingIfNeeded: value)); output.append(UInt8(truncatingIfNeeded: value >> 8)) }
        let blockAlign = channels * 4
        output.append(contentsOf: Array("RIFF".utf8))
        u32(0xFFFF_FFFF)
        output.append(contentsOf: Array("WAVEfmt ".utf8))
        u32(16)
        u16(3)                                   // WAVE_FORMAT_IEEE_FLOAT
        u16(UInt16(channels))
        u32(UInt32(sampleRate))
        u32(UInt32(sampleRate * blockAlign))
        u16(UInt16(blockAlign))
        u16(32)
        output.append(contentsOf: Array("data".utf8))
        u32(0xFFFF_FFFF)
    }
}
