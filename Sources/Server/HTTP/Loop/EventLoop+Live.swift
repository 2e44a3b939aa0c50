#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Atomics
import Logging
import Foundation

/// Live exchanges: radio listeners and sources, which take a connection over after the head.
extension EventLoop {
    /// Starts (once) and pumps the live exchange of a connection whose head is out.
    func runLive(_ connection: Connection, now: UInt64, readable: Bool = false) {
        guard let live = connection.outgoing?.live else { return }
        if connection.outgoing?.liveStarted == false {
            connection.outgoing?.liveStarted = true
            liveConnections[connection.fd] = connection
            connection.liveExchange = live
            // Idle and head timers do not apply to a live exchange; it keeps its own.
            connection.headDeadline = nil
            connection.idleDeadline = nil
            let leftover = connection.readBuffer
            connection.readBuffer = []
            live.start(waker: waker, leftover: leftover, now: now)
        }
        var written = 0
        let step = live.pump(fd: connection.fd, now: now, readable: readable, written: &written)
        if written > 0 {
            connection.bytesWritten += written
            connection.outgoing?.bytesSent += written
        }
        switch step {
        case .wait(let readable, let writable, let wakeAt):
            connection.outgoing?.liveWantsInput = readable
            connection.writeBlocked = writable
            setWake(connection, wakeAt)
        case .finished:
            if let done = connection.outgoing { logAccess(connection, done, now: now) }
            stopLive(connection)
            connection.outgoing = nil
            connection.writeBlocked = false
            closeAfterResponse(connection, now: now)
        case .failed:
            // Logged by the close, as cut short.
            closeConnection(connection, reset: true)
        }
    }

    /// A loop wake: channels published or a source feed has room. Connections waiting for room
    /// in their socket are left to EPOLLOUT.
    func pumpLiveConnections() {
        guard !liveConnections.isEmpty else { return }
        let now = monotonicNanos()
        for connection in Array(liveConnections.values)
        where !connection.writeBlocked && (connection.liveExchange?.quietUntil ?? 0) <= now && isOpen(connection) {
            runLive(connection, now: now)
            if isOpen(connection) { updateInterest(connection) }
        }
    }

    func stopLive(_ connection: Connection) {
        connection.liveExchange = nil
        guard liveConnections.removeValue(forKey: connection.fd) != nil else { return }
        connection.outgoing?.live?.stop()
    }
}
