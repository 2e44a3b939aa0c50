import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Request semantics of RFC 9110/9112 against the real `streamd` (issue 12, item 5): Host and
/// framing rules, versions and methods, preconditions, validators on JSON, bounded parameters,
/// range abuse and hidden files. Each hostile request goes on a fresh connection.
@Suite(.serialized, .ownThreads) struct ServerConformanceTests {
    /// The usual test library plus hidden files and folders, and a visible symlink into one.
    static func makeLibrary() throws -> URL {
        let dir = try ServerEndToEndTests.makeLibrary()
        let mp3 = dir.appendingPathComponent("cbr-128k-44k.mp3")
        try FileManager.default.copyItem(at: mp3, to: dir.appendingPathComponent(".hidden.mp3"))
        try FileManager.default.createDirectory(at: dir.appendingPathComponent(".private"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: mp3, to: dir.appendingPathComponent(".private/inside.mp3"))
        try FileManager.default.createSymbolicLink(at: dir.appendingPathComponent("into-hidden.mp3"),
                                                   withDestinationURL: dir.appendingPathComponent(".private/inside.mp3"))
        return dir
    }

    /// Sends `text` on a new connection and reads one response; for an error that ends the
    /// connection, also whether the server closed it (waiting up to 5 s for that).
    static func exchange(_ port: Int, _ text: String) throws -> (RawResponse, closed: Bool) {
        let c = try RawConnection(port: port, timeout: 5)
        try c.sendAll(text)
        let response = try c.readResponse()
        let endsConnection = response.header("Connection") == "close"
        return (response, endsConnection && c.isClosedByPeer())
    }

    @Test func hostRules() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let cases: [(String, Int)] = [
            ("GET /api/tracks HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("GET /api/tracks HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400),
            ("GET /api/tracks HTTP/1.1\r\nHost: ex ample\r\n\r\n", 400),
            ("GET /api/tracks HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
            ("GET /api/tracks HTTP/1.1\r\nHost: a:80x\r\n\r\n", 400),
            ("GET /api/tracks HTTP/1.1\r\n\r\n", 400),
            ("GET /api/tracks HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200),
            ("GET /api/tracks HTTP/1.0\r\n\r\n", 200),
        ]
        for (text, status) in cases {
            let (response, closed) = try Self.exchange(server.port, text)
            #expect(response.status == status, "\(text.debugDescription)")
            if status == 400 {
                #expect(response.statusLine == "HTTP/1.1 400 Bad Request")
                #expect(response.header("Connection") == "close")
                #expect(closed)
            }
        }
    }

    @Test func framingRules() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let cases: [(String, Int)] = [
            ("Content-Length: 0\r\nContent-Length: 5\r\n\r\nhello", 400),
            ("Content-Length: 0, 5\r\n\r\nhello", 400),
            ("Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n", 400),
            ("Content-Length: +0\r\n\r\n", 400),
            ("Content-Length: -0\r\n\r\n", 400),
            ("Content-Length: 0x0\r\n\r\n", 400),
            ("Content-Length: 5\r\n\r\nhello", 413),
            ("Content-Length: 0\r\nContent-Length: 0\r\n\r\n", 200),
        ]
        for (rest, status) in cases {
            let (response, closed) = try Self.exchange(server.port, "GET /api/tracks HTTP/1.1\r\nHost: x\r\n" + rest)
            #expect(response.status == status, "\(rest.debugDescription)")
            if status != 200 { #expect(closed, "\(rest.debugDescription)") }
        }
    }

    @Test func preconditions_failWith412BeforeRange() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let etag = try #require(try c.request("HEAD", "/media/adts.aac").header("ETag"))
        let old = "Mon, 01 Jan 1990 00:00:00 GMT", future = "Fri, 01 Jan 2100 00:00:00 GMT"
        let cases: [([String: String], Int)] = [
            (["If-Match": "\"stale\"", "Range": "bytes=0-9"], 412),
            (["If-Match": "W/\(etag)", "Range": "bytes=0-9"], 412),          // strong comparison
            (["If-Unmodified-Since": old, "Range": "bytes=0-9"], 412),
            (["If-Match": "\"stale\"", "If-None-Match": etag], 412),          // If-Match is evaluated first
            (["If-Match": etag, "Range": "bytes=0-9"], 206),
            (["If-Match": "*", "Range": "bytes=0-9"], 206),
            (["If-Unmodified-Since": future, "Range": "bytes=0-9"], 206),
            (["If-Match": etag, "If-Unmodified-Since": old, "Range": "bytes=0-9"], 206),   // If-Match wins
        ]
        for (headers, status) in cases {
            let response = try c.request("GET", "/media/adts.aac", headers: headers)
            #expect(response.status == status, "\(headers)")
            if status == 412 { #expect(response.statusLine == "HTTP/1.1 412 Precondition Failed") }
        }
    }

    @Test func absoluteForm_andVersions() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let origin = try c.request("GET", "/api/tracks")
        try c.sendAll("GET http://127.0.0.1:\(server.port)/api/tracks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let absolute = try c.readResponse()
        #expect(absolute.status == 200)
        #expect(absolute.body == origin.body)
        try c.sendAll("GET http://127.0.0.1/media/pcm16.wav HTTP/1.1\r\nHost: x\r\nRange: bytes=0-3\r\n\r\n")
        #expect(try c.readResponse().body == Array("RIFF".utf8))
        // HTTP/1.2 is served as 1.1 on the same connection.
        try c.sendAll("GET /media/pcm16.wav HTTP/1.2\r\nHost: x\r\nRange: bytes=8-11\r\n\r\n")
        let later = try c.readResponse()
        #expect(later.statusLine == "HTTP/1.1 206 Partial Content")
        #expect(later.body == Array("WAVE".utf8))
        for version in ["HTTP/2.0", "HTTP/3.0", "HTTP/2"] {
            let (response, closed) = try Self.exchange(server.port, "GET /api/tracks \(version)\r\nHost: x\r\n\r\n")
            #expect(response.statusLine == "HTTP/1.1 505 HTTP Version Not Supported", "\(version)")
            #expect(closed)
        }
    }

    @Test func methods_501Unknown_405Known_optionsAnswered() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        for method in ["POST", "PUT", "DELETE", "PATCH", "TRACE"] {
            let response = try c.request(method, "/api/tracks")
            #expect(response.statusLine == "HTTP/1.1 405 Method Not Allowed", "\(method)")
            #expect(response.header("Allow") == "GET, HEAD, OPTIONS")
        }
        let connect = try Self.exchange(server.port, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n").0
        #expect(connect.status == 405)
        for method in ["FOO", "BREW", "get"] {
            #expect(try c.request(method, "/api/tracks").statusLine == "HTTP/1.1 501 Not Implemented", "\(method)")
        }
        for target in ["*", "/media/pcm16.wav"] {
            try c.sendAll("OPTIONS \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            let options = try c.readResponse()
            #expect(options.status == 204)
            #expect(options.header("Allow") == "GET, HEAD, OPTIONS")
        }
        // Still in step after all of those.
        #expect(try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=0-3"]).body == Array("RIFF".utf8))
    }

    @Test func http10KeepAlive_isAnnouncedAndKept() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let original = try ServerEndToEndTests.bytes(of: library.appendingPathComponent("vbr-v2.mp3"))
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port, timeout: 5)
        try c.sendAll("GET /media/vbr-v2.mp3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let file = try c.readResponse()
        #expect(file.header("Connection") == "keep-alive")
        #expect(file.header("Content-Length") == String(original.count))
        #expect(file.header("Transfer-Encoding") == nil)
        #expect(file.body == original)
        try c.sendAll("GET /api/tracks HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
        let json = try c.readResponse()
        #expect(json.status == 200)
        #expect(json.header("Connection") == "keep-alive")
        // A plain HTTP/1.0 request ends the connection after its response.
        try c.sendAll("GET /media/pcm16.wav HTTP/1.0\r\nRange: bytes=0-3\r\n\r\n")
        let last = try c.readResponse()
        #expect(last.body == Array("RIFF".utf8))
        #expect(last.header("Connection") == "close")
        #expect(c.isClosedByPeer())
    }

    @Test func reasonPhrases_areStandard() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let cases: [(String, [String: String], String)] = [
            ("/api/index/notes.txt", [:], "422 Unprocessable Content"),
            ("/media/pcm16.wav", ["Range": "bytes=99999999-"], "416 Range Not Satisfiable"),
            ("/media/pcm16.wav", ["Range": "bytes=0-0"], "206 Partial Content"),
            ("/nope", [:], "404 Not Found"),
            ("/media/escape.mp3", [:], "403 Forbidden"),
            ("/media/pcm16.wav?kbps=0", [:], "400 Bad Request"),
        ]
        for (target, headers, expected) in cases {
            #expect(try c.request("GET", target, headers: headers).statusLine == "HTTP/1.1 " + expected, "\(target)")
        }
        let tooLong = try Self.exchange(server.port, "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n").0
        #expect(tooLong.statusLine == "HTTP/1.1 414 URI Too Long")
    }

    @Test func jsonAnswers_haveValidators() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        for target in ["/api/tracks", "/api/status", "/api/index/cbr-128k-44k.mp3", "/api/index/cbr-128k-44k.mp3?t=10"] {
            let first = try c.request("GET", target)
            #expect(first.status == 200)
            #expect(first.header("Cache-Control") == "no-cache")
            let etag = try #require(first.header("ETag"), "\(target)")
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""), "a strong ETag")
            #expect(try c.request("GET", target).header("ETag") == etag, "same bytes, same tag")
            let revalidated = try c.request("GET", target, headers: ["If-None-Match": etag])
            #expect(revalidated.status == 304)
            #expect(revalidated.header("ETag") == etag)
            #expect(revalidated.header("Cache-Control") == "no-cache")
            #expect(try c.request("GET", target, headers: ["If-None-Match": "\"other\""]).body == first.body)
            #expect(try c.request("GET", target, headers: ["If-Match": "\"other\""]).status == 412)
            #expect(try c.request("HEAD", target).header("ETag") == etag)
        }
        let whole = try c.request("GET", "/api/index/cbr-128k-44k.mp3").header("ETag")
        #expect(whole != (try c.request("GET", "/api/index/cbr-128k-44k.mp3?t=10").header("ETag")))
    }

    @Test func headAndContentLengthMode() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let original = try ServerEndToEndTests.bytes(of: library.appendingPathComponent("cbr-128k-44k.mp3"))
        let chunked = try StreamdProcess(folder: library)
        let c = try RawConnection(port: chunked.port)
        let head = try c.request("HEAD", "/media/cbr-128k-44k.mp3")
        #expect(head.header("Content-Length") == String(original.count))
        #expect(head.header("Transfer-Encoding") == nil)
        let get = try c.request("GET", "/media/cbr-128k-44k.mp3")
        #expect(get.header("Transfer-Encoding") == "chunked")
        #expect(get.header("Content-Length") == nil)
        #expect(get.body == original)

        let sized = try StreamdProcess(folder: library, extraArguments: ["--content-length"])
        let s = try RawConnection(port: sized.port)
        let whole = try s.request("GET", "/media/cbr-128k-44k.mp3")
        #expect(whole.status == 200)
        #expect(whole.header("Content-Length") == String(original.count))
        #expect(whole.header("Transfer-Encoding") == nil)
        #expect(whole.body == original)
        #expect(try s.request("HEAD", "/media/cbr-128k-44k.mp3").header("Content-Length") == String(original.count))
        // Ranges are unchanged, and the connection carries on after the sized body.
        #expect(try s.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=0-3"]).body == Array("RIFF".utf8))
    }

    @Test func queryParameters_areBounded() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        for value in ["9999999999999999", "99999999999999999999999999", "0", "-1", "+64", "abc", "", "1000001", "1e3"] {
            let response = try c.request("GET", "/media/pcm16.wav?kbps=\(value)", headers: ["Range": "bytes=0-3"])
            #expect(response.status == 400, "kbps=\(value)")
        }
        #expect(try c.request("GET", "/media/pcm16.wav?kbps=1000000", headers: ["Range": "bytes=0-3"]).status == 206)
        for value in ["1e300", "-5", "inf", "nan", "abc", "604801"] {
            #expect(try c.request("GET", "/api/index/cbr-128k-44k.mp3?t=\(value)").status == 400, "t=\(value)")
        }
        #expect(try c.request("GET", "/api/index/cbr-128k-44k.mp3?t=12.5").status == 200)
        #expect(server.process.isRunning, "no request takes the server down")
    }

    @Test func excessiveRanges_areMergedOrIgnored() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let original = try ServerEndToEndTests.bytes(of: library.appendingPathComponent("pcm16.wav"))
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        // Sixteen copies of the whole file: one 206 of the file, not sixteen.
        let copies = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=" + Array(repeating: "0-", count: 16).joined(separator: ",")])
        #expect(copies.status == 206)
        #expect(copies.header("Content-Range") == "bytes 0-\(original.count - 1)/\(original.count)")
        #expect(copies.body == original)
        // 32 copies: more than 16 ranges is ignored, the plain 200.
        let many = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=" + Array(repeating: "0-", count: 32).joined(separator: ",")])
        #expect(many.status == 200)
        #expect(many.body == original)
        // Overlapping parts are merged; disjoint ones stay a multipart.
        let overlap = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=10-19,0-11,-4"])
        let type = try #require(overlap.header("Content-Type"))
        #expect(type.hasPrefix("multipart/byteranges"))
        let text = String(decoding: overlap.body, as: UTF8.self)
        #expect(text.contains("Content-Range: bytes 0-19/\(original.count)"))
        #expect(text.contains("Content-Range: bytes \(original.count - 4)-\(original.count - 1)/\(original.count)"))
        #expect(overlap.body.count < 400)
    }

    @Test func hiddenFiles_areNeitherServedNorListed() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        for target in ["/media/.hidden.mp3", "/media/%2Ehidden.mp3", "/media/.private/inside.mp3", "/media/%2eprivate/inside.mp3",
                       "/media/into-hidden.mp3", "/api/index/.hidden.mp3", "/api/index/into-hidden.mp3"] {
            #expect(try c.request("GET", target).status == 404, "\(target)")
        }
        let tracks = String(decoding: try c.request("GET", "/api/tracks").body, as: UTF8.self)
        #expect(tracks.contains("cbr-128k-44k.mp3"))
        #expect(!tracks.contains("hidden"))
        #expect(!tracks.contains("private"))
        #expect(!tracks.contains("inside"))
    }
}
