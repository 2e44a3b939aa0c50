import Testing
@testable import StreamServer

@Suite struct HTTPRequestParserTests {
    let parser = HTTPRequestParser()

    func bytes(_ s: String) -> ArraySlice<UInt8> { Array(s.utf8)[...] }

    @Test func simpleGet() throws {
        let text = "GET /media/a.mp3?kbps=64 HTTP/1.1\r\nHost: x\r\nRange: bytes=0-99\r\n\r\n"
        let (req, used) = try #require(try parser.parse(bytes(text)))
        #expect(used == text.utf8.count)
        #expect(req.method == "GET")
        #expect(req.path == "/media/a.mp3")
        #expect(req.queryValue("kbps") == "64")
        #expect(req.header("range") == "bytes=0-99")
        #expect(req.keepAlive)
    }

    @Test func incompleteHead_needsMore() throws {
        #expect(try parser.parse(bytes("GET / HTTP/1.1\r\nHost: x\r\n")) == nil)
        #expect(try parser.parse(bytes("GET / HT")) == nil)
    }

    @Test func pipelinedRequests_parseOneAfterAnother() throws {
        let one = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
        let two = "HEAD /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let all = bytes(one + two)
        let (first, used) = try #require(try parser.parse(all))
        #expect(first.target == "/a")
        let (second, _) = try #require(try parser.parse(all.dropFirst(used)))
        #expect(second.method == "HEAD")
        #expect(!second.keepAlive)
    }

    @Test func http10_closesUnlessKeepAlive() throws {
        let (plain, _) = try #require(try parser.parse(bytes("GET / HTTP/1.0\r\n\r\n")))
        #expect(!plain.keepAlive)
        let (kept, _) = try #require(try parser.parse(bytes("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")))
        #expect(kept.keepAlive)
    }

    @Test func longRequestLine_is414() {
        let text = "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\n\r\n"
        #expect(throws: HTTPParseError.uriTooLong) { try parser.parse(bytes(text)) }
        // Even before the line ends, an over-long prefix is refused.
        #expect(throws: HTTPParseError.uriTooLong) { try parser.parse(bytes("GET /" + String(repeating: "a", count: 9000))) }
    }

    @Test func tooManyHeaders_is431() {
        let text = "GET / HTTP/1.1\r\nHost: x\r\n" + (0..<101).map { "X-\($0): y\r\n" }.joined() + "\r\n"
        #expect(throws: HTTPParseError.headersTooLarge) { try parser.parse(bytes(text)) }
    }

    @Test func hugeHeaderBlock_is431() {
        let text = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "b", count: 17_000) + "\r\n\r\n"
        #expect(throws: HTTPParseError.headersTooLarge) { try parser.parse(bytes(text)) }
    }

    @Test(arguments: [
        "GET /\r\n\r\n",                            // no version
        "GET  / HTTP/1.1\r\nHost: x\r\n\r\n",       // double space
        "GET / HTTP/1.1\r\nHost x\r\n\r\n",         // no colon
        "GET / HTTP/1.1\r\nHo st: x\r\n\r\n",       // space in name
        "GET / HTTP/1.1\r\nHost : x\r\n\r\n",       // space before colon
        "GET / HTTP/1.1\r\n\r\n",                   // HTTP/1.1 without Host
        "G(T / HTTP/1.1\r\nHost: x\r\n\r\n",        // bad method token
        "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    ])
    func malformed_is400(text: String) {
        #expect(throws: HTTPParseError.self) { try parser.parse(bytes(text)) }
        do { _ = try parser.parse(bytes(text)) } catch { #expect(error.status == 400, "\(text.debugDescription)") }
    }

    @Test func http2Version_is505() {
        #expect(throws: HTTPParseError.versionNotSupported) { try parser.parse(bytes("GET / HTTP/2.0\r\n\r\n")) }
    }

    @Test func requestBody_isRefused() {
        #expect(throws: HTTPParseError.bodyNotAllowed) {
            try parser.parse(bytes("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"))
        }
    }

    @Test func bareLF_isAccepted() throws {
        let (req, _) = try #require(try parser.parse(bytes("GET /x HTTP/1.1\nHost: y\n\n")))
        #expect(req.target == "/x")
    }
}

@Suite struct HTTPRequestParserEarlyRejectTests {
    @Test(arguments: [[UInt8](repeating: 0, count: 100), [0x16, 0x03, 0x01, 0x02, 0x00], Array(" GET".utf8),
                      Array("GET /\u{01}".utf8)])
    func binaryJunk_isRefusedBeforeTheLineEnds(bytes: [UInt8]) {
        #expect(throws: HTTPParseError.self) { try HTTPRequestParser().parse(bytes[...]) }
    }

    @Test func partialValidLine_waits() throws {
        #expect(try HTTPRequestParser().parse(Array("GET /media/a%20b.mp3 HT".utf8)[...]) == nil)
    }
}
