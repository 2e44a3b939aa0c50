import Foundation
import StreamShared
internal import CLAME

/// Why libmp3lame refused a setting or a buffer.
public struct EncoderError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public var description: String { "encoder: \(message)" }
}

/// libmp3lame wrapped once: interleaved float PCM in (-1...1), constant-bitrate MPEG audio
/// layer III frames out, one continuous stream (no Xing/Info frame, no ID3 tag), as a radio
/// channel that transcodes sends it. Not thread-safe: one producer thread owns an encoder.
public final class LAMEEncoder: AudioEncoder {
    private let flags: OpaquePointer
    public let sampleRate: Int
    public let channels: Int
    public let kbps: Int
    /// Room libmp3lame may write into per call (its documented worst case: 1.25 × samples + 7200).
    private var scratch: [UInt8] = []
    /// The samples of one call as libmp3lame gets them (`sane`).
    private var clean: [Float] = []
    /// The largest sample magnitude libmp3lame gets: 24 dB over full scale.
    public static let sampleLimit: Float = 16

    /// MP3's sample rates (MPEG-1, 2 and 2.5).
    public static let sampleRates = [8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000]

    /// lame_init and lame_init_params touch tables shared by every encoder of the process: one at a time.
    private static let setupLock = Lock(())

    /// An encoder for `channels` (1 or 2) at `sampleRate` (one of `sampleRates`; no resampling
    /// inside) and `kbps` (8...320, CBR; libmp3lame takes the nearest rate the MPEG version allows).
    /// `quality` is libmp3lame's 0 (best, slowest) ... 9, nil its default.
    /// `infoFrame`: the stream starts with a placeholder frame for the Xing/Info + LAME tag, whose
    /// final bytes (frame count, delay and padding) `infoFrame()` gives once the stream is flushed
    /// (a file; a radio stream has none). `reservoir: false`: no frame borrows bytes from earlier frames.
    public init(sampleRate: Int, channels: Int, kbps: Int, quality: Int? = nil, infoFrame: Bool = false,
                reservoir: Bool = true) throws(EncoderError) {
        guard Self.sampleRates.contains(sampleRate) else {
            throw EncoderError(message: "MP3 has no \(sampleRate) Hz rate")
        }
        guard channels == 1 || channels == 2 else { throw EncoderError(message: "MP3 carries 1 or 2 channels, not \(channels)") }
        guard (8...320).contains(kbps) else { throw EncoderError(message: "bitrate \(kbps) kbit/s is outside 8...320") }
        self.sampleRate = sampleRate
        self.channels = channels
        self.kbps = kbps
        flags = try Self.setupLock.withLock { _ throws(EncoderError) -> OpaquePointer in
            guard let flags = lame_init() else { throw EncoderError(message: "lame_init failed") }
            clame_quiet(flags)
            lame_set_in_samplerate(flags, Int32(sampleRate))
            lame_set_out_samplerate(flags, Int32(sampleRate))
            lame_set_num_channels(flags, Int32(channels))
            lame_set_mode(flags, channels == 1 ? MONO : JOINT_STEREO)
            lame_set_brate(flags, Int32(kbps))
            lame_set_VBR(flags, vbr_off)
            if let quality { lame_set_quality(flags, Int32(min(9, max(0, quality)))) }
            // A stream has no end to rewrite a header at, and listeners join anywhere.
            lame_set_bWriteVbrTag(flags, infoFrame ? 1 : 0)
            // Without the reservoir every frame holds its own bits: an HLS rendition's segment
            // decodes the same after a segment of another variant.
            if !reservoir { lame_set_disable_reservoir(flags, 1) }
            lame_set_write_id3tag_automatic(flags, 0)
            guard lame_init_params(flags) >= 0 else {
                lame_close(flags)
                throw EncoderError(message: "libmp3lame refused \(sampleRate) Hz, \(channels) ch, \(kbps) kbit/s")
            }
            return flags
        }
    }

    deinit { lame_close(flags) }

    /// Samples per channel the encoder holds back at the start of the stream (its delay).
    public var encoderDelay: Int { Int(lame_get_encoder_delay(flags)) }

    /// Samples per channel in one frame (1152 for MPEG-1, 576 for MPEG-2 and 2.5).
    public var samplesPerFrame: Int { Int(lame_get_framesize(flags)) }

    /// `sample` as libmp3lame may take it: NaN is silence, the rest (infinities too) is held to
    /// ±`sampleLimit`. libmp3lame aborts the process on NaN (psymodel.c: `el >= 0`), and the
    /// samples come from files: a float WAV holds any bit pattern.
    @inline(__always)
    public static func sane(_ sample: Float) -> Float {
        abs(sample) <= sampleLimit ? sample : sample.isNaN ? 0 : sample < 0 ? -sampleLimit : sampleLimit
    }

    /// Encodes `samples` (interleaved, `channels` per frame; a partial last frame is dropped;
    /// any value, made `sane`) and appends the MPEG bytes that are ready to `output` (whole
    /// frames once it has started; the encoder keeps up to about one frame and its look-ahead back).
    public func encode(_ samples: ArraySlice<Float>, appendingTo output: inout [UInt8]) throws(EncoderError) {
        let frames = samples.count / channels
        guard frames > 0 else { return }
        // Bounded calls: the output room libmp3lame asks for grows with the input.
        var done = 0
        while done < frames {
            let count = min(frames - done, 8192)
            let room = count * 5 / 4 + 7200
            if scratch.count < room { scratch = [UInt8](repeating: 0, count: room) }
            let from = samples.startIndex + done * channels
            // Decoded audio is nearly always in range: then it goes as it is, without a copy (a
            // NaN fails the comparison too).
            var part = samples[from..<(from + count * channels)]
            if !part.allSatisfy({ abs($0) <= Self.sampleLimit }) {
                clean.removeAll(keepingCapacity: true)
                for sample in part { clean.append(Self.sane(sample)) }
                part = clean[...]
            }
            let written: Int32 = part.withUnsafeBufferPointer { pcm in
                scratch.withUnsafeMutableBufferPointer { out in
                    // The interleaved entry point reads two channels whatever the setting: mono
                    // goes through the planar one (its right channel is not read).
                    channels == 2
                        ? lame_encode_buffer_interleaved_ieee_float(flags, pcm.baseAddress, Int32(count), out.baseAddress,
                                                                    Int32(out.count))
                        : lame_encode_buffer_ieee_float(flags, pcm.baseAddress, pcm.baseAddress, Int32(count),
                                                        out.baseAddress, Int32(out.count))
                }
            }
            guard written >= 0 else {
                throw EncoderError(message: "lame_encode_buffer_interleaved_ieee_float returned \(written)")
            }
            output.append(contentsOf: scratch[0..<Int(written)])
            done += count
        }
    }

    /// The Xing/Info + LAME tag frame of the stream so far (after `flush`: its final values), to
    /// be written over the stream's first frame; nil when the encoder writes none.
    public func infoFrame() -> [UInt8]? {
        let size = lame_get_lametag_frame(flags, nil, 0)
        guard size > 0 else { return nil }
        var frame = [UInt8](repeating: 0, count: size)
        let written = frame.withUnsafeMutableBufferPointer { lame_get_lametag_frame(flags, $0.baseAddress, $0.count) }
        guard written == size else { return nil }
        return frame
    }

    public func finish(appendingTo output: inout [UInt8]) throws(EncoderError) { flush(appendingTo: &output) }

    /// Ends the stream: encodes what is held back (padded with silence to a whole frame) and
    /// appends the last frames to `output`.
    public func flush(appendingTo output: inout [UInt8]) {
        if scratch.count < 7200 { scratch = [UInt8](repeating: 0, count: 7200) }
        let written = scratch.withUnsafeMutableBufferPointer { out in
            lame_encode_flush(flags, out.baseAddress, Int32(out.count))
        }
        if written > 0 { output.append(contentsOf: scratch[0..<Int(written)]) }
    }
}
