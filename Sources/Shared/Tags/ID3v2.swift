/// An ID3v2 tag (versions 2.2, 2.3 and 2.4) from the start of a file.
public struct ID3v2Tag: Sendable, Equatable {
    /// 2, 3 or 4.
    public var majorVersion: UInt8
    public var revision: UInt8
    /// The header flags: 0x80 unsynchronisation, 0x40 extended header (2.2: compression),
    /// 0x20 experimental, 0x10 footer (2.4).
    public var flags: UInt8
    /// Size of everything after the 10-byte header, footer excluded (the synchsafe size field).
    public var bodySize: Int
    /// True for a 2.4 tag that ends with a 10-byte "3DI" footer.
    public var hasFooter: Bool
    /// Bytes to skip to reach what follows the tag: 10 + body + footer.
    public var totalSize: Int
    /// The fields found in the frames (TIT2/TT2, TPE1/TP1, TALB/TAL, TRCK/TRK, APIC/PIC).
    public var tags: TrackTags

    public init(majorVersion: UInt8, revision: UInt8, flags: UInt8, bodySize: Int,
                hasFooter: Bool, totalSize: Int, tags: TrackTags) {
        self.majorVersion = majorVersion
        self.revision = revision
        self.flags = flags
        self.bodySize = bodySize
        self.hasFooter = hasFooter
        self.totalSize = totalSize
        self.tags = tags
    }
}

/// Reads ID3v2 tags. Frames with compression or encryption are skipped, not decoded, and
/// only the fields `TrackTags` keeps are read; every other frame is stepped over by its size.
public enum ID3v2 {
    static let component = "id3v2"

    /// The tag's total size (header + body + footer) if `bytes` starts with a valid ID3v2
    /// header: "ID3", major version 2...4, revision not 0xFF, synchsafe size bytes < 0x80.
    ///
    /// Returns 0 when `bytes` does not start with such a header, and nil when fewer than 10
    /// bytes are available and those present still match the start of one. A short input
    /// that already differs (an MPEG sync word, "RIFF") returns 0: more bytes cannot make it
    /// a tag, so a caller asking for them would wait for nothing.
    public static func totalSize(atStartOf bytes: ArraySlice<UInt8>) throws -> Int? {
        guard bytes.count >= ID3v2Header.length else {
            return ID3v2Header.couldStart(bytes) ? nil : 0
        }
        return ID3v2Header(bytes)?.totalSize ?? 0
    }

    /// Parses a whole tag. `bytes` must start at "ID3" and hold at least `totalSize` bytes,
    /// else this throws `.truncated`; a frame or extended header that points past the end of
    /// the tag throws `.invalid`.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> ID3v2Tag {
        try parseTag(bytes)
    }

    static func parseTag(_ bytes: ArraySlice<UInt8>) throws(FormatError) -> ID3v2Tag {
        guard bytes.count >= ID3v2Header.length else {
            guard ID3v2Header.couldStart(bytes) else { throw notATag }
            throw FormatError.truncated(component: component, offset: bytes.count,
                                        needed: ID3v2Header.length - bytes.count)
        }
        guard let header = ID3v2Header(bytes) else { throw notATag }
        guard bytes.count >= header.totalSize else {
            throw FormatError.truncated(component: component, offset: bytes.count,
                                        needed: header.totalSize - bytes.count)
        }
        var tag = ID3v2Tag(majorVersion: header.majorVersion, revision: header.revision, flags: header.flags,
                           bodySize: header.bodySize, hasFooter: header.hasFooter,
                           totalSize: header.totalSize, tags: TrackTags())
        // 2.2 defined a compression flag but never a compression scheme; its spec says to
        // ignore such a tag. Its size is still right, so the caller can skip it.
        if header.isCompressedV22 { return tag }

        var fields = ID3v2FieldCollector()
        try forEachFrame(bytes, header: header) { fields.add($0) }
        tag.tags = fields.tags
        return tag
    }

    /// Calls `visit` with every readable frame of the tag at the start of `bytes`, which holds
    /// the whole tag (`header` read from it). Errors as `parse`.
    static func forEachFrame(_ bytes: ArraySlice<UInt8>, header: ID3v2Header,
                             _ visit: (ID3v2Frame) -> Void) throws(FormatError) {
        let bodyStart = bytes.startIndex + ID3v2Header.length
        var body = bytes[bodyStart..<(bodyStart + header.bodySize)]
        // 2.2/2.3 unsynchronise the whole body (frame headers included), so it is undone before
        // anything is read. The copy is never larger than the bytes actually present.
        if header.isUnsynchronised && header.majorVersion < 4 {
            body = ID3Unsynchronisation.remove(body)[...]
        }
        do {
            var reader = ByteReader(body, component: component)
            if header.hasExtendedHeader {
                try skipExtendedHeader(&reader, majorVersion: header.majorVersion)
            }
            var frames = ID3v2FrameReader(reader, header: header)
            while let frame = try frames.next() {
                visit(frame)
            }
        } catch {
            // The whole tag is in hand, so "needs more bytes" would send the caller after bytes
            // that would not help: a size field inside the tag points past its end.
            guard case let .truncated(_, offset, needed) = error else { throw error }
            throw FormatError.invalid(component: component,
                                      reason: "a field needs \(needed) bytes past the end of the tag",
                                      offset: ID3v2Header.length + offset)
        }
    }

    private static var notATag: FormatError {
        FormatError.invalid(component: component, reason: "no ID3v2 header", offset: 0)
    }

    /// Steps over the extended header (2.3/2.4), whose size field differs between versions.
    private static func skipExtendedHeader(_ reader: inout ByteReader, majorVersion: UInt8) throws(FormatError) {
        let sizeOffset = reader.offset
        let raw = try reader.readBytes(4)
        let size: Int
        if majorVersion == 3 {
            // 2.3: a plain 32-bit size that excludes the size field itself (6 or 10 in practice).
            size = ID3v2Header.bigEndian(raw)
        } else {
            // 2.4: a synchsafe size that includes the size field; at least the size, the flag
            // byte count and one flag byte.
            guard let synchsafe = ID3v2Header.synchsafe(raw), synchsafe >= 6 else {
                throw FormatError.invalid(component: component, reason: "bad extended header size",
                                          offset: ID3v2Header.length + sizeOffset)
            }
            size = synchsafe - 4
        }
        guard size <= reader.remaining else {
            throw FormatError.invalid(component: component,
                                      reason: "extended header of \(size) bytes overruns the tag",
                                      offset: ID3v2Header.length + sizeOffset)
        }
        try reader.skip(size)
    }
}

/// The 10-byte header that opens an ID3v2 tag: "ID3", version, revision, flags, synchsafe size.
struct ID3v2Header: Sendable, Equatable {
    static let length = 10

    var majorVersion: UInt8
    var revision: UInt8
    var flags: UInt8
    var bodySize: Int

    /// Reads the header from the first 10 bytes; nil when they are not a valid one.
    init?(_ bytes: ArraySlice<UInt8>) {
        guard bytes.count >= Self.length, Self.couldStart(bytes) else { return nil }
        let start = bytes.startIndex
        guard let size = Self.synchsafe(bytes[(start + 6)..<(start + 10)]) else { return nil }
        majorVersion = bytes[start + 3]
        revision = bytes[start + 4]
        flags = bytes[start + 5]
        bodySize = size
    }

    /// True when the first (up to 10) bytes match a valid header as far as they go.
    static func couldStart(_ bytes: ArraySlice<UInt8>) -> Bool {
        for (position, byte) in bytes.prefix(length).enumerated() {
            let fits: Bool
            switch position {
            case 0: fits = byte == UInt8(ascii: "I")
            case 1: fits = byte == UInt8(ascii: "D")
            case 2: fits = byte == UInt8(ascii: "3")
            case 3: fits = (2...4).contains(byte)
            case 4: fits = byte != 0xFF         // the spec reserves 0xFF in both version bytes
            case 5: fits = true                 // unknown flags make a tag harder to read, not invalid
            default: fits = byte < 0x80         // synchsafe size: the top bit of each byte is zero
            }
            if !fits { return false }
        }
        return true
    }

    var isUnsynchronised: Bool { flags & 0x80 != 0 }
    var hasExtendedHeader: Bool { majorVersion >= 3 && flags & 0x40 != 0 }
    var isCompressedV22: Bool { majorVersion == 2 && flags & 0x40 != 0 }
    var hasFooter: Bool { majorVersion == 4 && flags & 0x10 != 0 }
    var totalSize: Int { Self.length + bodySize + (hasFooter ? Self.length : 0) }

    /// A 28-bit synchsafe integer (7 bits per byte); nil when a byte has its top bit set.
    static func synchsafe(_ bytes: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in bytes {
            guard byte < 0x80 else { return nil }
            value = value << 7 | Int(byte)
        }
        return value
    }

    /// A plain big-endian integer of up to 4 bytes (never overflows `Int`).
    static func bigEndian(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 8 | Int($1) }
    }
}

/// ID3 unsynchronisation inserts 0x00 after every 0xFF so that no false MPEG sync appears
/// inside the tag; reading undoes it.
enum ID3Unsynchronisation {
    /// Every 0xFF 0x00 becomes 0xFF. The result is never longer than the input.
    static func remove(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var previousWasFF = false
        for byte in bytes {
            if previousWasFF && byte == 0 {
                previousWasFF = false
                continue
            }
            out.append(byte)
            previousWasFF = byte == 0xFF
        }
        return out
    }
}
