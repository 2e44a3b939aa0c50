#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import StreamClient
@testable import StreamShared

/// A loopback TCP server that answers each connection from a script: for every request head it
/// reads, the next canned answer is written; then the connection closes (or stays for the next
/// request when the script says so). Records every request head and counts connections.
final class ScriptedServer: @unchecked Sendable {
    // @unchecked: `requests` and `connections` are guarded by `lock`.
    struct Answer {
        var bytes: [UInt8]
        /// Keep the connection for the next request instead of closing it.
        var keepOpen = false
        /// Wait this long before answering.
        var delay: Double = 0
        init(_ text: String, keepOpen: Bool = false, delay: Double = 0) {
            bytes = Array(text.utf8)
            self.keepOpen = keepOpen
            self.delay = delay
        }
        init(bytes: [UInt8], keepOpen: Bool = false) {
            self.bytes = bytes
            self.keepOpen = keepOpen
        }
    }

    let port: Int
    private let listener: Int32
    private let lock = ConditionLock()
    private var answers: [Answer]
    private var recorded: [String] = []
    private var accepted = 0

    var requests: [String] { lock.withLock { recorded } }
    var connections: Int { lock.withLock { accepted } }
    var url: String { "http://127.0.0.1:\(port)" }

    init(_ answers: [Answer]) throws {
        self.answers = answers
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0 && listen(fd, 16) == 0, "bind/listen on loopback")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        try NativeThread.detach(name: "scripted") { [self] in serve() }
    }

    private var stopped = false

    /// Shuts the listening socket down (the serving thread's accept fails and it ends). The
    /// serving thread closes it: closed here, its number could be reused by another test's
    /// socket while that thread still polls it, and it would accept that test's connection.
    func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func nextAnswer() -> Answer? {
        lock.withLock { answers.isEmpty ? nil : answers.removeFirst() }
    }

    /// Serves connections one after another for at most 10 s, then closes the listener.
    private func serve() {
        defer {
            stop()
            close(listener)
        }
        let deadline = Monotonic.now.adding(seconds: 10)
        while Monotonic.now < deadline && !lock.withLock({ stopped }) {
            var entry = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 200) > 0 else { continue }
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            lock.withLock { accepted += 1 }
            var keep = true
            while keep {
                guard let head = readHead(client) else { break }
                lock.withLock { recorded.append(head) }
                guard let answer = nextAnswer() else { break }
                if answer.delay > 0 { Monotonic.sleep(seconds: answer.delay) }
                var sent = 0
                while sent < answer.bytes.count {
                    let n = answer.bytes.withUnsafeBytes { raw in
                        send(client, raw.baseAddress.map { $0 + sent }, raw.count - sent, Int32(MSG_NOSIGNAL))
                    }
                    if n <= 0 { break }
                    sent += n
                }
                keep = answer.keepOpen
            }
            close(client)
        }
    }

    /// The request head (up to the empty line), or nil when the client closed first.
    private func readHead(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 65_536 {
            guard recv(fd, &byte, 1, 0) == 1 else { return nil }
            bytes.append(byte)
            if bytes.suffix(4) == [13, 10, 13, 10] { return String(decoding: bytes, as: UTF8.self) }
        }
        return nil
    }
}

/// streamplay's own HTTP/1.1 client against scripted loopback servers: every framing, redirects,
/// keep-alive, and a typed error for every malformed or broken answer.
@Suite(.serialized) struct HTTPClientTests {
    static func client() -> HTTPClient { HTTPClient(userAgent: "test", connectTimeout: 2, readTimeout: 2) }

    static func body(_ server: ScriptedServer, path: String = "/a", client: HTTPClient = client(),
                     range: (Int, Int?)? = nil, ifRange: String? = nil) throws(HTTPClientError) -> (HTTPResponse, [UInt8]) {
        let response = try client.open(HTTPClient.Request(url: server.url + path, range: range, ifRange: ifRange))
        var overflow = false
        let bytes = try response.readAll(limit: 1 << 20, timeout: 2, overflow: &overflow)
        client.finish(response)
        return (response, bytes)
    }

    @Test func contentLength_body_andRangeHeadersSent() throws {
        let server = try ScriptedServer([.init("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 5-9/20\r\nContent-Length: 5\r\n\r\nhello")])
        let (response, bytes) = try Self.body(server, range: (5, 9), ifRange: "\"e1\"")
        #expect(bytes == Array("hello".utf8) && response.head.status == 206)
        let request = try #require(server.requests.first)
        #expect(request.hasPrefix("GET /a HTTP/1.1\r\n"), "\(request)")
        #expect(request.contains("\r\nRange: bytes=5-9\r\n") && request.contains("\r\nIf-Range: \"e1\"\r\n"), "\(request)")
        #expect(request.contains("\r\nHost: 127.0.0.1:\(server.port)\r\n"), "\(request)")
    }

    @Test func chunkedBody_isDecoded() throws {
        let server = try ScriptedServer([.init("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nA;x=y\r\n0123456789\r\n0\r\n\r\n")])
        #expect(try Self.body(server).1 == Array("abc0123456789".utf8))
    }

    @Test func icyAnswer_bodyUntilClose_headersByName() throws {
        let server = try ScriptedServer([.init("ICY 200 OK\r\nicy-metaint: 8192\r\ncontent-type: audio/mpeg\r\n\r\nAUDIO-BYTES")])
        let (response, bytes) = try Self.body(server)
        #expect(response.head.status == 200 && response.head["Icy-Metaint"] == "8192")
        #expect(bytes == Array("AUDIO-BYTES".utf8))
    }

    @Test func interimAnswers_areSkipped() throws {
        let server = try ScriptedServer([.init("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")])
        #expect(try Self.body(server).1 == Array("ok".utf8))
    }

    @Test func keepAlive_secondRequestReusesTheConnection() throws {
        let server = try ScriptedServer([.init("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none", keepOpen: true),
                                         .init("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")])
        let client = Self.client()
        #expect(try Self.body(server, client: client).1 == Array("one".utf8))
        #expect(try Self.body(server, client: client).1 == Array("two".utf8))
        #expect(server.connections == 1)
    }

    @Test func keptConnectionClosedByTheServer_isReplacedOnce() throws {
        // The first answer allows keep-alive but the server closes: the next request retries on a new connection.
        let server = try ScriptedServer([.init("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"),
                                         .init("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")])
        let client = Self.client()
        #expect(try Self.body(server, client: client).1 == Array("one".utf8))
        Monotonic.sleep(seconds: 0.05)
        #expect(try Self.body(server, client: client).1 == Array("two".utf8))
        #expect(server.connections == 2)
    }

    @Test func redirects_relativeAndAbsolute_areFollowed() throws {
        let target = try ScriptedServer([.init("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")])
        let first = try ScriptedServer([.init("HTTP/1.1 307 Temporary\r\nLocation: /d/e\r\nContent-Length: 0\r\n\r\n", keepOpen: true),
                                        .init("HTTP/1.1 308 Permanent\r\nLocation: \(target.url)/f\r\nContent-Length: 0\r\n\r\n")])
        let (response, bytes) = try Self.body(first, path: "/a/b")
        #expect(bytes == Array("done".utf8) && response.url == target.url + "/f")
        #expect(first.requests.count == 2 && first.requests[1].hasPrefix("GET /d/e HTTP/1.1"), "\(first.requests)")
        #expect(first.connections == 1, "the emptied redirect's connection is kept")
        first.stop()
        target.stop()
    }

    @Test func redirectLoop_isBounded() throws {
        let answers = (0...HTTPClient.maxRedirects + 1).map { _ in ScriptedServer.Answer("HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n", keepOpen: true) }
        let server = try ScriptedServer(answers)
        do {
            _ = try Self.body(server)
            Issue.record("no error")
        } catch {
            if case .tooManyRedirects = error {} else { Issue.record("\(error)") }
        }
        #expect(server.requests.count == HTTPClient.maxRedirects + 1)
    }

    @Test func redirectToHTTPS_isHandedOver() throws {
        let server = try ScriptedServer([.init("HTTP/1.1 301 Moved\r\nLocation: https://example.invalid/x\r\n\r\n")])
        do {
            _ = try Self.body(server)
            Issue.record("no error")
        } catch {
            guard case .redirectedToTLS(let url) = error else { Issue.record("\(error)"); return }
            #expect(url == "https://example.invalid/x")
        }
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "truncated"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc", "truncated"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n", "malformed"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nabcde", "malformed"),
        ("HTTP/9.9 200 OK\r\n\r\n", "malformed"),
        ("garbage\r\n\r\n", "malformed"),
        ("HTTP/1.1 200 OK\r\nContent-", "truncated"),
        ("", "truncated"),
    ])
    func brokenAnswers_areTypedErrors(answer: String, kind: String) throws {
        let server = try ScriptedServer([.init(answer)])
        do {
            _ = try Self.body(server)
            Issue.record("no error for \(answer.debugDescription)")
        } catch {
            switch (error, kind) {
            case (.truncated, "truncated"), (.malformed, "malformed"): break
            default: Issue.record("\(error) for \(answer.debugDescription), wanted \(kind)")
            }
        }
    }

    @Test func silentServer_timesOut_withinTheReadTimeout() throws {
        let server = try ScriptedServer([.init("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", delay: 5)])
        let started = Monotonic.now
        let client = HTTPClient(userAgent: "test", connectTimeout: 2, readTimeout: 0.5)
        do {
            _ = try client.open(HTTPClient.Request(url: server.url + "/a"))
            Issue.record("no error")
        } catch {
            guard case .transport(let failure) = error, failure.kind == .timedOut else { Issue.record("\(error)"); return }
        }
        #expect(started.elapsed < 2, "\(started.elapsed) s")
    }

    @Test func refusedConnection_isATransportError() throws {
        let server = try ScriptedServer([])
        let url = server.url
        server.stop()
        do {
            _ = try Self.client().open(HTTPClient.Request(url: url + "/a"))
            Issue.record("no error")
        } catch {
            guard case .transport(let failure) = error, failure.kind == .io else { Issue.record("\(error)"); return }
        }
    }
}
