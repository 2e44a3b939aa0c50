import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The loopback HTTP server of the client tests (streamplay's HTTP client, streamd's relay):
/// for every request head it reads, the next answer of its script is written as is, then the
/// connection closes (or stays for the next request when the answer says so). With the script
/// used up, a connection is closed without an answer; `always:` answers every request alike.
/// Records every request head and counts connections. Each connection is served on a thread
/// of its own; `stop` (or dropping the server) stops accepting, the way `LoopbackListener` does.
public final class FakeHTTPServer: @unchecked Sendable {
    /// One canned answer: bytes written as they are, however broken.
    public struct Answer: Sendable {
        /// What is written.
        public var bytes: [UInt8]
        /// Keep the connection for the next request instead of closing it.
        public var keepOpen = false
        /// Wait this long (seconds) before answering.
        public var delay: Double = 0

        public init(_ text: String, keepOpen: Bool = false, delay: Double = 0) {
            self.init(bytes: Array(text.utf8), keepOpen: keepOpen, delay: delay)
        }

        public init(bytes: [UInt8], keepOpen: Bool = false, delay: Double = 0) {
            self.bytes = bytes
            self.keepOpen = keepOpen
            self.delay = delay
        }
    }

    /// The script and what was received, shared with the connection threads.
    private final class Script: @unchecked Sendable {
        // @unchecked: every field is guarded by `lock`.
        let lock = NSLock()
        var answers: [Answer]
        let repeating: Answer?
        var heads: [String] = []
        var accepted = 0

        init(answers: [Answer], repeating: Answer?) {
            self.answers = answers
            self.repeating = repeating
        }

        func next(after head: String) -> Answer? {
            lock.withLock {
                heads.append(head)
                if let repeating { return repeating }
                return answers.isEmpty ? nil : answers.removeFirst()
            }
        }
    }

    private let script: Script
    private let listener: LoopbackListener

    /// The port it listens on.
    public var port: Int { listener.port }
    /// `http://127.0.0.1:PORT` (no trailing slash).
    public var url: String { "http://127.0.0.1:\(port)" }
    /// The request heads received so far, in order (up to and including the empty line).
    public var requests: [String] { script.lock.withLock { script.heads } }
    /// Connections accepted so far.
    public var connections: Int { script.lock.withLock { script.accepted } }

    /// Answers requests with `answers` in order, on 127.0.0.1 (or ::1).
    public convenience init(_ answers: [Answer], ipv6: Bool = false) throws {
        try self.init(script: Script(answers: answers, repeating: nil), ipv6: ipv6)
    }

    /// Answers every request with `answer`, on 127.0.0.1 (or ::1).
    public convenience init(always answer: Answer, ipv6: Bool = false) throws {
        try self.init(script: Script(answers: [], repeating: answer), ipv6: ipv6)
    }

    private init(script: Script, ipv6: Bool) throws {
        self.script = script
        listener = try LoopbackListener(ipv6: ipv6) { client in
            script.lock.withLock { script.accepted += 1 }
            Self.serve(client, script: script)
        }
    }

    /// Stops accepting connections; the ones under way finish their answers.
    public func stop() { listener.stop() }

    /// Answers requests on one connection until the script says to close, then closes it.
    private static func serve(_ client: Int32, script: Script) {
        defer {
            shutdown(client, Int32(SHUT_WR))
            close(client)
        }
        // A client that sends nothing is given up on, so no thread waits forever.
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        while true {
            guard let head = readHead(client), let answer = script.next(after: head) else { return }
            if answer.delay > 0 { Thread.sleep(forTimeInterval: answer.delay) }
            var sent = 0
            while sent < answer.bytes.count {
                let n = answer.bytes.withUnsafeBytes { raw in
                    send(client, raw.baseAddress.map { $0 + sent }, raw.count - sent, Int32(MSG_NOSIGNAL))
                }
                if n <= 0 { return }
                sent += n
            }
            if !answer.keepOpen { return }
        }
    }

    /// The request head (up to the empty line), read a byte at a time so a pipelined next request
    /// stays in the socket; nil when the client closed or went quiet first.
    private static func readHead(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 65_536 {
            guard recv(fd, &byte, 1, 0) == 1 else { return nil }
            bytes.append(byte)
            if bytes.suffix(4).elementsEqual([13, 10, 13, 10]) { return String(decoding: bytes, as: UTF8.self) }
        }
        return nil
    }
}
