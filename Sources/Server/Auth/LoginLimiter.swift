import StreamShared

/// The failed-login back-off: after a few free failures, each further failure from an address
/// (or against a user name) doubles the time before the next attempt is even judged. Attempts
/// during the wait are refused without looking at the password (429 and `Retry-After`), so an
/// attacker gets at most `freeFailures` guesses and then one per doubling wait: 8 in the first
/// minute, then fewer every minute (the bench holds it to <= 10 a minute).
///
/// A user name under attack from many addresses gets the same back-off, with a larger allowance,
/// except from addresses that have logged in as that user before (since the server started):
/// the attacked user keeps logging in from their own devices.
public final class LoginLimiter: Sendable {
    /// Failures before the back-off starts, per address and per user name.
    public let freeFailuresPerAddress: Int
    public let freeFailuresPerUser: Int
    /// The longest wait, in seconds.
    public let maxWaitSeconds: Double
    /// Most addresses and names tracked; the oldest quiet ones go first (a flood of addresses
    /// cannot grow the tables without bound).
    static let maxEntries = 20_000
    /// Addresses remembered per user as known-good.
    static let knownAddressesPerUser = 16

    private struct Entry {
        var failures = 0
        var blockedUntil: UInt64 = 0
        var lastFailure: UInt64 = 0
    }

    private struct State {
        /// Refusals in the back-off per address, for logging the 1st, 2nd, 4th, 8th ... only.
        var refusals: [String: Int] = [:]
        var addresses: [String: Entry] = [:]
        var users: [String: Entry] = [:]
        var knownAddresses: [String: [String]] = [:]
    }

    private let state = Lock(State())
    private let now: @Sendable () -> UInt64

    /// `now` gives monotonic nanoseconds (a test may pass its own clock).
    public init(freeFailuresPerAddress: Int = 3, freeFailuresPerUser: Int = 10, maxWaitSeconds: Double = 3600,
                now: @escaping @Sendable () -> UInt64 = { Monotonic.now.nanoseconds }) {
        self.freeFailuresPerAddress = freeFailuresPerAddress
        self.freeFailuresPerUser = freeFailuresPerUser
        self.maxWaitSeconds = maxWaitSeconds
        self.now = now
    }

    /// Seconds to wait before an attempt from `address` as `user` is judged; nil when it may be
    /// judged now. Call before verifying any credential.
    public func waitBeforeAttempt(address: Substring, user: String?) -> Double? {
        let time = now()
        return state.withLock { state in
            var until: UInt64 = 0
            if let entry = state.addresses[String(address)] { until = max(until, entry.blockedUntil) }
            if let user = user?.lowercased(), let entry = state.users[user],
               !(state.knownAddresses[user]?.contains(String(address)) ?? false) {
                until = max(until, entry.blockedUntil)
            }
            return until > time ? Double(until - time) / 1e9 : nil
        }
    }

    /// Counts a refusal in the back-off; true for the 1st, 2nd, 4th, 8th ... of an address, so a
    /// flood of refused guesses is logged in a few lines, not one per guess.
    public func shouldLogRefusal(address: Substring) -> Bool {
        state.withLock { state in
            if state.refusals.count >= Self.maxEntries { state.refusals.removeAll() }
            let count = (state.refusals[String(address)] ?? 0) + 1
            state.refusals[String(address)] = count
            return count & (count - 1) == 0
        }
    }

    /// Counts a failed attempt; returns the wait now imposed on the address (0 while free).
    @discardableResult
    public func recordFailure(address: Substring, user: String?) -> Double {
        let time = now()
        return state.withLock { state in
            Self.trim(&state.addresses, now: time)
            Self.trim(&state.users, now: time)
            let wait = Self.fail(&state.addresses[String(address), default: Entry()], free: freeFailuresPerAddress,
                                 max: maxWaitSeconds, now: time)
            if let user = user?.lowercased() {
                Self.fail(&state.users[user, default: Entry()], free: freeFailuresPerUser, max: maxWaitSeconds, now: time)
            }
            return wait
        }
    }

    /// A successful login: the address's failures are forgiven and it is known for the user.
    public func recordSuccess(address: Substring, user: String) {
        state.withLock { state in
            state.addresses[String(address)] = nil
            let key = user.lowercased()
            var known = state.knownAddresses[key] ?? []
            if !known.contains(String(address)) {
                known.append(String(address))
                if known.count > Self.knownAddressesPerUser { known.removeFirst() }
                state.knownAddresses[key] = known
            }
        }
    }

    @discardableResult
    private static func fail(_ entry: inout Entry, free: Int, max maxWait: Double, now: UInt64) -> Double {
        entry.failures += 1
        entry.lastFailure = now
        guard entry.failures > free else { return 0 }
        let wait = min(maxWait, Double(1 << min(entry.failures - free - 1, 30)))
        entry.blockedUntil = now + UInt64(wait * 1e9)
        return wait
    }

    /// Drops entries whose wait is over and whose last failure is an hour old; when still too
    /// many, the oldest failures go.
    private static func trim(_ table: inout [String: Entry], now: UInt64) {
        guard table.count >= maxEntries else { return }
        let hour: UInt64 = 3_600_000_000_000
        table = table.filter { $0.value.blockedUntil > now || $0.value.lastFailure + hour > now }
        if table.count >= maxEntries {
            let keep = table.sorted { $0.value.lastFailure > $1.value.lastFailure }.prefix(maxEntries / 2)
            table = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }
}
