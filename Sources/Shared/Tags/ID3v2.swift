/// An ID3v2 tag (versions 2.2, 2.3 and 2.4) from the start of a file.
public struct ID3v2Tag: Sendable, Equatable {
    /// 2, 3 or 4.
    public var majorVersion: UInt8
    public var revision: UInt8
    public var flags: UInt8
    /// Size of everything after the 10-byte header, footer excluded (the synchsafe size field).
    public var bodySize: Int
    public var hasFooter: Bool
    /// Bytes to skip to reach what follows the tag: 10 + body + footer.
    public var totalSize: Int
    public var tags: TrackTags
}

/// Reads ID3v2 tags. Frames with compression or encryption are skipped, not decoded.
public enum ID3v2 {
    static let component = "id3v2"

    /// The tag's total size if `bytes` starts with a valid ID3v2 header, 0 if it does not
    /// start with one, nil if fewer than 10 bytes are available.
    public static func totalSize(atStartOf bytes: ArraySlice<UInt8>) throws -> Int? {
        guard bytes.count >= 10 else {
            // "ID3" cannot be ruled out until 10 bytes are here, unless the start already differs.
            let known = Array(bytes.prefix(3))
            return known.elementsEqual(Array("ID3".utf8).prefix(known.count)) ? nil : 0
        }
        let b = Array(bytes.prefix(10))
        guard b[0] == 0x49, b[1] == 0x44, b[2] == 0x33, (2...4).contains(b[3]), b[4] != 0xFF,
              b[6] < 0x80, b[7] < 0x80, b[8] < 0x80, b[9] < 0x80 else {
            return 0
        }
        let body = synchsafe(b[6], b[7], b[8], b[9])
        let footer = b[3] == 4 && b[5] & 0x10 != 0 ? 10 : 0
        return 10 + body + footer
    }

    static func synchsafe(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Int {
        Int(a & 0x7F) << 21 | Int(b & 0x7F) << 14 | Int(c & 0x7F) << 7 | Int(d & 0x7F)
    }

    /// Parses a whole tag; `bytes` must start at "ID3" and hold the whole tag.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> ID3v2Tag {
        guard let total = try totalSize(atStartOf: bytes) else {
            throw FormatError.truncated(component: component, offset: 0, needed: 10)
        }
        guard total > 0 else {
            throw FormatError.invalid(component: component, reason: "no ID3v2 header", offset: 0)
        }
        guard bytes.count >= total else {
            throw FormatError.truncated(component: component, offset: bytes.count, needed: total - bytes.count)
        }
        var reader = ByteReader(bytes, component: component)
        try reader.skip(3)
        let major = try reader.readU8()
        let revision = try reader.readU8()
        let flags = try reader.readU8()
        try reader.skip(4)
        let footer = major == 4 && flags & 0x10 != 0
        let bodySize = total - 10 - (footer ? 10 : 0)
        var body = Array(try reader.readBytes(bodySize))
        // Tag-level unsynchronisation (2.2/2.3): undo 0xFF 0x00 → 0xFF over the whole body.
        if flags & 0x80 != 0 && major < 4 { body = removeUnsynchronisation(body[...]) }
        var frames = ByteReader(body, component: component)
        if flags & 0x40 != 0 && major >= 3 {
            try skipExtendedHeader(&frames, major: major)
        }
        var tags = TrackTags()
        try readFrames(&frames, major: major, into: &tags)
        return ID3v2Tag(majorVersion: major, revision: revision, flags: flags, bodySize: bodySize,
                        hasFooter: footer, totalSize: total, tags: tags)
    }

    private static func skipExtendedHeader(_ reader: inout ByteReader, major: UInt8) throws {
        if major == 3 {
            // 2.3: the size excludes its own 4 bytes.
            let size = Int(try reader.readU32BE())
            try reader.skip(size)
        } else {
            // 2.4: synchsafe size that includes itself.
            let raw = try reader.readBytes(4)
            let b = Array(raw)
            guard b.allSatisfy({ $0 < 0x80 }) else {
                throw FormatError.invalid(component: component, reason: "bad extended header size", offset: reader.offset)
            }
            let size = synchsafe(b[0], b[1], b[2], b[3])
            guard size >= 6 else {
                throw FormatError.invalid(component: component, reason: "extended header of \(size) bytes", offset: reader.offset)
            }
            try reader.skip(size - 4)
        }
    }

    private static func readFrames(_ reader: inout ByteReader, major: UInt8, into tags: inout TrackTags) throws {
        let idLength = major == 2 ? 3 : 4
        let headerLength = major == 2 ? 6 : 10
        while reader.remaining >= headerLength {
            // Padding (zero bytes) ends the frame list.
            if try reader.peekU8() == 0 { return }
            let idBytes = try reader.readBytes(idLength)
            guard idBytes.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }) else {
                throw FormatError.invalid(component: component, reason: "bad frame id", offset: reader.offset - idLength)
            }
            let id = String(decoding: idBytes, as: UTF8.self)
            let size: Int
            var formatFlags: UInt8 = 0
            switch major {
            case 2:
                size = Int(try reader.readU24BE())
            case 3:
                size = Int(try reader.readU32BE())
                try reader.skip(1)
                formatFlags = try reader.readU8()
            default:
                let raw = Array(try reader.readBytes(4))
                // iTunes wrote non-synchsafe sizes in some 2.4 tags; accept them when they do not fit as synchsafe.
                size = raw.allSatisfy { $0 < 0x80 } ? synchsafe(raw[0], raw[1], raw[2], raw[3])
                    : Int(raw[0]) << 24 | Int(raw[1]) << 16 | Int(raw[2]) << 8 | Int(raw[3])
                try reader.skip(1)
                formatFlags = try reader.readU8()
            }
            guard size <= reader.remaining else {
                throw FormatError.invalid(component: component, reason: "frame \(id) of \(size) bytes overruns the tag",
                                          offset: reader.offset)
            }
            var data = try reader.readBytes(size)
            // Compressed (2.3: 0x80, 2.4: 0x08) or encrypted (2.3: 0x40, 2.4: 0x04): not decoded.
            let compressedOrEncrypted = major == 3 ? formatFlags & 0xC0 != 0 : (major == 4 && formatFlags & 0x0C != 0)
            if compressedOrEncrypted { continue }
            if major == 4 {
                if formatFlags & 0x01 != 0 {       // data length indicator: 4 synchsafe bytes first
                    guard data.count >= 4 else { continue }
                    data = data.dropFirst(4)
                }
                if formatFlags & 0x02 != 0 { data = removeUnsynchronisation(data)[...] }
            }
            try apply(frame: id, data: data, into: &tags)
        }
    }

    private static func apply(frame id: String, data: ArraySlice<UInt8>, into tags: inout TrackTags) throws {
        switch id {
        case "TIT2", "TT2": tags.title = tags.title ?? text(data)
        case "TPE1", "TP1": tags.artist = tags.artist ?? text(data)
        case "TALB", "TAL": tags.album = tags.album ?? text(data)
        case "TRCK", "TRK": tags.track = tags.track ?? text(data)
        case "APIC", "PIC":
            if tags.coverArtBytes == nil { tags.coverArtBytes = try pictureSize(data, legacy: id == "PIC") }
        default: break
        }
    }

    /// Decodes a text frame: encoding byte, then the text; the first of several NUL-separated values.
    static func text(_ data: ArraySlice<UInt8>) -> String? {
        guard let encoding = data.first else { return nil }
        let value = decodeString(data.dropFirst(), encoding: encoding).string
        let trimmed = value.split(separator: "\u{0}", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Decodes a string in an ID3 encoding up to its terminator (or the end); returns the
    /// string and the number of bytes used including the terminator.
    static func decodeString(_ data: ArraySlice<UInt8>, encoding: UInt8) -> (string: String, used: Int) {
        switch encoding {
        case 1, 2:
            // UTF-16 with BOM (1) or big-endian without (2); a 2-byte NUL terminates.
            var bytes = Array(data)
            var used = 0
            var end = bytes.count - bytes.count % 2
            var i = 0
            while i + 1 < bytes.count {
                if bytes[i] == 0 && bytes[i + 1] == 0 { end = i; used = i + 2; break }
                i += 2
            }
            if used == 0 { used = bytes.count }
            bytes = Array(bytes[0..<end])
            var bigEndian = encoding == 2
            if bytes.count >= 2 && encoding == 1 {
                if bytes[0] == 0xFF && bytes[1] == 0xFE { bigEndian = false; bytes.removeFirst(2) }
                else if bytes[0] == 0xFE && bytes[1] == 0xFF { bigEndian = true; bytes.removeFirst(2) }
            }
            var units: [UInt16] = []
            units.reserveCapacity(bytes.count / 2)
            var j = 0
            while j + 1 < bytes.count {
                units.append(bigEndian ? UInt16(bytes[j]) << 8 | UInt16(bytes[j + 1]) : UInt16(bytes[j + 1]) << 8 | UInt16(bytes[j]))
                j += 2
            }
            return (String(decoding: units, as: UTF16.self), used)
        default:
            let end = data.firstIndex(of: 0) ?? data.endIndex
            let used = end == data.endIndex ? data.count : end - data.startIndex + 1
            let raw = data[data.startIndex..<end]
            if encoding == 3 { return (String(decoding: raw, as: UTF8.self), used) }
            // ISO-8859-1: every byte is the code point.
            return (String(String.UnicodeScalarView(raw.compactMap(Unicode.Scalar.init))), used)
        }
    }

    /// Size of the picture data in an APIC (or 2.2 PIC) frame.
    static func pictureSize(_ data: ArraySlice<UInt8>, legacy: Bool) throws -> Int {
        var reader = ByteReader(data, component: component)
        let encoding = try reader.readU8()
        if legacy {
            try reader.skip(3)                 // image format, e.g. "JPG"
        } else {
            let mime = reader.rest
            guard let end = mime.firstIndex(of: 0) else {
                throw FormatError.invalid(component: component, reason: "APIC without MIME terminator", offset: reader.offset)
            }
            try reader.skip(end - mime.startIndex + 1)
        }
        try reader.skip(1)                     // picture type
        let description = decodeString(reader.rest, encoding: encoding)
        try reader.skip(description.used)
        return reader.remaining
    }

    /// Undoes unsynchronisation: every 0xFF 0x00 becomes 0xFF.
    static func removeUnsynchronisation(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var previousFF = false
        for b in bytes {
            if previousFF && b == 0 {
                previousFF = false
                continue
            }
            out.append(b)
            previousFF = b == 0xFF
        }
        return out
    }
}
