import Testing
@testable import StreamShared

/// The URL side of the shared HTTP/1 wire layer: what the own client and streamd's relay
/// connect to, IPv6 literals in brackets included, and every malformed authority refused.
@Suite struct HTTPURLTests {
    @Test func urls_splitForTheRequest() throws {
        let plain = try HTTPURL("http://Example.org/a%20b/c?q=1#frag")
        #expect(plain.host == "Example.org" && plain.port == 80 && plain.target == "/a%20b/c?q=1" && plain.hostHeader == "Example.org")
        let v6 = try HTTPURL("http://[::1]:8080")
        #expect(v6.host == "::1" && v6.port == 8080 && v6.target == "/" && v6.hostHeader == "[::1]:8080")
        #expect(try HTTPURL("http://h/with space").target == "/with%20space")
        #expect(try HTTPURL("HTTP://h:/x").port == 80, "an empty port is the default one")
        #expect(throws: HTTPURL.Problem.notHTTP) { try HTTPURL("https://h/") }
    }

    /// A delimiter followed by a combining mark is one Character but still a delimiter (the case
    /// libFuzzer found: a fragment kept in the target, which a rebuilt URL then dropped).
    @Test func delimiters_beforeCombiningMarks_stillSplit() throws {
        let fragment = try HTTPURL("http://h/a#\u{07F2}b?c")
        #expect(fragment.target == "/a")
        let query = try HTTPURL("http://h/p?\u{0301}q#x")
        #expect(query.target == "/p?%CC%81q")
        let path = try HTTPURL("http://h/\u{0301}/x")
        #expect(path.target == "/%CC%81/x")
        #expect(throws: HTTPURL.Problem.self) { try HTTPURL("http://u@\u{0301}h/") }
        let again = try HTTPURL("http://" + fragment.hostHeader + fragment.target)
        #expect(again == fragment)
    }

    @Test(arguments: [
        ("http://[::1]:8000/path", "::1", 8000, "/path", "[::1]:8000"),
        ("http://[::1]/radio/main?x=1", "::1", 80, "/radio/main?x=1", "[::1]"),
        ("http://[2001:DB8::a:1]:65535", "2001:DB8::a:1", 65_535, "/", "[2001:DB8::a:1]:65535"),
        ("http://[::ffff:192.0.2.1]/", "::ffff:192.0.2.1", 80, "/", "[::ffff:192.0.2.1]"),
        ("http://127.0.0.1:8080/a", "127.0.0.1", 8080, "/a", "127.0.0.1:8080"),
    ])
    func ipLiterals_andPorts(url: String, host: String, port: Int, target: String, hostHeader: String) throws {
        let parsed = try HTTPURL(url)
        #expect(parsed.host == host && parsed.port == port && parsed.target == target && parsed.hostHeader == hostHeader)
    }

    @Test(arguments: [
        "http://", "http://:80/", "http://h:0/", "http://h:65536/", "http://h:8x/", "http://h:123456/", "http://u:p@h/",
        "http://h\r\nX: y/", "http://h é/",
        // Brackets: unclosed, empty, doubled, text after them, no port after the colon's place,
        // not an IPv6 address inside, an unbracketed IPv6 address, a zone identifier.
        "http://[::1/", "http://[]/", "http://[::1]]/", "http://[[::1]]/", "http://[::1]x/", "http://[::1]:x/",
        "http://[::1]8000/", "http://[example.org]/", "http://[1.2.3.4]/", "http://[v1.x]/", "http://[:::1]/",
        "http://[::1%25eth0]/", "http://::1/", "http://::1:8000/", "http://h]/", "http://h[/", "http://h%41/",
    ])
    func malformedAuthorities_areRefused(url: String) {
        #expect(throws: HTTPURL.Problem.self, "\(url.debugDescription)") { try HTTPURL(url) }
    }

    @Test func problems_sayWhat() {
        #expect(throws: HTTPURL.Problem.malformed("unclosed IPv6 literal")) { try HTTPURL("http://[::1/") }
        #expect(throws: HTTPURL.Problem.malformed("'[example.org]' is not an IPv6 address")) { try HTTPURL("http://[example.org]/") }
    }
}

/// `host[:port]` by RFC 3986's syntax: the server's Host check and the URL's first step.
@Suite struct HTTPAuthorityTests {
    @Test func splitsHostAndPort() throws {
        let v6 = try #require(HTTPAuthority(parsing: "[::1]:8000"))
        #expect(v6.host == "::1" && v6.isIPLiteral && v6.port == "8000")
        let name = try #require(HTTPAuthority(parsing: "example.org"))
        #expect(name.host == "example.org" && !name.isIPLiteral && name.port == nil)
        #expect(HTTPAuthority(parsing: "h:")?.port == "", "an empty port is valid syntax")
        #expect(HTTPAuthority(parsing: "")?.host == "", "an empty Host is valid (RFC 9112 3.2)")
        #expect(HTTPAuthority(parsing: "ex%41mple")?.host == "ex%41mple")
    }

    @Test(arguments: ["[::1", "[]", "[::1]]", "[::1]x", "h:123456", "h:8x", "a b", "h/", "h@x", "%4", "%zz", "[::1%eth0]", "é"])
    func malformed_isNil(text: String) {
        #expect(HTTPAuthority(parsing: Substring(text)) == nil, "\(text.debugDescription)")
    }
}

/// The one field-line reader of both parsers (requests in streamd, responses in the client and
/// the relay): token names, trimmed values, obs-fold by the rules, limits, and `.incomplete`.
@Suite struct HTTPFieldLineReaderTests {
    static let server = HTTPFieldRules(maxFields: 4, maxBytes: 100, unfoldsLines: false, keepsControlBytes: false)
    static let agent = HTTPFieldRules(maxFields: 4, maxBytes: 100, unfoldsLines: true, keepsControlBytes: true)

    enum Step: Equatable {
        case field(String, String), continuation(String), end(Int), incomplete
    }

    static func read(_ text: String, _ rules: HTTPFieldRules) throws(HTTPFieldError) -> [Step] {
        let bytes = Array(text.utf8)[...]
        var reader = HTTPFieldLineReader(from: 0, rules: rules)
        var steps: [Step] = []
        while true {
            switch try reader.next(in: bytes) {
            case .field(let name, let value):
                steps.append(.field(String(decoding: bytes[name], as: UTF8.self), String(decoding: bytes[value], as: UTF8.self)))
            case .continuation(let value): steps.append(.continuation(String(decoding: bytes[value], as: UTF8.self)))
            case .end(let next): return steps + [.end(next)]
            case .incomplete: return steps + [.incomplete]
            }
        }
    }

    @Test func fields_trimmed_untilTheEmptyLine() throws {
        let text = "A:  one \t\r\nb-C:two\nEmpty:\r\n\r\nBODY"
        #expect(try Self.read(text, Self.server) == [.field("A", "one"), .field("b-C", "two"), .field("Empty", ""), .end(text.utf8.count - 4)])
    }

    @Test func incomplete_atEveryCut() throws {
        let text = Array("A: 1\r\nB: 2\r\n\r\n".utf8)
        for cut in 0..<text.count {
            var reader = HTTPFieldLineReader(from: 0, rules: Self.server)
            var ended = false
            while true {
                let line = try reader.next(in: text[..<cut])
                if case .incomplete = line { break }
                if case .end = line { ended = true; break }
            }
            #expect(!ended, "cut at \(cut)")
        }
    }

    @Test func obsFold_isRefusedByAServer_unfoldedByAUserAgent() throws {
        let text = "A: one\r\n  two\r\n\r\n"
        #expect(throws: HTTPFieldError.obsFold) { try Self.read(text, Self.server) }
        #expect(try Self.read(text, Self.agent) == [.field("A", "one"), .continuation("two"), .end(text.utf8.count)])
        #expect(throws: HTTPFieldError.obsFold, "a fold before any field") { try Self.read(" x\r\n\r\n", Self.agent) }
    }

    @Test(arguments: [
        ("A b: c\r\n\r\n", HTTPFieldError.badName), ("A : c\r\n\r\n", .badName), (": c\r\n\r\n", .badName),
        ("A\r\n\r\n", .noColon), ("A: x\u{0}y\r\n\r\n", .badValue), ("A: x\ry\r\n\r\n", .badValue),
    ])
    func malformedLines_areTyped_underBothRules(text: String, error: HTTPFieldError) {
        #expect(throws: error) { try Self.read(text, Self.server) }
        #expect(throws: error) { try Self.read(text, Self.agent) }
    }

    @Test func controlBytes_refusedByAServer_keptByAUserAgent() throws {
        #expect(throws: HTTPFieldError.badValue) { try Self.read("A: x\u{1}y\r\n\r\n", Self.server) }
        #expect(throws: HTTPFieldError.badValue) { try Self.read("A: x\u{7F}\r\n\r\n", Self.server) }
        #expect(try Self.read("A: x\u{1}y\r\n\r\n", Self.agent).first == .field("A", "x\u{1}y"))
    }

    @Test func limits_fieldsAndBytes_evenBeforeTheEnd() throws {
        #expect(throws: HTTPFieldError.tooManyFields) { try Self.read(String(repeating: "A: b\r\n", count: 5) + "\r\n", Self.server) }
        #expect(try Self.read(String(repeating: "A: b\r\n", count: 4) + "\r\n", Self.server).count == 5)
        #expect(throws: HTTPFieldError.tooLarge) { try Self.read("A: " + String(repeating: "x", count: 200), Self.server) }
        #expect(throws: HTTPFieldError.tooLarge) { try Self.read("A: " + String(repeating: "x", count: 120) + "\r\n\r\n", Self.server) }
    }
}
