/// Pages the packets of one logical stream (RFC 3533 §6): packets go in with the granule position
/// at their end, pages come out when asked for (`flush`) or when one is full. A packet longer than
/// a page continues on the next (continuation flag set, granule −1 on pages where no packet ends);
/// the first page written is the BOS page; `flush(endOfStream: true)` writes the EOS page. Pure:
/// packets in, page bytes out, each page's CRC-32 stamped by `OggPage.stampCRC`.
public struct OggPageWriter: Sendable {
    public let serial: UInt32
    /// The next page's sequence number.
    public private(set) var sequence: UInt32 = 0
    /// Bytes of packet data held for the page being filled, and its lacing values.
    private var body: [UInt8] = []
    private var lacing: [UInt8] = []
    /// The granule of the last packet completed in the held data (−1: none completed).
    private var granule: Int64 = -1
    /// The held data starts with the rest of a packet begun on the previous page.
    private var continued = false
    /// Packets completed in the held data.
    public private(set) var heldPackets = 0

    /// The most lacing values a page has.
    static let maxLacing = 255

    public init(serial: UInt32) { self.serial = serial }

    /// Bytes held for pages not written yet.
    public var heldBytes: Int { body.count }

    /// Adds `packet`, whose end is at `granule`; full pages go to `output`.
    public mutating func append(packet: some Collection<UInt8>, granule: Int64, to output: inout [UInt8]) {
        var left = packet.count
        var from = packet.startIndex
        while true {
            if lacing.count == Self.maxLacing { writePage(to: &output, endOfStream: false) }
            let piece = min(left, 255)
            let next = packet.index(from, offsetBy: piece)
            body.append(contentsOf: packet[from..<next])
            from = next
            left -= piece
            lacing.append(UInt8(piece))
            // A packet ends with a lacing value below 255 (a zero when it is a multiple of 255).
            if piece < 255 { break }
        }
        self.granule = granule
        heldPackets += 1
    }

    /// Writes the held data as a page (nothing when none is held, unless `endOfStream` asks for an
    /// empty EOS page).
    public mutating func flush(endOfStream: Bool = false, to output: inout [UInt8]) {
        guard !lacing.isEmpty || endOfStream else { return }
        writePage(to: &output, endOfStream: endOfStream)
    }

    /// Replaces the granule of the last packet held (the end trim of a stream's last page).
    public mutating func setGranuleOfHeldPackets(_ value: Int64) {
        if heldPackets > 0 { granule = value }
    }

    private mutating func writePage(to output: inout [UInt8], endOfStream: Bool) {
        var type: UInt8 = 0
        if continued { type |= 0x01 }
        if sequence == 0 { type |= 0x02 }
        if endOfStream { type |= 0x04 }
        // The page ends inside a packet when its last lacing value is 255: the next one continues it.
        let endsInside = lacing.last == 255
        let pageGranule = heldPackets > 0 ? granule : -1
        let start = output.count
        output.append(contentsOf: OggPage.capturePattern)
        output.append(0)
        output.append(type)
        appendLE(UInt64(bitPattern: pageGranule), bytes: 8, to: &output)
        appendLE(UInt64(serial), bytes: 4, to: &output)
        appendLE(UInt64(sequence), bytes: 4, to: &output)
        output.append(contentsOf: [0, 0, 0, 0])
        output.append(UInt8(lacing.count))
        output.append(contentsOf: lacing)
        output.append(contentsOf: body)
        OggPage.stampCRC(&output, pageAt: start)
        sequence &+= 1
        continued = endsInside
        body.removeAll(keepingCapacity: true)
        lacing.removeAll(keepingCapacity: true)
        heldPackets = 0
        granule = -1
    }

    private func appendLE(_ value: UInt64, bytes: Int, to output: inout [UInt8]) {
        for i in 0..<bytes { output.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }
}

extension OggPage {
    /// Computes the CRC-32 of the page that runs from `start` to the end of `bytes` (its CRC field
    /// taken as zero) and writes it into the field: for pages made or rewritten here.
    public static func stampCRC(_ bytes: inout [UInt8], pageAt start: Int) {
        guard bytes.count >= start + minHeaderLength else { return }
        for i in 22..<26 { bytes[start + i] = 0 }
        let crc = OggCRC.crc32(bytes[start...])
        for i in 0..<4 { bytes[start + 22 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
    }
}
