/// The format of a run of audio frames (a radio chunk, a live HLS segment): a run never mixes
/// formats, so a change of format (a live source of another rate) starts a new run and the live
/// HLS segmenter can mark it.
public struct FrameFormat: Sendable, Equatable {
    public var codec: AudioFrameSplitter.Codec
    public var sampleRate: Int
    public var channels: Int

    public init(codec: AudioFrameSplitter.Codec, sampleRate: Int, channels: Int) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
    }
}
