/// The Opus identification header, "OpusHead" (RFC 7845 §5.1).
public struct OpusHead: Sendable, Equatable {
    public var version: UInt8
    public var channels: Int
    /// Samples at 48 kHz to drop from the start of the decoded stream.
    public var preSkip: Int
    /// The encoder's input rate (informational; Opus always decodes at 48 kHz); 0 when unspecified.
    public var inputSampleRate: Int
    /// Gain to apply on output, Q7.8 dB.
    public var outputGainQ78: Int16
    public var mappingFamily: UInt8
    /// Streams and coupled streams (family 1 and 255; family 0 implies 1 and channels − 1).
    public var streamCount: Int
    public var coupledCount: Int
    /// Output channel → decoded channel (family 0: identity).
    public var channelMapping: [UInt8]

    public static let magic: [UInt8] = Array("OpusHead".utf8)
    static let component = "opus-head"

    /// The output gain in dB.
    public var outputGainDB: Double { Double(outputGainQ78) / 256 }

    public init(version: UInt8 = 1, channels: Int, preSkip: Int, inputSampleRate: Int, outputGainQ78: Int16 = 0,
                mappingFamily: UInt8 = 0, streamCount: Int = 1, coupledCount: Int, channelMapping: [UInt8]) {
        self.version = version
        self.channels = channels
        self.preSkip = preSkip
        self.inputSampleRate = inputSampleRate
        self.outputGainQ78 = outputGainQ78
        self.mappingFamily = mappingFamily
        self.streamCount = streamCount
        self.coupledCount = coupledCount
        self.channelMapping = channelMapping
    }

    /// The header packet (RFC 7845 §5.1): version 1, little-endian fields, the stream counts and
    /// mapping only for a family other than 0.
    public var bytes: [UInt8] {
        var out = Self.magic
        out.append(1)
        out.append(UInt8(clamping: channels))
        out += [UInt8(truncatingIfNeeded: preSkip), UInt8(truncatingIfNeeded: preSkip >> 8)]
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: UInt32(clamping: inputSampleRate) >> (8 * UInt32(i)))) }
        let gain = UInt16(bitPattern: outputGainQ78)
        out += [UInt8(truncatingIfNeeded: gain), UInt8(truncatingIfNeeded: gain >> 8)]
        out.append(mappingFamily)
        if mappingFamily != 0 {
            out += [UInt8(clamping: streamCount), UInt8(clamping: coupledCount)] + channelMapping
        }
        return out
    }

    public static func parse(_ packet: ArraySlice<UInt8>) throws(FormatError) -> OpusHead {
        var reader = ByteReader(packet, component: component)
        guard try reader.readBytes(8).elementsEqual(magic) else {
            throw FormatError.invalid(component: component, reason: "no OpusHead magic", offset: 0)
        }
        let version = try reader.readU8()
        // Major version 0 only (the upper four bits); minor versions stay compatible.
        guard version >> 4 == 0 else { throw FormatError.unsupported(component: component, reason: "version \(version)") }
        let channels = Int(try reader.readU8())
        guard channels > 0 else { throw FormatError.invalid(component: component, reason: "0 channels", offset: 9) }
        let preSkip = Int(try reader.readU16LE())
        let rate = Int(try reader.readU32LE())
        let gain = Int16(bitPattern: try reader.readU16LE())
        let family = try reader.readU8()
        var head = OpusHead(version: version, channels: channels, preSkip: preSkip, inputSampleRate: rate, outputGainQ78: gain,
                            mappingFamily: family, streamCount: 1, coupledCount: channels - 1,
                            channelMapping: Array(0..<UInt8(channels)))
        if family == 0 {
            guard channels <= 2 else {
                throw FormatError.invalid(component: component, reason: "\(channels) channels with mapping family 0", offset: 9)
            }
            return head
        }
        head.streamCount = Int(try reader.readU8())
        head.coupledCount = Int(try reader.readU8())
        guard head.streamCount > 0, head.coupledCount <= head.streamCount, head.streamCount + head.coupledCount <= 255 else {
            throw FormatError.invalid(component: component,
                                      reason: "\(head.streamCount) streams, \(head.coupledCount) coupled", offset: 19)
        }
        head.channelMapping = Array(try reader.readBytes(channels))
        let decoded = head.streamCount + head.coupledCount
        guard head.channelMapping.allSatisfy({ $0 == 255 || Int($0) < decoded }) else {
            throw FormatError.invalid(component: component, reason: "channel mapping beyond \(decoded) decoded channels", offset: 21)
        }
        return head
    }
}

/// The Vorbis identification header (Vorbis I §4.2.2).
public struct VorbisIdentification: Sendable, Equatable {
    public var channels: Int
    public var sampleRate: Int
    public var bitrateMaximum: Int32
    public var bitrateNominal: Int32
    public var bitrateMinimum: Int32
    /// The short and long block sizes (powers of two, 64 through 8192).
    public var blockSizes: (short: Int, long: Int)

    static let component = "vorbis"

    public static func == (a: Self, b: Self) -> Bool {
        a.channels == b.channels && a.sampleRate == b.sampleRate && a.bitrateMaximum == b.bitrateMaximum
            && a.bitrateNominal == b.bitrateNominal && a.bitrateMinimum == b.bitrateMinimum && a.blockSizes == b.blockSizes
    }

    /// The kind of a Vorbis header packet (1 identification, 3 comment, 5 setup) when `packet` is one.
    public static func headerType(_ packet: ArraySlice<UInt8>) -> UInt8? {
        guard packet.count >= 7, let type = packet.first, type & 1 == 1,
              packet.dropFirst().prefix(6).elementsEqual("vorbis".utf8) else { return nil }
        return type
    }

    public static func parse(_ packet: ArraySlice<UInt8>) throws(FormatError) -> VorbisIdentification {
        guard headerType(packet) == 1 else {
            throw FormatError.invalid(component: component, reason: "not a Vorbis identification header", offset: 0)
        }
        var reader = ByteReader(packet, component: component)
        try reader.skip(7)
        let version = try reader.readU32LE()
        guard version == 0 else { throw FormatError.unsupported(component: component, reason: "version \(version)") }
        let channels = Int(try reader.readU8()), rate = Int(try reader.readU32LE())
        let maximum = Int32(bitPattern: try reader.readU32LE()), nominal = Int32(bitPattern: try reader.readU32LE())
        let minimum = Int32(bitPattern: try reader.readU32LE())
        let sizes = try reader.readU8(), framing = try reader.readU8()
        let short = 1 << Int(sizes & 0x0F), long = 1 << Int(sizes >> 4)
        guard channels > 0, rate > 0 else {
            throw FormatError.invalid(component: component, reason: "\(channels) channels at \(rate) Hz", offset: 11)
        }
        guard (64...8192).contains(short), (64...8192).contains(long), short <= long else {
            throw FormatError.invalid(component: component, reason: "block sizes \(short)/\(long)", offset: 28)
        }
        guard framing & 1 == 1 else { throw FormatError.invalid(component: component, reason: "framing bit not set", offset: 29) }
        return VorbisIdentification(channels: channels, sampleRate: rate, bitrateMaximum: maximum, bitrateNominal: nominal,
                                    bitrateMinimum: minimum, blockSizes: (short, long))
    }

    /// The comment header's Vorbis comment (type 3; the framing bit after it is not required,
    /// as decoders accept its absence).
    public static func parseComment(_ packet: ArraySlice<UInt8>) throws(FormatError) -> VorbisComment {
        guard headerType(packet) == 3 else {
            throw FormatError.invalid(component: component, reason: "not a Vorbis comment header", offset: 0)
        }
        return try VorbisComment.parse(packet.dropFirst(7))
    }
}

/// The first packet of FLAC in Ogg (the FLAC Ogg mapping): 0x7F "FLAC", mapping version,
/// the count of header packets that follow, then "fLaC" and the STREAMINFO block.
public struct OggFLACHeader: Sendable, Equatable {
    public var majorVersion: UInt8
    public var minorVersion: UInt8
    /// Header packets after this one (metadata blocks); 0 means "unknown".
    public var headerPackets: Int
    public var streamInfo: FLACStreamInfo

    public static let magic: [UInt8] = [0x7F] + Array("FLAC".utf8)
    static let component = "ogg-flac"

    public static func parse(_ packet: ArraySlice<UInt8>) throws(FormatError) -> OggFLACHeader {
        var reader = ByteReader(packet, component: component)
        guard try reader.readBytes(5).elementsEqual(magic) else {
            throw FormatError.invalid(component: component, reason: "no 0x7F FLAC magic", offset: 0)
        }
        let major = try reader.readU8(), minor = try reader.readU8()
        guard major == 1 else { throw FormatError.unsupported(component: component, reason: "mapping version \(major).\(minor)") }
        let count = Int(try reader.readU16BE())
        guard try reader.readBytes(4).elementsEqual(FLACReader.marker) else {
            throw FormatError.invalid(component: component, reason: "no fLaC marker", offset: 9)
        }
        let blockHeader = try reader.readU32BE()
        guard blockHeader >> 24 & 0x7F == 0 else {
            throw FormatError.invalid(component: component, reason: "first block is not STREAMINFO", offset: 13)
        }
        let info = try FLACStreamInfo.parse(try reader.readBytes(FLACStreamInfo.length))
        return OggFLACHeader(majorVersion: major, minorVersion: minor, headerPackets: count, streamInfo: info)
    }
}

/// The Speex header packet ("Speex   "), read for its rate and channels only.
public struct SpeexHeader: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int
    /// Header packets after the comment packet.
    public var extraHeaders: Int

    public static let magic: [UInt8] = Array("Speex   ".utf8)
    static let component = "speex"

    public static func parse(_ packet: ArraySlice<UInt8>) throws(FormatError) -> SpeexHeader {
        var reader = ByteReader(packet, component: component)
        guard try reader.readBytes(8).elementsEqual(magic) else {
            throw FormatError.invalid(component: component, reason: "no Speex magic", offset: 0)
        }
        try reader.skip(28)   // version string (20), version id, header size
        let rate = Int(Int32(bitPattern: try reader.readU32LE()))
        try reader.skip(8)    // mode, mode bitstream version
        let channels = Int(Int32(bitPattern: try reader.readU32LE()))
        try reader.skip(16)   // bitrate, frame size, vbr, frames per packet
        let extra = Int(Int32(bitPattern: try reader.readU32LE()))
        guard (1...192_000).contains(rate), (1...2).contains(channels), (0...16).contains(extra) else {
            throw FormatError.invalid(component: component, reason: "\(channels) channels at \(rate) Hz, \(extra) extra headers",
                                      offset: 36)
        }
        return SpeexHeader(sampleRate: rate, channels: channels, extraHeaders: extra)
    }
}
