#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import Logging

/// The page's login sessions: a random token (the cookie) → its user, its CSRF token and when it
/// was last used. Only a hash of each token is kept, in memory and in the catalog database
/// (`web_sessions`, through `UserStore`), so neither a memory dump nor a copy of the file hands
/// out live cookies. The CSRF token is derived from the token under a key from the key file, so
/// it is stored nowhere and stays the same across a restart. Lookups (on the event loops) use
/// memory only; a new session and a logout are written at once (their callers run on the
/// blocking pool), last-seen times in batches by `startFlushing`'s thread. Loaded at start, so
/// a restart logs no browser out; expired rows are deleted then and on every flush.
final class SessionTable: Sendable {
    struct Session: Sendable {
        var userID: Int64
        /// The user's password stamp at login (`UserStore.userAndStamp`).
        var stamp: [UInt8]
        /// Filled in by `create` and `lookup` (derived from the token, which only they hold).
        var csrf: String
        /// Monotonic nanoseconds: the idle check does not follow the wall clock's jumps.
        var lastUsed: UInt64
        /// Wall-clock seconds of the login, and of the last use the database holds.
        var createdSeconds: Int64
        var savedSeenSeconds: Int64
    }

    private struct State {
        var sessions: [[UInt8]: Session] = [:]
        /// Token hashes used since their last-seen time was written.
        var touched: Set<[UInt8]> = []
        /// Token hashes ended (expired, pushed out) whose rows are not deleted yet.
        var removed: Set<[UInt8]> = []
        /// Wall-clock seconds of the last sweep of expired rows.
        var sweptSeconds: Int64 = 0
    }

    /// How often a flush with nothing else to write still deletes the expired rows.
    static let sweepSeconds: Int64 = 3600

    /// Most sessions at once; past it the least recently used goes.
    static let maxSessions = 10_000
    /// A use is written when the stored last-seen time is older than this (a page's many
    /// requests make one write a minute at most, and only at a flush).
    static let touchSeconds: Int64 = 60
    private let idleNanos: UInt64
    private let idleSeconds: Int64
    private let state = Lock(State())
    /// Where sessions are kept across restarts; nil: memory only (a router without accounts).
    private let store: UserStore?
    private let csrfKey: [UInt8]
    private let logger: Logger

    /// The sessions of `store` (loaded now, expired ones deleted: a blocking call, made at
    /// start), or memory-only ones without a store.
    init(idleSeconds: Double, store: UserStore? = nil, logger: Logger = Logger(label: "streamd.access")) {
        // 60 s to 10 years: a value past Int64 would trap in the conversion.
        self.idleSeconds = Int64(min(max(60, idleSeconds), 315_360_000))
        idleNanos = UInt64(self.idleSeconds) * 1_000_000_000
        self.store = store
        self.logger = logger
        csrfKey = store?.derivedKey("session-csrf") ?? Sodium.randomBytes(32)
        guard let store else { return }
        let now = Self.wallSeconds()
        let monotonicNow = Monotonic.now.nanoseconds
        do {
            let stored = try store.loadSessions(now: now, limit: Self.maxSessions)
            state.withLock { state in
                state.sweptSeconds = now
                // A time ahead of now (the clock went back, or a damaged row) counts as now; no
                // sum or difference of stored values can overflow.
                for row in stored {
                    let seen = min(max(row.lastSeenSeconds, 0), now)
                    guard seen > now - self.idleSeconds else { continue }
                    let idle = UInt64(now - seen) * 1_000_000_000
                    state.sessions[row.tokenHash] = Session(userID: row.userID, stamp: row.stamp, csrf: "",
                                                            lastUsed: monotonicNow - min(monotonicNow, idle),
                                                            createdSeconds: row.createdSeconds, savedSeenSeconds: row.lastSeenSeconds)
                }
            }
            if !stored.isEmpty { logger.info("access: \(stored.count) page sessions kept from before the start") }
        } catch {
            logger.warning("access: page sessions not loaded: \(error)")
        }
    }

    /// A new session for `userID`: its token (for the cookie) and the session. Writes it to the
    /// database: call off the event loop.
    func create(userID: Int64, stamp: [UInt8]) -> (token: String, session: Session) {
        let token = Hex.string(Sodium.randomBytes(32))
        let key = Sodium.hash(Array(token.utf8))
        let now = Self.wallSeconds()
        let session = Session(userID: userID, stamp: stamp, csrf: csrf(for: token), lastUsed: Monotonic.now.nanoseconds,
                              createdSeconds: now, savedSeenSeconds: now)
        state.withLock { state in
            if state.sessions.count >= Self.maxSessions,
               let oldest = state.sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                state.sessions[oldest.key] = nil
                state.removed.insert(oldest.key)
            }
            state.sessions[key] = session
        }
        do {
            try store?.insertSession(StoredSession(tokenHash: key, userID: userID, stamp: stamp, createdSeconds: now,
                                                   lastSeenSeconds: now, expiresSeconds: now + idleSeconds))
        } catch {
            logger.warning("access: session kept in memory only (a restart ends it): \(error)")
        }
        return (token, session)
    }

    /// The live session of `token` (its idle time restarts), or nil. Memory only: for the loop.
    func lookup(_ token: String) -> Session? {
        guard token.utf8.count == 64 else { return nil }
        let key = Sodium.hash(Array(token.utf8))
        let now = Monotonic.now.nanoseconds
        let found: Session? = state.withLock { state in
            guard var session = state.sessions[key] else { return nil }
            guard now - session.lastUsed < idleNanos else {
                state.sessions[key] = nil
                state.removed.insert(key)
                return nil
            }
            session.lastUsed = now
            state.sessions[key] = session
            if Self.wallSeconds() - session.savedSeenSeconds >= Self.touchSeconds { state.touched.insert(key) }
            return session
        }
        guard var found else { return nil }
        found.csrf = csrf(for: token)
        return found
    }

    /// Ends the session of `token`, in the database too (so a restart does not bring it back):
    /// call off the event loop.
    func remove(_ token: String) {
        let key = Sodium.hash(Array(token.utf8))
        state.withLock { state in
            state.sessions[key] = nil
            state.touched.remove(key)
        }
        do {
            try store?.deleteSession(tokenHash: key)
        } catch {
            state.withLock { $0.removed.insert(key) }
            logger.warning("access: logout not written yet (retried at the next flush): \(error)")
        }
    }

    /// Ends every session of `userID` (the account was deleted or its password changed).
    func removeAll(userID: Int64) {
        state.withLock { state in
            for (key, session) in state.sessions where session.userID == userID {
                state.sessions[key] = nil
                state.removed.insert(key)
            }
        }
    }

    /// Writes the last-seen times of the sessions used since the last flush and deletes the
    /// ended and expired ones, in one transaction. Blocking: the flush thread, and shutdown.
    func flush() {
        guard let store else { return }
        let now = Self.wallSeconds()
        let changes: ([(tokenHash: [UInt8], lastSeenSeconds: Int64, expiresSeconds: Int64)], [[UInt8]])? = state.withLock { state in
            let monotonicNow = Monotonic.now.nanoseconds
            var touched: [(tokenHash: [UInt8], lastSeenSeconds: Int64, expiresSeconds: Int64)] = []
            for key in state.touched {
                guard var session = state.sessions[key] else { continue }
                let seen = now - Int64((monotonicNow - min(monotonicNow, session.lastUsed)) / 1_000_000_000)
                session.savedSeenSeconds = seen
                state.sessions[key] = session
                touched.append((key, seen, seen + idleSeconds))
            }
            let removed = Array(state.removed)
            state.touched.removeAll()
            state.removed.removeAll()
            // Nothing changed and swept lately: no write (the database stays untouched while idle).
            if touched.isEmpty && removed.isEmpty && now - state.sweptSeconds < Self.sweepSeconds { return nil }
            state.sweptSeconds = now
            return (touched, removed)
        }
        guard let (touched, removed) = changes else { return }
        do {
            try store.writeSessionChanges(touched: touched, removed: removed, now: now)
        } catch {
            // Kept for the next flush: a database another process holds locked is a delay, not a loss.
            state.withLock { state in
                for touch in touched where state.sessions[touch.tokenHash] != nil { state.touched.insert(touch.tokenHash) }
                state.removed.formUnion(removed)
            }
            logger.warning("access: page sessions not written: \(error)")
        }
    }

    /// Starts the thread that flushes every `interval` seconds; it ends when the table is gone.
    func startFlushing(interval: Double) throws(ThreadError) {
        guard store != nil else { return }
        try NativeThread.detach(name: "streamd-sessions") { [weak self] in
            var pause = timespec(tv_sec: Int(interval), tv_nsec: Int((interval - interval.rounded(.down)) * 1e9))
            while true {
                nanosleep(&pause, nil)
                guard let table = self else { return }
                table.flush()
            }
        }
    }

    /// The page's CSRF token of session `token`: 16 bytes of a keyed hash, in hex.
    private func csrf(for token: String) -> String {
        Hex.string(Array(Sodium.hash(Array(token.utf8), key: csrfKey).prefix(16)))
    }

    static func wallSeconds() -> Int64 { Int64(time(nil)) }
}

/// Lower-case hexadecimal.
enum Hex {
    static func string(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
