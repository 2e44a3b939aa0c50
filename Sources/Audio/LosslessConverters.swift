import StreamShared

/// AIFF/AIFF-C samples through StreamShared's `AIFFSampleConverter` (no decoder): blocks of
/// 4096 frames, a partial frame kept for the next bytes.
public struct AIFFConverter: PacketConverter {
    public let format: AIFFFormat
    private let converter: AIFFSampleConverter
    let framesPerUnit = 4096
    private var pending = PendingBytes()
    private var scratch: [Float] = []

    public init(format: AIFFFormat) {
        self.format = format
        converter = AIFFSampleConverter(format: format)
    }

    public mutating func restart(at offset: Int) throws { pending.reset() }

    public mutating func append(_ bytes: [UInt8]) { pending.append(bytes) }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        let unread = pending.unread
        let blockAlign = max(1, format.blockAlign)
        let available = unread.count / blockAlign
        guard available >= framesPerUnit || (isComplete && available > 0) else { return false }
        let frames = min(framesPerUnit, available)
        scratch.removeAll(keepingCapacity: true)
        converter.convert(unread.prefix(frames * blockAlign), appendingTo: &scratch)
        pending.consume(frames * blockAlign)
        scratch.withUnsafeBufferPointer(body)
        return true
    }
}

/// Apple Lossless in MP4: the samples the track's tables locate, each decoded by StreamShared's
/// `ALACDecoder` (no C library; bit-exact against ffmpeg) and scaled by 2^-(depth-1), exact up
/// to 24 bits. Packets are independent, so any sample can follow a restart. 3-8 channels come
/// out of the decoder in ALAC's element order (centre first) and are put in WAV's order.
public struct MP4ALACConverter: PacketConverter {
    /// Where each of ALAC's channels goes in WAV order, by channel count (ALAC's layouts:
    /// 3.0 C L R; 4.0 C L R Cs; 5.0 C L R Ls Rs; 5.1 C L R Ls Rs LFE; 6.1 C L R Ls Rs Cs LFE;
    /// 7.1 C Lc Rc L R Ls Rs LFE), and the speaker mask of the result.
    public static func wavOrder(channels: Int) -> (positions: [Int], mask: UInt32)? {
        switch channels {
        case 3: return ([2, 0, 1], 0x7)
        case 4: return ([2, 0, 1, 3], 0x107)
        case 5: return ([2, 0, 1, 3, 4], 0x37)
        case 6: return ([2, 0, 1, 4, 5, 3], 0x3F)
        case 7: return ([2, 0, 1, 4, 5, 6, 3], 0x13F)
        case 8: return ([2, 6, 7, 0, 1, 4, 5, 3], 0xFF)
        default: return nil
        }
    }

    private let positions: [Int]?
    private var decoder: ALACDecoder
    private var window: MP4SampleWindow
    private var integers: [Int32] = []
    private var scratch: [Float] = []
    private let scale: Float

    public init(track: MP4AudioTrack, config: ALACSpecificConfig) throws {
        decoder = try ALACDecoder(config: config)
        window = MP4SampleWindow(track: track)
        scale = 1 / Float(1 << UInt64(max(1, min(32, config.bitDepth)) - 1))
        positions = Self.wavOrder(channels: config.numChannels)?.positions
    }

    public mutating func restart(at offset: Int) throws { window.restart(at: offset) }

    public mutating func append(_ bytes: [UInt8]) { window.append(bytes) }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        let packet: ArraySlice<UInt8>
        switch window.next() {
        case .ended, .needMore: return false
        case .skipped: return true
        case .sample(let bytes): packet = bytes
        }
        try decoder.decode(packet: packet, into: &integers)
        scratch.removeAll(keepingCapacity: true)
        if let positions {
            let channels = positions.count
            scratch.append(contentsOf: repeatElement(0, count: integers.count / channels * channels))
            for frame in 0..<(integers.count / channels) {
                let base = frame * channels
                for (channel, position) in positions.enumerated() { scratch[base + position] = Float(integers[base + channel]) * scale }
            }
        } else {
            scratch.reserveCapacity(integers.count)
            for value in integers { scratch.append(Float(value) * scale) }
        }
        if !scratch.isEmpty { scratch.withUnsafeBufferPointer(body) }
        return true
    }
}

extension FLACConverter {
    /// WAVEFORMATEXTENSIBLE's speaker mask of FLAC's channel orders for 3-8 channels (RFC 9639
    /// §9.1.3), which are WAV's: 3.0, quad, 5.0, 5.1, 6.1, 7.1; nil for mono and stereo.
    public static func wavChannelMask(channels: Int) -> UInt32? {
        switch channels {
        case 3: return 0x7        // FL FR FC
        case 4: return 0x33       // FL FR BL BR
        case 5: return 0x37       // FL FR FC BL BR
        case 6: return 0x3F       // FL FR FC LFE BL BR
        case 7: return 0x70F      // FL FR FC LFE BC SL SR
        case 8: return 0x63F      // FL FR FC LFE BL BR SL SR
        default: return nil
        }
    }
}
