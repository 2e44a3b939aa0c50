/// The 32-byte footer that ends an APE tag (v1 or v2): "APETAGEX", then little-endian
/// version, size, item count and flags, then 8 reserved bytes.
///
/// The size counts the items and this footer but not the optional 32-byte header in front
/// (flags bit 31), so the tag's length on disk is `size + 32` when there is a header.
struct APETagFooter: Sendable, Equatable {
    static let length = 32
    static let preamble = "APETAGEX"

    var version: UInt32
    var size: Int
    var itemCount: UInt32
    var flags: UInt32

    /// Reads a footer from exactly 32 bytes; nil when they do not start with "APETAGEX".
    init?(_ bytes: ArraySlice<UInt8>) {
        guard bytes.count == Self.length, bytes.starts(with: Self.preamble.utf8) else { return nil }
        var reader = ByteReader(bytes.dropFirst(8), component: TrailingTags.component)
        // 24 bytes remain, so these reads cannot fail; `try?` keeps the initializer non-throwing.
        guard let version = try? reader.readU32LE(), let size = try? reader.readU32LE(),
              let count = try? reader.readU32LE(), let flags = try? reader.readU32LE() else { return nil }
        self.version = version
        self.size = Int(size)
        self.itemCount = count
        self.flags = flags
    }

    /// APEv1 (version 1000) never has a header; in v2 flags bit 31 says whether there is one.
    var hasHeader: Bool { version >= 2000 && flags & 0x8000_0000 != 0 }
    /// Bytes of the whole tag: header (when present), items and footer.
    var totalSize: Int { size + (hasHeader ? Self.length : 0) }
}

/// One text item of an APE tag: its key as written ("REPLAYGAIN_TRACK_GAIN", "Title") and its
/// UTF-8 value. Binary and external-link items are not text and are left out.
public struct APEItem: Sendable, Equatable {
    public var key: String
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// Reads the items of an APE tag (v1 or v2). Each item is a 32-bit little-endian value size,
/// 32-bit flags, a NUL-terminated ASCII key of 2-255 characters, then the value.
enum APEItems {
    /// At most this many items are read: a footer's count is a claim, not a promise.
    static let maxItems = 1024

    /// The text items in `region` (the bytes between the optional header and the footer),
    /// at most `count` of them. An item whose size runs past the region, or whose key is not
    /// printable ASCII, ends the walk: the items before it are kept.
    static func parse(_ region: ArraySlice<UInt8>, count: UInt32) -> [APEItem] {
        var items: [APEItem] = []
        var reader = ByteReader(region, component: TrailingTags.component)
        let wanted = Int(min(count, UInt32(maxItems)))
        while items.count < wanted {
            guard let size = try? reader.readU32LE(), let flags = try? reader.readU32LE() else { break }
            var keyLength = 0
            while let byte = try? reader.peekU8(ahead: keyLength), byte != 0, keyLength < 256 { keyLength += 1 }
            // 2-255 characters of 0x20-0x7E, then the NUL that ends the key.
            guard (2...255).contains(keyLength), (try? reader.peekU8(ahead: keyLength)) == 0,
                  let key = try? reader.readBytes(keyLength), key.allSatisfy({ (0x20...0x7E).contains($0) }),
                  (try? reader.skip(1)) != nil,
                  Int(size) <= reader.remaining, let value = try? reader.readBytes(Int(size)) else {
                break
            }
            // Flags bits 1-2: 0 text (UTF-8), 1 binary, 2 external link, 3 reserved.
            guard (flags >> 1) & 3 == 0 else { continue }
            var text = String(decoding: value, as: UTF8.self)
            while text.last == "\0" { text.removeLast() }
            items.append(APEItem(key: String(decoding: key, as: UTF8.self), value: text))
        }
        return items
    }
}
