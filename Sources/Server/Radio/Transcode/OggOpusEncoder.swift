import StreamAudio
import StreamShared

/// Ogg Opus out of interleaved float PCM at 48 kHz (RFC 7845): libopus (`OpusEncoder`) makes the
/// packets and the project's own pager (`OggPageWriter`) makes the pages: the OpusHead page with
/// the encoder's real pre-skip (its lookahead), OpusTags (tags, and the cover as a
/// METADATA_BLOCK_PICTURE) on pages of their own, then audio pages of about 200 ms whose granule
/// counts decoded samples; `finish` pads the last frame and lowers the EOS page's granule to
/// pre-skip + the samples given, so a decoder gives back exactly them. (libopusenc did this
/// before at 1.14x ffmpeg's CPU for the same libopus calls.) Not thread-safe: one thread owns it.
public final class OggOpusEncoder: AudioEncoder {
    public let channels: Int
    public let kbps: Int
    /// Opus runs at 48 kHz; other rates are resampled before (libsoxr, by the caller).
    public static let sampleRate = OpusEncoder.sampleRate
    public var sampleRate: Int { Self.sampleRate }
    /// Samples to drop at the start of the decode (OpusHead's pre-skip).
    public var preSkip: Int { opus.lookahead }
    /// Packets held before a page goes out: 10 frames, 200 ms, so a listener of an encode in
    /// progress gets audio as it is made and pages stay near 4 KB at 128 kbit/s.
    static let packetsPerPage = 10

    private let opus: OpusEncoder
    private var pager: OggPageWriter
    /// Header pages not yet handed out (they go with the first `encode`, or `headerPages`).
    private var pendingPages: [UInt8] = []
    /// Input samples not yet a whole frame, from `queuedStart` on.
    private var queued: [Float] = []
    private var queuedStart = 0
    private var packet: [UInt8] = []
    /// Samples given (per channel), and frames encoded.
    private var inputFrames = 0
    private var encodedFrames = 0
    private var finished = false

    /// An encoder for `channels` (1 or 2) at `kbps` (6...510) with the Vorbis comments `tags`
    /// (`TITLE`, `ARTIST`...; empty values left out) and, when given, `cover` as the front cover;
    /// `constantBitrate`: hard CBR, every 20 ms packet `kbps` × 2.5 bytes (a length known ahead: `estimate=1`).
    public init(channels: Int, kbps: Int, tags: [(String, String)], cover: EmbeddedPicture? = nil, constantBitrate: Bool = false,
                serial: UInt32 = UInt32.random(in: 0...UInt32.max)) throws(EncoderError) {
        guard channels == 1 || channels == 2 else { throw EncoderError(message: "Opus here carries 1 or 2 channels, not \(channels)") }
        guard (6...510).contains(kbps) else { throw EncoderError(message: "bitrate \(kbps) kbit/s is outside 6...510") }
        do {
            opus = try OpusEncoder(channels: channels, bitsPerSecond: kbps * 1000, constantBitrate: constantBitrate)
        } catch {
            throw EncoderError(message: error.message)
        }
        self.channels = channels
        self.kbps = kbps
        pager = OggPageWriter(serial: serial)
        let head = OpusHead(version: 1, channels: channels, preSkip: opus.lookahead, inputSampleRate: Self.sampleRate,
                            outputGainQ78: 0, mappingFamily: 0, streamCount: 1, coupledCount: channels - 1,
                            channelMapping: Array(0..<UInt8(channels)))
        let comment = VorbisComment(
            vendor: OpusEncoder.version,
            fields: tags.filter { !$0.1.isEmpty }.map { VorbisComment.Field(name: $0.0, value: $0.1) },
            pictures: cover.map { [FLACPicture(pictureType: 3, mimeType: $0.mimeType, data: $0.data)] } ?? [])
        // RFC 7845 §3: the ID header alone on the first page, the comment header from the second
        // page on, finishing its last page (audio starts on a page of its own); both at granule 0.
        pager.append(packet: head.bytes, granule: 0, to: &pendingPages)
        pager.flush(to: &pendingPages)
        pager.append(packet: Array("OpusTags".utf8) + comment.bytes, granule: 0, to: &pendingPages)
        pager.flush(to: &pendingPages)
        queued.reserveCapacity(OpusEncoder.frameSize * channels * 8)
    }

    /// The header pages, for a caller that sends them before any audio (the response's first bytes).
    public func headerPages(appendingTo output: inout [UInt8]) {
        output += pendingPages
        pendingPages.removeAll()
    }

    public func encode(_ samples: ArraySlice<Float>, appendingTo output: inout [UInt8]) throws(EncoderError) {
        headerPages(appendingTo: &output)
        guard !finished else { throw EncoderError(message: "encode after finish") }
        let frames = samples.count / channels
        guard frames > 0 else { return }
        let whole = samples.prefix(frames * channels)
        if whole.allSatisfy({ abs($0) <= LAMEEncoder.sampleLimit }) {
            queued.append(contentsOf: whole)
        } else {
            // NaN and absurd values are not audio: clamped as for libmp3lame.
            for sample in whole { queued.append(LAMEEncoder.sane(sample)) }
        }
        inputFrames += frames
        try encodeQueuedFrames(to: &output)
    }

    public func finish(appendingTo output: inout [UInt8]) throws(EncoderError) {
        headerPages(appendingTo: &output)
        guard !finished else { return }
        finished = true
        // Silence after the end, until the encoded frames hold pre-skip + every sample given: the
        // encoder's delay pushes the last input samples that far into the output.
        let needed = opus.lookahead + inputFrames
        let missing = max(0, (needed + OpusEncoder.frameSize - 1) / OpusEncoder.frameSize - encodedFrames)
        let queuedFrames = (queued.count - queuedStart) / channels
        let padding = missing * OpusEncoder.frameSize - queuedFrames
        if padding > 0 { queued.append(contentsOf: repeatElement(0, count: padding * channels)) }
        try encodeQueuedFrames(to: &output, pageWhenFull: false)
        // The end trim (RFC 7845 §4.4): the last page's granule is where the samples end.
        pager.setGranuleOfHeldPackets(Int64(needed))
        pager.flush(endOfStream: true, to: &output)
    }

    /// Encodes every whole frame queued; a page goes out each `packetsPerPage` packets unless the
    /// caller holds them for the last page.
    private func encodeQueuedFrames(to output: inout [UInt8], pageWhenFull: Bool = true) throws(EncoderError) {
        let frameSamples = OpusEncoder.frameSize * channels
        while queued.count - queuedStart >= frameSamples {
            packet.removeAll(keepingCapacity: true)
            do {
                try opus.encode(frame: queued[queuedStart..<(queuedStart + frameSamples)], appendingTo: &packet)
            } catch {
                throw EncoderError(message: error.message)
            }
            queuedStart += frameSamples
            encodedFrames += 1
            pager.append(packet: packet, granule: Int64(encodedFrames * OpusEncoder.frameSize), to: &output)
            if pageWhenFull, pager.heldPackets >= Self.packetsPerPage { pager.flush(to: &output) }
        }
        queued.removeSubrange(0..<queuedStart)
        queuedStart = 0
    }
}
