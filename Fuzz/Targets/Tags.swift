@testable import StreamShared

/// ID3v2 at the start, ID3v1/APE/Lyrics3 at the end, and the HLS packed-audio ID3 PRIV tag.
enum TagsTarget {
    static func run(_ bytes: [UInt8]) {
        let slice = bytes[...]
        if let size = try? ID3v2.totalSize(atStartOf: slice), size > 0 {
            _ = try? ID3v2.parse(slice)
        }
        _ = try? ID3v2.parse(slice)
        if let picture = try? EmbeddedPictureReader.id3Picture(slice) {
            require(picture.data.count < bytes.count, "picture of \(picture.data.count) bytes from \(bytes.count)")
        }
        _ = try? PackedAudioTag.parse(slice)
        // The tail as the last bytes of a file of the same size, and of a larger file (a tag
        // whose size field points before the tail).
        _ = try? TrailingTags.scan(tail: slice, fileSize: bytes.count)
        if let trailing = try? TrailingTags.scan(tail: slice, fileSize: bytes.count + 1_000_000) {
            require(trailing.trailingBytes >= 0 && trailing.trailingBytes <= bytes.count + 1_000_000,
                    "trailing bytes \(trailing.trailingBytes)")
        }
    }
}
