internal import CVorbis
import StreamShared

/// libvorbis's synthesis API, wrapped once: the three header packets, then audio packets in,
/// float PCM out in WAV channel order. Our own Ogg parser finds the packets; libogg lends only
/// its `ogg_packet` struct.
public final class VorbisDecoder {
    private let info = UnsafeMutablePointer<vorbis_info>.allocate(capacity: 1)
    private let comment = UnsafeMutablePointer<vorbis_comment>.allocate(capacity: 1)
    private let dsp = UnsafeMutablePointer<vorbis_dsp_state>.allocate(capacity: 1)
    private let block = UnsafeMutablePointer<vorbis_block>.allocate(capacity: 1)
    private var headersRead = 0
    private var packetNumber: Int64 = 0
    /// Interleaved samples handed to the caller, `chunkFrames` frames at a time.
    private var interleaved: UnsafeMutableBufferPointer<Float>
    private var wavOrder: [Int]?
    public private(set) var channels = 0
    public private(set) var sampleRate = 0
    /// Audio packets libvorbis refused (skipped, as libvorbisfile does).
    public private(set) var damagedPackets = 0
    static let chunkFrames = 4096

    public init() {
        vorbis_info_init(info)
        vorbis_comment_init(comment)
        interleaved = .allocate(capacity: 0)
    }

    deinit {
        if isReady {
            vorbis_block_clear(block)
            vorbis_dsp_clear(dsp)
        }
        vorbis_comment_clear(comment)
        vorbis_info_clear(info)
        info.deallocate()
        comment.deallocate()
        dsp.deallocate()
        block.deallocate()
        interleaved.deallocate()
    }

    /// True once the identification, comment and setup headers are read.
    public var isReady: Bool { headersRead == 3 }

    /// Reads the next of the three header packets; throws when libvorbis refuses it.
    public func header(_ packet: ArraySlice<UInt8>) throws {
        guard !isReady else { return }
        let result = withPacket(packet, first: headersRead == 0) { vorbis_synthesis_headerin(info, comment, $0) }
        guard result == 0 else { throw DecoderError(message: "Vorbis header \(headersRead + 1) refused by libvorbis (\(result))") }
        headersRead += 1
        guard isReady else { return }
        channels = Int(info.pointee.channels)
        sampleRate = Int(info.pointee.rate)
        guard channels > 0, sampleRate > 0, vorbis_synthesis_init(dsp, info) == 0 else {
            headersRead = 2
            throw DecoderError(message: "Vorbis decoder setup failed (\(channels) channels at \(sampleRate) Hz)")
        }
        vorbis_block_init(dsp, block)
        wavOrder = VorbisChannelOrder.wavOrder(channels: channels)
        interleaved.deallocate()
        interleaved = .allocate(capacity: Self.chunkFrames * channels)
    }

    /// Forgets the overlap with the previous block (after a seek): the next packet gives no samples.
    public func reset() {
        if isReady { vorbis_synthesis_restart(dsp) }
    }

    /// Decodes one audio packet; `body` receives its interleaved samples in pieces (valid during the call).
    public func decode(_ packet: ArraySlice<UInt8>, _ body: (UnsafeBufferPointer<Float>) -> Void) {
        guard isReady else { return }
        let accepted = withPacket(packet, first: false) { vorbis_synthesis(block, $0) } == 0
        if accepted { vorbis_synthesis_blockin(dsp, block) } else { damagedPackets += 1 }
        var pcm: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
        while true {
            let available = Int(vorbis_synthesis_pcmout(dsp, &pcm))
            guard available > 0, let pcm else { return }
            let frames = min(available, Self.chunkFrames)
            // Raw pointers, and stereo written in one pass: the bounds-checked strided loop was 2 %
            // of a Vorbis decode's CPU.
            guard let out = interleaved.baseAddress else { return }
            if channels == 2, wavOrder == nil, let left = pcm[0], let right = pcm[1] {
                for frame in 0..<frames {
                    out[2 * frame] = left[frame]
                    out[2 * frame + 1] = right[frame]
                }
            } else {
                for c in 0..<channels {
                    guard let source = pcm[wavOrder?[c] ?? c] else { continue }
                    var target = out + c
                    for frame in 0..<frames {
                        target.pointee = source[frame]
                        target += channels
                    }
                }
            }
            body(UnsafeBufferPointer(rebasing: interleaved[0..<(frames * channels)]))
            vorbis_synthesis_read(dsp, Int32(frames))
        }
    }

    /// `packet` as libogg's struct for the length of `body` (libvorbis only reads it, so the
    /// packet's own storage is lent, not copied).
    private func withPacket(_ packet: ArraySlice<UInt8>, first: Bool, _ body: (UnsafeMutablePointer<ogg_packet>) -> Int32) -> Int32 {
        defer { packetNumber += 1 }
        return packet.withUnsafeBufferPointer { buffer in
            var op = ogg_packet(packet: buffer.baseAddress.map { UnsafeMutablePointer(mutating: $0) }, bytes: buffer.count,
                                b_o_s: first ? 1 : 0, e_o_s: 0, granulepos: -1, packetno: packetNumber)
            return body(&op)
        }
    }
}
