/// One ISO BMFF box header (ISO 14496-12 4.2).
public struct MP4BoxHeader: Sendable, Equatable {
    /// The four-character type.
    public var type: String
    /// Offset of the box's first byte in the bytes it was read from.
    public var offset: Int
    /// 8, or 16 with a 64-bit size (+16 for a 'uuid' box's extended type).
    public var headerSize: Int
    /// Whole box size; nil for size 0 ("extends to the end of the file").
    public var size: Int?

    static let component = "mp4"

    /// Reads a box header at `offset` in `bytes`: nil when not enough bytes are there,
    /// throws when the size is smaller than the header.
    public static func parse(_ bytes: ArraySlice<UInt8>, at offset: Int) throws -> MP4BoxHeader? {
        guard offset >= 0, bytes.count - offset >= 8 else { return nil }
        var reader = ByteReader(bytes, component: component)
        try reader.seek(to: offset)
        let size32 = try reader.readU32BE()
        let type = try reader.readFourCC()
        var headerSize = 8
        var size: Int?
        switch size32 {
        case 0: size = nil
        case 1:
            guard reader.remaining >= 8 else { return nil }
            let size64 = try reader.readU64BE()
            guard size64 <= UInt64(Int.max) else {
                throw FormatError.invalid(component: component, reason: "box '\(type)' size \(size64)", offset: offset)
            }
            headerSize = 16
            size = Int(size64)
        default: size = Int(size32)
        }
        if type == "uuid" { headerSize += 16 }
        if let size, size < headerSize {
            throw FormatError.invalid(component: component, reason: "box '\(type)' of \(size) bytes is smaller than its header",
                                      offset: offset)
        }
        return MP4BoxHeader(type: type, offset: offset, headerSize: headerSize, size: size)
    }
}

/// Walks the boxes inside a container's payload, checking that each fits its parent.
struct MP4BoxIterator {
    let bytes: ArraySlice<UInt8>
    private var offset: Int
    private var count = 0
    /// Most children read from one container (a hostile file could hold millions of empty boxes).
    static let maxChildren = 100_000

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.offset = 0
    }

    /// The next child header and its payload, or nil at the end of the container.
    mutating func next() throws -> (header: MP4BoxHeader, payload: ArraySlice<UInt8>)? {
        guard bytes.count - offset >= 8 else { return nil }
        count += 1
        guard count <= Self.maxChildren else {
            throw FormatError.invalid(component: MP4BoxHeader.component, reason: "too many boxes", offset: offset)
        }
        guard let header = try MP4BoxHeader.parse(bytes, at: offset) else {
            throw FormatError.truncated(component: MP4BoxHeader.component, offset: offset, needed: 16)
        }
        let size = header.size ?? (bytes.count - offset)
        guard size <= bytes.count - offset else {
            throw FormatError.invalid(component: MP4BoxHeader.component,
                                      reason: "box '\(header.type)' of \(size) bytes overruns its parent", offset: offset)
        }
        let start = bytes.startIndex + offset
        let payload = bytes[(start + header.headerSize)..<(start + size)]
        offset += size
        return (header, payload)
    }

    /// The payload of the first child of `type`.
    static func first(_ type: String, in bytes: ArraySlice<UInt8>) throws -> ArraySlice<UInt8>? {
        var iterator = MP4BoxIterator(bytes)
        while let (header, payload) = try iterator.next() {
            if header.type == type { return payload }
        }
        return nil
    }
}

/// The top-level layout of an MP4 file, from box headers only, so a client can see where
/// `moov` is (before or after `mdat`) before it has the whole file.
public struct MP4TopLevel: Sendable, Equatable {
    public var boxes: [MP4BoxHeader] = []
    public var majorBrand: String?
    /// Byte range of the moov box, once seen.
    public var moovRange: Range<Int>?
    /// Byte range of the first mdat box.
    public var mdatRange: Range<Int>?
    /// True when a moof box was seen (fragmented MP4).
    public var isFragmented = false

    /// Walks top-level box headers in `prefix` (the file's first bytes). Returns the layout so
    /// far and, when more boxes follow, the offset of the next box header to fetch.
    public static func scan(prefix: ArraySlice<UInt8>, fileSize: Int?) throws -> (MP4TopLevel, nextNeededOffset: Int?) {
        var layout = MP4TopLevel()
        var offset = 0
        let bytes = prefix.startIndex == 0 ? prefix : ArraySlice(Array(prefix))
        while layout.boxes.count < 10_000 {
            if let fileSize, offset >= fileSize { return (layout, nil) }
            guard let header = try MP4BoxHeader.parse(bytes, at: offset) else { return (layout, offset) }
            layout.boxes.append(header)
            let size = header.size ?? ((fileSize ?? Int.max) - offset)
            if let fileSize, size > fileSize - offset {
                throw FormatError.invalid(component: MP4BoxHeader.component,
                                          reason: "top-level box '\(header.type)' of \(size) bytes overruns the file", offset: offset)
            }
            let range = offset..<(offset &+ size)
            switch header.type {
            case "ftyp":
                if bytes.count >= offset + header.headerSize + 4 {
                    var r = ByteReader(bytes, component: MP4BoxHeader.component)
                    try r.seek(to: offset + header.headerSize)
                    layout.majorBrand = try r.readFourCC()
                }
            case "moov": layout.moovRange = range
            case "mdat": if layout.mdatRange == nil { layout.mdatRange = range }
            case "moof": layout.isFragmented = true
            default: break
            }
            guard header.size != nil else { return (layout, nil) }
            offset += size
        }
        throw FormatError.invalid(component: MP4BoxHeader.component, reason: "too many top-level boxes", offset: offset)
    }
}
