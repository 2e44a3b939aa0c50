/// The 128-byte ID3v1 tag at the very end of a file ("TAG", then fixed Latin-1 fields),
/// and the 227-byte "TAG+" enhanced block that may sit right before it.
enum ID3v1 {
    static let length = 128
    static let enhancedLength = 227

    /// True when `bytes` (128 of them) start with "TAG".
    static func isTag(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.count == length && bytes.starts(with: "TAG".utf8)
    }

    /// True when `bytes` (227 of them) start with "TAG+".
    static func isEnhancedTag(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.count == enhancedLength && bytes.starts(with: "TAG+".utf8)
    }

    /// Reads the fields of a 128-byte tag; `enhanced` is the 227-byte "TAG+" block if there is one,
    /// whose 60-byte title, artist and album continue the 30-byte fields of the tag.
    static func parse(_ tag: ArraySlice<UInt8>, enhanced: ArraySlice<UInt8>? = nil) -> TrackTags {
        let t = tag.startIndex
        func field(_ offset: Int, _ count: Int, extendedAt extendedOffset: Int) -> String? {
            var raw = Array(tag[(t + offset)..<(t + offset + count)])
            // The enhanced text only continues a field that filled all 30 bytes.
            if let enhanced, raw.firstIndex(of: 0) == nil {
                let e = enhanced.startIndex + extendedOffset
                raw += enhanced[e..<(e + 60)]
            }
            return text(raw[...])
        }
        var tags = TrackTags(title: field(3, 30, extendedAt: 4),
                             artist: field(33, 30, extendedAt: 64),
                             album: field(63, 30, extendedAt: 124))
        tags.date = text(tag[(t + 93)..<(t + 97)])
        // ID3v1.1: a zero byte before the last comment byte makes that byte the track number.
        if tag[t + 125] == 0 && tag[t + 126] != 0 {
            tags.track = String(tag[t + 126])
        }
        return tags
    }

    /// A fixed-size field: text up to the first NUL, spaces trimmed, Latin-1 decoded;
    /// nil when nothing is left.
    static func text(_ raw: ArraySlice<UInt8>) -> String? {
        var bytes = raw.prefix { $0 != 0 }
        while let first = bytes.first, first == 0x20 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 0x20 { bytes = bytes.dropLast() }
        guard !bytes.isEmpty else { return nil }
        return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }
}
