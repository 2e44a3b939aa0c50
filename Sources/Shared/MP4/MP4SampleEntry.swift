/// The contents of an 'esds' box (ISO 14496-1 §7.2.6): the ES_Descriptor with its
/// DecoderConfigDescriptor and DecoderSpecificInfo (for AAC, the AudioSpecificConfig).
public struct MP4ESDescriptor: Sendable, Equatable {
    public var esID: Int = 0
    /// 0x40 MPEG-4 audio, 0x66–0x68 MPEG-2 AAC, 0x69/0x6B MPEG-1/2 audio (MP3).
    public var objectTypeIndication: Int?
    /// 5 = audio.
    public var streamType: Int?
    /// Decoder buffer size in bytes.
    public var bufferSize: Int?
    public var maxBitrate: Int?
    public var avgBitrate: Int?
    /// The DecoderSpecificInfo bytes (tag 5), empty when absent.
    public var decoderSpecificInfo: [UInt8] = []

    public init() {}

    static let component = "mp4-esds"

    /// Parses the payload of an esds box (after its 8-byte box header; starts with version/flags).
    public static func parse(_ payload: ArraySlice<UInt8>) throws -> MP4ESDescriptor {
        var reader = ByteReader(payload, component: component)
        try reader.skip(4)                                           // version, flags
        var result = MP4ESDescriptor()
        guard reader.remaining >= 2 else { return result }
        let (tag, body) = try descriptor(&reader)
        switch tag {
        case 3:
            var es = body
            result.esID = Int(try es.readU16BE())
            let flags = try es.readU8()
            if flags & 0x80 != 0 { try es.skip(2) }                  // streamDependenceFlag: dependsOn_ES_ID
            if flags & 0x40 != 0 { try es.skip(Int(try es.readU8())) } // URL_Flag: URLlength, URLstring
            if flags & 0x20 != 0 { try es.skip(2) }                  // OCRstreamFlag: OCR_ES_Id
            while es.remaining >= 2 {
                let (inner, innerBody) = try descriptor(&es)
                if inner == 4 {
                    try result.parseDecoderConfig(innerBody)
                    break
                }
            }
        case 4:
            // Some old muxers write the DecoderConfigDescriptor without the ES_Descriptor around it.
            try result.parseDecoderConfig(body)
        default:
            break
        }
        return result
    }

    private mutating func parseDecoderConfig(_ body: ByteReader) throws {
        var r = body
        objectTypeIndication = Int(try r.readU8())
        streamType = Int(try r.readU8() >> 2)                        // 6 bits type, upStream, reserved
        bufferSize = Int(try r.readU24BE())
        maxBitrate = Int(try r.readU32BE())
        avgBitrate = Int(try r.readU32BE())
        while r.remaining >= 2 {
            let (tag, info) = try Self.descriptor(&r)
            if tag == 5 {
                decoderSpecificInfo = Array(info.rest)
                return
            }
        }
    }

    /// A descriptor: tag byte, then a size of 1–4 bytes, 7 bits each, high bit = "more follow".
    static func descriptor(_ r: inout ByteReader) throws -> (tag: UInt8, body: ByteReader) {
        let tag = try r.readU8()
        var length = 0
        var done = false
        for _ in 0..<4 {
            let b = try r.readU8()
            length = length << 7 | Int(b & 0x7F)
            if b & 0x80 == 0 {
                done = true
                break
            }
        }
        guard done else {
            throw FormatError.invalid(component: component, reason: "descriptor size longer than 4 bytes", offset: r.offset)
        }
        guard length <= r.remaining else {
            throw FormatError.invalid(component: component,
                                      reason: "descriptor tag \(tag) of \(length) bytes overruns its parent (\(r.remaining) left)",
                                      offset: r.offset)
        }
        return (tag, try r.subReader(length))
    }
}

/// One audio sample entry from stsd (ISO 14496-12 §12.2.3, with QuickTime's v1/v2 sound descriptions).
struct MP4SampleEntry {
    var codec: String
    var channels = 0
    var sampleRate = 0
    var bitsPerSample = 0
    var esds: MP4ESDescriptor?
    /// For codecs without esds, the payload of their configuration box.
    var codecConfig: [UInt8] = []

    /// Fixed fields of an AudioSampleEntry: reserved(6) data_reference_index(2) version(2) revision(2)
    /// vendor(4) channelcount(2) samplesize(2) compression_id(2) packet_size(2) samplerate(4, 16.16).
    static let fixedSize = 28

    /// Parses the first sample entry of an stsd box.
    static func parseFirst(stsd: MP4Box) throws -> MP4SampleEntry? {
        let (stsdVersion, _, reader) = try stsd.fullBox()
        var r = reader
        let entries = Int(try r.readU32BE())
        // Each entry is a box of at least 8 bytes.
        try stsd.checkCount(entries, entrySize: 8, available: r.remaining)
        guard entries >= 1 else { return nil }
        var iterator = try stsd.children(skipping: 8)
        guard let entry = try iterator.next() else { return nil }
        return try parse(entry, stsdVersion: stsdVersion)
    }

    static func parse(_ entry: MP4Box, stsdVersion: UInt8) throws -> MP4SampleEntry {
        var result = MP4SampleEntry(codec: entry.type)
        var e = ByteReader(entry.payload, component: MP4BoxHeader.component)
        try e.skip(6 + 2)                                            // reserved, data_reference_index
        let version = try e.readU16BE()
        try e.skip(2 + 4)                                            // revision, vendor
        result.channels = Int(try e.readU16BE())
        result.bitsPerSample = Int(try e.readU16BE())
        try e.skip(2 + 2)                                            // compression_id, packet_size
        result.sampleRate = Int(try e.readU32BE() >> 16)             // 16.16 fixed point: the integer part
        var childrenAt = fixedSize
        // QuickTime sound descriptions (stsd version 0) extend the entry by version; ISO's
        // AudioSampleEntryV1 (stsd version 1) adds no fields here.
        if stsdVersion == 0 {
            switch version {
            case 1:
                childrenAt += 16                                     // samplesPerPacket, bytesPerPacket, bytesPerFrame, bytesPerSample
            case 2:
                try e.skip(4)                                        // sizeOfStructOnly
                let rate = Double(bitPattern: try e.readU64BE())
                let channels = try e.readU32BE()
                try e.skip(4)                                        // always 0x7F000000
                let bits = try e.readU32BE()
                // A rate outside any real audio range is a broken field, not a reason to trap.
                guard rate.isFinite, rate >= 0, rate < 10_000_000 else {
                    throw entry.invalid("sample rate \(rate)")
                }
                result.sampleRate = Int(rate)
                result.channels = Int(channels)
                result.bitsPerSample = Int(bits)
                childrenAt += 36
            default:
                break
            }
        }
        var children = try entry.children(skipping: childrenAt)
        while let child = try children.next() {
            switch child.type {
            case "esds":
                if result.esds == nil { result.esds = try MP4ESDescriptor.parse(child.payload) }
            case "wave":
                // QuickTime wraps esds in a 'wave' box (with 'frma' and 'mp4a' before it).
                if result.esds == nil, let esds = try child.child("esds") {
                    result.esds = try MP4ESDescriptor.parse(esds.payload)
                } else if result.codec == "alac", result.codecConfig.isEmpty, let alac = try child.child("alac") {
                    // QuickTime's ALAC: 'frma' then the 'alac' cookie atom inside 'wave'.
                    result.codecConfig = Array(alac.payload.dropFirst(4))
                }
            case "alac":
                // ALACSpecificConfig after version/flags; its sample rate (offset 20) is the one to
                // trust when the 16.16 field cannot hold it (above 65535 Hz).
                let config = Array(child.payload.dropFirst(4))
                result.codecConfig = config
                if result.sampleRate == 0, config.count >= 24 {
                    result.sampleRate = config[20..<24].reduce(0) { $0 << 8 | Int($1) }
                }
            case "dOps":
                result.codecConfig = Array(child.payload)
            case "dfLa":
                result.codecConfig = Array(child.payload.dropFirst(4))
            default:
                break
            }
        }
        return result
    }
}
