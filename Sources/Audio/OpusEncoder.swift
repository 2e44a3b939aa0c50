internal import COpus

/// Why libopus would not make or run an encoder.
public struct OpusEncoderError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public var description: String { "opus encoder: \(message)" }
}

/// libopus's encoder (`opus_encoder_create`), wrapped once: 20 ms frames of interleaved float
/// PCM at 48 kHz in, one Opus packet each out; the container is the caller's (`OggOpusEncoder`
/// pages it). Set as ffmpeg's `-c:a libopus` sets it, so the two cost and sound alike:
/// application "audio", unconstrained VBR, complexity 10. Not thread-safe: one thread owns it.
public final class OpusEncoder {
    public let channels: Int
    /// The samples (per channel) the encoder delays its output by: the Ogg pre-skip (`OPUS_GET_LOOKAHEAD`).
    public let lookahead: Int
    private let handle: OpaquePointer
    private var scratch: [UInt8]

    /// Samples per channel in the frame `encode` takes: 20 ms at 48 kHz.
    public static let frameSize = 960
    public static let sampleRate = 48_000
    /// The largest packet of one 20 ms frame (RFC 6716 §3.4: 1275 bytes a frame, and the TOC).
    static let maxPacketBytes = 1_276

    /// The library's version, e.g. "libopus 1.3.1" (the vendor string of OpusTags).
    public static var version: String { String(cString: opus_get_version_string()) }

    /// An encoder for `channels` (1 or 2) at `bitsPerSecond` (6,000...510,000). libopus's own
    /// default VBR is constrained, which spent 14 % more bytes than ffmpeg on the same 10 s.
    /// `constantBitrate`: hard CBR instead, every packet the same size (a length known ahead).
    public init(channels: Int, bitsPerSecond: Int, constantBitrate: Bool = false) throws(OpusEncoderError) {
        guard channels == 1 || channels == 2 else { throw OpusEncoderError(message: "\(channels) channels (1 or 2 here)") }
        guard (6_000...510_000).contains(bitsPerSecond) else {
            throw OpusEncoderError(message: "\(bitsPerSecond) bit/s is outside 6000...510000")
        }
        var error: Int32 = 0
        guard let made = opus_encoder_create(Int32(Self.sampleRate), Int32(channels), OPUS_APPLICATION_AUDIO, &error),
              error == OPUS_OK else {
            throw OpusEncoderError(message: "opus_encoder_create: \(String(cString: opus_strerror(error)))")
        }
        var samples: Int32 = 0
        guard copus_encoder_set_bitrate(made, Int32(bitsPerSecond)) == OPUS_OK,
              copus_encoder_set_vbr(made, constantBitrate ? 0 : 1) == OPUS_OK,
              constantBitrate || copus_encoder_set_vbr_constraint(made, 0) == OPUS_OK,
              copus_encoder_set_complexity(made, 10) == OPUS_OK, copus_encoder_get_lookahead(made, &samples) == OPUS_OK,
              samples >= 0 else {
            opus_encoder_destroy(made)
            throw OpusEncoderError(message: "libopus refused its settings (\(bitsPerSecond) bit/s, \(constantBitrate ? "CBR" : "unconstrained VBR"), complexity 10)")
        }
        handle = made
        self.channels = channels
        lookahead = Int(samples)
        scratch = [UInt8](repeating: 0, count: Self.maxPacketBytes)
    }

    deinit { opus_encoder_destroy(handle) }

    /// Encodes one frame: `frame` holds exactly `frameSize` × `channels` samples (nominally
    /// −1...1, finite). The packet is appended to `packet`.
    public func encode(frame: ArraySlice<Float>, appendingTo packet: inout [UInt8]) throws(OpusEncoderError) {
        guard frame.count == Self.frameSize * channels else {
            throw OpusEncoderError(message: "a frame of \(frame.count) samples, not \(Self.frameSize * channels)")
        }
        let handle = handle
        let written = frame.withUnsafeBufferPointer { samples -> Int32 in
            scratch.withUnsafeMutableBufferPointer { out -> Int32 in
                guard let input = samples.baseAddress, let output = out.baseAddress else { return OPUS_BAD_ARG }
                return opus_encode_float(handle, input, Int32(Self.frameSize), output, Int32(out.count))
            }
        }
        guard written > 0 else { throw OpusEncoderError(message: "opus_encode_float: \(String(cString: opus_strerror(written)))") }
        packet.append(contentsOf: scratch.prefix(Int(written)))
    }
}
