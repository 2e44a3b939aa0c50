/// MPEG-4 AudioSpecificConfig (ISO 14496-3 1.6.2.1): what an AAC decoder needs to start,
/// including explicit and backward-compatible SBR/PS signalling (HE-AAC v1/v2).
public struct AudioSpecificConfig: Sendable, Equatable {
    /// Audio object type as signalled first (5 = SBR, 29 = PS for explicit HE-AAC); escaped
    /// types (31 + 6 bits) are stored as 32 + the 6-bit value.
    public var objectType: Int
    /// Core sample rate.
    public var sampleRate: Int
    /// The sampling-frequency index, or 15 when the rate is explicit.
    public var sampleRateIndex: Int
    /// 0 means the layout is in `programConfig`.
    public var channelConfiguration: Int
    /// 960-sample frames instead of 1024 (480 instead of 512 for AAC-LD).
    public var frameLengthFlag: Bool
    public var sbrPresent: Bool = false
    public var psPresent: Bool = false
    /// Output rate of the SBR tool.
    public var extensionSampleRate: Int?
    /// The underlying object type (2 for HE-AAC over AAC-LC).
    public var coreObjectType: Int
    /// The channel layout when `channelConfiguration` is 0.
    public var programConfig: AACProgramConfig?

    public init(objectType: Int, sampleRate: Int, sampleRateIndex: Int, channelConfiguration: Int,
                frameLengthFlag: Bool, sbrPresent: Bool = false, psPresent: Bool = false,
                extensionSampleRate: Int? = nil, coreObjectType: Int? = nil, programConfig: AACProgramConfig? = nil) {
        self.objectType = objectType
        self.sampleRate = sampleRate
        self.sampleRateIndex = sampleRateIndex
        self.channelConfiguration = channelConfiguration
        self.frameLengthFlag = frameLengthFlag
        self.sbrPresent = sbrPresent
        self.psPresent = psPresent
        self.extensionSampleRate = extensionSampleRate
        self.coreObjectType = coreObjectType ?? objectType
        self.programConfig = programConfig
    }

    /// The rate the decoder outputs: the SBR rate when SBR is on.
    public var outputSampleRate: Int { sbrPresent ? (extensionSampleRate ?? sampleRate * 2) : sampleRate }

    /// Output channels: from the channel configuration (7 means 7.1 = 8) or the program config
    /// element; PS makes mono stereo. 0 when neither says (an ADTS header with configuration 0).
    public var channels: Int {
        let base = programConfig?.channels ?? Self.channelCount(configuration: channelConfiguration) ?? 0
        return psPresent && base <= 1 ? 2 : base
    }

    /// Samples per channel per frame at the output rate.
    public var samplesPerFrame: Int {
        // AAC-LD halves the frame (512/480) to cut delay; SBR doubles the output rate.
        let core = coreObjectType == 23 ? (frameLengthFlag ? 480 : 512) : (frameLengthFlag ? 960 : 1024)
        return core * (sbrPresent ? 2 : 1)
    }

    /// A short profile name: "LC", "HE-AAC", "HE-AACv2", "Main", ...
    public var profileName: String {
        if psPresent { return "HE-AACv2" }
        if sbrPresent { return "HE-AAC" }
        switch coreObjectType {
        case 1: return "Main"
        case 2: return "LC"
        case 3: return "SSR"
        case 4: return "LTP"
        case 23: return "LD"
        case 39: return "ELD"
        default: return "AOT \(coreObjectType)"
        }
    }

    /// Channels for a channel configuration (ISO 14496-3 table 1.19, with the 2013 additions
    /// 11...14); nil for 0 (program config element) and the reserved values.
    public static func channelCount(configuration: Int) -> Int? {
        switch configuration {
        case 1...6: return configuration
        case 7, 12, 14: return 8      // 7.1 in its three speaker arrangements
        case 11: return 7             // 6.1
        case 13: return 24            // 22.2
        default: return nil
        }
    }

    static let component = "aac-asc"

    /// Parses a whole AudioSpecificConfig (from an MP4 esds or similar). The config is a
    /// complete blob, so running out of bits throws like any other defect.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> AudioSpecificConfig {
        var bits = BitReader(bytes, component: component)
        var objectType = try readObjectType(&bits)
        let (rateIndex, rate) = try readSampleRate(&bits)
        let channelConfiguration = Int(try bits.read(4))
        if channelConfiguration != 0 && channelCount(configuration: channelConfiguration) == nil {
            throw FormatError.invalid(component: component, reason: "reserved channel configuration \(channelConfiguration)",
                                      offset: bits.bitOffset / 8)
        }
        var sbr = false, ps = false
        var extensionRate: Int?
        let signalled = objectType
        if objectType == 5 || objectType == 29 {
            // Explicit hierarchical signalling: the extension rate, then the core object type.
            sbr = true
            ps = objectType == 29
            extensionRate = try readSampleRate(&bits).rate
            objectType = try readObjectType(&bits)
            if objectType == 22 { _ = try bits.read(4) }   // ER BSAC extension channel config
        }
        var frameLengthFlag = false
        var programConfig: AACProgramConfig?
        switch objectType {
        case 1, 2, 3, 4, 6, 7, 17, 19, 20, 21, 22, 23:
            // GASpecificConfig
            frameLengthFlag = try bits.readBool()
            // dependsOnCoreCoder: a 14-bit coreCoderDelay follows. Some encoders set the flag and
            // write no delay (the config ends first); libfaad2 and ffmpeg read on, and so do we.
            if try bits.readBool(), bits.remainingBits >= 14 + 1 { try bits.skip(14) }
            let extensionFlag = try bits.readBool()
            if channelConfiguration == 0 {
                programConfig = try AACProgramConfig.parse(&bits)
            }
            if objectType == 6 || objectType == 20 { try bits.skip(3) }   // layerNr
            if extensionFlag {
                if objectType == 22 { try bits.skip(16) }   // numOfSubFrame, layer_length
                if [17, 19, 20, 23].contains(objectType) { try bits.skip(3) }   // resilience flags
                try bits.skip(1)   // extensionFlag3
            }
        default:
            throw FormatError.unsupported(component: component, reason: "audio object type \(objectType)")
        }
        switch objectType {
        case 17, 19, 20, 21, 22, 23, 24, 25, 26, 27, 39:
            let epConfig = try bits.read(2)
            if epConfig == 2 || epConfig == 3 {
                throw FormatError.unsupported(component: component, reason: "error protection config \(epConfig)")
            }
        default: break
        }
        // Backward-compatible signalling: a sync extension after the core config, which
        // decoders that do not know SBR simply never read.
        if !sbr, bits.remainingBits >= 16 {
            var probe = bits
            if try probe.read(11) == 0x2B7 {
                let extensionType = try readObjectType(&probe)
                if extensionType == 5 {
                    if try probe.readBool() {
                        sbr = true
                        extensionRate = try readSampleRate(&probe).rate
                        if probe.remainingBits >= 12, try probe.read(11) == 0x548 {
                            ps = try probe.readBool()
                        }
                    }
                }
            }
        }
        guard rate > 0 else {
            throw FormatError.invalid(component: component, reason: "sample rate 0", offset: 0)
        }
        if let extensionRate, extensionRate <= 0 {
            throw FormatError.invalid(component: component, reason: "SBR sample rate 0", offset: 0)
        }
        return AudioSpecificConfig(objectType: signalled, sampleRate: rate, sampleRateIndex: rateIndex,
                                   channelConfiguration: channelConfiguration, frameLengthFlag: frameLengthFlag,
                                   sbrPresent: sbr, psPresent: ps, extensionSampleRate: extensionRate,
                                   coreObjectType: objectType, programConfig: programConfig)
    }

    /// GetAudioObjectType(): 5 bits, 31 escapes to 32 + 6 more bits.
    static func readObjectType(_ bits: inout BitReader) throws -> Int {
        let value = Int(try bits.read(5))
        return value == 31 ? 32 + Int(try bits.read(6)) : value
    }

    /// A 4-bit sampling-frequency index, 15 meaning a 24-bit rate follows.
    static func readSampleRate(_ bits: inout BitReader) throws -> (index: Int, rate: Int) {
        let index = Int(try bits.read(4))
        if index == 15 { return (15, Int(try bits.read(24))) }
        guard index < aacSampleRates.count else {
            throw FormatError.invalid(component: component, reason: "reserved sample-rate index \(index)",
                                      offset: bits.bitOffset / 8)
        }
        return (index, aacSampleRates[index])
    }
}

/// The channel layout of an AAC program_config_element (ISO 14496-3 4.4.1.1), used when the
/// channel configuration is 0. Only the element counts are kept: what a player needs to size
/// its output.
public struct AACProgramConfig: Sendable, Equatable {
    /// Channels in front, side and back elements (a channel pair element counts 2).
    public var frontChannels: Int
    public var sideChannels: Int
    public var backChannels: Int
    public var lfeChannels: Int
    /// The element's own object type field (profile, 0...3) and sampling-frequency index.
    public var profile: Int
    public var sampleRateIndex: Int

    public init(frontChannels: Int, sideChannels: Int, backChannels: Int, lfeChannels: Int,
                profile: Int = 1, sampleRateIndex: Int = 4) {
        self.frontChannels = frontChannels
        self.sideChannels = sideChannels
        self.backChannels = backChannels
        self.lfeChannels = lfeChannels
        self.profile = profile
        self.sampleRateIndex = sampleRateIndex
    }

    /// All output channels.
    public var channels: Int { frontChannels + sideChannels + backChannels + lfeChannels }

    /// Reads the element; `bits` must be positioned inside an AudioSpecificConfig that starts
    /// at bit 0 of its bytes, because byte_alignment() is relative to that start.
    static func parse(_ bits: inout BitReader) throws -> AACProgramConfig {
        _ = try bits.read(4)                                  // element_instance_tag
        let profile = Int(try bits.read(2))
        let rateIndex = Int(try bits.read(4))
        let front = Int(try bits.read(4)), side = Int(try bits.read(4)), back = Int(try bits.read(4))
        let lfe = Int(try bits.read(2)), assoc = Int(try bits.read(3)), cc = Int(try bits.read(4))
        if try bits.readBool() { try bits.skip(4) }           // mono_mixdown_element_number
        if try bits.readBool() { try bits.skip(4) }           // stereo_mixdown_element_number
        if try bits.readBool() { try bits.skip(3) }           // matrix_mixdown_idx, pseudo_surround_enable
        func elementChannels(_ count: Int) throws(FormatError) -> Int {
            var channels = 0
            for _ in 0..<count {
                channels += try bits.readBool() ? 2 : 1         // is_cpe
                try bits.skip(4)                              // element_tag_select
            }
            return channels
        }
        let frontChannels = try elementChannels(front)
        let sideChannels = try elementChannels(side)
        let backChannels = try elementChannels(back)
        try bits.skip(4 * lfe + 4 * assoc + 5 * cc)           // tags (and cc is_ind_sw flags)
        try bits.skip((8 - bits.bitOffset % 8) % 8)           // byte_alignment()
        let commentBytes = Int(try bits.read(8))
        try bits.skip(8 * commentBytes)
        let config = AACProgramConfig(frontChannels: frontChannels, sideChannels: sideChannels,
                                      backChannels: backChannels, lfeChannels: lfe,
                                      profile: profile, sampleRateIndex: rateIndex)
        guard config.channels > 0 else {
            throw FormatError.invalid(component: AudioSpecificConfig.component,
                                      reason: "program config element with no channels", offset: bits.bitOffset / 8)
        }
        return config
    }
}
