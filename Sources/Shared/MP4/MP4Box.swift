/// One ISO BMFF box header (ISO 14496-12 §4.2).
public struct MP4BoxHeader: Sendable, Equatable {
    /// The four-character type, each byte read as Latin-1 (so iTunes' "©nam" reads as "\u{A9}nam").
    public var type: String
    /// Offset of the box's first byte in the bytes it was read from.
    public var offset: Int
    /// 8, or 16 with a 64-bit size (+16 for a 'uuid' box's extended type).
    public var headerSize: Int
    /// Whole box size, header included; nil for size 0 ("extends to the end of the file" or of the container).
    public var size: Int?

    public init(type: String, offset: Int, headerSize: Int, size: Int?) {
        self.type = type
        self.offset = offset
        self.headerSize = headerSize
        self.size = size
    }

    static let component = "mp4"

    /// Reads a box header at `offset` (relative to the start of `bytes`).
    ///
    /// Returns nil when fewer than 8 bytes (16 for a 64-bit size) are there: more bytes are needed.
    /// Throws when the size is smaller than the header or does not fit in an `Int`.
    public static func parse(_ bytes: ArraySlice<UInt8>, at offset: Int) throws -> MP4BoxHeader? {
        guard offset >= 0 else {
            throw FormatError.invalid(component: component, reason: "negative box offset", offset: offset)
        }
        guard offset <= bytes.count, bytes.count - offset >= 8 else { return nil }
        var reader = ByteReader(bytes, component: component)
        try reader.seek(to: offset)
        let size32 = try reader.readU32BE()
        let type = fourCC(try reader.readBytes(4))
        var headerSize = 8
        var size: Int?
        switch size32 {
        case 0:
            size = nil
        case 1:
            guard reader.remaining >= 8 else { return nil }
            let size64 = try reader.readU64BE()
            guard size64 <= UInt64(Int.max) else {
                throw FormatError.invalid(component: component, reason: "box '\(type)' size \(size64) is too large",
                                          offset: offset)
            }
            headerSize = 16
            size = Int(size64)
        default:
            size = Int(size32)
        }
        if type == "uuid" { headerSize += 16 }
        if let size, size < headerSize {
            throw FormatError.invalid(component: component,
                                      reason: "box '\(type)' of \(size) bytes is smaller than its \(headerSize)-byte header",
                                      offset: offset)
        }
        return MP4BoxHeader(type: type, offset: offset, headerSize: headerSize, size: size)
    }

    /// Box types are bytes, not text: Latin-1 keeps every byte distinct (0xA9 → "©").
    static func fourCC(_ raw: ArraySlice<UInt8>) -> String {
        var s = ""
        for b in raw { s.unicodeScalars.append(Unicode.Scalar(b)) }
        return s
    }
}

/// A box inside a bounds-checked input: its header, its payload, and how deep it sits.
struct MP4Box {
    var header: MP4BoxHeader
    /// The bytes after the header, up to the end of the box.
    var payload: ArraySlice<UInt8>
    /// 0 for the box the parse started from.
    var depth: Int
    /// `startIndex` of the whole input, so errors can name offsets from its start.
    var origin: Int

    var type: String { header.type }
    /// Offset of the payload from the start of the whole input (for error messages).
    var payloadOffset: Int { payload.startIndex - origin }

    /// Deepest nesting walked: real files stay under 10; a hostile one could nest thousands.
    static let maxDepth = 16

    /// The box at the start of `bytes`. Throws `truncated` when the box does not fit: more bytes are needed.
    static func root(_ bytes: ArraySlice<UInt8>, component: String) throws -> MP4Box {
        guard let header = try MP4BoxHeader.parse(bytes, at: 0) else {
            throw FormatError.truncated(component: component, offset: bytes.count, needed: 16 - bytes.count)
        }
        let size = header.size ?? bytes.count
        guard size <= bytes.count else {
            throw FormatError.truncated(component: component, offset: bytes.count, needed: size - bytes.count)
        }
        let start = bytes.startIndex
        return MP4Box(header: header, payload: bytes[(start + header.headerSize)..<(start + size)], depth: 0,
                      origin: start)
    }

    /// The child boxes, after skipping `prefix` bytes of the payload (a full box's version/flags,
    /// a sample entry's fixed fields).
    func children(skipping prefix: Int = 0) throws -> MP4BoxIterator {
        guard prefix >= 0, prefix <= payload.count else {
            throw FormatError.truncated(component: MP4BoxHeader.component, offset: payloadOffset,
                                        needed: prefix)
        }
        return try MP4BoxIterator(payload.dropFirst(prefix), depth: depth + 1, origin: origin)
    }

    /// The first child of `type`, if any.
    func child(_ type: String) throws -> MP4Box? {
        var iterator = try children()
        while let box = try iterator.next() {
            if box.type == type { return box }
        }
        return nil
    }

    /// Reads the version and flags of a full box; the reader is left after them.
    func fullBox() throws -> (version: UInt8, flags: UInt32, reader: ByteReader) {
        var reader = ByteReader(payload, component: MP4BoxHeader.component)
        let version = try reader.readU8()
        let flags = try reader.readU24BE()
        return (version, flags, reader)
    }

    /// Refuses a table whose entry count does not fit in the bytes that are present: a lying
    /// count must be an error, never a huge allocation or a long loop.
    func checkCount(_ count: Int, entrySize: Int, available: Int) throws {
        guard count >= 0, entrySize > 0, count <= available / entrySize else {
            throw FormatError.invalid(component: MP4BoxHeader.component,
                                      reason: "\(type) entry count \(count) exceeds box size (\(available) bytes of entries)",
                                      offset: header.offset)
        }
    }

    func invalid(_ reason: String) -> FormatError {
        FormatError.invalid(component: MP4BoxHeader.component, reason: "\(type): \(reason)", offset: header.offset)
    }
}

/// Walks the boxes inside a container's payload, checking that each fits its parent.
struct MP4BoxIterator {
    private let bytes: ArraySlice<UInt8>
    private let depth: Int
    private let origin: Int
    private var offset = 0
    private var count = 0
    /// Most children read from one container (a hostile file could hold millions of empty boxes).
    static let maxChildren = 100_000

    init(_ bytes: ArraySlice<UInt8>, depth: Int, origin: Int) throws {
        guard depth <= MP4Box.maxDepth else {
            throw FormatError.invalid(component: MP4BoxHeader.component,
                                      reason: "boxes nested deeper than \(MP4Box.maxDepth)",
                                      offset: bytes.startIndex - origin)
        }
        self.bytes = bytes
        self.depth = depth
        self.origin = origin
    }

    /// The next child, or nil at the end of the container.
    mutating func next() throws -> MP4Box? {
        // Fewer than 8 bytes left cannot hold a box: QuickTime ends some containers with a
        // 32-bit zero terminator, so trailing scraps are ignored rather than refused.
        guard bytes.count - offset >= 8 else { return nil }
        count += 1
        let at = bytes.startIndex - origin + offset
        guard count <= Self.maxChildren else {
            throw FormatError.invalid(component: MP4BoxHeader.component,
                                      reason: "more than \(Self.maxChildren) boxes in one container", offset: at)
        }
        guard var header = try MP4BoxHeader.parse(bytes, at: offset) else {
            throw FormatError.invalid(component: MP4BoxHeader.component,
                                      reason: "64-bit box header overruns its parent", offset: at)
        }
        // Size 0 inside a container means "to the end of the container".
        let size = header.size ?? (bytes.count - offset)
        guard size <= bytes.count - offset else {
            throw FormatError.invalid(component: MP4BoxHeader.component,
                                      reason: "box '\(header.type)' of \(size) bytes overruns its parent (\(bytes.count - offset) bytes left)",
                                      offset: at)
        }
        guard header.headerSize <= size else {
            throw FormatError.invalid(component: MP4BoxHeader.component,
                                      reason: "box '\(header.type)' is smaller than its header", offset: at)
        }
        let start = bytes.startIndex + offset
        header.offset = at
        offset += size
        return MP4Box(header: header, payload: bytes[(start + header.headerSize)..<(start + size)], depth: depth,
                      origin: origin)
    }
}

/// The top-level layout of an MP4 file, from box headers only, so a client can see where
/// `moov` is (before or after `mdat`) before it has the whole file.
public struct MP4TopLevel: Sendable, Equatable {
    /// Top-level box headers seen so far, in file order.
    public var boxes: [MP4BoxHeader] = []
    /// The ftyp major brand ("M4A ", "isom", ...), once the ftyp payload has been seen.
    public var majorBrand: String?
    /// Byte range of the moov box, once its header has been seen.
    public var moovRange: Range<Int>?
    /// Byte range of the first mdat box.
    public var mdatRange: Range<Int>?
    /// True when a moof box was seen, or an mvex box inside a moov that lies within the prefix.
    public var isFragmented = false

    public init() {}

    /// Most top-level boxes walked: a file of millions of 8-byte boxes is an attack, not audio.
    static let maxBoxes = 100_000

    /// Walks top-level box headers in `prefix` (the file's first bytes; `fileSize` when known).
    ///
    /// Returns the layout so far and, when more boxes follow, the offset of the next box header,
    /// which a caller can fetch with a range read and then call again with a longer prefix
    /// (or scan from there itself). `nextNeededOffset` is nil when the whole file has been walked.
    public static func scan(prefix: ArraySlice<UInt8>, fileSize: Int?) throws -> (MP4TopLevel, nextNeededOffset: Int?) {
        var layout = MP4TopLevel()
        var offset = 0
        while true {
            if let fileSize, offset >= fileSize { return (layout, nil) }
            guard layout.boxes.count < maxBoxes else {
                throw FormatError.invalid(component: MP4BoxHeader.component,
                                          reason: "more than \(maxBoxes) top-level boxes", offset: offset)
            }
            guard let header = try MP4BoxHeader.parse(prefix, at: offset) else { return (layout, offset) }
            if let fileSize, let size = header.size, size > fileSize - offset {
                throw FormatError.invalid(component: MP4BoxHeader.component,
                                          reason: "top-level box '\(header.type)' of \(size) bytes overruns the \(fileSize)-byte file",
                                          offset: offset)
            }
            layout.boxes.append(header)
            // Size 0 runs to the end of the file; with the file size unknown, the range is open-ended.
            var end = fileSize ?? Int.max
            if let size = header.size {
                // Without a file size nothing above bounded it: a 64-bit size could overflow the sum.
                let (sum, overflow) = offset.addingReportingOverflow(size)
                guard !overflow else {
                    throw FormatError.outOfRange(component: MP4BoxHeader.component, field: "\(header.type).size",
                                                 value: "\(size) bytes at offset \(offset)")
                }
                end = sum
            }
            let range = offset..<end
            switch header.type {
            case "ftyp":
                let brandAt = offset + header.headerSize
                if prefix.count - brandAt >= 4, end - brandAt >= 4 {
                    let start = prefix.startIndex + brandAt
                    layout.majorBrand = MP4BoxHeader.fourCC(prefix[start..<(start + 4)])
                }
            case "moov":
                layout.moovRange = range
                if end <= prefix.count, try moovHasMVEX(prefix[(prefix.startIndex + offset)..<(prefix.startIndex + end)]) {
                    layout.isFragmented = true
                }
            case "mdat":
                if layout.mdatRange == nil { layout.mdatRange = range }
            case "moof":
                layout.isFragmented = true
            default:
                break
            }
            guard header.size != nil else { return (layout, nil) }
            offset = end
        }
    }

    private static func moovHasMVEX(_ moov: ArraySlice<UInt8>) throws -> Bool {
        try MP4Box.root(moov, component: MP4BoxHeader.component).child("mvex") != nil
    }
}

/// Every box in an input, descending into the container types this project knows, for
/// diagnostics (an `--info` dump) and to check files by hand.
public struct MP4Outline: Sendable, Equatable {
    /// One box and how deep it sits (0 = top level).
    public struct Entry: Sendable, Equatable {
        public var depth: Int
        public var header: MP4BoxHeader
    }

    public var entries: [Entry] = []

    /// Boxes whose payload is only child boxes (ilst items are containers too).
    static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "edts", "udta", "dinf", "mvex",
                                          "moof", "traf", "mfra", "ilst", "wave", "sinf", "schi"]
    /// Most boxes listed in total, whatever their nesting.
    static let maxBoxes = 100_000

    /// Lists the boxes in `bytes` (a whole file, or any run of consecutive boxes). Offsets are
    /// from the start of `bytes`. Throws on nesting deeper than 16 or a child overrunning its parent.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> MP4Outline {
        var outline = MP4Outline()
        var top = try MP4BoxIterator(bytes, depth: 0, origin: bytes.startIndex)
        while let box = try top.next() { try outline.add(box) }
        return outline
    }

    private mutating func add(_ box: MP4Box) throws {
        guard entries.count < Self.maxBoxes else {
            throw FormatError.invalid(component: MP4BoxHeader.component, reason: "more than \(Self.maxBoxes) boxes",
                                      offset: box.header.offset)
        }
        entries.append(Entry(depth: box.depth, header: box.header))
        var children: MP4BoxIterator
        if Self.containers.contains(box.type) {
            children = try box.children()
        } else if box.type == "meta" {
            children = try box.children(skipping: MP4Meta.headerSize(box))
        } else {
            return
        }
        while let child = try children.next() { try add(child) }
    }
}
