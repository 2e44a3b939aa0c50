import StreamShared
import Synchronization

/// What a queue reports per track.
public enum QueueEvent: Sendable {
    /// Track `number` of `count` (play order) began: its source opened and probed.
    case started(number: Int, count: Int, url: String)
    /// The track played to its end, or was left with n/p/q after it started.
    case ended(number: Int, url: String, stats: PlayerStats)
    /// The track could not be played (unreachable, not audio, undecodable); the queue goes on.
    case skipped(number: Int, url: String, reason: String)
}

/// One track's outcome, for `--stats`.
public struct QueueTrackResult: Sendable {
    public var number: Int
    public var url: String
    public var stats: PlayerStats?
    /// Why the track was skipped; nil when it played.
    public var skipReason: String?
    public var exitCode: Int32
}

/// Plays a list of tracks one after another through one `QueueOutput`, in the order a
/// `PlayQueue` gives, each with its own `Player`. Keys n and p (`next()`, `previous()`) and q
/// (`quit()`) act on the track playing.
public final class QueuePlayer: @unchecked Sendable {
    // @unchecked: the mutable fields are touched only under `lock`.
    public let urls: [String]
    private let output: QueueOutput
    private let options: PlayerOptions
    private let log: (@Sendable (String) -> Void)?
    private let lock = Mutex(())
    private var queue: PlayQueue
    private var player: Player?
    private var command: Command?
    private var playing: (number: Int, url: String)?

    private enum Command { case next, previous, quit }

    public init(urls: [String], queue: PlayQueue, output: QueueOutput, options: PlayerOptions,
                log: (@Sendable (String) -> Void)? = nil) {
        self.urls = urls
        self.queue = queue
        self.output = output
        self.options = options
        self.log = log
    }

    /// The player of the track playing now (for pause, seek, volume and the status line).
    public var currentPlayer: Player? { lock.withLock { _ in player } }
    /// "3/12" of the status line, and the track's URL.
    public var nowPlaying: (number: Int, count: Int, url: String)? {
        lock.withLock { _ in playing.map { ($0.number, queue.count, $0.url) } }
    }

    /// Key n: the next track.
    public func next() { send(.next) }
    /// Key p: restart the track when more than 3 s in, else the previous one.
    public func previous() { send(.previous) }
    /// Key q: stop the queue.
    public func quit() { send(.quit) }

    private func send(_ new: Command) {
        let current: Player? = lock.withLock { _ in
            command = new
            return player
        }
        current?.stop()
    }

    /// Plays until the queue ends or `quit()`; calls `onEvent` from this thread for each track.
    public func run(onEvent: (QueueEvent) -> Void) -> [QueueTrackResult] {
        var results: [QueueTrackResult] = []
        var index = lock.withLock { _ in queue.current }
        var skippedInARow = 0
        var first = true
        var previousAlbum: String?? = .none
        // Volume, rate, pitch and EQ changed with keys carry over to the next track.
        var carried = options
        while let i = index {
            let url = urls[i]
            let number = lock.withLock { _ in queue.number }
            var trackOptions = carried
            if !first { trackOptions.start = 0 }
            // --replaygain auto: album gain unless the track before was of another album.
            trackOptions.replayGainPreviousAlbum = previousAlbum
            first = false
            var elapsed = 0.0
            do {
                let track = try Player(url: url, output: output, options: trackOptions, log: log)
                let stopNow: Bool = lock.withLock { _ in
                    player = track
                    playing = (number, url)
                    return command == .quit
                }
                if stopNow { break }
                onEvent(.started(number: number, count: urls.count, url: url))
                defer {
                    carried.volume = track.volume
                    carried.rate = track.rate
                    carried.semitones = track.semitones
                    carried.eq = track.eq
                }
                let stats = try track.run()
                elapsed = track.progress.position
                previousAlbum = .some(track.playedTags?.album)
                onEvent(.ended(number: number, url: url, stats: stats))
                results.append(QueueTrackResult(number: number, url: url, stats: stats, skipReason: nil, exitCode: 0))
                skippedInARow = 0
            } catch {
                let (reason, code) = Self.describe(error)
                let asked = lock.withLock { _ in command }
                if asked != nil && reason == "player: stopped" {
                    // Left with n/p/q before the first sample: not a failure.
                    results.append(QueueTrackResult(number: number, url: url, stats: nil, skipReason: nil, exitCode: 0))
                } else {
                    onEvent(.skipped(number: number, url: url, reason: reason))
                    results.append(QueueTrackResult(number: number, url: url, stats: nil, skipReason: reason, exitCode: code))
                    skippedInARow += 1
                }
            }
            let asked: Command? = lock.withLock { _ in
                defer { command = nil; player = nil }
                return command
            }
            switch asked {
            case .quit: index = nil
            case .next: index = lock.withLock { _ in queue.skipForward() }
            case .previous: index = lock.withLock { _ in queue.back(elapsed: elapsed) }
            case nil:
                // A track that failed moves on even under --loop track; a whole round of
                // failures ends the queue instead of spinning.
                if skippedInARow >= urls.count { index = nil; break }
                index = lock.withLock { _ in skippedInARow > 0 ? queue.skipForward() : queue.advanceAfterEnd() }
            }
        }
        lock.withLock { _ in playing = nil }
        do { try output.finish() } catch {
            results.append(QueueTrackResult(number: 0, url: "", stats: nil, skipReason: "output: \(error)", exitCode: 1))
        }
        return results
    }

    static func describe(_ error: any Error) -> (String, Int32) {
        if let playback = error as? PlaybackError { return (playback.message, playback.exitCode) }
        if let source = error as? SourceError { return ("\(source)", source.exitCode) }
        return ("\(error)", 1)
    }
}
