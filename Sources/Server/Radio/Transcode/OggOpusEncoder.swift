import StreamShared
internal import COpusEnc

/// libopusenc wrapped once: interleaved float PCM at 48 kHz in, an Ogg Opus stream out (OpusHead
/// with the encoder's pre-skip, OpusTags, audio pages; the last page's granule trims the end to
/// the samples given, so a decoder gives back exactly them). Not thread-safe: one thread owns it.
public final class OggOpusEncoder: AudioEncoder {
    private var encoder: OpaquePointer?
    public let channels: Int
    public let kbps: Int
    /// Opus runs at 48 kHz; other rates are resampled before (libsoxr, by the caller).
    public static let sampleRate = 48_000
    public var sampleRate: Int { Self.sampleRate }
    /// The bytes libopusenc has paged since the last `encode`/`finish` took them.
    private var pending: [UInt8] = []
    private var failure: String?
    private var clean: [Float] = []

    /// An encoder for `channels` (1 or 2) at `kbps` (6...510) with the Vorbis comments `tags`
    /// (`TITLE`, `ARTIST`...), empty values left out; `constantBitrate`: hard CBR, every 20 ms
    /// packet `kbps` × 2.5 bytes (a length known ahead: `estimate=1`).
    public init(channels: Int, kbps: Int, tags: [(String, String)], constantBitrate: Bool = false) throws(EncoderError) {
        guard channels == 1 || channels == 2 else { throw EncoderError(message: "Opus here carries 1 or 2 channels, not \(channels)") }
        guard (6...510).contains(kbps) else { throw EncoderError(message: "bitrate \(kbps) kbit/s is outside 6...510") }
        self.channels = channels
        self.kbps = kbps
        guard let comments = ope_comments_create() else { throw EncoderError(message: "ope_comments_create failed") }
        defer { ope_comments_destroy(comments) }
        for (name, value) in tags where !value.isEmpty {
            _ = ope_comments_add(comments, name, value)
        }
        var callbacks = OpusEncCallbacks(
            write: { user, bytes, count in
                guard let user, let bytes, count >= 0 else { return 1 }
                let me = Unmanaged<OggOpusEncoder>.fromOpaque(user).takeUnretainedValue()
                me.pending.append(contentsOf: UnsafeBufferPointer(start: bytes, count: Int(count)))
                return 0
            },
            close: { _ in 0 })
        var error: Int32 = 0
        let made = ope_encoder_create_callbacks(&callbacks, Unmanaged.passUnretained(self).toOpaque(), comments,
                                                Int32(Self.sampleRate), Int32(channels), 0, &error)
        guard let made, error == OPE_OK else {
            throw EncoderError(message: "ope_encoder_create_callbacks: \(String(cString: ope_strerror(error)))")
        }
        encoder = made
        guard copusenc_set_bitrate(made, Int32(kbps * 1000)) == OPE_OK else {
            throw EncoderError(message: "libopus refused \(kbps) kbit/s")
        }
        if constantBitrate, copusenc_set_vbr(made, 0) != OPE_OK { throw EncoderError(message: "libopus refused hard CBR") }
        // Pages out at least every 200 ms (libopusenc's default is a second): a listener of the
        // encode in progress gets audio as it is made.
        _ = copusenc_set_muxing_delay(made, 9_600)
        // The header pages go out now: the response's first bytes do not wait for audio.
        _ = ope_encoder_flush_header(made)
    }

    deinit { if let encoder { ope_encoder_destroy(encoder) } }

    public func encode(_ samples: ArraySlice<Float>, appendingTo output: inout [UInt8]) throws(EncoderError) {
        let frames = samples.count / channels
        guard let encoder, frames > 0 else { take(into: &output); return }
        var part = samples.prefix(frames * channels)
        if !part.allSatisfy({ abs($0) <= LAMEEncoder.sampleLimit }) {
            clean.removeAll(keepingCapacity: true)
            for sample in part { clean.append(LAMEEncoder.sane(sample)) }
            part = clean[...]
        }
        let status = part.withUnsafeBufferPointer { ope_encoder_write_float(encoder, $0.baseAddress, Int32(frames)) }
        guard status == OPE_OK else { throw EncoderError(message: "ope_encoder_write_float: \(String(cString: ope_strerror(status)))") }
        take(into: &output)
    }

    public func finish(appendingTo output: inout [UInt8]) throws(EncoderError) {
        guard let encoder else { return }
        let status = ope_encoder_drain(encoder)
        guard status == OPE_OK else { throw EncoderError(message: "ope_encoder_drain: \(String(cString: ope_strerror(status)))") }
        take(into: &output)
    }

    private func take(into output: inout [UInt8]) {
        output.append(contentsOf: pending)
        pending.removeAll(keepingCapacity: true)
    }
}
