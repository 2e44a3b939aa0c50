/// Encoder delay and padding in samples, as the LAME tag (or iTunSMPB/elst) records them.
public struct GaplessInfo: Sendable, Equatable, Codable {
    /// Samples the encoder added before the audio (not counting the decoder's own delay).
    public var encoderDelay: Int
    /// Samples the encoder added after the audio to fill the last frame.
    public var encoderPadding: Int

    public init(encoderDelay: Int, encoderPadding: Int) {
        self.encoderDelay = encoderDelay
        self.encoderPadding = encoderPadding
    }
}

/// The LAME extension that follows a Xing/Info header.
public struct LAMETag: Sendable, Equatable {
    /// Encoder version string, e.g. "LAME3.100".
    public var encoder: String
    public var tagRevision: Int
    public var vbrMethod: Int
    public var lowpassHz: Int
    public var gapless: GaplessInfo
    /// Length in bytes of the whole MP3 from the LAME frame to the end of audio, as LAME wrote it (0 if unset).
    public var musicLength: Int
}

/// A Xing/Info (or VBRI) header found in the first frame of an MP3: the stream's frame and
/// byte counts, its seek table, and for LAME files the gapless information.
public struct VBRHeader: Sendable, Equatable {
    /// Which kind of header this is.
    public enum Kind: String, Sendable, Codable {
        /// "Xing": a VBR stream.
        case xing
        /// "Info": LAME's tag on a CBR stream.
        case info
        /// Fraunhofer's "VBRI".
        case vbri
    }

    public var kind: Kind
    /// Audio frames in the stream, not counting the frame that holds this header.
    public var frameCount: Int?
    /// Bytes of audio, as the encoder counted them (usually including this frame).
    public var byteCount: Int?
    /// Xing TOC: 100 entries, entry i is the byte position (0...255 of byteCount) at i % of the duration.
    public var xingTOC: [UInt8]?
    /// VBRI TOC: byte sizes of consecutive stretches of `vbriFramesPerEntry` frames.
    public var vbriTOC: [Int]?
    public var vbriFramesPerEntry: Int
    public var quality: Int?
    public var lame: LAMETag?
    /// VBRI carries its own delay field (in samples).
    public var vbriDelay: Int?

    /// The gapless trim, from the LAME tag when present.
    public var gapless: GaplessInfo? { lame?.gapless }

    private static let component = "mpeg-vbr"

    /// Looks for a Xing/Info header, then a VBRI header, inside `frame` (the bytes of the first
    /// frame, starting at its header). Returns nil when the frame holds neither.
    public static func parse(frame: ArraySlice<UInt8>, header: MPEGFrameHeader) throws -> VBRHeader? {
        guard header.layer == .layer3 else { return nil }
        // LAME writes the tag right after the side info; some encoders count the CRC too.
        let xingOffset = 4 + header.sideInfoLength
        for offset in [xingOffset, xingOffset + 2] where frame.count >= offset + 8 {
            var reader = ByteReader(frame, component: component)
            try reader.seek(to: offset)
            let id = try reader.readFourCC()
            if id == "Xing" || id == "Info" {
                return try parseXing(&reader, kind: id == "Xing" ? .xing : .info)
            }
        }
        if frame.count >= 36 + 26 {
            var reader = ByteReader(frame, component: component)
            try reader.seek(to: 36)
            if try reader.readFourCC() == "VBRI" {
                return try parseVBRI(&reader)
            }
        }
        return nil
    }

    private static func parseXing(_ reader: inout ByteReader, kind: Kind) throws -> VBRHeader {
        let flags = try reader.readU32BE()
        var result = VBRHeader(kind: kind, vbriFramesPerEntry: 0)
        if flags & 0x1 != 0 { result.frameCount = Int(try reader.readU32BE()) }
        if flags & 0x2 != 0 { result.byteCount = Int(try reader.readU32BE()) }
        if flags & 0x4 != 0 { result.xingTOC = Array(try reader.readBytes(100)) }
        if flags & 0x8 != 0 { result.quality = Int(try reader.readU32BE()) }
        // The LAME extension is optional; parse it on a copy so a short one leaves the Xing data intact.
        var lameReader = reader
        if let lame = try? parseLAME(&lameReader) { result.lame = lame }
        return result
    }

    private static func parseLAME(_ reader: inout ByteReader) throws -> LAMETag? {
        let version = try reader.readBytes(9)
        let text = String(decoding: version.prefix { $0 >= 0x20 && $0 < 0x7F }, as: UTF8.self)
        // Encoders that follow the LAME layout: LAME itself, and Lavf/Lavc (ffmpeg's libmp3lame wrapper).
        guard text.hasPrefix("LAME") || text.hasPrefix("Lavf") || text.hasPrefix("Lavc") || text.hasPrefix("L3.99") else {
            return nil
        }
        let revisionAndMethod = try reader.readU8()
        let lowpass = try reader.readU8()
        try reader.skip(4 + 2 + 2)    // peak amplitude, radio and audiophile replay gain
        try reader.skip(1 + 1)        // encoding flags + ATH type, bitrate
        let delayPadding = try reader.readU24BE()
        try reader.skip(1 + 1 + 2)    // misc, MP3 gain, surround + preset
        let musicLength = try reader.readU32BE()
        return LAMETag(encoder: text, tagRevision: Int(revisionAndMethod >> 4), vbrMethod: Int(revisionAndMethod & 0xF),
                       lowpassHz: Int(lowpass) * 100,
                       gapless: GaplessInfo(encoderDelay: Int(delayPadding >> 12), encoderPadding: Int(delayPadding & 0xFFF)),
                       musicLength: Int(musicLength))
    }

    private static func parseVBRI(_ reader: inout ByteReader) throws -> VBRHeader {
        let version = try reader.readU16BE()
        guard version == 1 else {
            throw FormatError.unsupported(component: component, reason: "VBRI version \(version)")
        }
        let delay = Int(try reader.readU16BE())
        let quality = Int(try reader.readU16BE())
        let bytes = Int(try reader.readU32BE())
        let frames = Int(try reader.readU32BE())
        let entries = Int(try reader.readU16BE())
        let scale = Int(try reader.readU16BE())
        let entrySize = Int(try reader.readU16BE())
        let framesPerEntry = Int(try reader.readU16BE())
        guard (1...4).contains(entrySize) else {
            throw FormatError.invalid(component: component, reason: "VBRI TOC entry size \(entrySize)", offset: reader.offset)
        }
        // The table must be present in full before anything is allocated for it.
        let tableBytes = try reader.readBytes(entries * entrySize)
        var toc: [Int] = []
        toc.reserveCapacity(entries)
        var tableReader = ByteReader(tableBytes, component: component)
        for _ in 0..<entries {
            var value = 0
            for _ in 0..<entrySize { value = value << 8 | Int(try tableReader.readU8()) }
            toc.append(value * scale)
        }
        return VBRHeader(kind: .vbri, frameCount: frames, byteCount: bytes, xingTOC: nil, vbriTOC: toc,
                         vbriFramesPerEntry: framesPerEntry, quality: quality, lame: nil, vbriDelay: delay)
    }
}
