/// The ID3v2 tag that starts a packed-audio HLS segment (RFC 8216 section 3.4): its size, and
/// the segment's start time from the PRIV frame `com.apple.streaming.transportStreamTimestamp`.
public struct PackedAudioTag: Sendable, Equatable {
    public static let timestampOwner = "com.apple.streaming.transportStreamTimestamp"

    /// Bytes the tag occupies (header, body and footer): the audio starts after them.
    public var size: Int
    /// The 33-bit MPEG-2 90 kHz timestamp of the segment's first sample, when the tag has one.
    public var timestamp: UInt64?

    /// Reads the tag at the start of `bytes`; nil when they do not start with an ID3v2 tag.
    /// The tag must be complete (a segment is read whole).
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> PackedAudioTag? {
        guard let size = try ID3v2.totalSize(atStartOf: bytes), size > 0 else { return nil }
        guard size <= bytes.count else {
            throw FormatError.truncated(component: "id3v2", offset: bytes.count, needed: size - bytes.count)
        }
        let b = bytes.startIndex
        let major = bytes[b + 3]
        let flags = bytes[b + 5]
        let footer = major == 4 && flags & 0x10 != 0 ? 10 : 0
        var frames = ByteReader(bytes[(b + 10)..<(b + size - footer)], component: "id3v2")
        // Unsynchronised or pre-2.3 tags are not what packagers write; keep the size, skip the time.
        guard major >= 3, flags & 0x80 == 0 else { return PackedAudioTag(size: size, timestamp: nil) }
        if flags & 0x40 != 0 {
            let raw = try frames.readU32BE()
            let extended = major == 4 ? synchsafe(raw) - 4 : Int(raw)
            try frames.skip(max(0, extended))
        }
        while frames.remaining >= 10 {
            let id = try frames.readFourCC()
            let raw = try frames.readU32BE()
            _ = try frames.readU16BE()
            if id == "\0\0\0\0" { break }                        // padding
            let frameSize = major == 4 ? synchsafe(raw) : Int(raw)
            let body = try frames.readBytes(frameSize)
            guard id == "PRIV", let zero = body.firstIndex(of: 0) else { continue }
            guard body[body.startIndex..<zero].elementsEqual(timestampOwner.utf8) else { continue }
            let data = body[(zero + 1)...]
            guard data.count >= 8 else { continue }
            var value: UInt64 = 0
            for byte in data.prefix(8) { value = value << 8 | UInt64(byte) }
            return PackedAudioTag(size: size, timestamp: value & 0x1_FFFF_FFFF)
        }
        return PackedAudioTag(size: size, timestamp: nil)
    }

    /// A 28-bit ID3v2.4 "synchsafe" integer (7 bits per byte).
    static func synchsafe(_ raw: UInt32) -> Int {
        Int(raw >> 24 & 0x7F) << 21 | Int(raw >> 16 & 0x7F) << 14 | Int(raw >> 8 & 0x7F) << 7 | Int(raw & 0x7F)
    }
}
