#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Atomics
import Logging
import Foundation

/// Responses made off the loop: work that may wait runs on the blocking pool and comes back here.
extension EventLoop {
    /// What is sent for `request`: no body for HEAD, and `Connection: keep-alive` said to an
    /// HTTP/1.0 client, which keeps the connection only when told so (RFC 9112 section 9.3).
    static func finished(_ response: HTTPResponse, for request: HTTPRequest) -> HTTPResponse {
        var response = response
        if request.minorVersion == 0 && request.keepAlive { response.announceKeepAlive = true }
        if request.method == "HEAD" {
            response.body = nil
            response.live = nil
        }
        return response
    }

    /// Hands `make` to the pool; the connection waits (reading nothing more) until
    /// `sendMadeOffLoop` sends the response. A full pool is a 503 at once.
    func makeOffLoop(_ make: @escaping @Sendable () throws(HTTPRefusal) -> HTTPResponse, for request: HTTPRequest,
                             on connection: Connection, now: UInt64) {
        let fd = connection.fd, generation = connection.generation
        connection.awaiting = request
        // The label names the job in the shutdown's report: the path only (a query may hold
        // credentials, and redacting it on every request cost more than the rest of a ping).
        let queued = pool.submit(label: request.method + " " + String(request.path.prefix(200))) { [self] in
            var response: HTTPResponse
            do throws(HTTPRefusal) {
                response = try make()
            } catch {
                response = error.response
            }
            // Work made off the loop answers once: a second deferral would be a bug, not a wait.
            if response.offLoop != nil { response = .error(500, "response deferred twice") }
            post(fd: fd, generation: generation, response)
        }
        if !queued {
            connection.awaiting = nil
            var busy = HTTPResponse.error(503, "server busy: try again shortly")
            busy.headers.append(("Retry-After", "1"))
            begin(Self.finished(busy, for: request), for: request, on: connection, now: now)
        }
    }

    /// Called on a pool thread: queues a made response for this loop and wakes it.
    func post(fd: Int32, generation: UInt32, _ response: HTTPResponse) {
        handoffLock.withLock { _ in madeOffLoop.append((fd, generation, response)) }
        Epoll.signal(eventFD: wakeFD)
    }

    /// Sends the responses the pool has made, to the connections still waiting for them (a
    /// connection closed meanwhile, or its fd reused, gets nothing).
    func sendMadeOffLoop() {
        let made = handoffLock.withLock { _ in
            let made = madeOffLoop
            madeOffLoop.removeAll()
            return made
        }
        let now = monotonicNanos()
        for (fd, generation, response) in made {
            guard let connection = connections[fd], connection.generation == generation,
                  let request = connection.awaiting else { continue }
            if let parked = response.parked {
                park(parked, for: request, on: connection, now: now)
                continue
            }
            connection.awaiting = nil
            connection.parkedDeadline = nil
            begin(Self.finished(response, for: request), for: request, on: connection, now: now)
            progress(connection)
            if isOpen(connection) { updateInterest(connection) }
        }
    }

    /// Parks the connection's request until `parked`'s event (see `ParkedResponse`); the wait's
    /// end is counted from the first parking, and checked by the timers' sweep.
    func park(_ parked: ParkedResponse, for request: HTTPRequest, on connection: Connection, now: UInt64) {
        connection.awaiting = request
        connection.parked = parked
        if connection.parkedDeadline == nil { connection.parkedDeadline = now + parked.timeout }
        let fd = connection.fd, generation = connection.generation
        parked.arm { [weak self] in
            guard let self else { return }
            handoffLock.withLock { _ in woken.append((fd, generation)) }
            Epoll.signal(eventFD: wakeFD)
        }
    }

    /// Resumes the parked requests whose event came: their responses are made on the pool (a
    /// wake for a connection closed meanwhile, or resumed already, is dropped).
    func resumeWoken() {
        let woken = handoffLock.withLock { _ in
            let woken = self.woken
            self.woken.removeAll()
            return woken
        }
        guard !woken.isEmpty else { return }
        let now = monotonicNanos()
        for (fd, generation) in woken {
            guard let connection = connections[fd], connection.generation == generation,
                  let parked = connection.parked, let request = connection.awaiting else { continue }
            connection.parked = nil
            makeOffLoop(parked.resume, for: request, on: connection, now: now)
            if connection.awaiting == nil {
                // The pool was full: a 503 was begun instead.
                connection.parkedDeadline = nil
                progress(connection)
                if isOpen(connection) { updateInterest(connection) }
            }
        }
    }

    /// Answers the parked requests whose wait is over (`all`: every one, the server stopping).
    func expireParked(now: UInt64, all: Bool = false) {
        for connection in Array(connections.values) {
            guard let parked = connection.parked, let request = connection.awaiting,
                  all || (connection.parkedDeadline ?? 0) <= now else { continue }
            connection.parked = nil
            connection.parkedDeadline = nil
            connection.awaiting = nil
            begin(Self.finished(parked.expired(), for: request), for: request, on: connection, now: now)
            progress(connection)
            if isOpen(connection) { updateInterest(connection) }
        }
    }

    /// Traps in debug builds when called off this loop's thread.
    @inline(__always)
    func assertOnLoop() {
        assert(loopThread.map { pthread_equal($0, pthread_self()) != 0 } ?? true, "event-loop state touched off its loop")
    }
}
