import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// Drives a live channel (`PUT /radio/NAME`): the connected source's frames are published in
/// real time by the channel's clock (a source that sends faster, like `curl -T file`, is held
/// back through its bounded feed). With no source, the channel relays its fallback channel
/// (`--fallback NAME=OTHER`) and goes back to the source when one connects; without a fallback it
/// ends `sourceTimeout` after the source left.
final class LiveProducer: @unchecked Sendable {
    // @unchecked: `pending*`, `sourceTitle`, `stopped` are guarded by `lock`; the rest is used
    // by the producer thread only.
    let channel: RadioChannel
    let fallback: RadioChannel?
    let tickNanos: UInt64
    let sourceTimeout: UInt64
    let onEnd: @Sendable (LiveProducer) -> Void
    /// A relay's channel never ends: it waits for its upstream to come back.
    let persistent: Bool
    /// Fed by the server's own `OggTrackFeeder` (a playlist channel of Ogg links), not by a
    /// source: the status pages say no source is connected, as for any playlist channel.
    let fedByPlaylist: Bool
    /// Bytes published at once when the first source attaches, so the first listeners get a
    /// burst as a playlist channel's do (0: none; a live source's stream starts when it does).
    let preroll: Int
    private let lock = Lock(())
    private var pendingSource: AttachedSource?
    private var sourceBusy = false
    private var sourceTitle = ""
    /// Titles for Ogg links whose comments name none, by the link's serial (a pass-through
    /// playlist's catalog titles: an untagged file shows its derived title). Bounded: see `setLinkTitle`.
    private var linkTitles: [UInt32: String] = [:]
    private var stopped = false
    /// Set by `start`, joined by `stop` (RadioService's lock orders the two).
    private var thread: NativeThread?

    /// A source as the producer sees it.
    struct AttachedSource {
        var feed: SourceFeed
        var codec: AudioFrameSplitter.Codec
        var station: StationInfo
        var kbps: Int?
    }

    init(channel: RadioChannel, fallback: RadioChannel?, tickNanos: UInt64, sourceTimeout: UInt64, persistent: Bool = false,
         fedByPlaylist: Bool = false, preroll: Int = 0, onEnd: @escaping @Sendable (LiveProducer) -> Void) {
        self.persistent = persistent
        self.fedByPlaylist = fedByPlaylist
        self.preroll = max(0, preroll)
        self.channel = channel
        self.fallback = fallback
        self.tickNanos = max(1_000_000, tickNanos)
        self.sourceTimeout = sourceTimeout
        self.onEnd = onEnd
    }

    func start() throws(ThreadError) {
        thread = try NativeThread(name: "radio-live-\(channel.name)") { [self] in run() }
    }

    /// Stops the thread and waits for it, until `deadline` (monotonic ns) when given; true once
    /// it has ended.
    @discardableResult
    package func stop(deadline: UInt64? = nil) -> Bool {
        lock.withLock { _ in
            stopped = true
        }
        return thread?.join(deadline: deadline) ?? true
    }

    /// Takes a new source unless one is connected (then false: the mount is in use).
    func attach(_ source: AttachedSource) -> Bool {
        return lock.withLock { _ in
            guard !sourceBusy, !stopped else { return false }
            sourceBusy = true
            pendingSource = source
            return true
        }
    }

    /// A metadata update for the source (`/admin/metadata`): shown while the source plays.
    func setSourceTitle(_ title: String) {
        let live = lock.withLock { _ in
            sourceTitle = title
            return sourceBusy
        }
        if live { channel.setTitle(title) }
    }

    /// The title of the Ogg link with `serial` when its own comments give none.
    func setLinkTitle(_ title: String, serial: UInt32) {
        lock.withLock { _ in
            // The feeder runs at most a feed ahead: a few links; anything older has been played.
            if linkTitles.count >= 64 { linkTitles.removeAll() }
            linkTitles[serial] = title
        }
    }

    private func linkTitle(serial: UInt32) -> String? {
        return lock.withLock { _ in linkTitles.removeValue(forKey: serial) }
    }

    private func takeNewSource() -> (AttachedSource?, Bool, String) {
        return lock.withLock { _ in
            let source = pendingSource
            pendingSource = nil
            return (source, stopped, sourceTitle)
        }
    }

    private func sourceLeft() {
        lock.withLock { _ in
            sourceBusy = false
        }
    }

    // MARK: The producer thread

    private func run() {
        var source: AttachedSource?
        var splitter = AudioFrameSplitter(codec: .mpeg)
        var buffer: [UInt8] = []
        var pending: [(bytes: [UInt8], frame: AudioFrameSplitter.Frame, ogg: OggPageFacts?)] = []
        var oggHeaders: OggHeaderPages?
        var oggLinkNumber = 0
        var pendingNanos: UInt64 = 0
        var schedule = ChannelSchedule(origin: monotonicNanos())
        var builder = ChunkBuilder()
        var relay: RadioChunk?
        var lostAt: UInt64? = monotonicNanos()
        var relayedTitle: ICYBlock?
        // The pre-roll: until `preroll` bytes are out, pages are published as they come.
        var prerolled = preroll == 0
        var prerollBytes = 0
        var prerollFrom: UInt64 = 0
        while true {
            let (incoming, stop, title) = takeNewSource()
            if stop { return }
            let now = monotonicNanos()
            if let incoming {
                source = incoming
                splitter = AudioFrameSplitter(codec: incoming.codec)
                buffer = []
                pending = []
                pendingNanos = 0
                oggHeaders = nil
                oggLinkNumber = 0
                relay = nil
                lostAt = nil
                // The source's frames start now, whatever came before.
                schedule.origin = now &- schedule.clock.nanos
                prerollFrom = schedule.clock.nanos
                channel.setStation(incoming.station)
                // Listeners may come before the first frame: the declared type stands until then.
                if channel.format == nil {
                    channel.setFormat(ChannelFormat(codec: incoming.codec, sampleRate: 0, channels: 0, kbps: incoming.kbps ?? 0))
                }
                channel.setTitle(title)
                if !fedByPlaylist { channel.setSourceConnected(true) }
            }
            if let current = source {
                // Hold at most ~2 s (or 256 KiB) of parsed frames; the rest waits in the feed.
                var closed = false
                if (pendingNanos < 2_000_000_000 || !prerolled) && buffer.count < 256 * 1024 {
                    let taken = current.feed.take(upTo: 64 * 1024)
                    buffer += taken.bytes
                    closed = taken.closed
                } else {
                    closed = false
                }
                var head = 0
                splitting: while head < buffer.count {
                    let step: AudioFrameSplitter.Step
                    do {
                        step = try splitter.next(in: buffer[head...], isComplete: closed)
                    } catch {
                        // Not audio of the declared type: drop what is buffered and go on.
                        head = buffer.count
                        break splitting
                    }
                    switch step {
                    case .frame(let frame):
                        var ogg: OggPageFacts?
                        if current.codec == .ogg, let link = splitter.oggLink {
                            let page = splitter.lastOggPage
                            var facts = OggPageFacts(startsLink: page.startsLink, isHeader: page.isHeader, codec: link.codec.name)
                            if link.headersComplete, link.number != oggLinkNumber {
                                // This page ends the link's headers: its title, and what joiners get first.
                                oggLinkNumber = link.number
                                oggHeaders = OggHeaderPages(link.headerPages)
                                let fallback = linkTitle(serial: link.serial)
                                facts.title = link.title ?? fallback ?? ""
                            }
                            facts.headers = oggHeaders
                            ogg = facts
                        }
                        pending.append((Array(buffer[head..<(head + frame.length)]), frame, ogg))
                        pendingNanos += UInt64(frame.samples) * 1_000_000_000 / UInt64(max(1, frame.sampleRate))
                        head += frame.length
                    case .skip(let count):
                        head += min(count, buffer.count - head)
                    case .needMore:
                        break splitting
                    }
                }
                buffer.removeFirst(head)
                // A source that fell far behind the clock (it paused) starts again from now.
                _ = schedule.resume(now: now, ifBehindBy: 2_000_000_000)
                var published = 0
                while published < pending.count, !prerolled || schedule.isDue(now: now) {
                    let (bytes, frame, ogg) = pending[published]
                    if let ogg { prepareOggChunk(&builder, for: ogg, now: now) }
                    if (published == 0 || builder.isEmpty) && (ogg == nil || frame.samples > 0) {
                        updateFormat(frame, kbps: current.kbps, codec: current.codec, oggCodec: ogg?.codec)
                    }
                    builder.append(frame: bytes[...], samples: frame.samples,
                                   format: FrameFormat(codec: current.codec, sampleRate: frame.sampleRate, channels: frame.channels),
                                   flushingTo: channel, now: now)
                    schedule.clock.advance(samples: frame.samples, rate: frame.sampleRate)
                    pendingNanos -= min(pendingNanos, UInt64(frame.samples) * 1_000_000_000 / UInt64(max(1, frame.sampleRate)))
                    published += 1
                    if !prerolled {
                        prerollBytes += bytes.count
                        if prerollBytes >= preroll {
                            // What went out at once is due as of now: the stream goes on in real time from here.
                            schedule.lead(by: schedule.clock.nanos - min(prerollFrom, schedule.clock.nanos))
                            prerolled = true
                        }
                    }
                }
                pending.removeFirst(published)
                builder.flush(to: channel, now: now)
                if closed && pending.isEmpty {
                    source = nil
                    lostAt = now
                    sourceLeft()
                    if !fedByPlaylist { channel.setSourceConnected(false) }
                }
            } else if let fallback {
                // Relay the fallback from its live edge, chunk by chunk as it publishes.
                var cursor = relay ?? fallback.liveEdge()
                while let next = cursor.next.load() {
                    if next.title !== relayedTitle {
                        relayedTitle = next.title
                        channel.setTitle(next.title.title)
                    }
                    if channel.format != fallback.format { channel.setFormat(fallback.format) }
                    channel.publish(next.bytes()[...], frameStarts: next.frameStarts, frameSamples: next.frameSamples,
                                    format: next.format, now: now, oggJoin: next.oggJoin)
                    cursor = next
                }
                relay = cursor
                _ = schedule   // the source's clock resumes from now when one connects
            } else if !persistent, let since = lostAt, now >= since, now - since >= sourceTimeout {
                lock.withLock { _ in
                    stopped = true   // no source can attach to an ended channel
                }
                channel.end()
                onEnd(self)
                return
            }
            sleepNanos(tickNanos)
        }
    }

    /// An Ogg page's chunk: a BOS page starts one (joinable at its start), header pages after it
    /// stay with it or in one no listener joins, audio pages of a link share one that listeners
    /// join after the link's header pages. A link's title is announced once its headers are in.
    private func prepareOggChunk(_ builder: inout ChunkBuilder, for page: OggPageFacts, now: UInt64) {
        let wanted: OggJoin
        if page.startsLink {
            wanted = .atStart
        } else if page.isHeader {
            wanted = .never
        } else if let headers = page.headers {
            wanted = .afterHeaders(headers)
        } else {
            wanted = .never
        }
        let fits: Bool
        switch (builder.oggJoin, wanted) {
        case (.atStart, .never), (.never, .never): fits = true
        case (.afterHeaders(let a), .afterHeaders(let b)): fits = a === b
        default: fits = false
        }
        if !fits || builder.isEmpty {
            builder.flush(to: channel, now: now)
            builder.oggJoin = wanted
        }
        if let title = page.title {
            channel.setTitle(title)
            channel.setOggHeaders(page.headers)
        }
    }

    private func updateFormat(_ frame: AudioFrameSplitter.Frame, kbps: Int?, codec: AudioFrameSplitter.Codec, oggCodec: String?) {
        let format = ChannelFormat(codec: codec, sampleRate: frame.sampleRate, channels: frame.channels,
                                   kbps: kbps ?? max(1, frame.bitrate / 1000), oggCodec: oggCodec)
        if channel.format != format { channel.setFormat(format) }
    }
}

/// What the splitter said about one Ogg page, carried to its publication.
struct OggPageFacts {
    var startsLink: Bool
    var isHeader: Bool
    /// The link's codec ("opus", "vorbis").
    var codec: String
    /// The link's header pages, once they are all in.
    var headers: OggHeaderPages?
    /// Set on the page that completes a link's headers: the title its comments give ("" for none).
    var title: String?
}
