import StreamShared
import StreamAudio

extension Player {
    /// Ogg Opus or Vorbis: what the headers and the last page say. The converter cuts the
    /// pre-skip and the end itself, so the plan's timeline starts at the first played sample.
    struct OggPlan {
        var codec: OggCodec
        /// The links (one unless chained) with where each one's audio pages lie; empty when the
        /// size is not known (a stream: no length, no seek).
        var links: [OggLinkPlan]
    }

    /// One link of an Ogg file as a seek needs it.
    struct OggLinkPlan {
        var link: OggConverter.Link
        /// The link-local granule of its first played sample (the pre-skip for Opus).
        var origin: Int
        /// Its first page after the header pages, and where it ends (the next link, or the end).
        var firstAudioPage: Int
        var end: Int
    }

    /// Samples decoded before a seek target: Opus 80 ms of pre-roll (RFC 7845 §4.6) plus one
    /// packet of at most 120 ms that may be lost at a page boundary; Vorbis two long blocks
    /// (the first packet after a restart only primes the overlap, another may be cut at a page).
    static func oggWarmUp(_ codec: OggCodec) -> Int {
        switch codec {
        case .vorbis(let id): return 2 * id.blockSizes.long
        default: return 3840 + OpusDecoder.maxFrames
        }
    }

    /// The plan for Ogg: the headers from the probe's bytes, the length from the last page's
    /// granule (a local file reads it directly; over HTTP one Range request at the end when
    /// the size is known); a chained file is walked link by link for its length.
    func oggPlan(_ stream: ProbedStream) throws -> StreamPlan {
        guard let codec = stream.oggCodec else { throw PlaybackError(message: "parser: no Ogg codec header", exitCode: 1) }
        // Opus keeps libopus's float samples in a WAV file (as `opusdec --float` writes them);
        // Vorbis is written in 16 bits, as oggdec writes it.
        let isOpus = if case .opus = codec { true } else { false }
        var format = AudioFormat(sampleRate: codec.sampleRate, channels: codec.channels, sampleType: isOpus ? .float32 : .int16)
        // Beyond stereo the speakers are the Vorbis layout's (in WAV order): a WAV file says so.
        if codec.channels > 2, codec.channels <= 8 { format.channelMask = VorbisChannelOrder.channelMask(channels: codec.channels) }
        var ogg = OggPlan(codec: codec, links: [])
        var length: Int?
        var containerTags = TrackTags()
        if let bytes = oggBytes() {
            do {
                // The header pages first (from the probe's bytes), then the last page (a chain:
                // every page, link by link), then each later link's header pages.
                let firstHeaders = try oggHeaderPages(bytes, from: stream.firstFrameOffset)
                let read = try OggReader.read(bytes)
                var total = 0
                for (index, link) in read.links.enumerated() {
                    let headers = index == 0 ? firstHeaders : try oggHeaderPages(bytes, from: link.offset)
                    let start = index == 0 ? stream.firstFrameOffset : link.offset
                    let end = index + 1 < read.links.count ? read.links[index + 1].offset : bytes.size
                    ogg.links.append(OggLinkPlan(link: OggConverter.Link(serial: link.serial, headers: headers, firstSample: max(0, total)),
                                                 origin: link.codec.preSkip, firstAudioPage: start + headers.count, end: end))
                    guard total >= 0, let samples = link.samples, link.codec.sampleRate == codec.sampleRate else { total = -1; continue }
                    total += samples
                }
                if total >= 0 { length = total }
                // The first link's comments (OpusTags, the Vorbis comment header): tags, and the
                // ReplayGain or R128 gains `--replaygain` plays by.
                containerTags = read.tags
                log("parser", "ogg \(codec.name) \(codec.sampleRate) Hz, \(codec.channels) ch, serial \(read.first.serial)"
                    + (codec.preSkip > 0 ? ", pre-skip \(codec.preSkip)" : "") + (read.links.count > 1 ? ", \(read.links.count) chained links" : "")
                    + (length.map { ", \($0) samples" } ?? ", length unknown") + "; \(bytes.requests) range requests")
            } catch {
                ogg.links = []
                log("parser", "ogg: no length (\(error))")
            }
        }
        var plan = StreamPlan(stream: stream, format: format, audioStart: stream.firstFrameOffset, samplesPerUnit: 1, trimStart: 0,
                              trimmedLength: length, totalUnits: nil, warmUpUnits: Self.oggWarmUp(codec), mpegHeader: nil, wav: nil,
                              adts: nil)
        plan.ogg = ogg
        plan.containerTags = containerTags
        return plan
    }

    /// The whole resource as random-access bytes: the file itself, or Range requests (the
    /// probe's bytes reused) when the size is known; nil for a stream without one. A streamed
    /// answer that did not tell the size is asked once (a one-byte Range request, counted).
    func oggBytes() -> SourceBytes? {
        guard canReadRanges, source.segments == nil, control.live.info == nil else { return nil }
        var asked = 0
        if control.totalSize == nil, let size = try? source.resourceSize() {
            control.setTotalSize(size)
            asked = 1
        }
        guard let size = control.totalSize, size > 0 else { return nil }
        return SourceBytes(source: source, size: size, prefix: probePrefix, requests: asked)
    }

    /// The bytes from `offset` to the end of the last page with granule 0 before audio (the
    /// BOS pages and the header pages: Opus and Vorbis start their audio on a fresh page),
    /// read page by page (from the probe's bytes, then windows of at least 64 KiB).
    private func oggHeaderPages(_ bytes: SourceBytes, from offset: Int) throws -> [UInt8] {
        var position = offset
        var pages: [UInt8] = []
        var end = 0
        while position < bytes.size, pages.count < Self.maxOggHeaderBytes {
            let head = try bytes.read(at: position, count: OggPage.minHeaderLength + 255)
            guard head.count >= OggPage.minHeaderLength, head.starts(with: OggPage.capturePattern),
                  head.count >= OggPage.minHeaderLength + Int(head[26]) else { break }
            let length = OggPage.minHeaderLength + Int(head[26]) + head[27..<(27 + Int(head[26]))].reduce(0) { $0 + Int($1) }
            let bytes = try bytes.read(at: position, count: length)
            guard let page = try? OggPage.parse(bytes[...]),
                  page.granulePosition == 0 || page.granulePosition == -1 || page.isBeginningOfStream else { break }
            position += length
            pages += bytes
            if page.granulePosition == 0 { end = pages.count }
        }
        return Array(pages.prefix(end))
    }

    /// Most bytes of Ogg header pages kept for seeking (cover art in the comment header can be large).
    static let maxOggHeaderBytes = 16 << 20

    /// Seek in Ogg: the page to restart at for the link-local `unit` (samples from the first
    /// played one), found by bisection over page granules with Range requests (each reads one
    /// window), then a last read of the remaining span. The sample returned is where the first
    /// packet after that page starts: the granule of the last page before it.
    func locateOggPage(atOrBefore unit: Int, plan: StreamPlan, ogg: OggPlan) throws -> (unit: Int, byte: Int) {
        guard unit > 0 else { return (0, plan.audioStart) }
        guard let bytes = oggBytes(), let link = ogg.links.last(where: { $0.link.firstSample <= unit }) else {
            throw PlaybackError(message: "player: cannot seek in this Ogg stream: its size is not known", exitCode: 1)
        }
        if ogg.links.count > 1, plan.trimmedLength == nil {
            throw PlaybackError(message: "player: cannot seek in this chained Ogg file: a link's length is not known", exitCode: 1)
        }
        if ogg.links.count > 1, ogg.links.contains(where: { $0.link.headers.isEmpty }) {
            throw PlaybackError(message: "player: cannot seek in this chained Ogg file: a link's header pages were not found", exitCode: 1)
        }
        let isFirstLink = link.link.firstSample == ogg.links.first?.link.firstSample
        // The link's start: the first link from the stream's start, a later one after its headers.
        let linkStart = isFirstLink ? (0, plan.audioStart) : (link.link.firstSample, link.firstAudioPage)
        let want = Int64(link.origin + unit - link.link.firstSample)
        let window = 64 * 1024
        // A page with a granule below `want` starts at or after `low`; pages from `high` on are past it.
        var low = link.firstAudioPage, high = link.end
        guard low < high else { return linkStart }
        var steps = 0
        while high - low > 2 * window, steps < 64 {
            steps += 1
            let middle = low + (high - low) / 2
            let chunk = try bytes.read(at: middle, count: window)[...]
            guard let (at, granule) = Self.firstGranulePage(in: chunk, serial: link.link.serial), granule < want else {
                high = middle
                continue
            }
            low = middle + at
        }
        let span = try bytes.read(at: low, count: min(bytes.size, high + OggPage.maxLength) - low)[...]
        var position = 0
        var best: (granule: Int64, next: Int)?
        var failures = OggPage.defaultMaxFailures
        while let (at, page) = OggPage.next(in: span, from: position, failures: &failures) {
            position = at + page.length
            guard page.serial == link.link.serial, page.granulePosition != -1 else { continue }
            if page.granulePosition >= want || low + at >= link.end { break }
            best = (page.granulePosition, low + position)
        }
        log("parser", "ogg seek: \(bytes.requests) range requests (\(steps) bisection steps)"
            + (ogg.links.count > 1 ? " in link \((ogg.links.firstIndex { $0.link.firstSample == link.link.firstSample } ?? 0) + 1)" : ""))
        guard let best, best.granule > Int64(link.origin) else { return linkStart }
        return (link.link.firstSample + Int(best.granule) - link.origin, best.next)
    }

    /// The first page of `serial` in `chunk` with a granule, and that granule.
    private static func firstGranulePage(in chunk: ArraySlice<UInt8>, serial: UInt32) -> (Int, Int64)? {
        var position = 0
        var failures = 256
        while let (at, page) = OggPage.next(in: chunk, from: position, failures: &failures) {
            if page.serial == serial, page.granulePosition != -1 { return (at, page.granulePosition) }
            position = at + page.length
        }
        return nil
    }
}

/// A byte source as `RandomAccessBytes` for the Ogg plan: reads go to Range requests (counted),
/// except what the probe already read from the start; each request fetches at least 64 KiB.
final class SourceBytes: RandomAccessBytes {
    let source: any ByteSource
    let size: Int
    /// The probe's prefix, then the latest reads (a few, so the header pages, the last page
    /// and a seek's windows are each fetched once).
    private var cache: [(offset: Int, bytes: [UInt8])]
    private(set) var requests = 0
    static let minimumRead = 64 * 1024
    static let cachedReads = 4

    init(source: any ByteSource, size: Int, prefix: [UInt8], requests: Int = 0) {
        self.source = source
        self.size = size
        self.requests = requests
        cache = [(0, prefix)]
    }

    func read(at offset: Int, count: Int) throws -> [UInt8] {
        let end = min(size, offset + max(0, count))
        guard offset >= 0, offset < end else { return [] }
        for block in cache where offset >= block.offset && end <= block.offset + block.bytes.count {
            return Array(block.bytes[(offset - block.offset)..<(end - block.offset)])
        }
        let fetchEnd = min(size, max(end, offset + Self.minimumRead))
        let bytes: [UInt8]
        if let cached = source.cachedBytes(offset..<fetchEnd) {
            bytes = cached
        } else {
            requests += 1
            bytes = try source.readRange(offset..<fetchEnd)
        }
        if cache.count > Self.cachedReads { cache.remove(at: 1) }
        cache.append((offset, bytes))
        return Array(bytes.prefix(end - offset))
    }
}
