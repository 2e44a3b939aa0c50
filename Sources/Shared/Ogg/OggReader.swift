/// The audio codec of an Ogg logical stream, from its first header packet.
public enum OggCodec: Sendable, Equatable {
    case opus(OpusHead)
    case vorbis(VorbisIdentification)
    case flac(OggFLACHeader)
    case speex(SpeexHeader)

    /// The codec of a BOS page's first packet; nil for streams that are not audio this reads
    /// (Theora, Skeleton, ...). A packet with an audio codec's magic that does not parse throws.
    public static func identify(_ packet: ArraySlice<UInt8>) throws(FormatError) -> OggCodec? {
        if packet.starts(with: OpusHead.magic) { return .opus(try OpusHead.parse(packet)) }
        if VorbisIdentification.headerType(packet) == 1 { return .vorbis(try VorbisIdentification.parse(packet)) }
        if packet.starts(with: OggFLACHeader.magic) { return .flac(try OggFLACHeader.parse(packet)) }
        if packet.starts(with: SpeexHeader.magic) { return .speex(try SpeexHeader.parse(packet)) }
        return nil
    }

    public var name: String {
        switch self {
        case .opus: return "opus"
        case .vorbis: return "vorbis"
        case .flac: return "flac"
        case .speex: return "speex"
        }
    }

    /// The rate granule positions count in, which is the decoded rate (48 kHz for Opus).
    public var sampleRate: Int {
        switch self {
        case .opus: return 48_000
        case .vorbis(let id): return id.sampleRate
        case .flac(let header): return header.streamInfo.sampleRate
        case .speex(let header): return header.sampleRate
        }
    }

    public var channels: Int {
        switch self {
        case .opus(let head): return head.channels
        case .vorbis(let id): return id.channels
        case .flac(let header): return header.streamInfo.channels
        case .speex(let header): return header.channels
        }
    }

    /// Bits per sample of a lossless stream.
    public var bitsPerSample: Int? {
        if case .flac(let header) = self { return header.streamInfo.bitsPerSample }
        return nil
    }

    /// Samples at the start of the granule count that are not audio (Opus pre-skip).
    public var preSkip: Int {
        if case .opus(let head) = self { return head.preSkip }
        return 0
    }
}

/// One link of a (possibly chained) Ogg file: the audio stream chosen among its multiplexed
/// streams, its headers, and its granule positions.
public struct OggLink: Sendable, Equatable {
    public var serial: UInt32
    public var codec: OggCodec
    public var comment: VorbisComment?
    /// Serials of the link's other streams (video, skeleton, a second audio stream), not read.
    public var otherSerials: [UInt32]
    /// Offset of the link's first page.
    public var offset: Int
    /// Granule of the first page that ends an audio packet.
    public var firstAudioGranule: Int64?
    /// Granule of the stream's last page that has one.
    public var lastGranule: Int64?

    /// Samples of the link (at `codec.sampleRate`): the last granule less the pre-skip; nil when unknown.
    public var samples: Int? {
        guard let last = lastGranule, last >= 0 else { return nil }
        return max(0, Int(last) - codec.preSkip)
    }
}

/// What an Ogg file holds: its links (one, unless chained) and where it was damaged.
public struct OggStream: Sendable, Equatable {
    public var links: [OggLink]
    /// Bytes skipped to find a page again (CRC mismatches, garbage between pages).
    public var skippedBytes: Int

    public var first: OggLink { links[0] }
    public var codec: OggCodec { first.codec }
    public var sampleRate: Int { first.codec.sampleRate }
    public var channels: Int { first.codec.channels }
    public var bitsPerSample: Int? { first.codec.bitsPerSample }

    /// Playing time of all links, when every link's length is known.
    public var durationSeconds: Double? {
        var total = 0.0
        for link in links {
            guard let samples = link.samples else { return nil }
            total += Double(samples) / Double(link.codec.sampleRate)
        }
        return total
    }

    /// The first link's tags (a chain's later links describe later tracks).
    public var tags: TrackTags { first.comment?.tags ?? TrackTags() }
}

/// Reads an Ogg file (RFC 3533) holding Opus, Vorbis, FLAC or Speex: the first link's headers
/// from the start, the last granule from the end; a file whose last page belongs to another
/// stream (a chain) is walked page by page to find every link.
public enum OggReader {
    /// Most bytes read from the start to find the chosen stream's headers and first audio page.
    public static let maxHeaderBytes = 64 << 20
    /// Most links in a chain.
    public static let maxLinks = 4096
    static let component = "ogg"

    public static func read(_ source: some RandomAccessBytes, fullScan: Bool = false) throws -> OggStream {
        try Checked.bytes(source.size, component, "file size")
        var cursor = OggPageCursor(source: source)
        var walker = OggLinkWalker()
        while let (offset, page, body) = try cursor.next() {
            try walker.add(page, body: body, at: offset)
            if !fullScan, let link = walker.links.first, walker.links.count == 1, walker.headersDone, link.firstAudioGranule != nil {
                break
            }
            if !fullScan, cursor.offset > maxHeaderBytes {
                throw FormatError.outOfRange(component: component, field: "headers", value: "more than \(maxHeaderBytes) bytes")
            }
        }
        guard !walker.links.isEmpty else {
            if walker.pages == 0 { throw FormatError.notAudio(reason: "no Ogg page") }
            if let error = walker.firstError { throw error }
            throw FormatError.unsupported(component: component, reason: "no Opus, Vorbis, FLAC or Speex stream")
        }
        guard walker.headersDone || walker.links.count > 1 else {
            throw FormatError.truncated(component: component, offset: cursor.offset, needed: 1)
        }
        if fullScan || cursor.isAtEnd {
            return try checked(OggStream(links: walker.links, skippedBytes: cursor.skipped))
        }
        // The last granule from the end; a last page of another serial means a chain.
        var link = walker.links[0]
        guard let tail = try lastPage(of: link.serial, in: source) else {
            return try read(source, fullScan: true)
        }
        // The last page of the link's video or other stream ends a multiplexed file as well.
        if tail.lastSerial != link.serial, !link.otherSerials.contains(tail.lastSerial) { return try read(source, fullScan: true) }
        link.lastGranule = tail.granule
        return try checked(OggStream(links: [link], skippedBytes: cursor.skipped))
    }

    /// The stream, when every link's granule count stays within `InputLimits` (a granule is 64 bits).
    static func checked(_ stream: OggStream) throws(FormatError) -> OggStream {
        var total = 0.0
        for link in stream.links {
            guard let samples = link.samples else { continue }
            total += try Checked.seconds(ticks: samples, timescale: link.codec.sampleRate, component, "granule_position")
        }
        try Checked.duration(total, component, "duration")
        return stream
    }

    /// The granule of the last page of `serial` with one, and the serial of the file's last page,
    /// searched in growing windows at the end of `source`.
    static func lastPage(of serial: UInt32, in source: some RandomAccessBytes) throws -> (granule: Int64, lastSerial: UInt32)? {
        var window = 2 * OggPage.maxLength
        while true {
            let start = max(0, source.size - window)
            let bytes = try source.read(at: start, count: source.size - start)[...]
            var offset = 0
            var found: Int64?, lastSerial: UInt32?
            var failures = OggPage.defaultMaxFailures
            while let (at, page) = OggPage.next(in: bytes, from: offset, failures: &failures) {
                if page.serial == serial, page.granulePosition != -1 { found = page.granulePosition }
                lastSerial = page.serial
                offset = at + page.length
            }
            if let found, let lastSerial { return (found, lastSerial) }
            if start == 0 || window >= 8 << 20 { return nil }
            window *= 4
        }
    }
}

/// Reads pages one after another from a source, skipping damage to the next page whose CRC holds.
struct OggPageCursor<Source: RandomAccessBytes> {
    let source: Source
    var offset = 0
    var skipped = 0
    /// Capture patterns that may still fail to start a page in this read.
    var failureBudget = OggPage.defaultMaxFailures
    var isAtEnd: Bool { offset >= source.size }

    init(source: Source) { self.source = source }

    mutating func next() throws -> (Int, OggPage, ArraySlice<UInt8>)? {
        while offset < source.size {
            if let page = try page(at: offset) {
                let at = offset
                offset += page.0.length
                return (at, page.0, page.1)
            }
            // Resynchronise: the next page whose CRC holds, in chunks that overlap by a page.
            let chunkLength = 4 * OggPage.maxLength
            let chunk = try source.read(at: offset + 1, count: chunkLength)[...]
            let found = OggPage.next(in: chunk, from: 0, failures: &failureBudget)
            guard failureBudget > 0 else {
                throw FormatError.invalid(component: OggReader.component,
                                          reason: "more than \(OggPage.defaultMaxFailures) damaged pages", offset: offset)
            }
            if let (at, _) = found {
                skipped += at + 1
                offset += at + 1
                continue
            }
            guard chunk.count == chunkLength else {
                skipped += source.size - offset
                offset = source.size
                return nil
            }
            let step = chunkLength - OggPage.maxLength
            skipped += step
            offset += step
        }
        return nil
    }

    /// The page at `offset` with its body, or nil when there is none whole there.
    func page(at offset: Int) throws -> (OggPage, ArraySlice<UInt8>)? {
        let head = try source.read(at: offset, count: OggPage.minHeaderLength + 255)
        guard head.count >= OggPage.minHeaderLength, head.starts(with: OggPage.capturePattern) else { return nil }
        let segments = Int(head[26])
        guard head.count >= OggPage.minHeaderLength + segments else { return nil }
        let bodyLength = head[27..<(27 + segments)].reduce(0) { $0 + Int($1) }
        let length = OggPage.minHeaderLength + segments + bodyLength
        let bytes = try source.read(at: offset, count: length)
        guard bytes.count == length, let page = try? OggPage.parse(bytes[...]) else { return nil }
        return (page, bytes[(OggPage.minHeaderLength + segments)...])
    }
}

/// Follows the pages of a file, link by link: BOS pages open a link and name its streams, the
/// first audio stream is chosen, its header packets read, and its granules tracked.
struct OggLinkWalker {
    var links: [OggLink] = []
    var pages = 0
    /// The first error of an audio header, reported when no link could be read.
    var firstError: FormatError?
    /// BOS pages that repeated the current link's stream (same serial) instead of starting a new link.
    var repeatedHeaders = 0
    private var assembler: OggPacketAssembler?
    private var inBOSRun = false
    /// Streams of the current BOS run seen before its audio stream, and where the run began.
    private var runSerials: [UInt32] = []
    private var runOffset: Int?
    private var pendingHeaders = 0
    /// FLAC-in-Ogg with a header count of 0: metadata packets until the first frame.
    private var headersUntilAudio = false
    private var headerIndex = 0

    var headersDone: Bool { !links.isEmpty && pendingHeaders == 0 && !headersUntilAudio }

    mutating func add(_ page: OggPage, body: ArraySlice<UInt8>, at offset: Int) throws(FormatError) {
        pages += 1
        if page.isBeginningOfStream {
            if !inBOSRun {
                inBOSRun = true
                assembler = nil
                runSerials = []
                runOffset = offset
                guard links.count < OggReader.maxLinks else {
                    throw FormatError.outOfRange(component: OggReader.component, field: "links", value: "more than \(OggReader.maxLinks)")
                }
            }
            // The first packet of a BOS page is alone on it (every mapping read here says so).
            let first = page.pieces.first.map { body.prefix($0.length) } ?? []
            if assembler == nil {
                do {
                    if let codec = try OggCodec.identify(first) {
                        if let last = links.last, last.serial == page.serial {
                            // The same stream's headers again (a muxer that repeated them): one
                            // link, read from its latest headers, not a chain.
                            repeatedHeaders += 1
                            links[links.count - 1].codec = codec
                        } else {
                            links.append(OggLink(serial: page.serial, codec: codec, comment: nil, otherSerials: runSerials,
                                                 offset: runOffset ?? offset, firstAudioGranule: nil, lastGranule: nil))
                        }
                        assembler = OggPacketAssembler(serial: page.serial)
                        headerIndex = 0
                        switch codec {
                        case .opus: pendingHeaders = 1
                        case .vorbis: pendingHeaders = 2
                        case .flac(let header): pendingHeaders = header.headerPackets; headersUntilAudio = header.headerPackets == 0
                        case .speex(let header): pendingHeaders = 1 + header.extraHeaders
                        }
                        _ = try assembler?.push(page, body: body)   // the identification packet, already read
                        return
                    }
                } catch {
                    if firstError == nil { firstError = error }
                }
            }
            if let assembler, assembler.serial != page.serial, let index = links.indices.last {
                links[index].otherSerials.append(page.serial)
            } else if assembler == nil {
                runSerials.append(page.serial)
            }
            return
        }
        inBOSRun = false
        guard var assembler, page.serial == assembler.serial, let index = links.indices.last else { return }
        let packets = try assembler.push(page, body: body)
        self.assembler = assembler
        if page.granulePosition != -1 { links[index].lastGranule = page.granulePosition }
        for packet in packets {
            if pendingHeaders > 0 || headersUntilAudio {
                if try header(packet.data[...], link: index) { continue }
            }
            if links[index].firstAudioGranule == nil, page.granulePosition != -1 {
                links[index].firstAudioGranule = page.granulePosition
            }
        }
    }

    /// Reads one header packet after the identification; false when it is audio (FLAC-in-Ogg
    /// without a header count).
    private mutating func header(_ packet: ArraySlice<UInt8>, link index: Int) throws(FormatError) -> Bool {
        headerIndex += 1
        switch links[index].codec {
        case .opus:
            guard packet.starts(with: "OpusTags".utf8) else {
                throw FormatError.invalid(component: OpusHead.component, reason: "second packet is not OpusTags", offset: 0)
            }
            links[index].comment = try? VorbisComment.parse(packet.dropFirst(8))
        case .vorbis:
            let expected: UInt8 = headerIndex == 1 ? 3 : 5
            guard VorbisIdentification.headerType(packet) == expected else {
                throw FormatError.invalid(component: VorbisIdentification.component,
                                          reason: "header packet \(headerIndex + 1) is not of type \(expected)", offset: 0)
            }
            if expected == 3 { links[index].comment = try? VorbisIdentification.parseComment(packet) }
        case .flac:
            // Each header packet is one metadata block; a frame (sync 0xFFF8) ends them.
            if headersUntilAudio, packet.first == 0xFF {
                headersUntilAudio = false
                return false
            }
            if packet.first.map({ $0 & 0x7F }) == 4, links[index].comment == nil {
                links[index].comment = try? VorbisComment.parse(packet.dropFirst(4))
            }
            if let first = packet.first, first & 0x80 != 0 { headersUntilAudio = false }
        case .speex:
            if headerIndex == 1 { links[index].comment = try? VorbisComment.parse(packet) }
        }
        if pendingHeaders > 0 { pendingHeaders -= 1 }
        return true
    }
}
