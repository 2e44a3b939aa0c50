/// The MPEG audio version a frame header announces.
public enum MPEGVersion: Int, Sendable, Codable, CustomStringConvertible {
    case mpeg1 = 1, mpeg2 = 2, mpeg25 = 25

    public var description: String {
        switch self {
        case .mpeg1: return "MPEG-1"
        case .mpeg2: return "MPEG-2"
        case .mpeg25: return "MPEG-2.5"
        }
    }
}

/// The MPEG audio layer (I, II, III) a frame header announces.
public enum MPEGLayer: Int, Sendable, Codable {
    case layer1 = 1, layer2 = 2, layer3 = 3

    /// Codec name as used in catalogs and `--info` ("mp1", "mp2", "mp3").
    public var codecName: String { "mp\(rawValue)" }
}

/// The channel mode of an MPEG audio frame.
public enum MPEGChannelMode: Int, Sendable, Codable {
    case stereo = 0, jointStereo = 1, dualChannel = 2, mono = 3
}

/// One decoded 4-byte MPEG audio frame header (ISO 11172-3 / 13818-3, plus MPEG-2.5).
public struct MPEGFrameHeader: Sendable, Equatable {
    public var version: MPEGVersion
    public var layer: MPEGLayer
    /// True when a 16-bit CRC follows the header (protection bit is 0).
    public var hasCRC: Bool
    /// Bitrate in bit/s; 0 for free-format frames.
    public var bitrate: Int
    public var bitrateIndex: Int
    public var sampleRate: Int
    public var sampleRateIndex: Int
    public var padding: Bool
    public var channelMode: MPEGChannelMode
    public var modeExtension: Int
    public var copyright: Bool
    public var original: Bool
    public var emphasis: Int
    /// The raw 32-bit header.
    public var raw: UInt32

    /// Bytes in the header (4) and the CRC that follows it when present.
    public var headerLength: Int { hasCRC ? 6 : 4 }
    public var channels: Int { channelMode == .mono ? 1 : 2 }
    public var isFreeFormat: Bool { bitrateIndex == 0 }

    /// PCM samples (per channel) one frame decodes to: 384, 1152, or 576 for MPEG-2/2.5 layer III.
    public var samplesPerFrame: Int {
        switch layer {
        case .layer1: return 384
        case .layer2: return 1152
        case .layer3: return version == .mpeg1 ? 1152 : 576
        }
    }

    /// Size of one padding slot: 4 bytes in layer I, 1 byte otherwise.
    public var slotSize: Int { layer == .layer1 ? 4 : 1 }

    /// Length in bytes of the whole frame (header included), or nil for free format, whose
    /// length is found from the distance to the next sync (see `MPEGFrameScanner`).
    public var frameLength: Int? {
        guard bitrate > 0 else { return nil }
        return Self.frameLength(layer: layer, samplesPerFrame: samplesPerFrame, bitrate: bitrate,
                                sampleRate: sampleRate, padding: padding)
    }

    static func frameLength(layer: MPEGLayer, samplesPerFrame: Int, bitrate: Int, sampleRate: Int,
                            padding: Bool) -> Int {
        if layer == .layer1 {
            return (12 * bitrate / sampleRate + (padding ? 1 : 0)) * 4
        }
        return samplesPerFrame / 8 * bitrate / sampleRate + (padding ? 1 : 0)
    }

    /// Bytes of layer III side information after the header (and CRC); where Xing/Info sits.
    public var sideInfoLength: Int {
        guard layer == .layer3 else { return 0 }
        if version == .mpeg1 { return channelMode == .mono ? 17 : 32 }
        return channelMode == .mono ? 9 : 17
    }

    /// Duration of one frame in seconds.
    public var frameDuration: Double { Double(samplesPerFrame) / Double(sampleRate) }

    /// True when `other` can belong to the same stream: same version, layer and sample rate
    /// (and both free format or neither). The rule used to confirm a sync.
    public func isCompatible(with other: MPEGFrameHeader) -> Bool {
        version == other.version && layer == other.layer && sampleRateIndex == other.sampleRateIndex
            && isFreeFormat == other.isFreeFormat
    }

    // Bitrates in kbit/s by [version row][layer - 1][index].
    private static let bitratesV1: [[Int]] = [
        [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
        [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
    ]
    private static let bitratesV2: [[Int]] = [
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    ]
    private static let sampleRatesV1 = [44100, 48000, 32000]

    /// Decodes a header from its 32 bits; nil when the bits cannot be a frame header
    /// (no sync, reserved version/layer, bad bitrate index 15, reserved sample rate, reserved emphasis).
    public init?(raw: UInt32) {
        guard raw & 0xFFE0_0000 == 0xFFE0_0000 else { return nil }
        let versionBits = (raw >> 19) & 3
        let layerBits = (raw >> 17) & 3
        let bitrateIndex = Int((raw >> 12) & 0xF)
        let sampleRateIndex = Int((raw >> 10) & 3)
        let emphasis = Int(raw & 3)
        guard versionBits != 1, layerBits != 0, bitrateIndex != 15, sampleRateIndex != 3, emphasis != 2 else {
            return nil
        }
        let version: MPEGVersion = versionBits == 3 ? .mpeg1 : (versionBits == 2 ? .mpeg2 : .mpeg25)
        let layer: MPEGLayer = layerBits == 3 ? .layer1 : (layerBits == 2 ? .layer2 : .layer3)
        let table = version == .mpeg1 ? Self.bitratesV1 : Self.bitratesV2
        self.version = version
        self.layer = layer
        self.hasCRC = (raw >> 16) & 1 == 0
        self.bitrateIndex = bitrateIndex
        self.bitrate = table[layer.rawValue - 1][bitrateIndex] * 1000
        self.sampleRateIndex = sampleRateIndex
        let divisor = version == .mpeg1 ? 1 : (version == .mpeg2 ? 2 : 4)
        self.sampleRate = Self.sampleRatesV1[sampleRateIndex] / divisor
        self.padding = (raw >> 9) & 1 == 1
        self.channelMode = MPEGChannelMode(rawValue: Int((raw >> 6) & 3)) ?? .stereo
        self.modeExtension = Int((raw >> 4) & 3)
        self.copyright = (raw >> 3) & 1 == 1
        self.original = (raw >> 2) & 1 == 1
        self.emphasis = emphasis
        self.raw = raw
        // Layer II forbids some bitrate/channel-mode pairs; they are still decodable by
        // mpg123, so they are accepted here rather than losing sync on them.
    }

    /// Reads a header from the first 4 bytes of `bytes`; nil when fewer than 4 bytes are
    /// available, throws `.invalid` when the 4 bytes are not a frame header.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> MPEGFrameHeader? {
        guard bytes.count >= 4 else { return nil }
        let raw = readRaw(bytes, at: bytes.startIndex)
        guard let header = MPEGFrameHeader(raw: raw) else {
            throw FormatError.invalid(component: "mpeg", reason: "not an MPEG audio frame header", offset: 0)
        }
        return header
    }

    /// The 32 big-endian bits at `index` (caller guarantees 4 bytes are there).
    @inline(__always)
    static func readRaw(_ bytes: ArraySlice<UInt8>, at index: Int) -> UInt32 {
        UInt32(bytes[index]) << 24 | UInt32(bytes[index + 1]) << 16 | UInt32(bytes[index + 2]) << 8
            | UInt32(bytes[index + 3])
    }
}
