/// One Ogg page (RFC 3533 §6), its checksum verified.
public struct OggPage: Sendable, Equatable {
    /// Header type flags: 0x01 continued packet, 0x02 first page of a stream (BOS), 0x04 last (EOS).
    public var headerType: UInt8
    /// Codec-defined position at the end of the last packet completed on the page; -1 when none completes.
    public var granulePosition: Int64
    public var serial: UInt32
    public var sequence: UInt32
    /// The lacing values: segment lengths, a value below 255 ending a packet.
    public var lacing: [UInt8]

    public static let capturePattern: [UInt8] = Array("OggS".utf8)
    public static let minHeaderLength = 27
    /// The largest page: 27 + 255 lacing values + 255 × 255 bytes.
    public static let maxLength = 27 + 255 + 255 * 255
    static let component = "ogg"

    public var isContinued: Bool { headerType & 0x01 != 0 }
    public var isBeginningOfStream: Bool { headerType & 0x02 != 0 }
    public var isEndOfStream: Bool { headerType & 0x04 != 0 }
    public var headerLength: Int { Self.minHeaderLength + lacing.count }
    public var bodyLength: Int { lacing.reduce(0) { $0 + Int($1) } }
    public var length: Int { headerLength + bodyLength }
    /// True when the page's last packet continues on the next page.
    public var endsInsidePacket: Bool { lacing.last == 255 }

    /// The packet pieces of the body in order: each piece's length and whether it ends its packet.
    public var pieces: [(length: Int, endsPacket: Bool)] {
        var result: [(length: Int, endsPacket: Bool)] = []
        var length = 0
        for value in lacing {
            length += Int(value)
            if value < 255 {
                result.append((length, true))
                length = 0
            }
        }
        if lacing.last == 255 { result.append((length, false)) }
        return result
    }

    /// Parses the page at the start of `bytes`: nil when more bytes are needed; `.invalid` for a
    /// missing capture pattern, a version other than 0, reserved flags, or a CRC-32 mismatch.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(FormatError) -> OggPage? {
        let base = bytes.startIndex
        let prefix = min(bytes.count, 4)
        guard bytes[base..<(base + prefix)].elementsEqual(capturePattern.prefix(prefix)) else {
            throw FormatError.invalid(component: component, reason: "no OggS capture pattern", offset: 0)
        }
        guard bytes.count >= minHeaderLength else { return nil }
        var reader = ByteReader(bytes, component: component)
        try reader.skip(4)
        let version = try reader.readU8()
        guard version == 0 else { throw FormatError.unsupported(component: component, reason: "page version \(version)") }
        let type = try reader.readU8()
        guard type & 0xF8 == 0 else {
            throw FormatError.invalid(component: component, reason: "reserved header type flags 0x\(String(type, radix: 16))", offset: 5)
        }
        let granule = Int64(bitPattern: try reader.readU64LE())
        let serial = try reader.readU32LE(), sequence = try reader.readU32LE(), crc = try reader.readU32LE()
        let count = Int(try reader.readU8())
        guard reader.remaining >= count else { return nil }
        let lacing = Array(try reader.readBytes(count))
        let page = OggPage(headerType: type, granulePosition: granule, serial: serial, sequence: sequence, lacing: lacing)
        guard bytes.count >= page.length else { return nil }
        var computed = OggCRC.crc32(bytes[base..<(base + 22)])
        computed = OggCRC.crc32(zeros: 4, from: computed)
        computed = OggCRC.crc32(bytes[(base + 26)..<(base + page.length)], from: computed)
        guard computed == crc else {
            throw FormatError.invalid(component: component, reason: "page CRC-32 mismatch", offset: 22)
        }
        return page
    }

    /// The first page at or after `offset` in `bytes` whose CRC holds (a resynchronisation after
    /// damage), with its offset; nil when none lies wholly inside `bytes`, or when `failures`
    /// capture patterns in a row led to no page (each costs a CRC over up to a page, so crafted
    /// input full of them is cut short instead of costing quadratic time).
    public static func next(in bytes: ArraySlice<UInt8>, from offset: Int, failures: inout Int) -> (offset: Int, page: OggPage)? {
        var position = max(0, offset)
        let base = bytes.startIndex
        while position + minHeaderLength <= bytes.count, failures > 0 {
            if bytes[base + position] == 0x4F, bytes[base + position + 1] == 0x67, bytes[base + position + 2] == 0x67,
               bytes[base + position + 3] == 0x53 {
                if let page = try? parse(bytes[(base + position)...]) { return (position, page) }
                failures -= 1
            }
            position += 1
        }
        return nil
    }

    /// Capture patterns that may fail to start a page in one search by default.
    public static let defaultMaxFailures = 4096

    /// `next(in:from:failures:)` with a budget of its own.
    public static func next(in bytes: ArraySlice<UInt8>, from offset: Int) -> (offset: Int, page: OggPage)? {
        var failures = defaultMaxFailures
        return next(in: bytes, from: offset, failures: &failures)
    }
}

/// A packet of one logical stream, joined from the pieces of one or more pages.
public struct OggPacket: Sendable, Equatable {
    public var data: [UInt8]
    public var serial: UInt32
    /// The granule position of the page the packet ends on, when it is that page's last
    /// completed packet; else -1.
    public var granulePosition: Int64
    /// True for the first packet of a BOS page.
    public var isFirst: Bool
    /// True for the last packet of an EOS page.
    public var isLast: Bool
}

/// Joins the pieces of one logical stream's pages into packets (RFC 3533 §5). A packet larger
/// than `maxPacketBytes` throws; a continuation without its start (after a gap in the page
/// sequence, or at the first page read) is dropped, as a demuxer that seeks must; a page after
/// an unfinished packet continues it even when its continuation flag is missing.
public struct OggPacketAssembler: Sendable {
    public let serial: UInt32
    public let maxPacketBytes: Int
    private var pending: [UInt8]?
    private var lastSequence: UInt32?
    /// Pieces dropped because their packet's start was missing.
    public private(set) var droppedPieces = 0
    /// Pages that continued a packet without saying so.
    public private(set) var missingContinuationFlags = 0

    public static let defaultMaxPacketBytes = 32 << 20

    public init(serial: UInt32, maxPacketBytes: Int = defaultMaxPacketBytes) {
        self.serial = serial
        self.maxPacketBytes = maxPacketBytes
    }

    /// The packets completed by `page`, whose body is `body` (exactly `page.bodyLength` bytes).
    public mutating func push(_ page: OggPage, body: ArraySlice<UInt8>) throws(FormatError) -> [OggPacket] {
        guard page.serial == serial else { return [] }
        guard body.count == page.bodyLength else {
            throw FormatError.truncated(component: OggPage.component, offset: body.count, needed: page.bodyLength - body.count)
        }
        if let last = lastSequence, page.sequence != last &+ 1 { pending = nil }   // a lost page breaks the packet in flight
        lastSequence = page.sequence
        // A page that continues the packet in flight without its continuation flag: joined, as
        // libogg does (it goes by the lacing, not the flag), and counted.
        let joins = page.isContinued || pending != nil
        if !page.isContinued, pending != nil { missingContinuationFlags += 1 }
        var packets: [OggPacket] = []
        var position = body.startIndex
        let pieces = page.pieces
        for (index, piece) in pieces.enumerated() {
            let bytes = body[position..<(position + piece.length)]
            position += piece.length
            var data: [UInt8]
            if index == 0, joins {
                guard let start = pending else { droppedPieces += 1; continue }
                data = start
            } else {
                data = []
            }
            guard data.count + bytes.count <= maxPacketBytes else {
                throw FormatError.outOfRange(component: OggPage.component, field: "packet size",
                                             value: "more than \(maxPacketBytes) bytes")
            }
            data += bytes
            pending = nil
            if piece.endsPacket {
                let lastCompleted = index == pieces.count - 1 || (index == pieces.count - 2 && !pieces[pieces.count - 1].endsPacket)
                packets.append(OggPacket(data: data, serial: serial, granulePosition: lastCompleted ? page.granulePosition : -1,
                                         isFirst: page.isBeginningOfStream && packets.isEmpty && index == 0,
                                         isLast: page.isEndOfStream && index == pieces.count - 1))
            } else {
                pending = data
            }
        }
        return packets
    }
}
