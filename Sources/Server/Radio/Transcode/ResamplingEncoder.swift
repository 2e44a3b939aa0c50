import StreamAudio
import StreamShared

/// Decoded samples at any rate into one `AudioEncoder`: resampled to the encoder's rate by
/// libsoxr (bypassed when the rates agree), the filter's tail flushed into the encoder before a
/// change of input rate and at the end. The one path from PCM to encoded bytes that transcodes
/// (`TranscodeJob`), MP3 channels (`ChannelTranscoder`, one for the channel's life, so tracks of
/// one rate run through one filter without a seam) and Opus channels (`OggTrackFeeder`, one per
/// track: each track is a link of its own) share. Used by one thread.
final class ResamplingEncoder {
    let encoder: any AudioEncoder
    private let channels: Int
    private let resampler: SoxrResampler
    /// The input rate the filter is set up for; 0 until one is (a refused rate leaves it unset,
    /// so the next samples configure it again instead of passing unresampled).
    private var inputRate = 0
    private var tail: [Float] = []

    init(_ encoder: any AudioEncoder) {
        self.encoder = encoder
        channels = encoder.channels
        resampler = SoxrResampler(outputRate: encoder.sampleRate)
    }

    /// Encodes `samples` (interleaved, the encoder's channel count, at `rate` Hz; resampled in
    /// place) and appends the bytes the encoder has ready to `output`.
    func encode(_ samples: inout [Float], rate: Int, appendingTo output: inout [UInt8]) throws {
        if rate != inputRate {
            // Another rate: what the filter holds of the samples before comes out first.
            try drain(appendingTo: &output)
            inputRate = 0
            _ = try resampler.configure(input: AudioFormat(sampleRate: rate, channels: channels))
            inputRate = rate
        }
        resampler.process(&samples)
        try encoder.encode(samples[...], appendingTo: &output)
    }

    /// Ends the stream: the filter's tail, then the encoder's last bytes, onto `output`.
    func finish(appendingTo output: inout [UInt8]) throws {
        try drain(appendingTo: &output)
        try encoder.finish(appendingTo: &output)
    }

    private func drain(appendingTo output: inout [UInt8]) throws {
        guard inputRate != 0 else { return }
        tail.removeAll(keepingCapacity: true)
        resampler.flush(into: &tail)
        if !tail.isEmpty { try encoder.encode(tail[...], appendingTo: &output) }
    }
}
