/// An encoder of interleaved float PCM into a file format's bytes: libmp3lame (`LAMEEncoder`: radio
/// channels, MP3 transcodes) and libopus paged as Ogg (`OggOpusEncoder`: Opus transcodes), so a transcode, a
/// channel or an HLS rendition takes either. (A file of its own: the fuzz build compiles
/// LAMEEncoder.swift with it alone.)
public protocol AudioEncoder: AnyObject {
    var sampleRate: Int { get }
    var channels: Int { get }
    /// Encodes `samples` (interleaved, `channels` a frame) and appends the bytes ready to `output`.
    func encode(_ samples: ArraySlice<Float>, appendingTo output: inout [UInt8]) throws(EncoderError)
    /// Ends the stream and appends its last bytes.
    func finish(appendingTo output: inout [UInt8]) throws(EncoderError)
}
