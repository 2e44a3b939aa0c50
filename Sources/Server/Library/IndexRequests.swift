import StreamShared

/// The indexer's to-do list, owned by the catalog: tracks a client started reading (their exact
/// seek index comes first) and "a scan ended" (long tracks' indexes are built ahead). The catalog
/// adds to it (`/media/` on an event loop: quick, never a wait on slow work); the scanner's indexer
/// thread takes from it. So the catalog never calls up into the scanner.
public final class IndexRequests: @unchecked Sendable {
    // @unchecked: every field is behind `condition`.
    private let condition = ConditionLock()
    private var played: [String] = []
    private var aheadWanted = false
    private var stopping = false
    /// Played tracks waiting at most; more are dropped (the index is built on first need then).
    static let playedLimit = 256

    /// What the indexer is to do next.
    public enum Work: Equatable {
        case played(String)
        case ahead
        case stop
    }

    public init() {}

    /// A client started reading the track at absolute `path`.
    public func requestPlayed(_ path: String) {
        condition.withLock {
            if played.count < Self.playedLimit { played.append(path) }
            condition.signal()
        }
    }

    /// A scan ended: look for long tracks without an index.
    public func requestAhead() {
        condition.withLock {
            aheadWanted = true
            condition.signal()
        }
    }

    /// Shutdown: the indexer takes no further work.
    public func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
    }

    /// Waits for work: played tracks first, then the building ahead a scan asked for.
    public func next() -> Work {
        condition.withLock {
            while !stopping && played.isEmpty && !aheadWanted { condition.wait() }
            return take()
        }
    }

    /// The next work without waiting; nil when there is none.
    public func poll() -> Work? {
        condition.withLock { stopping || !played.isEmpty || aheadWanted ? take() : nil }
    }

    /// True when newer work (or shutdown) should interrupt the building ahead under way.
    public var hasNewerWork: Bool { condition.withLock { stopping || !played.isEmpty || aheadWanted } }

    /// Called with `condition` held and work present.
    private func take() -> Work {
        if stopping { return .stop }
        if !played.isEmpty { return .played(played.removeFirst()) }
        aheadWanted = false
        return .ahead
    }
}
