import StreamShared
import StreamHTTP
import StreamLibrary
import Logging

/// An Ogg channel of library files, fed as a live source is: sends the tracks one after the
/// other (reshuffled every pass with `shuffle`) as one chained Ogg stream into the channel's
/// `LiveProducer`, the way a relay feeds it, so the producer's page splitter paces it by the
/// granules, keeps each link's header pages for joiners and takes each link's title from its
/// comments (the catalog's title when they name none). Each track becomes a link of its own
/// with a fresh serial (`OggLinkRewriter`):
/// - `.files` (`--channel NAME=PATH,passthrough` over Ogg Opus or Vorbis): the file's own pages;
/// - `.opus` (`,format=opus`): the track decoded (`ChannelDecoder`, in a worker process) and
///   encoded by an `OggOpusEncoder` of its own, whose OpusTags carry the catalog's title, artist
///   and album. One encode for the channel, however many listen.
/// Blocking file reads and encodes on its own thread; the bounded feed holds it to the
/// producer's pace.
final class OggTrackFeeder: @unchecked Sendable {
    // @unchecked: `stopped` is guarded by `lock`; `thread` is set by `start` before anyone joins
    // it; the rest is used by the feeder thread only.
    let producer: LiveProducer
    let tracks: [ChannelTrack]
    let shuffle: Bool
    let logger: Logger
    /// Where a link's pages come from.
    enum Links {
        /// The files' own pages.
        case files
        /// Each track encoded to Opus at `kbps` (stereo, 48 kHz).
        case opus(kbps: Int, decoder: ChannelDecoder)
    }
    let links: Links
    private let lock = Lock(())
    private var stopped = false
    private var thread: NativeThread?
    /// The pages' rewrite into links, kept across tracks so serials keep counting up (from a random start).
    private var rewriter = OggLinkRewriter(firstSerial: UInt32.random(in: 0...UInt32.max))
    static let blockSize = 64 * 1024
    /// The feed's room for an encoding channel: a few seconds ahead of the producer is enough
    /// (the producer takes up to the burst at start), and an encode does not run far ahead of
    /// what is heard.
    static let encodedFeedBytes = 64 * 1024

    init(producer: LiveProducer, tracks: [ChannelTrack], shuffle: Bool, links: Links = .files, logger: Logger) {
        self.producer = producer
        self.tracks = tracks
        self.shuffle = shuffle
        self.links = links
        self.logger = logger
    }

    func start() throws(ThreadError) {
        thread = try NativeThread(name: "radio-ogg-\(producer.channel.name)") { [self] in run() }
    }

    /// Asks the thread to stop and waits for it, until `deadline` (monotonic ns) when given;
    /// true once it has ended.
    @discardableResult
    package func stop(deadline: UInt64?) -> Bool {
        lock.withLock { _ in stopped = true }
        return thread?.join(deadline: deadline) ?? true
    }

    private var isStopped: Bool { lock.withLock { _ in stopped } }

    private func run() {
        // The plan's bitrate (the catalog's for pass-through): Ogg pages do not say.
        var kbps = producer.channel.format?.kbps
        var feed = SourceFeed()
        if case .opus(let rate, _) = links {
            kbps = rate
            feed = SourceFeed(capacity: Self.encodedFeedBytes)
        }
        let station = StationInfo(name: producer.channel.name, genre: nil, url: nil, description: nil)
        while !producer.attach(LiveProducer.AttachedSource(feed: feed, codec: .ogg, station: station, kbps: kbps)) {
            if isStopped { return }
            sleepNanos(50_000_000)
        }
        defer { feed.close() }
        while !isStopped {
            var played = 0
            for track in shuffle ? tracks.shuffled() : tracks {
                if isStopped { return }
                do {
                    let sent: Bool
                    switch links {
                    case .files: sent = try send(track, to: feed)
                    case .opus(let kbps, let decoder): sent = try encode(track, kbps: kbps, decoder: decoder, to: feed)
                    }
                    if sent { played += 1 }
                } catch {
                    if case .opus = links {
                        // As an MP3 channel says it: the decoder's errors name the skip themselves.
                        logger.warning("radio \(producer.channel.name): \(track.path): \(error)")
                    } else {
                        logger.warning("radio \(producer.channel.name): \(track.track.path) skipped: \(error)")
                    }
                }
            }
            if played == 0 {
                // Every track failed: say so once and wait for the stop (the channel ends for listeners).
                logger.warning("radio \(producer.channel.name): no track can be played")
                producer.channel.end()
                while !isStopped { sleepNanos(50_000_000) }
                return
            }
        }
    }

    /// Sends the Opus/Vorbis pages of one track, each logical stream a new link
    /// (`OggLinkRewriter`); true when at least one link's pages went out. Throws `SystemError`
    /// when the file cannot be read.
    private func send(_ track: ChannelTrack, to feed: SourceFeed) throws -> Bool {
        let file = try OpenFile(path: track.path)
        rewriter.beginFile()
        var buffer: [UInt8] = []
        var offset = 0
        var sent = false
        while !isStopped {
            let want = min(Self.blockSize, file.size - offset)
            var n = 0
            if want > 0 {
                let start = buffer.count
                buffer += [UInt8](repeating: 0, count: want)
                let at = offset
                n = try buffer.withUnsafeMutableBytes { raw in
                    do throws(PositionalReadError) {
                        return try PositionalRead.fill(file.fd, UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + want)]), at: at)
                    } catch {
                        throw SystemError(call: "pread", errno: error.errno)
                    }
                }
                buffer.removeLast(want - n)
                offset += n
            }
            // The end of the file (or of what it was when opened: one that shrank ends early).
            let atEnd = n == 0
            if emit(&buffer, of: track, to: feed, isComplete: atEnd) { sent = true }
            if atEnd { break }
        }
        return sent
    }

    /// Sends the complete pages at the start of `buffer` as a link's (`OggLinkRewriter`) and
    /// removes them (all of it when `isComplete`); true when a page went out.
    private func emit(_ buffer: inout [UInt8], of track: ChannelTrack, to feed: SourceFeed, isComplete: Bool) -> Bool {
        let (consumed, pages) = rewriter.take(buffer[...], isComplete: isComplete)
        buffer.removeFirst(consumed)
        for page in pages {
            // Shown when the link's comments name no title (the catalog's, maybe derived from the path).
            if let serial = page.startsLink { producer.setLinkTitle(track.title, serial: serial) }
            feed.appendWaiting(page.bytes[...], stopped: { isStopped })
        }
        return !pages.isEmpty
    }

    /// Encodes one track to a link of Ogg Opus and sends its pages; true when they went out.
    /// Throws when the track cannot be opened (nothing was sent) or the encoder refuses; a
    /// decode that fails part way ends the link there (logged), so the stream stays whole.
    private func encode(_ track: ChannelTrack, kbps: Int, decoder: ChannelDecoder, to feed: SourceFeed) throws -> Bool {
        try decoder.begin(track)
        defer { decoder.end() }
        rewriter.beginFile()
        producer.channel.tracksEncoded.wrappingIncrement(ordering: .relaxed)
        // Made at the first samples: a track that gives none is no link at all.
        var link: ResamplingEncoder?
        var samples: [Float] = []
        var bytes: [UInt8] = []
        var sent = false
        while !isStopped {
            samples.removeAll(keepingCapacity: true)
            let rate: Int?
            do {
                rate = try decoder.next(into: &samples)
            } catch {
                // (A stop cancels the worker's wait: not the track's fault.)
                if !isStopped { logger.warning("radio \(producer.channel.name): \(track.path) cut short: \(error)") }
                break
            }
            guard let rate else { break }
            if link == nil {
                link = ResamplingEncoder(try OggOpusEncoder(channels: decoder.channels, kbps: kbps, tags: Self.tags(track)))
            }
            do {
                try link?.encode(&samples, rate: rate, appendingTo: &bytes)
            } catch {
                // (A rate the resampler refuses part way.) The link ends with what it has.
                logger.warning("radio \(producer.channel.name): \(track.path) cut short: \(error)")
                break
            }
            if emit(&bytes, of: track, to: feed, isComplete: false) { sent = true }
        }
        guard let link, !isStopped else { return sent }
        // The link's end: the last page's granule trims it to the track's samples.
        try link.finish(appendingTo: &bytes)
        if emit(&bytes, of: track, to: feed, isComplete: true) { sent = true }
        return sent
    }

    /// The OpusTags of a track's link: the catalog's title (maybe derived from the path), artist and album.
    static func tags(_ track: ChannelTrack) -> [(String, String)] {
        // `track.title` is "Artist - Title" when both are known: the comments keep them apart.
        let title = track.track.title.flatMap { $0.isEmpty ? nil : $0 } ?? track.title
        return [("TITLE", title), ("ARTIST", track.track.artist ?? ""), ("ALBUM", track.track.album ?? "")]
    }
}
