import StreamShared
import StreamHTTP
import StreamLibrary
import Logging

/// A pass-through Ogg channel of library files (`--channel NAME=PATH,passthrough` over Ogg Opus
/// or Vorbis tracks): sends the tracks one after the other (reshuffled every pass with `shuffle`)
/// as one chained Ogg stream into the channel's `LiveProducer`, the way a relay feeds it, so the
/// producer's page splitter paces it by the granules, keeps each link's header pages for joiners
/// and takes each link's title from its comments (the catalog's title when they name none). Each
/// track's Opus/Vorbis logical stream becomes a link of its own (`OggLinkRewriter`: the file's
/// pages with a fresh serial). Blocking file reads on its own thread; the bounded feed holds it
/// to the producer's pace.
final class OggTrackFeeder: @unchecked Sendable {
    // @unchecked: `stopped` is guarded by `lock`; `thread` is set by `start` before anyone joins
    // it; the rest is used by the feeder thread only.
    let producer: LiveProducer
    let tracks: [ChannelTrack]
    let shuffle: Bool
    let logger: Logger
    private let lock = Lock(())
    private var stopped = false
    private var thread: NativeThread?
    /// The pages' rewrite into links, kept across tracks so serials keep counting up (from a random start).
    private var rewriter = OggLinkRewriter(firstSerial: UInt32.random(in: 0...UInt32.max))
    static let blockSize = 64 * 1024

    init(producer: LiveProducer, tracks: [ChannelTrack], shuffle: Bool, logger: Logger) {
        self.producer = producer
        self.tracks = tracks
        self.shuffle = shuffle
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
        guard let thread else { return true }
        guard let deadline else {
            thread.join()
            return true
        }
        return thread.join(until: Monotonic(nanoseconds: deadline))
    }

    private var isStopped: Bool { lock.withLock { _ in stopped } }

    private func run() {
        let feed = SourceFeed()
        let station = StationInfo(name: producer.channel.name, genre: nil, url: nil, description: nil)
        while !producer.attach(LiveProducer.AttachedSource(feed: feed, codec: .ogg, station: station, kbps: nil)) {
            if isStopped { return }
            sleepNanos(50_000_000)
        }
        defer { feed.close() }
        while !isStopped {
            var played = 0
            for track in shuffle ? tracks.shuffled() : tracks {
                if isStopped { return }
                do {
                    if try send(track, to: feed) { played += 1 }
                } catch {
                    logger.warning("radio \(producer.channel.name): \(track.track.path) skipped: \(error)")
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
            let (consumed, pages) = rewriter.take(buffer[...], isComplete: atEnd)
            buffer.removeFirst(consumed)
            for page in pages {
                // Shown when the link's comments name no title (the catalog's, maybe derived from the path).
                if let serial = page.startsLink { producer.setLinkTitle(track.title, serial: serial) }
                feed.appendWaiting(page.bytes[...], stopped: { isStopped })
                sent = true
            }
            if atEnd { break }
        }
        return sent
    }
}
