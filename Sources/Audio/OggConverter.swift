import StreamShared

/// Ogg Opus and Ogg Vorbis: pages found by StreamShared's parser (CRC-32 checked, damage
/// skipped), packets joined by its assembler, decoded by libopus or libvorbis, and the granule
/// arithmetic done here so the samples handed out are the track's own: each link's Opus
/// pre-skip and its end (the EOS page's granule) are cut, chained links follow one another on
/// one timeline, and after a restart in mid-stream the first page with a granule places the
/// decoded samples, which are then cut (or, before the decoder's first output, padded) to
/// start at the sample asked for.
public struct OggConverter: PacketConverter {
    /// The decoder of the link being played.
    enum Decoder {
        case opus(OpusDecoder)
        case vorbis(VorbisDecoder)
    }

    /// A packet waiting to be decoded.
    struct QueuedPacket {
        var data: [UInt8]
        /// The page's granule when this is the page's last completed packet, else -1.
        var granule: Int64
    }

    private var pending = PendingBytes()
    private var queue: [QueuedPacket] = []
    private var queueIndex = 0
    private var serial: UInt32?
    private var decoder: Decoder?
    private var assembler: OggPacketAssembler?
    private var headersLeft = 0
    /// The latest link's title from its comment header (a chained radio stream's titles).
    public private(set) var streamTitle: String?
    /// The first link's format: a later link in another format is refused.
    public private(set) var format: AudioFormat?
    public private(set) var links = 0
    /// Pre-skip of the current link, and the link-local granule its first played sample has.
    private var preSkip = 0
    private var origin: Int?
    /// Link-local granule of the next decoded sample; nil until a page's granule places it.
    private var localNext: Int?
    /// The EOS page's granule: samples at or past it are the encoder's padding.
    private var linkEnd = Int.max
    /// Global index of the next sample handed out, and of the current link's first.
    private var emitted = 0
    private var linkBase = 0
    /// After a restart in mid-stream: the sample the output must start at.
    private var alignTarget: Int?
    /// Decoded samples not yet placed (before the first granule after a restart or a link start).
    private var unplaced: [Float] = []
    private var padding: [Float] = []
    /// Capture patterns that led to no page, bounded per stream.
    private var failuresLeft = OggPage.defaultMaxFailures
    /// Bytes skipped to find a page again.
    public private(set) var skippedBytes = 0

    /// Samples decoded without a granule before the position is assumed (at a link start) or
    /// refused (after a seek): 10 s at 48 kHz.
    static let maxUnplacedFrames = 480_000

    /// A link of the stream as the player's plan knows it, for seeks into it.
    public struct Link: Sendable, Equatable {
        public var serial: UInt32
        /// The link's BOS and header pages, read again when decoding starts at a seek target in
        /// a link whose headers were not read last.
        public var headers: [UInt8]
        /// The link's first sample on the converter's timeline (the samples of the links before it).
        public var firstSample: Int

        public init(serial: UInt32, headers: [UInt8], firstSample: Int) {
            self.serial = serial
            self.headers = headers
            self.firstSample = firstSample
        }
    }

    private let knownLinks: [Link]

    public init(links: [Link] = []) { knownLinks = links }

    /// The WAVEFORMATEXTENSIBLE speaker mask of the samples handed out (WAV order).
    public var channelMask: UInt32? { format.map { VorbisChannelOrder.channelMask(channels: $0.channels) } }

    /// Back to the stream's first byte: every header is read again.
    public mutating func restart(at offset: Int) throws {
        pending.reset()
        queue = []
        queueIndex = 0
        serial = nil
        decoder = nil
        assembler = nil
        headersLeft = 0
        links = 0
        localNext = nil
        origin = nil
        linkEnd = Int.max
        emitted = 0
        linkBase = 0
        alignTarget = nil
        unplaced = []
    }

    /// A seek: `offset` is a page start after a link's headers, and the samples handed out next
    /// start at `sample` on the converter's timeline (the link is the last one of those given
    /// at init that starts at or before it). Sample 0 restarts the stream.
    public mutating func restart(at offset: Int, sample: Int) throws {
        guard sample > 0 else { return try restart(at: offset) }
        if let link = knownLinks.last(where: { $0.firstSample <= sample }) ?? knownLinks.first {
            if decoder == nil || serial != link.serial {
                try readHeaders(link.headers)
                linkBase = link.firstSample
            }
        } else if decoder == nil {
            throw FormatError.invalid(component: "ogg", reason: "a seek before the header pages were read", offset: offset)
        }
        pending.reset()
        queue = []
        queueIndex = 0
        if let serial { assembler = OggPacketAssembler(serial: serial) }
        switch decoder {
        case .opus(let opus)?: opus.reset()
        case .vorbis(let vorbis)?: vorbis.reset()
        case nil: break
        }
        localNext = nil
        unplaced = []
        alignTarget = sample
        emitted = sample
        linkEnd = Int.max
        // Not placed yet (a seek before this link was decoded): it is taken to start at granule 0.
        if origin == nil { origin = preSkip }
    }

    public mutating func append(_ bytes: [UInt8]) { pending.append(bytes) }

    /// Reads a link's header pages (a seek into a link whose headers were not read last).
    private mutating func readHeaders(_ headers: [UInt8]) throws {
        let firstFormat = format
        try restart(at: 0)
        format = firstFormat
        pending.append(headers)
        while try readPage(isComplete: true) {
            for packet in queue where headersLeft > 0 {
                headersLeft -= 1
                if case .vorbis(let vorbis)? = decoder { try vorbis.header(packet.data[...]) }
            }
            queue.removeAll()
        }
        pending.reset()
        guard decoder != nil, headersLeft == 0 else {
            throw FormatError.invalid(component: "ogg", reason: "the header pages before a seek are incomplete", offset: 0)
        }
    }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        while queueIndex >= queue.count {
            queue.removeAll(keepingCapacity: true)
            queueIndex = 0
            guard try readPage(isComplete: isComplete) else { return false }
        }
        let packet = queue[queueIndex]
        queueIndex += 1
        if headersLeft > 0 {
            headersLeft -= 1
            if case .vorbis(let vorbis)? = decoder { try vorbis.header(packet.data[...]) }
            if let title = AudioFrameSplitter.title(commentPacket: packet.data[...]) { streamTitle = title }
            return true
        }
        switch decoder {
        case .opus(let opus)?: opus.decode(packet.data[...]) { place($0, body) }
        case .vorbis(let vorbis)?: vorbis.decode(packet.data[...]) { place($0, body) }
        case nil: break
        }
        if packet.granule != -1 {
            placeUnplaced(granule: Int(packet.granule), body)
        } else if let channels = format?.channels, unplaced.count >= Self.maxUnplacedFrames * channels {
            // No granule for 10 s: at a link's start the stream is taken to start at 0; after a
            // seek the place is lost.
            guard origin == nil else {
                throw FormatError.invalid(component: "ogg", reason: "no granule position within 10 s after a seek", offset: 0)
            }
            placeUnplaced(granule: unplaced.count / channels, body)
        }
        return true
    }

    // MARK: Pages

    /// Reads the next whole page from the buffered bytes; false when more bytes are needed (or
    /// none are left at the end).
    private mutating func readPage(isComplete: Bool) throws -> Bool {
        while true {
            let unread = pending.unread
            guard unread.count >= 4 else {
                if isComplete { pending.consume(unread.count) }
                return false
            }
            let page: OggPage?
            do { page = try OggPage.parse(unread) } catch {
                try skipToNextCapture(unread)
                continue
            }
            guard let page else {
                if isComplete {
                    // A last page cut short.
                    skippedBytes += unread.count
                    pending.consume(unread.count)
                }
                return false
            }
            let body = unread.dropFirst(page.headerLength).prefix(page.bodyLength)
            try accept(page, body: body)
            pending.consume(page.length)
            return true
        }
    }

    /// Damage: the bytes up to the next "OggS" are dropped (a bounded number of times).
    private mutating func skipToNextCapture(_ unread: ArraySlice<UInt8>) throws {
        failuresLeft -= 1
        guard failuresLeft > 0 else {
            throw FormatError.invalid(component: "ogg", reason: "more than \(OggPage.defaultMaxFailures) damaged pages", offset: 0)
        }
        var index = unread.startIndex + 1
        while index + 4 <= unread.endIndex, !unread[index..<(index + 4)].elementsEqual(OggPage.capturePattern) { index += 1 }
        let skip = index + 4 <= unread.endIndex ? index - unread.startIndex : max(1, unread.count - 3)
        skippedBytes += skip
        pending.consume(skip)
    }

    /// A page: a BOS page may open a new link; the current link's pages give packets.
    private mutating func accept(_ page: OggPage, body: ArraySlice<UInt8>) throws {
        if page.isBeginningOfStream, page.serial != serial {
            let first = body.prefix(page.pieces.first?.length ?? 0)
            guard let codec = try OggCodec.identify(first) else { return }   // video, skeleton: not ours
            try openLink(codec, serial: page.serial, identification: first)
            return
        }
        guard page.serial == serial, var assembler else { return }
        let packets = try assembler.push(page, body: body)
        self.assembler = assembler
        if page.isEndOfStream, page.granulePosition >= 0 { linkEnd = Int(page.granulePosition) }
        for packet in packets where !packet.isFirst {
            queue.append(QueuedPacket(data: packet.data, granule: packet.granulePosition))
        }
    }

    /// A new link (the first, or the next of a chain): its decoder, headers to read, and its
    /// place on the timeline after the samples handed out so far.
    private mutating func openLink(_ codec: OggCodec, serial: UInt32, identification: ArraySlice<UInt8>) throws {
        let linkFormat = AudioFormat(sampleRate: codec.sampleRate, channels: codec.channels)
        if let format, format.sampleRate != linkFormat.sampleRate || format.channels != linkFormat.channels {
            throw DecoderError(message: "chained Ogg link \(links + 1) changes the format from \(format) to \(linkFormat) "
                               + "(links of one format play; a change is not supported)")
        }
        switch codec {
        case .opus(let head):
            decoder = .opus(try OpusDecoder(head: head))
            headersLeft = 1
            preSkip = head.preSkip
        case .vorbis:
            let vorbis = VorbisDecoder()
            try vorbis.header(identification)
            decoder = .vorbis(vorbis)
            headersLeft = 2
            preSkip = 0
        case .flac, .speex:
            throw FormatError.unsupported(component: "ogg", reason: "Ogg \(codec.name) is not supported (Ogg Opus and Vorbis are)")
        }
        if format == nil { format = linkFormat }
        self.serial = serial
        assembler = OggPacketAssembler(serial: serial)
        links += 1
        linkBase = emitted
        localNext = nil
        origin = nil
        linkEnd = Int.max
        unplaced = []
    }

    // MARK: Placing samples

    /// Hands out the part of `samples` (link-local, starting at `localNext`) that is played, or
    /// keeps them aside until a granule places them.
    private mutating func place(_ samples: UnsafeBufferPointer<Float>, _ body: (UnsafeBufferPointer<Float>) -> Void) {
        guard let channels = format?.channels, channels > 0, !samples.isEmpty else { return }
        guard let start = localNext, let origin else {
            if unplaced.count < Self.maxUnplacedFrames * channels { unplaced.append(contentsOf: samples) }
            return
        }
        let frames = samples.count / channels
        // Granules come from the file: wrapping arithmetic, so a crafted one cannot trap (the
        // counts that size memory or index the samples are bounded by `frames`).
        localNext = start &+ frames
        // Played: from the link's origin up to its end; on the timeline at linkBase + (local - origin).
        let lower = max(start, origin), upper = min(start &+ frames, linkEnd)
        guard lower < upper else { return }
        var first = linkBase &+ (lower &- origin)
        var from = lower &- start
        if let target = alignTarget {
            if first < target {
                // Before the sample asked for: dropped, and the alignment waits for the next samples.
                let skip = target &- first
                guard skip > 0, skip < upper &- lower else { return }
                from += skip
                first = target
            } else if first > target, first &- target <= Self.maxUnplacedFrames {
                // The decoder's output starts after the place asked for (only inside a seek's
                // pre-roll, which the player drops): silence keeps the count exact.
                padding = [Float](repeating: 0, count: (first - target) * channels)
                padding.withUnsafeBufferPointer { body($0) }
                emitted += first - target
            }
            alignTarget = nil
        }
        let to = upper &- start
        guard from >= 0, from < to, to <= frames else { return }
        body(UnsafeBufferPointer(rebasing: samples[(from * channels)..<(to * channels)]))
        emitted = first &+ (to - from)
    }

    /// A packet ended a page with granule `granule`: samples kept aside are placed by it (the
    /// link's first granule also fixes its origin: a stream that starts at a later granule
    /// plays from there, one that starts earlier drops the samples before 0, unless that page
    /// ends the stream).
    private mutating func placeUnplaced(granule: Int, _ body: (UnsafeBufferPointer<Float>) -> Void) {
        guard localNext == nil, let channels = format?.channels else { return }
        let frames = unplaced.count / channels
        var start = granule &- frames
        // The first audio page being the last one too: its granule trims the end, not the start
        // (Vorbis I §A.2, RFC 7845 §4.5; libvorbisfile and opusfile do the same).
        if origin == nil, start < 0, linkEnd == granule { start = 0 }
        if origin == nil { origin = max(start, 0) + preSkip }
        localNext = start
        let held = unplaced
        unplaced = []
        held.withUnsafeBufferPointer { place($0, body) }
    }
}

