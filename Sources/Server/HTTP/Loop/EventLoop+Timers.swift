#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Atomics
import Logging
import Foundation

/// Timers: pacing and live wake-ups, and the sweep of head, idle, linger and write deadlines.
extension EventLoop {
    /// Sets when the connection's response is due again, and queues the time (once per change).
    func setWake(_ connection: Connection, _ wake: UInt64?) {
        guard connection.outgoing != nil, connection.outgoing?.wakeAt != wake else { return }
        connection.outgoing?.wakeAt = wake
        if let wake { timers.push(.init(time: wake, fd: connection.fd, generation: connection.generation)) }
    }

    func nextTimeoutMillis(now: UInt64) -> Int32 {
        // A coarse tick bounds the work of checking timers; pacing needs finer steps. No scan of
        // the connections here: with tens of thousands of listeners, a loop that wakes often
        // would spend its time in it.
        var earliest: UInt64 = now + 1_000_000_000
        if let wake = timers.earliest { earliest = min(earliest, wake) }
        // Deadlines (head, idle, linger, write timeout) are handled by the sweep, at most every
        // 250 ms: waking sooner for one would spin.
        if !connections.isEmpty { earliest = min(earliest, lastSweep + Self.sweepInterval + 1_000_000) }
        if stopRequested.load(ordering: .relaxed) { earliest = min(earliest, now + 50_000_000) }
        // Rounded up: rounding down wakes the loop just before the time and makes it spin.
        return Int32(min(1000, ((earliest > now ? earliest - now : 0) + 999_999) / 1_000_000))
    }

    func checkTimers(now: UInt64) {
        for entry in timers.popDue(now: now) {
            // Stale entries (the connection closed, or its wake time changed) are dropped here.
            guard let connection = connections[entry.fd], connection.generation == entry.generation,
                  let wake = connection.outgoing?.wakeAt, wake <= now else { continue }
            connection.outgoing?.wakeAt = nil
            progress(connection)
            if isOpen(connection) { updateInterest(connection) }
        }
        // Timeouts need only second precision: sweep at most a few times a second.
        guard now - lastSweep > Self.sweepInterval else { return }
        lastSweep = now
        expireParked(now: now)
        for connection in Array(connections.values) {
            // Waiting on the pool: the work's own bounds (a worker's timeout) end the wait.
            if connection.awaiting != nil { continue }
            if connection.outgoing != nil {
                checkDelivery(connection, now: now)
                // A live exchange stuck on a full socket still has deadlines (radio lag).
                if isOpen(connection), connection.writeBlocked, connection.outgoing?.liveStarted == true {
                    runLive(connection, now: now)
                    if isOpen(connection) { updateInterest(connection) }
                }
                continue
            }
            if let deadline = connection.lingerDeadline {
                if deadline <= now { closeConnection(connection) }
                continue
            }
            if let deadline = connection.headDeadline, deadline <= now, !connection.readBuffer.isEmpty {
                // Slowloris: a request head that does not arrive in time.
                begin(HTTPResponse.error(408, "request head not received in time", close: true), for: nil,
                      on: connection, now: now)
                progress(connection)
                if isOpen(connection) { updateInterest(connection) }
            } else if let deadline = connection.idleDeadline, deadline <= now {
                closeConnection(connection)
            } else if let deadline = connection.headDeadline, deadline <= now {
                closeConnection(connection)
            }
        }
    }

    /// The write timeout: a pending response whose client has acknowledged no byte for
    /// `writeTimeout` is dropped, with a reset so what is queued for it is freed at once.
    /// Progress is what the client's TCP acknowledged (bytes written minus those still
    /// unacknowledged, SIOCOUTQ): the kernel's send buffer grows to megabytes, so whether the
    /// socket is full says little either way. Checked a few times per timeout period.
    func checkDelivery(_ connection: Connection, now: UInt64) {
        // Times taken on this thread can be a little later than `now` (a response begun since).
        guard now >= connection.deliveryCheckedAt, now - connection.deliveryCheckedAt >= settings.writeTimeout / 4 else {
            return
        }
        connection.deliveryCheckedAt = now
        let delivered = acknowledgedBytes(connection)
        // Nothing waiting on the client (a paced response between writes) is not a stall.
        if delivered != connection.deliveredCheckpoint || (delivered == connection.bytesWritten && !connection.writeBlocked) {
            connection.deliveredCheckpoint = delivered
            connection.deliveredAt = now
        } else if now >= connection.deliveredAt, now - connection.deliveredAt >= settings.writeTimeout {
            closeConnection(connection, reset: true)
        }
    }

    /// Bytes of this connection the client's TCP has acknowledged.
    func acknowledgedBytes(_ connection: Connection) -> Int {
        connection.bytesWritten - max(0, Int(clinux_unacknowledged_bytes(connection.fd)))
    }
}
