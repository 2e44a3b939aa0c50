/// Turns Ogg files into the links of one chained stream, for a pass-through radio channel of
/// library files: each Opus or Vorbis logical stream of a file becomes a link whose pages go out
/// as the file has them (granules and page sequence numbers run on within the link, its EOS page
/// ends it) with a serial number of its own, the CRC computed again; consecutive links never
/// share a serial, even when a file follows itself. Pages of other logical streams (video,
/// skeleton, Ogg FLAC, Speex) are left out, and damage is skipped to the next capture pattern
/// (only pages whose CRC checks are believed). Pure: bytes in, pages out.
public struct OggLinkRewriter: Sendable {
    /// The serial the next link gets.
    public private(set) var nextSerial: UInt32
    /// The current file's serials → the links' serials on the air.
    private var serials: [UInt32: UInt32] = [:]
    /// Logical streams mapped at once at most (a file of endless BOS pages cannot grow the map).
    static let maxStreams = 256

    /// One page to send.
    public struct Page: Sendable, Equatable {
        public var bytes: [UInt8]
        /// The new link's serial when this is its BOS page.
        public var startsLink: UInt32?
    }

    public init(firstSerial: UInt32) {
        nextSerial = firstSerial
    }

    /// A new file: its serials mean nothing yet.
    public mutating func beginFile() {
        serials.removeAll()
    }

    /// The complete pages at the start of `bytes`, rewritten (those of streams left out dropped),
    /// and how many bytes were used. A page cut off at the end stays for the next call with more
    /// bytes, unless `isComplete`: then every byte counts as used.
    public mutating func take(_ bytes: ArraySlice<UInt8>, isComplete: Bool) -> (consumed: Int, pages: [Page]) {
        var pages: [Page] = []
        var head = bytes.startIndex
        while head < bytes.endIndex {
            let page: OggPage
            do {
                guard let parsed = try OggPage.parse(bytes[head...]) else { break }
                page = parsed
            } catch {
                // Not a page here: on to the next capture pattern, or keep what may be its start.
                var next = head + 1
                while next + 4 <= bytes.endIndex, !bytes[next..<(next + 4)].elementsEqual(OggPage.capturePattern) { next += 1 }
                if next + 4 <= bytes.endIndex {
                    head = next
                    continue
                }
                head = max(head + 1, bytes.endIndex - 3)
                break
            }
            let start = head
            head += page.length
            if page.isBeginningOfStream, let first = page.pieces.first, first.endsPacket {
                let body = bytes[(start + page.headerLength)...].prefix(first.length)
                switch try? OggCodec.identify(body) {
                case .opus?, .vorbis?:
                    if serials.count >= Self.maxStreams { serials.removeAll() }
                    serials[page.serial] = nextSerial
                    pages.append(Page(bytes: Self.withSerial(nextSerial, page: bytes[start..<head]), startsLink: nextSerial))
                    nextSerial &+= 1
                    if page.isEndOfStream { serials[page.serial] = nil }
                    continue
                default:
                    serials[page.serial] = nil
                }
            }
            guard let serial = serials[page.serial] else { continue }
            pages.append(Page(bytes: Self.withSerial(serial, page: bytes[start..<head]), startsLink: nil))
            if page.isEndOfStream { serials[page.serial] = nil }
        }
        if isComplete { head = bytes.endIndex }
        return (head - bytes.startIndex, pages)
    }

    /// The page with `serial` in its header and its CRC-32 computed again.
    public static func withSerial(_ serial: UInt32, page: ArraySlice<UInt8>) -> [UInt8] {
        var bytes = Array(page)
        guard bytes.count >= OggPage.minHeaderLength else { return bytes }
        for i in 0..<4 { bytes[14 + i] = UInt8(truncatingIfNeeded: serial >> (8 * UInt32(i))) }
        OggPage.stampCRC(&bytes, pageAt: 0)
        return bytes
    }
}
