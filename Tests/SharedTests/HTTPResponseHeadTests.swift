import Testing
@testable import StreamShared

/// The response-head parser of streamplay's own HTTP client: nil for "need more bytes", a typed
/// error for every malformed head, the body framing of RFC 9112 section 6.3.
@Suite struct HTTPResponseHeadTests {
    static func parse(_ text: String) throws(HTTPResponseError) -> (head: HTTPResponseHead, consumed: Int)? {
        try HTTPResponseHead.parse(Array(text.utf8)[...])
    }

    static func head(_ text: String) throws -> HTTPResponseHead {
        try #require(try parse(text)).head
    }

    @Test func partialContent_fieldsByNameInAnyCase() throws {
        let text = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-19/100\r\ncontent-length: 10\r\nETag: \"v1\"\r\n\r\nBODY"
        let (head, consumed) = try #require(try Self.parse(text))
        #expect(consumed == text.utf8.count - 4, "the body is left")
        #expect(head.status == 206 && head.version == .http11 && head.reason == "Partial Content")
        #expect(head["CONTENT-LENGTH"] == "10" && head["etag"] == "\"v1\"")
        #expect(try head.contentRange() == HTTPResponseHead.ContentRange(range: 10...19, total: 100))
        #expect(try head.bodyFraming() == .length(10))
        #expect(head.keepsAlive)
    }

    @Test func incompleteHead_isNil_atEveryCut() throws {
        let text = Array("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n".utf8)
        for cut in 0..<text.count {
            #expect(try HTTPResponseHead.parse(text[..<cut]) == nil, "cut at \(cut)")
        }
        #expect(try HTTPResponseHead.parse(text[...]) != nil)
    }

    @Test func icyStatusLine_isA200UntilClose_withItsHeaders() throws {
        let head = try Self.head("ICY 200 OK\r\nicy-metaint: 16000\r\nicy-name: Test FM\r\n\r\n")
        #expect(head.status == 200 && head.version == .icy)
        #expect(head["Icy-MetaInt"] == "16000" && head["ICY-NAME"] == "Test FM")
        #expect(try head.bodyFraming() == .untilClose)
        #expect(!head.keepsAlive)
    }

    @Test func bareLFLineEnds_andNoReason_areAccepted() throws {
        let head = try Self.head("HTTP/1.0 200\nContent-Length: 5\n\n")
        #expect(head.status == 200 && head.reason.isEmpty && head.version == .http10)
        #expect(!head.keepsAlive, "HTTP/1.0 closes unless it says keep-alive")
        #expect(try head.bodyFraming() == .length(5))
    }

    @Test func leadingEmptyLines_areSkipped() throws {
        #expect(try Self.head("\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n").status == 204)
    }

    @Test func obsoleteLineFolding_joinsWithASpace() throws {
        #expect(try Self.head("HTTP/1.1 200 OK\r\nX-Long: one\r\n  two\r\n\r\n")["x-long"] == "one two")
    }

    @Test func framing_followsRFC9112() throws {
        #expect(try Self.head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n").bodyFraming() == .chunked)
        #expect(try Self.head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n").bodyFraming() == .untilClose)
        #expect(try Self.head("HTTP/1.1 200 OK\r\n\r\n").bodyFraming() == .untilClose)
        #expect(try Self.head("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n").bodyFraming() == .none)
        #expect(try Self.head("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n").bodyFraming(requestWasHEAD: true) == .none)
        #expect(try Self.head("HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\nContent-Length: 7\r\n\r\n").bodyFraming() == .length(7))
        #expect(try !Self.head("HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\n\r\n").keepsAlive)
        #expect(try Self.head("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n").keepsAlive)
    }

    @Test(arguments: ["HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                      "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1099511627777\r\n\r\n",
                      "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"])
    func badContentLength_isTyped(text: String) throws {
        let head = try Self.head(text)
        #expect(throws: HTTPResponseError.badContentLength) { try head.bodyFraming() }
    }

    @Test(arguments: ["bytes 5-4/10", "bytes 0-10/10", "items 0-1/2", "bytes 0-1", "bytes */*", "bytes a-b/10", "bytes -1-2/10"])
    func badContentRange_isTyped(value: String) throws {
        let head = try Self.head("HTTP/1.1 206 Partial Content\r\nContent-Range: \(value)\r\n\r\n")
        #expect(throws: HTTPResponseError.badContentRange) { try head.contentRange() }
    }

    @Test func contentRange_unknownTotal_andUnsatisfied() throws {
        #expect(try Self.head("HTTP/1.1 206 P\r\nContent-Range: bytes 0-9/*\r\n\r\n").contentRange()
                == HTTPResponseHead.ContentRange(range: 0...9, total: nil))
        #expect(try Self.head("HTTP/1.1 416 R\r\nContent-Range: bytes */42\r\n\r\n").contentRange()
                == HTTPResponseHead.ContentRange(range: nil, total: 42))
    }

    @Test(arguments: [
        ("HTTP/1.1 20 OK\r\n\r\n", HTTPResponseError.badStatusLine),
        ("HTTP/1.1 2000 OK\r\n\r\n", .badStatusLine),
        ("HTTP/1.1 099 Low\r\n\r\n", .badStatusLine),
        ("HTTP/1.1  200 OK\r\n\r\n", .badStatusLine),
        ("HTTP/1.1\r\n\r\n", .badStatusLine),
        ("SIP/2.0 200 OK\r\n\r\n", .badStatusLine),
        ("<html>\r\n\r\n", .badStatusLine),
        ("HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion),
        ("HTTP/0.9 200 OK\r\n\r\n", .unsupportedVersion),
        ("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", .badHeaderLine),
        ("HTTP/1.1 200 OK\r\nSpace : before colon\r\n\r\n", .badHeaderLine),
        ("HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", .badHeaderLine),
        ("HTTP/1.1 200 OK\r\n folded first\r\n\r\n", .badHeaderLine),
        ("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", .badCharacter),
        ("HTTP/1.1 200 OK\r\nX: a\u{0}b\r\n\r\n", .badCharacter),
    ])
    func malformedHead_isTyped(text: String, error: HTTPResponseError) {
        #expect(throws: error) { try Self.parse(text) }
    }

    @Test func headOverTheLimit_isRefused_evenBeforeItsEnd() {
        let line = "X-Pad: " + String(repeating: "a", count: 1000) + "\r\n"
        let long = "HTTP/1.1 200 OK\r\n" + String(repeating: line, count: 70)
        #expect(throws: HTTPResponseError.headTooLarge) { try Self.parse(long) }
        #expect(throws: HTTPResponseError.headTooLarge) { try Self.parse(long + "\r\n") }
    }

    @Test func tooManyFields_isRefused() {
        let text = "HTTP/1.1 200 OK\r\n" + String(repeating: "A: b\r\n", count: HTTPResponseHead.maxFields + 1) + "\r\n"
        #expect(throws: HTTPResponseError.tooManyFields) { try Self.parse(text) }
        let most = "HTTP/1.1 200 OK\r\n" + String(repeating: "A: b\r\n", count: HTTPResponseHead.maxFields) + "\r\n"
        #expect(throws: Never.self) { try Self.parse(most) }
    }

    @Test func chunkedDecoder_handsSlicesOfTheInput_withoutCopying() throws {
        var decoder = ChunkedBodyDecoder()
        let body = Array("4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nTrailer: x\r\n\r\nNEXT".utf8)
        var pieces: [[UInt8]] = []
        let used = try decoder.feed(body[...]) { pieces.append(Array($0)) }
        #expect(pieces == [Array("Wiki".utf8), Array("pedia".utf8)])
        #expect(decoder.isComplete && used == body.count - 4, "NEXT is left")
    }
}
