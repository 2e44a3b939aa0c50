import StreamShared
import Logging

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
    /// The tracks' diagnostics (debug level), nil: none.
    private let logger: Logger?
    private let lock = Lock(())
    private var queue: PlayQueue
    private var player: Player?
    private var command: Command?
    private var playing: (number: Int, url: String)?

    private enum Command { case next, previous, quit }

    public init(urls: [String], queue: PlayQueue, output: QueueOutput, options: PlayerOptions,
                logger: Logger? = nil) {
        self.urls = urls
        self.queue = queue
        self.output = output
        self.options = options
        self.logger = logger
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

    /// The next track, opened and probed on its own thread while the one before plays.
    private final class Prefetch: @unchecked Sendable {
        // @unchecked: `player` and `failure` are written by the thread before `join()` returns
        // and read only after it.
        let index: Int
        var player: Player?
        var failure: (String, Int32)?
        private var thread: NativeThread?

        init(index: Int, make: () throws -> Player) {
            self.index = index
            do {
                let player = try make()
                self.player = player
                thread = try NativeThread(name: "streamplay-prefetch") { player.prepare() }
            } catch {
                failure = QueuePlayer.describe(error)
            }
        }

        /// Waits until the track is probed (or failed).
        func join() {
            thread?.join()
            thread = nil
        }

        /// Not played after all (n, p, q went elsewhere): its source stops.
        func cancel() {
            player?.abandon()
            join()
        }
    }

    /// Plays until the queue ends or `quit()`; calls `onEvent` from this thread for each track.
    ///
    /// The tracks share one output loop and its ring: a track's last samples are followed in the
    /// ring by the next track's first, so the output never waits at a join. The next track is
    /// opened and probed ahead (when the playing one's source has delivered its last byte, or it
    /// has less than 10 s left to decode), its throttle sharing `--buffer-bytes` with the playing
    /// one's, so it starts decoding the moment the track before ends.
    public func run(onEvent: (QueueEvent) -> Void) -> [QueueTrackResult] {
        var results: [QueueTrackResult] = []
        var index = lock.withLock { _ in queue.current }
        var skippedInARow = 0
        var first = true
        var previousAlbum: String?? = .none
        // The volume, rate, pitch and EQ the track before ended with (not the player itself: its
        // buffers go as soon as it is done).
        var carried: Player.Controls?
        var base = options
        base.throttleBudget = ThrottleBudget(limit: max(64 * 1024, options.bufferBytes))
        let loop = OutputLoop(output: output, ring: SPSCRing(capacity: Player.ringCapacity),
                              realtime: options.realtime || output.isRealtime, started: .now, holdsTrackEnds: true, drainsInline: true,
                              isPaused: { [weak self] in self?.currentPlayer?.isPaused ?? false })
        let crossfade = options.crossfadeSeconds > 0 ? CrossfadeLink(seconds: options.crossfadeSeconds) : nil
        var serial = 0
        var prefetched: Prefetch?
        let logger = self.logger, output = self.output, urls = self.urls
        /// Track `i`'s player, the `serial`th on the shared output. Near its end it opens the
        /// track due after it ahead (unless one is open already).
        func makePlayer(_ i: Int, serial: Int, trackOptions: PlayerOptions) throws -> Player {
            let hooks = QueueHooks(sharedLoop: loop, serial: serial, crossfade: crossfade) { [weak self] in
                guard let self, prefetched == nil else { return }
                var peek = lock.withLock { _ in queue }
                guard let next = peek.advanceAfterEnd() else { return }
                var nextOptions = base
                nextOptions.start = 0
                prefetched = Prefetch(index: next) { try makePlayer(next, serial: serial + 1, trackOptions: nextOptions) }
            }
            return try Player(url: urls[i], output: output, options: trackOptions, logger: logger, queueHooks: hooks)
        }
        while let i = index {
            let url = urls[i]
            let number = lock.withLock { _ in queue.number }
            var trackOptions = base
            if !first { trackOptions.start = 0 }
            first = false
            var elapsed = 0.0
            // The track opened ahead, when it is the one due; otherwise it is dropped.
            let ahead = prefetched
            prefetched = nil
            if let ahead, ahead.index != i { ahead.cancel() }
            do {
                let track: Player
                if let ahead, ahead.index == i {
                    ahead.join()
                    if let failure = ahead.failure { throw PlaybackError(message: failure.0, exitCode: failure.1) }
                    guard let player = ahead.player else { throw PlaybackError(message: "player: not opened", exitCode: 1) }
                    track = player
                } else {
                    track = try makePlayer(i, serial: serial, trackOptions: trackOptions)
                }
                serial += 1
                // --replaygain auto: album gain unless the track before was of another album.
                track.setPreviousAlbum(previousAlbum)
                // Volume, rate, pitch and EQ changed with keys carry over to the next track.
                if let carried { track.setControls(carried) }
                let stopNow: Bool = lock.withLock { _ in
                    player = track
                    playing = (number, url)
                    return command == .quit
                }
                if stopNow { break }
                onEvent(.started(number: number, count: urls.count, url: url))
                defer { carried = track.controls }
                if let crossfade { prepareCrossfade(crossfade, into: track, after: previousAlbum, loop: loop) }
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
        prefetched?.cancel()
        // The track opened ahead holds the near-end call that refers back to `prefetched`.
        prefetched = nil
        crossfade?.playTail(into: loop)
        lock.withLock { _ in playing = nil }
        loop.finish()
        if let error = loop.error {
            results.append(QueueTrackResult(number: 0, url: "", stats: nil, skipReason: "output: \(error)", exitCode: 1))
        }
        do { try output.finish() } catch {
            results.append(QueueTrackResult(number: 0, url: "", stats: nil, skipReason: "output: \(error)", exitCode: 1))
        }
        return results
    }

    /// `--crossfade`: the track mixes its start with the tail held back from the track before,
    /// unless both are of one album (they join gaplessly, as the album was cut); then the tail
    /// plays as it is first.
    private func prepareCrossfade(_ crossfade: CrossfadeLink, into track: Player, after previousAlbum: String??, loop: OutputLoop) {
        track.prepare()
        let album = track.preparedTags?.album
        let sameAlbum = album.map { !$0.isEmpty && previousAlbum == .some($0) } ?? false
        if sameAlbum { crossfade.playTail(into: loop) }
    }

    static func describe(_ error: any Error) -> (String, Int32) {
        if let playback = error as? PlaybackError { return (playback.message, playback.exitCode) }
        if let source = error as? SourceError { return ("\(source)", source.exitCode) }
        return ("\(error)", 1)
    }
}
