import StreamShared

/// One stage of the DSP chain: interleaved float PCM in, interleaved float PCM out.
public protocol AudioProcessor: AnyObject {
    /// Prepares for `input` and returns the format the stage puts out. Called before the first
    /// buffer and again whenever the source format changes (a new track); drops held samples.
    func configure(input: AudioFormat) throws -> AudioFormat
    /// True while the stage would pass samples through unchanged: the chain then skips it.
    var isBypassed: Bool { get }
    /// Replaces `buffer` with the processed samples (the frame count may change).
    func process(_ buffer: inout [Float])
    /// End of stream: appends what the stage still holds.
    func flush(into buffer: inout [Float])
    /// Drops held samples and filter state (a seek).
    func reset()
    /// Frames the stage holds between input and output, in input frames.
    var latencyFrames: Int { get }
    /// Output frames per input frame at the current settings.
    var frameRatio: Double { get }
}

/// Why the DSP chain refused a setting or a format.
public struct DSPError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "dsp: \(message)" }
}
