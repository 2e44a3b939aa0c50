import StreamShared

/// `--loop`: what happens at the end of a track or of the queue.
public enum LoopMode: String, Sendable, CaseIterable {
    /// Play the queue once.
    case off
    /// Repeat the current track until the user skips it.
    case track
    /// Start the queue again after its last track (in the same order).
    case all
}

/// The order tracks play in and the way through it: `--shuffle [--seed N]`, `--loop`,
/// `--start-track N`, and the keys n and p. Pure bookkeeping over indexes into the source list.
public struct PlayQueue: Sendable, Equatable {
    /// Number of tracks.
    public let count: Int
    /// Indexes into the source list, in the order they play.
    public let order: [Int]
    public let loop: LoopMode
    /// Position in `order` of the track playing now.
    public private(set) var position: Int

    /// - Parameters:
    ///   - startTrack: 1-based number of the first track in the source list (clamped). With
    ///     shuffle it plays first and the others follow in shuffled order.
    ///   - seed: makes the shuffle repeatable; nil shuffles differently each run.
    public init(count: Int, shuffle: Bool = false, seed: UInt64? = nil, loop: LoopMode = .off, startTrack: Int = 1) {
        self.count = max(0, count)
        self.loop = loop
        let first = min(max(1, startTrack), max(1, count)) - 1
        guard shuffle, count > 1 else {
            order = Array(0..<self.count)
            position = min(first, max(0, self.count - 1))
            return
        }
        var generator = SplitMix64(seed: seed ?? SplitMix64.entropy())
        var rest = (0..<count).filter { $0 != first }
        // Fisher-Yates with the generator's uniform draws.
        if rest.count > 1 {
            for i in stride(from: rest.count - 1, to: 0, by: -1) {
                let j = Int(generator.next(below: UInt64(i + 1)))
                rest.swapAt(i, j)
            }
        }
        order = [first] + rest
        position = 0
    }

    /// Index into the source list of the track playing now; nil for an empty queue.
    public var current: Int? { count > 0 ? order[position] : nil }

    /// 1-based number of the current track in play order (the status line's "3/12").
    public var number: Int { position + 1 }

    /// After a track ends by itself: the same track again (`--loop track`), the next one, the
    /// first again (`--loop all`), or nil at the end of the queue.
    public mutating func advanceAfterEnd() -> Int? {
        if loop == .track { return current }
        return skipForward()
    }

    /// Key n, or a track that could not be played: the next track, even under `--loop track`.
    public mutating func skipForward() -> Int? {
        guard count > 0 else { return nil }
        if position + 1 < count {
            position += 1
        } else if loop == .all || loop == .track {
            position = 0
        } else {
            return nil
        }
        return current
    }

    /// Key p: more than 3 s into the track restarts it; else the previous track (the first one
    /// restarts; under `--loop all` the first goes to the last).
    public mutating func back(elapsed seconds: Double) -> Int? {
        guard count > 0 else { return nil }
        if seconds > 3 { return current }
        if position > 0 {
            position -= 1
        } else if loop == .all {
            position = count - 1
        }
        return current
    }
}
