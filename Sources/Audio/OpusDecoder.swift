internal import COpus
import StreamShared

/// libopus's multistream decoder, wrapped once: Opus packets in, 48 kHz float PCM out in WAV
/// channel order, the OpusHead output gain applied (as opusdec applies it). Mapping families
/// 0 (mono, stereo) and 1 (Vorbis order, up to 8 channels); family 255 and others are refused.
public final class OpusDecoder {
    public let head: OpusHead
    public var channels: Int { head.channels }
    private let handle: OpaquePointer
    /// One packet's samples (120 ms at most), interleaved in libopus's (Vorbis) order, then in WAV order.
    private let decoded: UnsafeMutablePointer<Float>
    private let reordered: UnsafeMutablePointer<Float>
    private let wavOrder: [Int]?
    /// Packets libopus refused, replaced by its concealment of the same length.
    public private(set) var damagedPackets = 0

    /// The longest Opus packet: 120 ms at 48 kHz.
    public static let maxFrames = 5760

    public init(head: OpusHead) throws {
        guard head.mappingFamily <= 1 else {
            throw DecoderError(message: "Opus channel mapping family \(head.mappingFamily) is not supported (families 0 and 1 are)")
        }
        guard (1...8).contains(head.channels), head.channelMapping.count == head.channels else {
            throw DecoderError(message: "Opus with \(head.channels) channels is not supported (1 to 8)")
        }
        var error: Int32 = 0
        let created = head.channelMapping.withUnsafeBufferPointer { mapping -> OpaquePointer? in
            guard let base = mapping.baseAddress else { return nil }
            return opus_multistream_decoder_create(48_000, Int32(head.channels), Int32(head.streamCount), Int32(head.coupledCount),
                                                   base, &error)
        }
        guard let created, error == OPUS_OK else {
            throw DecoderError(message: "opus_multistream_decoder_create: \(String(cString: opus_strerror(error)))")
        }
        handle = created
        if head.outputGainQ78 != 0, copus_set_gain(created, Int32(head.outputGainQ78)) != OPUS_OK {
            opus_multistream_decoder_destroy(created)
            throw DecoderError(message: "Opus output gain \(head.outputGainDB) dB refused")
        }
        self.head = head
        wavOrder = head.mappingFamily == 1 ? VorbisChannelOrder.wavOrder(channels: head.channels) : nil
        decoded = .allocate(capacity: Self.maxFrames * head.channels)
        reordered = .allocate(capacity: Self.maxFrames * head.channels)
    }

    deinit {
        opus_multistream_decoder_destroy(handle)
        decoded.deallocate()
        reordered.deallocate()
    }

    /// Forgets the decoder's history (after a seek).
    public func reset() { _ = copus_reset(handle) }

    /// Samples per channel `packet` decodes to; nil when its TOC is not valid.
    public static func frames(of packet: ArraySlice<UInt8>) -> Int? {
        let count = packet.withUnsafeBufferPointer { bytes -> Int32 in
            guard let base = bytes.baseAddress else { return OPUS_INVALID_PACKET }
            return opus_packet_get_nb_samples(base, Int32(bytes.count), 48_000)
        }
        return count > 0 && Int(count) <= maxFrames ? Int(count) : nil
    }

    /// Decodes one packet; `body` receives its interleaved samples (valid during the call). A
    /// packet libopus refuses is concealed for the length its TOC gives, or skipped.
    public func decode(_ packet: ArraySlice<UInt8>, _ body: (UnsafeBufferPointer<Float>) -> Void) {
        var frames = packet.withUnsafeBufferPointer { bytes -> Int32 in
            guard let base = bytes.baseAddress else { return OPUS_INVALID_PACKET }
            return opus_multistream_decode_float(handle, base, Int32(bytes.count), decoded, Int32(Self.maxFrames), 0)
        }
        if frames < 0 {
            damagedPackets += 1
            guard let length = Self.frames(of: packet) else { return }
            frames = opus_multistream_decode_float(handle, nil, 0, decoded, Int32(length), 0)
            guard frames > 0 else { return }
        }
        let count = Int(frames) * head.channels
        let samples = UnsafeBufferPointer(start: decoded, count: count)
        guard let order = wavOrder else {
            body(samples)
            return
        }
        VorbisChannelOrder.reorder(samples, into: UnsafeMutableBufferPointer(start: reordered, count: count), order: order)
        body(UnsafeBufferPointer(start: reordered, count: count))
    }
}

/// Vorbis channel order (also Opus mapping family 1) against WAV's (WAVEFORMATEXTENSIBLE and
/// ALSA): Vorbis puts the centre between the front pair and the LFE last (Vorbis I §4.3.9).
public enum VorbisChannelOrder {
    /// For each WAV-order output channel, the Vorbis-order channel it comes from; nil when the
    /// orders agree (1, 2 and 4 channels, or more than 8, which Vorbis leaves to the application).
    public static func wavOrder(channels: Int) -> [Int]? {
        switch channels {
        case 3: return [0, 2, 1]
        case 5: return [0, 2, 1, 3, 4]
        case 6: return [0, 2, 1, 5, 3, 4]
        case 7: return [0, 2, 1, 6, 5, 3, 4]
        case 8: return [0, 2, 1, 7, 5, 6, 3, 4]
        default: return nil
        }
    }

    /// WAVEFORMATEXTENSIBLE's speaker mask for the WAV-order channels of a Vorbis stream of
    /// `channels`; 0 (no mask) beyond 8.
    public static func channelMask(channels: Int) -> UInt32 {
        let masks: [UInt32] = [0x4, 0x3, 0x7, 0x33, 0x37, 0x3F, 0x70F, 0x63F]
        return (1...8).contains(channels) ? masks[channels - 1] : 0
    }

    /// Interleaved samples reordered: output channel c takes input channel order[c].
    static func reorder(_ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>, order: [Int]) {
        let channels = order.count
        var frame = 0
        while frame + channels <= input.count {
            for c in 0..<channels { output[frame + c] = input[frame + order[c]] }
            frame += channels
        }
    }
}
