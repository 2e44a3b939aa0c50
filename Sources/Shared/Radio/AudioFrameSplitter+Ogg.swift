/// One link of a live Ogg Opus/Vorbis stream as a radio channel passes it: its header pages
/// (what a listener joining mid-link must get first) and the title its comments give.
public struct OggLiveLink: Sendable {
    public var serial: UInt32
    public var codec: OggCodec
    /// The link's pages from its BOS page through the last header packet's page, as they came.
    public var headerPages: [UInt8]
    /// "Artist - Title" (or the title) from OpusTags / the Vorbis comment header; nil when none.
    public var title: String?
    /// Header packets still to come after the identification (Opus: tags; Vorbis: comment, setup).
    public var headerPacketsLeft: Int
    /// Counts links: a new value is a new link (a chain's next one, or a new source).
    public var number: Int
    var assembler: OggPacketAssembler
    var lastGranule: Int64 = 0

    public var headersComplete: Bool { headerPacketsLeft == 0 }
}

/// What the last page `AudioFrameSplitter` returned was.
public struct OggLivePage: Sendable, Equatable {
    /// A BOS page: the first page of a new link.
    public var startsLink = false
    /// A page of the link's header packets (BOS included).
    public var isHeader = false
}

extension AudioFrameSplitter {
    /// Header pages kept per link at most (an OpusTags with a cover can be large; more is refused).
    public static let maxOggHeaderBytes = 1 << 20
    /// Samples one page may count for the clock (a page holds at most 255 packets of 120 ms).
    static let maxOggPageSamples = 255 * 5760

    /// Ogg: one page, its CRC checked. A BOS page of Opus or Vorbis starts a link; its header
    /// pages are kept (`oggLink`), and the page's samples are the granule advance (0 for header
    /// pages and for pages that end no packet). Pages of other logical streams (Theora,
    /// Skeleton) and pages before the first BOS are skipped; junk between pages is skipped up to
    /// `maxJunk`, then the stream is refused.
    mutating func nextOgg(_ bytes: ArraySlice<UInt8>, isComplete: Bool) throws -> Step {
        let page: OggPage
        do {
            guard let parsed = try OggPage.parse(bytes) else { return isComplete ? .skip(bytes.count) : .needMore }
            page = parsed
        } catch {
            // Not a page here: on to the next capture pattern (or all but a pattern's possible start).
            var at = bytes.startIndex + 1
            while at + 4 <= bytes.endIndex, !bytes[at..<(at + 4)].elementsEqual(OggPage.capturePattern) { at += 1 }
            let skip = at + 4 <= bytes.endIndex ? at - bytes.startIndex : max(1, bytes.count - 3)
            oggJunk += skip
            if oggJunk > Self.maxJunk {
                throw FormatError.invalid(component: "ogg", reason: "no Ogg page in \(Self.maxJunk) bytes", offset: 0)
            }
            return .skip(skip)
        }
        oggJunk = 0
        let start = bytes.startIndex
        let body = bytes[(start + page.headerLength)..<(start + page.length)]
        if page.isBeginningOfStream {
            guard let first = page.pieces.first, first.endsPacket,
                  let codec = try? OggCodec.identify(body.prefix(first.length)) else { return .skip(page.length) }
            let packetsLeft: Int
            switch codec {
            case .opus: packetsLeft = 1
            case .vorbis: packetsLeft = 2
            default: return .skip(page.length)       // Ogg FLAC and Speex: not passed
            }
            var assembler = OggPacketAssembler(serial: page.serial, maxPacketBytes: Self.maxOggHeaderBytes)
            _ = try? assembler.push(page, body: body)
            oggLink = OggLiveLink(serial: page.serial, codec: codec, headerPages: Array(bytes.prefix(page.length)), title: nil,
                                  headerPacketsLeft: packetsLeft, number: (oggLink?.number ?? 0) + 1, assembler: assembler)
            lastOggPage = OggLivePage(startsLink: true, isHeader: true)
            return .frame(Frame(length: page.length, samples: 0, sampleRate: codec.sampleRate, channels: codec.channels, bitrate: 0))
        }
        guard var link = oggLink, page.serial == link.serial else { return .skip(page.length) }
        defer { oggLink = link }
        let rate = link.codec.sampleRate, channels = link.codec.channels
        if !link.headersComplete {
            link.headerPages += bytes.prefix(page.length)
            guard link.headerPages.count <= Self.maxOggHeaderBytes,
                  let packets = try? link.assembler.push(page, body: body) else {
                throw FormatError.outOfRange(component: "ogg", field: "header pages", value: "over \(Self.maxOggHeaderBytes) bytes")
            }
            for packet in packets where link.headerPacketsLeft > 0 {
                if link.title == nil { link.title = Self.title(commentPacket: packet.data[...]) }
                link.headerPacketsLeft -= 1
            }
            lastOggPage = OggLivePage(startsLink: false, isHeader: true)
            return .frame(Frame(length: page.length, samples: 0, sampleRate: rate, channels: channels, bitrate: 0))
        }
        var samples = 0
        if page.granulePosition >= 0 {
            let (advance, overflow) = page.granulePosition.subtractingReportingOverflow(link.lastGranule)
            samples = overflow ? 0 : Int(max(0, min(Int64(Self.maxOggPageSamples), advance)))
            link.lastGranule = page.granulePosition
        }
        lastOggPage = OggLivePage(startsLink: false, isHeader: false)
        let bitrate = samples > 0 ? page.length * 8 * rate / samples : 0
        return .frame(Frame(length: page.length, samples: samples, sampleRate: rate, channels: channels, bitrate: bitrate))
    }

    /// "Artist - Title" (or the title) of an OpusTags or Vorbis comment packet; nil for another
    /// packet or none given.
    public static func title(commentPacket packet: ArraySlice<UInt8>) -> String? {
        let comment: VorbisComment?
        if packet.starts(with: "OpusTags".utf8) {
            comment = try? VorbisComment.parse(packet.dropFirst(8))
        } else if VorbisIdentification.headerType(packet) == 3 {
            comment = try? VorbisIdentification.parseComment(packet)
        } else {
            comment = nil
        }
        guard let fields = comment?.fields else { return nil }
        func value(_ name: String) -> String? {
            fields.first { $0.name.uppercased() == name && !$0.value.isEmpty }?.value
        }
        guard let title = value("TITLE") else { return value("ARTIST") }
        return value("ARTIST").map { "\($0) - \(title)" } ?? title
    }
}
