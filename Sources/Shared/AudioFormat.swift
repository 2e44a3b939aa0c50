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

/// How a PCM container (WAV, AIFF) codes a sample: one model for both, so codec names and
/// sample conversion are decided once.
public enum PCMCoding: Sendable, Equatable {
    /// Linear two's complement (WAV's 8-bit samples are unsigned, AIFF's signed).
    case integer
    /// IEEE float, 32 or 64 bits.
    case float
    /// G.711 mu-law, one byte a sample.
    case muLaw
    /// G.711 A-law, one byte a sample.
    case aLaw

    /// ffmpeg's codec name for this coding at a container width (12-bit samples in 2 bytes are
    /// pcm_s16le); `unsignedBytes`: 8-bit integer samples are unsigned (WAV) rather than signed (AIFF).
    public func codecName(bytesPerSample: Int, bigEndian: Bool, unsignedBytes: Bool) -> String {
        let order = bigEndian ? "be" : "le"
        switch self {
        case .float: return "pcm_f\(bytesPerSample * 8)\(order)"
        case .integer where bytesPerSample == 1: return unsignedBytes ? "pcm_u8" : "pcm_s8"
        case .integer: return "pcm_s\(bytesPerSample * 8)\(order)"
        case .muLaw: return "pcm_mulaw"
        case .aLaw: return "pcm_alaw"
        }
    }
}
