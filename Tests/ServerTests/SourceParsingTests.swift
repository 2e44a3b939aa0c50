import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
import StreamShared

@Suite struct BasicCredentialsTests {
    @Test func sourceCredentials_decode() {
        // base64("source:hackme")
        #expect(BasicCredentials.parse("Basic c291cmNlOmhhY2ttZQ==") == BasicCredentials(user: "source", password: "hackme"))
        #expect(BasicCredentials.parse("basic   c291cmNlOmhhY2ttZQ") == BasicCredentials(user: "source", password: "hackme"))
    }

    @Test func passwordMayHoldColons() {
        // base64("source:a:b")
        #expect(BasicCredentials.parse("Basic c291cmNlOmE6Yg==")?.password == "a:b")
    }

    @Test(arguments: [nil, "", "Bearer abc", "Basic", "Basic !!!!", "Basic c291cmNl", "Basic c291cmNlOmhhY2ttZQ==x",
                      "Basic =c291", "Basic c291cmNlOmE=Yg==", "Basic AA==", "Basic c291cmNlOmEJYg=="] as [String?])
    func malformed_isNil(header: String?) {
        #expect(BasicCredentials.parse(header) == nil)
    }

    @Test func constantTimeEquals_isEquality() {
        #expect(BasicCredentials.constantTimeEquals("hackme", "hackme"))
        #expect(!BasicCredentials.constantTimeEquals("hackme", "hackmf"))
        #expect(!BasicCredentials.constantTimeEquals("hackme", "hackme2"))
        #expect(!BasicCredentials.constantTimeEquals("", "x"))
        #expect(BasicCredentials.constantTimeEquals("", ""))
    }
}

@Suite struct ChunkedBodyDecoderTests {
    static func decode(_ text: String, pieces: Int) throws(ChunkedBodyDecoder.DecodeError) -> (payload: String, complete: Bool, consumed: Int) {
        let bytes = Array(text.utf8)
        var decoder = ChunkedBodyDecoder()
        var payload: [UInt8] = []
        var consumed = 0
        var i = 0
        while i < bytes.count {
            let end = min(bytes.count, i + pieces)
            let (part, used) = try decoder.feed(bytes[i..<end])
            payload += part
            consumed += used
            if used < end - i { break }
            i = end
        }
        return (String(decoding: payload, as: UTF8.self), decoder.isComplete, consumed)
    }

    @Test(arguments: [1, 2, 5, 1000])
    func chunksExtensionsAndTrailers(pieces: Int) throws {
        let body = "5\r\nhello\r\n1;name=value\r\n \r\nA \r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nNEXT"
        let (payload, complete, consumed) = try Self.decode(body, pieces: pieces)
        #expect(payload == "hello 0123456789")
        #expect(complete)
        #expect(consumed == body.utf8.count - 4)
    }

    @Test func bareLF_isTolerated() throws {
        #expect(try Self.decode("3\nabc\n0\n\n", pieces: 100).payload == "abc")
    }

    @Test(arguments: ["x\r\n", "-1\r\n", "\r\n", " 5\r\n", "1 2\r\nab\r\n", "1000000000000000\r\n", "3\r\nabcX"])
    func malformed_throws(body: String) {
        #expect(throws: ChunkedBodyDecoder.DecodeError.self) { try Self.decode(body, pieces: 100) }
    }

    @Test func longSizeLine_isRefused() {
        let body = "5;" + String(repeating: "x", count: ChunkedBodyDecoder.maxLine) + "\r\n"
        #expect(throws: ChunkedBodyDecoder.DecodeError.lineTooLong) { try Self.decode(body, pieces: 100) }
    }
}

@Suite struct SourceRequestTests {
    static func request(_ headers: [(String, String)]) -> HTTPRequest {
        HTTPRequest(method: "PUT", target: "/radio/live", minorVersion: 1,
                    headers: [(name: "Host", value: "x")] + headers.map { (name: $0.0, value: $0.1) })
    }

    static let auth = ("Authorization", "Basic c291cmNlOmhhY2ttZQ==")   // source:hackme

    @Test func icecastHeaders_becomeTheStation() throws {
        let parsed = try SourceRequest.parse(Self.request([Self.auth, ("Content-Type", "audio/mpeg"), ("ice-name", "Radio X"),
                                                           ("ice-genre", "Jazz"), ("ice-url", "http://x/"),
                                                           ("ice-audio-info", "samplerate=44100;bitrate=128;channels=2")]),
                                             name: "live", password: "hackme")
        #expect(parsed.codec == .mpeg)
        #expect(parsed.station == StationInfo(name: "Radio X", genre: "Jazz", url: "http://x/", description: nil))
        #expect(parsed.kbps == 128)
    }

    @Test func aacTypes_areADTS() throws {
        for type in ["audio/aac", "audio/aacp", "AUDIO/AAC; charset=x"] {
            #expect(try SourceRequest.parse(Self.request([Self.auth, ("Content-Type", type)]), name: "l", password: "hackme").codec == .adts)
        }
    }

    @Test func wrongOrMissingPassword_is401() {
        let other = ("Authorization", "Basic c291cmNlOm5vcGU=")   // source:nope
        let admin = ("Authorization", "Basic YWRtaW46aGFja21l")   // admin:hackme
        for headers in [[other], [admin], []] {
            #expect(throws: SourceRequest.Refusal.unauthorized) {
                try SourceRequest.parse(Self.request(headers), name: "l", password: "hackme")
            }
        }
        #expect(throws: SourceRequest.Refusal.unauthorized) {
            try SourceRequest.parse(Self.request([Self.auth]), name: "l", password: nil)
        }
    }

    @Test func oggIsAccepted_andOtherTypesRefused() throws {
        for type in ["audio/ogg", "application/ogg", "audio/ogg; codecs=opus"] {
            let source = try SourceRequest.parse(Self.request([Self.auth, ("Content-Type", type)]), name: "l", password: "hackme")
            #expect(source.codec == .ogg, "\(type)")
        }
        #expect(throws: SourceRequest.Refusal.unsupportedType("video/webm")) {
            try SourceRequest.parse(Self.request([Self.auth, ("Content-Type", "video/webm")]), name: "l", password: "hackme")
        }
    }
}
