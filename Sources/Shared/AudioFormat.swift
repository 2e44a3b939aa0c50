/// The shape of decoded audio: rate and channel count (samples are interleaved Float32 in -1...1).
public struct AudioFormat: Sendable, Equatable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// Frames per PCM buffer: 4096, or 8192 at 88.2 kHz and above (DESIGN.md).
    public var framesPerBuffer: Int { sampleRate >= 88_200 ? 8192 : 4096 }

    public var description: String { "\(sampleRate) Hz, \(channels) ch" }
}
