import StreamShared

/// `&estimate=1` for Opus: the response's Content-Length is said before the encode, so the
/// stream is made exactly that long. The encoder runs in hard CBR (every 20 ms packet the same
/// size), so the length is bounded from the duration; what the bound leaves over is Opus
/// padding (RFC 6716 §3.2.5: a code 3 packet may carry padding bytes the decoder skips) inside
/// the packets of the last pages, which are held back until the encode ends. Pages keep their
/// packets and granules (only lacing and CRC change), so decoders give exactly the same samples
/// and the end trim stays; no packet grows past 61,440 bytes, the size RFC 7845 §6 has every
/// player accept.
struct OggOpusTail {
    /// Bytes not yet cut into pages, and the last whole pages, held back.
    private var partial: [UInt8] = []
    private var held: [[UInt8]] = []
    let holdPages: Int
    /// The largest packet padded (RFC 7845 §6).
    static let maxPacket = 61_440

    init(holdPages: Int) { self.holdPages = max(1, holdPages) }

    /// Bytes held back now.
    var heldBytes: Int { partial.count + held.reduce(0) { $0 + $1.count } }

    /// Takes the encoder's `bytes` (emptied); the pages older than the last `holdPages` go to `release`.
    mutating func take(_ bytes: inout [UInt8], release: inout [UInt8]) throws(EncoderError) {
        partial += bytes
        bytes.removeAll(keepingCapacity: true)
        var start = 0
        while let length = try Self.pageLength(partial[start...]) {
            held.append(Array(partial[start..<(start + length)]))
            start += length
        }
        if start > 0 { partial.removeSubrange(0..<start) }
        while held.count > holdPages { release += held.removeFirst() }
    }

    /// The stream's end: every page held goes to `release`, `padding` bytes added inside their
    /// packets; returns the bytes added (less than `padding` only when the pages had no room).
    mutating func finish(padding: Int, release: inout [UInt8]) throws(EncoderError) -> Int {
        guard partial.isEmpty else { throw EncoderError(message: "the Opus stream ends inside a page") }
        var left = max(0, padding)
        for index in held.indices.reversed() where left > 0 {
            let (page, added) = Self.padded(page: held[index], by: left)
            held[index] = page
            left -= added
        }
        for page in held { release += page }
        held.removeAll()
        return max(0, padding) - left
    }

    /// The length of the whole page at the start of `bytes`; nil when it is not all there.
    static func pageLength(_ bytes: ArraySlice<UInt8>) throws(EncoderError) -> Int? {
        guard bytes.count >= 27 else { return nil }
        let b = bytes.startIndex
        guard bytes[b] == 0x4F, bytes[b + 1] == 0x67, bytes[b + 2] == 0x67, bytes[b + 3] == 0x53 else {
            throw EncoderError(message: "the Opus encoder's output is not Ogg pages")
        }
        let segments = Int(bytes[b + 26])
        guard bytes.count >= 27 + segments else { return nil }
        let body = bytes[(b + 27)..<(b + 27 + segments)].reduce(0) { $0 + Int($1) }
        return bytes.count >= 27 + segments + body ? 27 + segments + body : nil
    }

    /// `page` with up to `wanted` bytes of padding in its packets that begin and end on it (header
    /// pages, granule 0, are left as they are), its CRC made again; and the bytes added.
    static func padded(page: [UInt8], by wanted: Int) -> (page: [UInt8], added: Int) {
        guard page.count >= 27, wanted > 0 else { return (page, 0) }
        let granule = (0..<8).reduce(UInt64(0)) { $0 | UInt64(page[6 + $1]) << (8 * UInt64($1)) }
        let continued = page[5] & 0x01 != 0
        guard granule != 0, page[5] & 0x02 == 0 else { return (page, 0) }
        let segments = Int(page[26])
        // The page's packets (the first may end one begun before, the last may go on after).
        var packets: [(bytes: [UInt8], complete: Bool)] = []
        var offset = 27 + segments, size = 0
        for k in 0..<segments {
            size += Int(page[27 + k])
            if page[27 + k] < 255 || k == segments - 1 {
                packets.append((Array(page[(offset)..<(offset + size)]), page[27 + k] < 255))
                offset += size
                size = 0
            }
        }
        func lacing(_ count: Int, complete: Bool) -> Int { count / 255 + (complete ? 1 : 0) }
        var free = 255 - segments
        var left = wanted
        for index in packets.indices.reversed() where left > 0 && free > 0 {
            let packet = packets[index]
            guard packet.complete, !(index == 0 && continued), !packet.bytes.isEmpty else { continue }
            let size = packet.bytes.count
            let before = lacing(size, complete: true)
            let largest = min(maxPacket, (before + free) * 255 - 1)
            // The page grows by the packet's extra bytes and the lacing values they need: the
            // largest extra whose growth fits what is left (a growth that would jump over it, at a
            // 255-byte step, leaves one byte for another packet).
            func growth(_ extra: Int) -> Int { extra + lacing(size + extra, complete: true) - before }
            var extra = min(left, largest - size)
            while extra > 0, growth(extra) > left { extra -= 1 }
            guard extra > 0, let grown = paddedPacket(packet.bytes, by: extra) else { continue }
            packets[index].bytes = grown
            free -= lacing(grown.count, complete: true) - before
            left -= growth(extra)
        }
        guard left < wanted else { return (page, 0) }
        var out = Array(page[0..<26])
        var lacingValues: [UInt8] = []
        for packet in packets {
            lacingValues += [UInt8](repeating: 255, count: packet.bytes.count / 255)
            if packet.complete { lacingValues.append(UInt8(packet.bytes.count % 255)) }
        }
        out.append(UInt8(lacingValues.count))
        out += lacingValues
        for packet in packets { out += packet.bytes }
        for i in 22..<26 { out[i] = 0 }
        let crc = OggCRC.crc32(out[...])
        for i in 0..<4 { out[22 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        return (out, wanted - left)
    }

    /// `packet` made exactly `extra` bytes longer, its frames unchanged: as a code 3 packet
    /// (RFC 6716 §3.2.5) with padding (`extra` - 1 bytes of length and zeros for code 3, one
    /// byte more, the frame count, for codes 0-2; codes 0-2 grow by one byte alone without
    /// padding; a code 3 packet's own padding is made longer). nil for a malformed packet.
    static func paddedPacket(_ packet: [UInt8], by extra: Int) -> [UInt8]? {
        guard let toc = packet.first, extra > 0 else { return nil }
        let code = toc & 0x03
        var head: [UInt8], rest: ArraySlice<UInt8>, padding: Int
        switch code {
        case 3:
            // Padding already there (libopus pads its CBR packets so): its length bytes and zeros
            // are counted again with the extra.
            guard packet.count >= 2 else { return nil }
            var at = 2, zeros = 0
            if packet[1] & 0x40 != 0 {
                while true {
                    guard at < packet.count else { return nil }
                    let byte = Int(packet[at])
                    at += 1
                    zeros += byte == 255 ? 254 : byte
                    if byte < 255 { break }
                }
            }
            guard zeros <= packet.count - at else { return nil }
            head = [toc, packet[1] | 0x40]
            rest = packet[at..<(packet.count - zeros)]
            padding = (at - 2) + zeros + extra
        default:
            // Code 0: one frame; 1: two of equal size (CBR in code 3); 2: two sized (VBR, the
            // first's length kept where code 3 puts it).
            let count: UInt8 = code == 0 ? 1 : 2
            let vbr: UInt8 = code == 2 ? 0x80 : 0
            if extra == 1 { return [toc | 0x03, vbr | count] + packet[1...] }
            head = [toc | 0x03, vbr | 0x40 | count]
            rest = packet[1...]
            padding = extra - 1
        }
        // `padding` bytes: k length bytes of 255 (254 each) and a last one r, and 254k + r zeros.
        let k = (padding - 1) / 255, r = (padding - 1) % 255
        head += [UInt8](repeating: 255, count: k)
        head.append(UInt8(r))
        return head + rest + [UInt8](repeating: 0, count: 254 * k + r)
    }
}
