#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport
@testable import StreamClient
@testable import StreamShared

/// streamplay's own HTTP/1.1 client against scripted loopback servers: every framing, redirects,
/// keep-alive, and a typed error for every malformed or broken answer.
@Suite(.serialized, .ownThreads) struct HTTPClientTests {
    static func client() -> HTTPClient { HTTPClient(userAgent: "test", connectTimeout: 2, readTimeout: 2) }

    static func body(_ server: FakeHTTPServer, path: String = "/a", client: HTTPClient = client(),
                     range: (Int, Int?)? = nil, ifRange: String? = nil) throws(HTTPClientError) -> (HTTPResponse, [UInt8]) {
        let response = try client.open(HTTPClient.Request(url: server.url + path, range: range, ifRange: ifRange))
        var overflow = false
        let bytes = try response.readAll(limit: 1 << 20, timeout: 2, overflow: &overflow)
        client.finish(response)
        return (response, bytes)
    }

    @Test func contentLength_body_andRangeHeadersSent() throws {
        let server = try FakeHTTPServer([.init("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 5-9/20\r\nContent-Length: 5\r\n\r\nhello")])
        let (response, bytes) = try Self.body(server, range: (5, 9), ifRange: "\"e1\"")
        #expect(bytes == Array("hello".utf8) && response.head.status == 206)
        let request = try #require(server.requests.first)
        #expect(request.hasPrefix("GET /a HTTP/1.1\r\n"), "\(request)")
        #expect(request.contains("\r\nRange: bytes=5-9\r\n") && request.contains("\r\nIf-Range: \"e1\"\r\n"), "\(request)")
        #expect(request.contains("\r\nHost: 127.0.0.1:\(server.port)\r\n"), "\(request)")
    }

    @Test func chunkedBody_isDecoded() throws {
        let server = try FakeHTTPServer([.init("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nA;x=y\r\n0123456789\r\n0\r\n\r\n")])
        #expect(try Self.body(server).1 == Array("abc0123456789".utf8))
    }

    @Test func icyAnswer_bodyUntilClose_headersByName() throws {
        let server = try FakeHTTPServer([.init("ICY 200 OK\r\nicy-metaint: 8192\r\ncontent-type: audio/mpeg\r\n\r\nAUDIO-BYTES")])
        let (response, bytes) = try Self.body(server)
        #expect(response.head.status == 200 && response.head["Icy-Metaint"] == "8192")
        #expect(bytes == Array("AUDIO-BYTES".utf8))
    }

    @Test func interimAnswers_areSkipped() throws {
        let server = try FakeHTTPServer([.init("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")])
        #expect(try Self.body(server).1 == Array("ok".utf8))
    }

    @Test func keepAlive_secondRequestReusesTheConnection() throws {
        let server = try FakeHTTPServer([.init("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none", keepOpen: true),
                                         .init("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")])
        let client = Self.client()
        #expect(try Self.body(server, client: client).1 == Array("one".utf8))
        #expect(try Self.body(server, client: client).1 == Array("two".utf8))
        #expect(server.connections == 1)
    }

    @Test func keptConnectionClosedByTheServer_isReplacedOnce() throws {
        // The first answer allows keep-alive but the server closes: the next request retries on a new connection.
        let server = try FakeHTTPServer([.init("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"),
                                         .init("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")])
        let client = Self.client()
        #expect(try Self.body(server, client: client).1 == Array("one".utf8))
        Monotonic.sleep(seconds: 0.05)
        #expect(try Self.body(server, client: client).1 == Array("two".utf8))
        #expect(server.connections == 2)
    }

    @Test func redirects_relativeAndAbsolute_areFollowed() throws {
        let target = try FakeHTTPServer([.init("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")])
        let first = try FakeHTTPServer([.init("HTTP/1.1 307 Temporary\r\nLocation: /d/e\r\nContent-Length: 0\r\n\r\n", keepOpen: true),
                                        .init("HTTP/1.1 308 Permanent\r\nLocation: \(target.url)/f\r\nContent-Length: 0\r\n\r\n")])
        let (response, bytes) = try Self.body(first, path: "/a/b")
        #expect(bytes == Array("done".utf8) && response.url == target.url + "/f")
        #expect(first.requests.count == 2 && first.requests[1].hasPrefix("GET /d/e HTTP/1.1"), "\(first.requests)")
        #expect(first.connections == 1, "the emptied redirect's connection is kept")
        first.stop()
        target.stop()
    }

    @Test func redirectLoop_isBounded() throws {
        let answers = (0...HTTPClient.maxRedirects + 1).map { _ in FakeHTTPServer.Answer("HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n", keepOpen: true) }
        let server = try FakeHTTPServer(answers)
        do {
            _ = try Self.body(server)
            Issue.record("no error")
        } catch {
            if case .tooManyRedirects = error {} else { Issue.record("\(error)") }
        }
        #expect(server.requests.count == HTTPClient.maxRedirects + 1)
    }

    @Test func redirectToHTTPS_isHandedOver() throws {
        let server = try FakeHTTPServer([.init("HTTP/1.1 301 Moved\r\nLocation: https://example.invalid/x\r\n\r\n")])
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
        let server = try FakeHTTPServer([.init(answer)])
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
        let server = try FakeHTTPServer([.init("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", delay: 5)])
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
        let server = try FakeHTTPServer([])
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
