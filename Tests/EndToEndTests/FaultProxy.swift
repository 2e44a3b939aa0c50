import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP proxy that breaks connections on purpose: per accepted connection, it can
/// cut the response after N bytes or stall it for a while. Used to test reconnection.
final class FaultProxy: @unchecked Sendable {
    // @unchecked: the shared state is `plan`'s, behind its lock; sockets belong to their threads.
    struct Fault {
        /// Close both sides after forwarding this many response bytes.
        var cutAfter: Int?
        /// Stop forwarding for `stallSeconds` once this many response bytes went through.
        var stallAt: Int?
        var stallSeconds: Double = 0
        /// Remove `Range` and `If-Range` from the request, as a server without range support would ignore them.
        var stripRange = false
        /// Speak SHOUTcast 1 to the client: the request goes upstream as HTTP/1.0 (so the answer
        /// is close-delimited, not chunked) and the answer's status line becomes `ICY 200 OK`.
        var shoutcast = false
    }

    /// The state the connection threads share: the faults still to apply, and connections seen.
    private final class Plan: @unchecked Sendable {
        // @unchecked: every field is guarded by `lock`.
        let lock = NSLock()
        let faults: [Fault]
        var accepted = 0

        init(faults: [Fault]) { self.faults = faults }

        /// Counts a new connection and returns its fault, if any.
        func nextFault() -> Fault? {
            lock.withLock {
                defer { accepted += 1 }
                return accepted < faults.count ? faults[accepted] : nil
            }
        }
    }

    private let plan: Plan
    private let listener: LoopbackListener
    /// The port it listens on.
    var port: Int { listener.port }
    /// Connections accepted so far.
    var accepted: Int { plan.lock.withLock { plan.accepted } }

    /// `faults[i]` applies to the i-th connection; later ones pass through untouched. Requests
    /// whose path starts with `refusedPathPrefix` get a 404 from the proxy (a server without
    /// that endpoint); every request waits `requestDelay` seconds before it goes upstream (a slow
    /// link's round trip).
    init(upstreamPort: Int, faults: [Fault], refusingPathsStartingWith refusedPathPrefix: String? = nil,
         requestDelay: Double = 0) throws {
        let plan = Plan(faults: faults)
        self.plan = plan
        listener = try LoopbackListener { client in
            let fault = plan.nextFault()
            guard let upstream = try? connectLoopback(port: upstreamPort) else {
                close(client)
                return
            }
            let pair = SocketPair(client, upstream)
            Thread.detachNewThread {
                Self.pump(from: client, to: upstream, fault: nil, stripRange: fault?.stripRange ?? false,
                          http10: fault?.shoutcast ?? false, refusing: refusedPathPrefix, requestDelay: requestDelay, pair: pair)
            }
            Self.pump(from: upstream, to: client, fault: fault, pair: pair)
        }
    }

    /// Stops accepting connections (the ones under way go on).
    func stop() { listener.stop() }

    /// Copies bytes one way until EOF or the fault says to cut; then closes both sockets.
    /// Closes a connection's two sockets once both pumps are done with them: closing earlier
    /// would let the other pump close a descriptor number the next connection already reuses.
    final class SocketPair: @unchecked Sendable {
        // @unchecked: `finished` is guarded by `lock`; the descriptors are immutable.
        private let lock = NSLock()
        private var finished = 0
        private let a: Int32, b: Int32
        init(_ a: Int32, _ b: Int32) {
            self.a = a
            self.b = b
        }

        func pumpFinished() {
            shutdown(a, Int32(SHUT_RDWR))
            shutdown(b, Int32(SHUT_RDWR))
            let last = lock.withLock { () -> Bool in
                finished += 1
                return finished == 2
            }
            if last {
                close(a)
                close(b)
            }
        }
    }

    private static func pump(from: Int32, to: Int32, fault: Fault?, stripRange: Bool = false, http10: Bool = false,
                             refusing: String? = nil, requestDelay: Double = 0, pair: SocketPair) {
        defer { pair.pumpFinished() }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        if fault?.shoutcast == true {
            // The response's status line, whatever its version, becomes SHOUTcast's.
            var head: [UInt8] = []
            while head.count < 64 * 1024, head.firstRange(of: Array("\r\n".utf8)) == nil {
                let n = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                head += buffer[0..<n]
            }
            if let lineEnd = head.firstRange(of: Array("\r\n".utf8)), head.starts(with: Array("HTTP/1.".utf8)),
               let space = head.firstIndex(of: UInt8(ascii: " ")), space < lineEnd.lowerBound {
                head = Array("ICY".utf8) + head[space...]
            }
            _ = head.withUnsafeBytes { send(to, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        if stripRange || refusing != nil || http10 {
            // Read the request head whole, drop the range headers, forward the rest.
            var head: [UInt8] = []
            while head.count < 64 * 1024, head.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
                let n = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                head += buffer[0..<n]
            }
            let text = String(decoding: head, as: UTF8.self)
            if let refusing, let requestLine = text.components(separatedBy: "\r\n").first,
               requestLine.split(separator: " ").dropFirst().first?.hasPrefix(refusing) == true {
                let answer = Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = answer.withUnsafeBytes { send(from, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                return
            }
            var lines = text.components(separatedBy: "\r\n")
            if http10, let first = lines.first { lines[0] = first.replacingOccurrences(of: " HTTP/1.1", with: " HTTP/1.0") }
            let kept = lines.filter {
                let lower = $0.lowercased()
                return !stripRange || (!lower.hasPrefix("range:") && !lower.hasPrefix("if-range:"))
            }.joined(separator: "\r\n")
            let bytes = Array(kept.utf8)
            _ = bytes.withUnsafeBytes { send(to, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        var forwarded = 0
        var stalled = false
        while true {
            var limit = buffer.count
            if let cut = fault?.cutAfter { limit = min(limit, cut - forwarded) }
            if let stallAt = fault?.stallAt, !stalled { limit = min(limit, max(1, stallAt - forwarded)) }
            if limit <= 0 { break }
            let n = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, limit, 0) }
            if n <= 0 { break }
            if requestDelay > 0, n >= 4, buffer[0..<4] == Array("GET ".utf8)[...] || buffer[0..<4] == Array("HEAD".utf8)[...] {
                Thread.sleep(forTimeInterval: requestDelay)
            }
            var sent = 0
            while sent < n {
                let m = buffer.withUnsafeBytes { send(to, $0.baseAddress.map { $0 + sent }, n - sent, Int32(MSG_NOSIGNAL)) }
                if m <= 0 { break }
                sent += m
            }
            forwarded += n
            if let stallAt = fault?.stallAt, !stalled, forwarded >= stallAt {
                stalled = true
                Thread.sleep(forTimeInterval: fault?.stallSeconds ?? 0)
            }
        }
    }
}
