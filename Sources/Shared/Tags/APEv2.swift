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
