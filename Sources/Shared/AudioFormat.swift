/// The shape of decoded audio: rate and channel count (samples are interleaved Float32 in -1...1),
/// and the precision the source had, so a file output can keep it.
public struct AudioFormat: Sendable, Equatable, CustomStringConvertible {
    /// The sample type of the source (decoders of lossy codecs produce 16-bit).
    public enum SampleType: Sendable, Equatable {
        case int16, int24, int32, float32, float64
    }

    public var sampleRate: Int
    public var channels: Int
    public var sampleType: SampleType
    /// WAVEFORMATEXTENSIBLE's speaker mask of the channels as they come (in WAV order), when the
    /// source says which speakers they are (Ogg Opus and Vorbis of 3 to 8 channels); nil: unsaid.
    public var channelMask: UInt32? = nil

    public init(sampleRate: Int, channels: Int, sampleType: SampleType = .int16) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleType = sampleType
    }

    /// Frames per PCM buffer: 4096, or 8192 at 88.2 kHz and above (DESIGN.md).
    public var framesPerBuffer: Int { sampleRate >= 88_200 ? 8192 : 4096 }

    public var description: String { "\(sampleRate) Hz, \(channels) ch" }
}
