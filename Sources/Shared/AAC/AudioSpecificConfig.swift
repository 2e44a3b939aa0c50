/// MPEG-4 AudioSpecificConfig (ISO 14496-3 1.6.2.1): what an AAC decoder needs to start,
/// including explicit and backward-compatible SBR/PS signalling (HE-AAC v1/v2).
public struct AudioSpecificConfig: Sendable, Equatable {
    /// Audio object type as signalled first (5 = SBR, 29 = PS for explicit HE-AAC).
    public var objectType: Int
    /// Core sample rate.
    public var sampleRate: Int
    /// The sampling-frequency index, or 15 when the rate is explicit.
    public var sampleRateIndex: Int
    public var channelConfiguration: Int
    /// 960-sample frames instead of 1024.
    public var frameLengthFlag: Bool
    public var sbrPresent: Bool = false
    public var psPresent: Bool = false
    /// Output rate of the SBR tool.
    public var extensionSampleRate: Int?
    /// The underlying object type (2 for HE-AAC over AAC-LC).
    public var coreObjectType: Int

    public init(objectType: Int, sampleRate: Int, sampleRateIndex: Int, channelConfiguration: Int,
                frameLengthFlag: Bool, sbrPresent: Bool = false, psPresent: Bool = false,
                extensionSampleRate: Int? = nil, coreObjectType: Int? = nil) {
        self.objectType = objectType
        self.sampleRate = sampleRate
        self.sampleRateIndex = sampleRateIndex
        self.channelConfiguration = channelConfiguration
        self.frameLengthFlag = frameLengthFlag
        self.sbrPresent = sbrPresent
        self.psPresent = psPresent
        self.extensionSampleRate = extensionSampleRate
        self.coreObjectType = coreObjectType ?? objectType
    }

    /// The rate the decoder outputs: the SBR rate when SBR is on.
    public var outputSampleRate: Int { sbrPresent ? (extensionSampleRate ?? sampleRate * 2) : sampleRate }

    /// Output channels: from the channel configuration (7 means 7.1 = 8); PS makes mono stereo.
    public var channels: Int {
        let base = channelConfiguration == 7 ? 8 : channelConfiguration
        return psPresent && base <= 1 ? 2 : base
    }

    /// Samples per channel per frame at the output rate.
    public var samplesPerFrame: Int { (frameLengthFlag ? 960 : 1024) * (sbrPresent ? 2 : 1) }

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

    static let component = "aac-asc"

    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> AudioSpecificConfig {
        var bits = BitReader(bytes, component: component)
        var objectType = try readObjectType(&bits)
        let (rateIndex, rate) = try readSampleRate(&bits)
        let channelConfiguration = Int(try bits.read(4))
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
        switch objectType {
        case 1, 2, 3, 4, 6, 7, 17, 19, 20, 21, 22, 23:
            frameLengthFlag = try bits.readBool()
            if try bits.readBool() { try bits.skip(14) }   // dependsOnCoreCoder: coreCoderDelay
            let extensionFlag = try bits.readBool()
            if channelConfiguration == 0 {
                throw FormatError.unsupported(component: component, reason: "program_config_element channel layouts")
            }
            if objectType == 6 || objectType == 20 { try bits.skip(3) }   // layerNr
            if extensionFlag {
                if objectType == 22 { try bits.skip(16) }
                if [17, 19, 20, 23].contains(objectType) { try bits.skip(3) }
                try bits.skip(1)
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
        // Backward-compatible signalling: a sync extension after the core config.
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
        var config = AudioSpecificConfig(objectType: signalled, sampleRate: rate, sampleRateIndex: rateIndex,
                                         channelConfiguration: channelConfiguration, frameLengthFlag: frameLengthFlag,
                                         sbrPresent: sbr, psPresent: ps, extensionSampleRate: extensionRate,
                                         coreObjectType: objectType)
        if sbr && extensionRate == nil { config.extensionSampleRate = rate * 2 }
        return config
    }

    static func readObjectType(_ bits: inout BitReader) throws -> Int {
        let value = Int(try bits.read(5))
        return value == 31 ? 32 + Int(try bits.read(6)) : value
    }

    static func readSampleRate(_ bits: inout BitReader) throws -> (index: Int, rate: Int) {
        let index = Int(try bits.read(4))
        if index == 15 { return (15, Int(try bits.read(24))) }
        guard index < aacSampleRates.count else {
            throw FormatError.invalid(component: component, reason: "reserved sample-rate index \(index)", offset: 0)
        }
        return (index, aacSampleRates[index])
    }
}
