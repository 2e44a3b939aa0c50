import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

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

    /// Query values are read from the bytes: the first pair of that exact name, "" for a name
    /// without `=`, the value up to the next `&` (an `=` inside it kept), never a longer or
    /// shorter name that shares a prefix.
    @Test func queryValues_matchWholeNames() throws {
        func request(_ target: String) -> HTTPRequest {
            HTTPRequest(method: "GET", target: target, minorVersion: 1, headers: [])
        }
        let r = request("/api/search?lim=1&limit=20&&q=a%20b=c&flag&limit=30&empty=&caf%C3%A9=x&ü=y")
        #expect(r.path == "/api/search")
        #expect(r.query == "lim=1&limit=20&&q=a%20b=c&flag&limit=30&empty=&caf%C3%A9=x&ü=y")
        #expect(r.queryValue("limit") == "20")
        #expect(r.queryValue("lim") == "1")
        #expect(r.queryValue("li") == nil)
        #expect(r.queryValue("limits") == nil)
        #expect(r.queryValue("q") == "a%20b=c")
        #expect(r.queryValue("flag") == "")
        #expect(r.queryValue("empty") == "")
        #expect(r.queryValue("caf%C3%A9") == "x")
        #expect(r.queryValue("ü") == "y")
        #expect(request("/a").queryValue("q") == nil && request("/a").query == nil && request("/a").path == "/a")
        #expect(request("/a?").queryValue("q") == nil && request("/a?").query == "")
        #expect(request("/a?q").queryValue("q") == "")
        #expect(request("/a?x=1&q=").queryValue("q") == "")
        #expect(request("/a?q=1?2").queryValue("q") == "1?2" && request("/a?q=1?2").path == "/a")
    }

    /// Header names match whatever their case, and only letters fold: '-' is not '\r' or 'M'.
    @Test func headerNames_matchWithoutCase() throws {
        let r = HTTPRequest(method: "GET", target: "/", minorVersion: 1,
                            headers: [("cOnTeNt-TyPe", "a"), ("X-Thing", "b"), ("x-thing", "c"), ("X\rThing", "d"), ("@", "e")])
        #expect(r.header("Content-Type") == "a")
        #expect(r.header("content-type") == "a")
        #expect(r.headerValues("X-THING") == ["b", "c"])
        #expect(r.header("XmThing") == nil)
        #expect(r.header("X-Thin") == nil && r.header("X-Things") == nil)
        #expect(r.header("`") == nil, "'@' | 0x20 is '`', but neither is a letter")
        #expect(r.header("@") == "e")
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

    @Test(arguments: [
        ("1.1", "", true), ("1.1", "Connection: close\r\n", false), ("1.1", "Connection: Upgrade ,\t CLOSE \r\n", false),
        ("1.1", "Connection: closed\r\n", true), ("1.1", "Connection: x-close, keep-alive\r\n", true),
        ("1.1", "Connection: keep-alive\r\nconnection: close\r\n", false), ("1.1", "Connection: ,,close,\r\n", false),
        ("1.0", "Connection: upgrade, Keep-Alive\r\n", true), ("1.0", "Connection: keep-alive, close\r\n", false),
        ("1.0", "Connection: keep-alived\r\n", false), ("1.0", "Connection:\r\n", false),
    ])
    func connectionTokens_decideKeepAlive(version: String, fields: String, keep: Bool) throws {
        let (request, _) = try #require(try parser.parse(bytes("GET / HTTP/\(version)\r\nHost: x\r\n\(fields)\r\n")))
        #expect(request.keepAlive == keep, "HTTP/\(version) \(fields.debugDescription)")
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

    /// Field lines go through StreamShared's reader with a server's rules: obs-fold and control
    /// bytes are 400 (a client reads the same lines leniently); empty lines before the request
    /// line are skipped.
    @Test func sharedFieldLineRules_forAServer() throws {
        #expect(throws: HTTPParseError.badRequest("folded header line")) {
            try parser.parse(bytes("GET / HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\n\r\n"))
        }
        #expect(throws: HTTPParseError.badRequest("bad header value")) {
            try parser.parse(bytes("GET / HTTP/1.1\r\nHost: x\r\nX-A: o\u{1}ne\r\n\r\n"))
        }
        let text = "\r\n\nGET /a HTTP/1.1\r\nHost: x\r\nX-A: \t spaced \t\r\n\r\n"
        let (request, used) = try #require(try parser.parse(bytes(text)))
        #expect(used == text.utf8.count && request.header("x-a") == "spaced")
    }

    @Test func http2Version_is505() {
        #expect(throws: HTTPParseError.versionNotSupported) { try parser.parse(bytes("GET / HTTP/2.0\r\n\r\n")) }
    }

    @Test func contentLength_isTheFraming() throws {
        // The head ends before the body: the server decides whether it takes a body (413 otherwise).
        let (req, used) = try #require(try parser.parse(bytes("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")))
        #expect(req.bodyFraming == .length(5))
        #expect(used == 47)
    }

    @Test func zeroContentLength_isNoBody() throws {
        let (req, _) = try #require(try parser.parse(bytes("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 00\r\n\r\n")))
        #expect(req.bodyFraming == .none)
        #expect(!req.hasBody)
    }

    @Test func hugeContentLength_saturates() throws {
        let (req, _) = try #require(try parser.parse(bytes("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 123456789012345678901234\r\n\r\n")))
        #expect(req.bodyFraming == .length(Int.max))
    }

    @Test func chunkedTransferEncoding_isTheFraming() throws {
        let (req, _) = try #require(try parser.parse(bytes("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n")))
        #expect(req.bodyFraming == .chunked)
    }

    @Test(arguments: ["gzip", "gzip, chunked", "chunked, chunked"])
    func otherTransferCodings_areRefused(coding: String) {
        #expect(throws: HTTPParseError.bodyNotAllowed) {
            try parser.parse(bytes("PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(coding)\r\n\r\n"))
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

/// RFC 9112 section 3.2: Host and the request-target forms.
@Suite struct HTTPRequestParserHostTests {
    let parser = HTTPRequestParser()

    func parse(_ s: String) throws(HTTPParseError) -> HTTPRequest? { try parser.parse(Array(s.utf8)[...])?.0 }

    func status(_ s: String) -> Int? {
        do { _ = try parse(s); return nil } catch { return error.status }
    }

    @Test func twoHostLines_is400() {
        #expect(status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n") == 400)
    }

    @Test(arguments: ["ex ample", "a/b", "a:8x", "a:123456", "[::1", "[]", "a@b", "%zz", "a b:80", "h\u{7F}"])
    func invalidHost_is400(host: String) {
        #expect(status("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n") == 400, "\(host.debugDescription)")
    }

    @Test(arguments: ["example.com", "127.0.0.1:8080", "[::1]:80", "[v1.x]", "caf%C3%A9.test", "a:", "", "x_y-z~"])
    func validHost_isAccepted(host: String) throws {
        #expect(try parse("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n") != nil, "\(host.debugDescription)")
    }

    @Test func http10_withoutHost_isAccepted() throws {
        #expect(try parse("GET / HTTP/1.0\r\n\r\n") != nil)
    }

    @Test func absoluteForm_becomesOriginForm() throws {
        let request = try #require(try parse("GET http://example.com:8080/api/tracks?x=1 HTTP/1.1\r\nHost: other\r\n\r\n"))
        #expect(request.target == "/api/tracks?x=1")
        #expect(request.path == "/api/tracks")
        #expect(request.authority == "example.com:8080")
        let bare = try #require(try parse("GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(bare.target == "/")
        let query = try #require(try parse("GET http://h?q=1 HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(query.target == "/?q=1")
    }

    @Test(arguments: ["GET http://user@h/ HTTP/1.1\r\nHost: h\r\n\r\n",     // userinfo
                      "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n",          // empty authority
                      "GET http://h/#frag HTTP/1.1\r\nHost: h\r\n\r\n",     // fragment
                      "GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n",          // other scheme
                      "GET x/y HTTP/1.1\r\nHost: h\r\n\r\n",                // relative
                      "GET * HTTP/1.1\r\nHost: h\r\n\r\n"])                 // '*' is OPTIONS only
    func badTargets_are400(text: String) {
        #expect(status(text) == 400, "\(text.debugDescription)")
    }

    @Test func asteriskForOptions_andAuthorityForConnect() throws {
        #expect(try parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")?.target == "*")
        #expect(try parse("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n")?.target == "h:443")
    }
}

/// RFC 9112 section 6: message framing of a request that must not have a body.
@Suite struct HTTPRequestParserFramingTests {
    let parser = HTTPRequestParser()

    func status(_ headers: String) -> Int? {
        do { _ = try parser.parse(Array("GET / HTTP/1.1\r\nHost: x\r\n\(headers)\r\n".utf8)[...]); return nil } catch {
            return error.status
        }
    }

    func framing(_ headers: String) -> RequestBodyFraming? {
        try? parser.parse(Array("GET / HTTP/1.1\r\nHost: x\r\n\(headers)\r\n".utf8)[...])?.0.bodyFraming
    }

    @Test func differingContentLengths_are400() {
        #expect(status("Content-Length: 0\r\nContent-Length: 5\r\n") == 400)
        #expect(status("Content-Length: 0, 5\r\n") == 400)
    }

    @Test func equalRepeatedZeroLengths_areAccepted() {
        #expect(status("Content-Length: 0\r\nContent-Length: 0\r\n") == nil)
        #expect(status("Content-Length: 0, 00\r\n") == nil)
    }

    @Test(arguments: ["+0", "-0", "0x0", "1e1", " ", "0,", "0.0", "٣", "99999999999999999999x"])
    func nonDigitLength_is400(value: String) {
        #expect(status("Content-Length: \(value)\r\n") == 400, "\(value.debugDescription)")
    }

    /// The parser reports the framing; the server refuses the body (413) unless the route takes it.
    @Test func hugeLength_isABody_notATrap() {
        #expect(framing("Content-Length: 99999999999999999999999999999\r\n") == .length(Int.max))
        #expect(framing("Content-Length: 5\r\n") == .length(5))
    }

    @Test func transferEncodingWithContentLength_is400() {
        #expect(status("Transfer-Encoding: chunked\r\nContent-Length: 0\r\n") == 400)
        #expect(status("Content-Length: 0\r\nTransfer-Encoding: chunked\r\n") == 400)
        #expect(framing("Transfer-Encoding: chunked\r\n") == .chunked)
    }
}

/// RFC 9110 section 2.5 / RFC 9112 section 2.3: the version in the request line.
@Suite struct HTTPRequestParserVersionTests {
    let parser = HTTPRequestParser()

    func parse(_ version: String) throws(HTTPParseError) -> HTTPRequest? {
        try parser.parse(Array("GET / \(version)\r\nHost: x\r\n\r\n".utf8)[...])?.0
    }

    @Test(arguments: ["HTTP/1.2", "HTTP/1.9"])
    func laterMinor_isServedAs11(version: String) throws {
        #expect(try parse(version)?.minorVersion == 1)
    }

    @Test(arguments: ["HTTP/2.0", "HTTP/3.0", "HTTP/2", "HTTP/3", "HTTP/0.9", "HTTP/9.9"])
    func otherMajor_is505(version: String) {
        #expect(throws: HTTPParseError.versionNotSupported) { try parse(version) }
    }

    @Test(arguments: ["HTTP/1.", "HTTP/1", "HTTP/", "http/1.1", "HTTP/1.10", "HTTP/1,1", "HTTP/a.1", "HTTP/0"])
    func malformed_is400(version: String) {
        do { _ = try parse(version); Issue.record("accepted \(version)") } catch { #expect(error.status == 400, "\(version)") }
    }
}
