/// Tags stored after the audio at the end of a file: ID3v1 (with the "TAG+" extension),
/// Lyrics3v2 and APEv2, in any of the combinations writers produce.
public struct TrailingTags: Sendable, Equatable {
    /// How many bytes at the end of the file are tags, not audio.
    public var trailingBytes: Int
    /// Fields of the ID3v1 tag, when there is one.
    public var id3v1: TrackTags?
    /// Bytes of the APEv2 tag including its header and footer; 0 when there is none.
    public var apeSize: Int

    public init(trailingBytes: Int, id3v1: TrackTags?, apeSize: Int) {
        self.trailingBytes = trailingBytes
        self.id3v1 = id3v1
        self.apeSize = apeSize
    }

    static let component = "trailing-tags"

    /// Finds the tags at the end of a file from its last bytes (`tail`) and its full size.
    public static func scan(tail: ArraySlice<UInt8>, fileSize: Int) throws -> TrailingTags {
        let t = Array(tail)
        var end = t.count          // end of the region still to examine, in `t`
        var result = TrailingTags(trailingBytes: 0, id3v1: nil, apeSize: 0)
        func has(_ text: String, at index: Int) -> Bool {
            index >= 0 && index + text.utf8.count <= t.count && t[index..<(index + text.utf8.count)].elementsEqual(text.utf8)
        }
        // ID3v1: the last 128 bytes start with "TAG".
        if end >= 128, has("TAG", at: end - 128) {
            result.id3v1 = parseID3v1(t[(end - 128)..<end])
            end -= 128
            // The enhanced "TAG+" block of 227 bytes sits right before it.
            if end >= 227, has("TAG+", at: end - 227) { end -= 227 }
        }
        // Lyrics3v2: "LYRICS200" preceded by a 6-digit size, ending where the ID3v1 begins.
        if end >= 15, has("LYRICS200", at: end - 9) {
            let digits = t[(end - 15)..<(end - 9)]
            guard digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let size = Int(String(decoding: digits, as: UTF8.self)) else {
                throw FormatError.invalid(component: component, reason: "bad Lyrics3v2 size", offset: fileSize - (t.count - end))
            }
            let total = size + 15
            guard total <= end, has("LYRICSBEGIN", at: end - total) else {
                throw FormatError.invalid(component: component, reason: "Lyrics3v2 size points outside the tag",
                                          offset: fileSize - (t.count - end))
            }
            end -= total
        }
        // APEv2: a 32-byte footer "APETAGEX"; its size covers items and footer, not the header.
        if end >= 32, has("APETAGEX", at: end - 32) {
            var reader = ByteReader(t[(end - 24)..<end], component: component)
            let version = try reader.readU32LE()
            let size = Int(try reader.readU32LE())
            _ = try reader.readU32LE()        // item count
            let flags = try reader.readU32LE()
            guard version == 1000 || version == 2000 else {
                throw FormatError.unsupported(component: component, reason: "APE tag version \(version)")
            }
            let total = size + (flags & 0x8000_0000 != 0 ? 32 : 0)
            let bytesBefore = fileSize - (t.count - end)     // file bytes up to the footer's end
            guard size >= 32, total <= bytesBefore else {
                throw FormatError.invalid(component: component, reason: "APE tag of \(total) bytes is larger than the file",
                                          offset: bytesBefore)
            }
            result.apeSize = total
            result.trailingBytes = (t.count - end) + total
            return result
        }
        result.trailingBytes = t.count - end
        return result
    }

    /// Reads ID3v1 / ID3v1.1 fields (Latin-1, NUL/space padded).
    static func parseID3v1(_ tag: ArraySlice<UInt8>) -> TrackTags {
        let b = Array(tag)
        func field(_ range: Range<Int>) -> String? {
            var bytes = b[range]
            if let nul = bytes.firstIndex(of: 0) { bytes = bytes[bytes.startIndex..<nul] }
            while let last = bytes.last, last == 0x20 { bytes = bytes.dropLast() }
            guard !bytes.isEmpty else { return nil }
            return String(String.UnicodeScalarView(bytes.compactMap(Unicode.Scalar.init)))
        }
        var tags = TrackTags(title: field(3..<33), artist: field(33..<63), album: field(63..<93))
        // ID3v1.1: a zero byte before the last comment byte makes that byte the track number.
        if b[125] == 0 && b[126] != 0 { tags.track = String(b[126]) }
        return tags
    }
}
