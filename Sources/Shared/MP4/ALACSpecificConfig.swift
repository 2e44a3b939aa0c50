/// The ALAC magic cookie (ALACSpecificConfig, 24 bytes big-endian): what an Apple Lossless
/// decoder needs before the first packet. MP4 carries it in the sample entry's `alac` box
/// (after version/flags); QuickTime wraps it in `wave` as a `frma`/`alac` atom pair.
public struct ALACSpecificConfig: Sendable, Equatable {
    /// PCM frames per packet (4096 by default).
    public var frameLength: Int
    /// Bitstream version; 0 is the only one defined.
    public var compatibleVersion: Int
    /// Bits per decoded sample: 16, 20, 24 or 32.
    public var bitDepth: Int
    /// Rice parameters: history multiplier (pb), initial history (mb), limit (kb).
    public var riceHistoryMult: Int
    public var riceInitialHistory: Int
    public var riceLimit: Int
    public var numChannels: Int
    /// Longest run of identical samples the encoder coded (255 by default).
    public var maxRun: Int
    /// Largest packet in bytes (0 when unknown).
    public var maxFrameBytes: Int
    /// Average bit rate in bits a second (0 when unknown).
    public var avgBitRate: Int
    public var sampleRate: Int

    public init(frameLength: Int = 4096, compatibleVersion: Int = 0, bitDepth: Int = 16, riceHistoryMult: Int = 40,
                riceInitialHistory: Int = 10, riceLimit: Int = 14, numChannels: Int = 2, maxRun: Int = 255,
                maxFrameBytes: Int = 0, avgBitRate: Int = 0, sampleRate: Int = 44_100) {
        self.frameLength = frameLength
        self.compatibleVersion = compatibleVersion
        self.bitDepth = bitDepth
        self.riceHistoryMult = riceHistoryMult
        self.riceInitialHistory = riceInitialHistory
        self.riceLimit = riceLimit
        self.numChannels = numChannels
        self.maxRun = maxRun
        self.maxFrameBytes = maxFrameBytes
        self.avgBitRate = avgBitRate
        self.sampleRate = sampleRate
    }

    static let component = "alac-config"
    /// Bytes of the config itself.
    public static let size = 24
    /// Frames per packet beyond which a cookie is refused (the reference encoder writes 4096;
    /// a decoder allocates frameLength × channels samples per packet).
    public static let maxFrameLength = 1 << 16
    /// Channels the ALAC channel layouts define.
    public static let maxChannels = 8

    /// Parses a magic cookie as it appears anywhere ALAC is stored: the bare 24 bytes, an `alac`
    /// atom (size, type, version/flags, config), or a `frma` atom naming `alac` followed by that
    /// atom (QuickTime's `wave` contents). Bytes after the config (a `chan` layout atom) are ignored.
    public static func parse(cookie: ArraySlice<UInt8>) throws -> ALACSpecificConfig {
        var reader = ByteReader(cookie, component: component)
        if atomType(reader.rest) == "frma" {
            let size = Int(try reader.readU32BE())
            guard size >= 12, size <= reader.remaining + 4 else {
                throw FormatError.invalid(component: component, reason: "frma atom of \(size) bytes", offset: 0)
            }
            try reader.skip(4)
            let format = try reader.readFourCC()
            guard format == "alac" else {
                throw FormatError.invalid(component: component, reason: "frma names '\(format)', not alac", offset: 8)
            }
            try reader.skip(size - 12)
        }
        if atomType(reader.rest) == "alac" {
            let start = reader.offset
            let size = Int(try reader.readU32BE())
            guard size >= 12 + Self.size, size - 4 <= reader.remaining else {
                throw FormatError.invalid(component: component, reason: "alac atom of \(size) bytes", offset: start)
            }
            try reader.skip(4 + 4)                                   // type, version/flags
        }
        return try parseConfig(&reader)
    }

    /// The four-character type of an atom at the start of `bytes`, when it has a plausible size.
    static func atomType(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.count >= 8 else { return nil }
        let base = bytes.startIndex
        let type = String(decoding: bytes[(base + 4)..<(base + 8)].map { $0 < 0x80 ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
        return type == "frma" || type == "alac" ? type : nil
    }

    /// The 24 config bytes at the reader's cursor, checked.
    static func parseConfig(_ reader: inout ByteReader) throws -> ALACSpecificConfig {
        let start = reader.offset
        guard reader.remaining >= size else {
            throw FormatError.truncated(component: component, offset: start, needed: size)
        }
        var config = ALACSpecificConfig()
        config.frameLength = Int(try reader.readU32BE())
        config.compatibleVersion = Int(try reader.readU8())
        config.bitDepth = Int(try reader.readU8())
        config.riceHistoryMult = Int(try reader.readU8())
        config.riceInitialHistory = Int(try reader.readU8())
        config.riceLimit = Int(try reader.readU8())
        config.numChannels = Int(try reader.readU8())
        config.maxRun = Int(try reader.readU16BE())
        config.maxFrameBytes = Int(try reader.readU32BE())
        config.avgBitRate = Int(try reader.readU32BE())
        config.sampleRate = Int(try reader.readU32BE())

        guard config.compatibleVersion == 0 else {
            throw FormatError.unsupported(component: component, reason: "compatible version \(config.compatibleVersion)")
        }
        guard (1...maxFrameLength).contains(config.frameLength) else {
            throw FormatError.outOfRange(component: component, field: "frameLength", value: "\(config.frameLength)")
        }
        guard [16, 20, 24, 32].contains(config.bitDepth) else {
            throw FormatError.invalid(component: component, reason: "bit depth \(config.bitDepth)", offset: start + 5)
        }
        guard (1...maxChannels).contains(config.numChannels) else {
            throw FormatError.invalid(component: component, reason: "\(config.numChannels) channels", offset: start + 9)
        }
        // The Rice limit is a bit count a decoder reads at once: the reference never exceeds 32.
        guard config.riceLimit <= 32 else {
            throw FormatError.invalid(component: component, reason: "Rice limit kb \(config.riceLimit)", offset: start + 8)
        }
        guard (1...1_536_000).contains(config.sampleRate) else {
            throw FormatError.invalid(component: component, reason: "sample rate \(config.sampleRate)", offset: start + 20)
        }
        return config
    }
}

extension MP4AudioTrack {
    /// The ALAC magic cookie of an `alac` track (its sample entry's `alac` box, or the one in
    /// `wave`); throws when the track is not ALAC or the cookie is missing or broken.
    public func alacConfig() throws -> ALACSpecificConfig {
        guard codec == "alac" else {
            throw FormatError.invalid(component: ALACSpecificConfig.component, reason: "track codec is '\(codec)', not alac",
                                      offset: 0)
        }
        return try ALACSpecificConfig.parse(cookie: decoderSpecificInfo[...])
    }
}
