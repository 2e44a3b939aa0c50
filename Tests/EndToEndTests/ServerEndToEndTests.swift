import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The real `streamd` on 127.0.0.1:0, driven over loopback sockets.
@Suite(.serialized, .ownThreads) struct ServerEndToEndTests {
    /// A library folder: the generated media plus a file with a UTF-8 name, a symlink that
    /// escapes the folder, and a non-audio file.
    static func makeLibrary() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-e2e-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for file in TestPaths.mediaFiles() {
            let relative = String(file.path.dropFirst(TestPaths.media.path.count + 1))
            let target = dir.appendingPathComponent(relative)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: file, to: target)
        }
        // One secret outside every library, shared by all test processes (one per process piled up).
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-e2e-secret.txt")
        if !FileManager.default.fileExists(atPath: secret.path) { try Data("secret".utf8).write(to: secret, options: .atomic) }
        try FileManager.default.createSymbolicLink(at: dir.appendingPathComponent("escape.mp3"), withDestinationURL: secret)
        try Data("just text\n".utf8).write(to: dir.appendingPathComponent("notes.txt"))
        return dir
    }

    static func bytes(of file: URL) throws -> [UInt8] { Array(try Data(contentsOf: file)) }

    @Test func servesWholeFileChunked() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let connection = try RawConnection(port: server.port)
        let response = try connection.request("GET", "/media/cbr-128k-44k.mp3")
        #expect(response.status == 200)
        #expect(response.header("Transfer-Encoding") == "chunked")
        #expect(response.header("Content-Type") == "audio/mpeg")
        #expect(response.header("Accept-Ranges") == "bytes")
        #expect(response.header("ETag") != nil)
        #expect(response.header("Last-Modified") != nil)
        #expect(response.body == (try Self.bytes(of: library.appendingPathComponent("cbr-128k-44k.mp3"))))
    }

    /// A burst of connections is shared out between the event loops (the listening socket tends
    /// to wake the same loop every time, which then kept them all): 40 connections opened at
    /// once end up split evenly, and each one is served by whichever loop took it.
    @Test func burstOfConnections_isSharedBetweenTheLoops() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--threads", "2", "--quiet"])
        var sockets: [RawConnection] = []
        for _ in 0..<40 { sockets.append(try RawConnection(port: server.port)) }
        var perLoop: [Int] = []
        for _ in 0..<100 {
            perLoop = try server.status()["connections_per_loop"] as? [Int] ?? []
            if perLoop.reduce(0, +) >= 41 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(perLoop.count == 2 && perLoop.reduce(0, +) >= 41, "\(perLoop)")
        #expect((perLoop.max() ?? 0) - (perLoop.min() ?? 0) <= 2, "connections per loop: \(perLoop)")
        for socket in sockets { socket.send("GET /api/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") }
        for socket in sockets {
            let (bytes, _) = socket.readUntilEnd(quiet: 5, limit: 20)
            #expect(String(decoding: bytes.prefix(12), as: UTF8.self) == "HTTP/1.1 200")
        }
    }

    @Test func rangesAnd416() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let original = try Self.bytes(of: library.appendingPathComponent("pcm16.wav"))
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let closed = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=100-199"])
        #expect(closed.status == 206)
        #expect(closed.header("Content-Range") == "bytes 100-199/\(original.count)")
        #expect(closed.body == Array(original[100..<200]))
        let open = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=\(original.count - 10)-"])
        #expect(open.body == Array(original.suffix(10)))
        let suffix = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=-500"])
        #expect(suffix.body == Array(original.suffix(500)))
        #expect(suffix.header("Content-Length") == "500")
        let bad = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=\(original.count)-"])
        #expect(bad.status == 416)
        #expect(bad.header("Content-Range") == "bytes */\(original.count)")
    }

    @Test func multipleRanges_areMultipart() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let original = try Self.bytes(of: library.appendingPathComponent("pcm16.wav"))
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let r = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=0-3,10-19"])
        #expect(r.status == 206)
        let type = try #require(r.header("Content-Type"))
        #expect(type.hasPrefix("multipart/byteranges; boundary="))
        let boundary = String(type.dropFirst("multipart/byteranges; boundary=".count))
        let text = String(decoding: r.body, as: UTF8.self)
        #expect(text.contains("--\(boundary)\r\nContent-Type: audio/wav\r\nContent-Range: bytes 0-3/\(original.count)\r\n\r\nRIFF"))
        #expect(text.contains("Content-Range: bytes 10-19/\(original.count)"))
        #expect(text.hasSuffix("--\(boundary)--\r\n"))
    }

    @Test func conditionalRequests() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let first = try c.request("HEAD", "/media/adts.aac")
        #expect(first.status == 200)
        #expect(first.header("Content-Type") == "audio/aac")
        let etag = try #require(first.header("ETag"))
        let modified = try #require(first.header("Last-Modified"))
        #expect(try c.request("GET", "/media/adts.aac", headers: ["If-None-Match": etag]).status == 304)
        #expect(try c.request("GET", "/media/adts.aac", headers: ["If-None-Match": "\"other\", \(etag)"]).status == 304)
        #expect(try c.request("GET", "/media/adts.aac", headers: ["If-Modified-Since": modified]).status == 304)
        let stale = try c.request("GET", "/media/adts.aac", headers: ["If-Range": "\"stale\"", "Range": "bytes=0-9"])
        #expect(stale.status == 200, "If-Range with another ETag sends the whole file")
        let fresh = try c.request("GET", "/media/adts.aac", headers: ["If-Range": etag, "Range": "bytes=0-9"])
        #expect(fresh.status == 206)
        #expect(fresh.body.count == 10)
    }

    @Test func utf8Names_andTraversalRefused() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let tracks = try c.request("GET", "/api/tracks")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(tracks.body)) as? [[String: Any]])
        let unicode = try #require(list.first { ($0["path"] as? String)?.contains("Ünïcode") == true })
        let url = try #require(unicode["url"] as? String)
        #expect(try c.request("GET", url, headers: ["Range": "bytes=0-0"]).status == 206)
        for path in ["/media/../etc/passwd", "/media/%2e%2e/%2e%2e/etc/passwd", "/media/a/%2E%2E/b", "/media/%00x"] {
            let status = try c.request("GET", path).status
            #expect(status == 400 || status == 404, "\(path) → \(status)")
        }
        #expect(try c.request("GET", "/media/escape.mp3").status == 403, "a symlink out of the folder is refused")
        #expect(try c.request("GET", "/media/missing.mp3").status == 404)
        #expect(try c.request("DELETE", "/media/pcm16.wav").status == 405)
    }

    @Test func catalogAndIndex() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let tracks = try c.request("GET", "/api/tracks")
        #expect(tracks.header("Content-Type") == "application/json")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(tracks.body)) as? [[String: Any]])
        #expect(list.count == TestPaths.mediaFiles().count, "every generated track is listed, notes.txt and the escaping link are not")
        for track in list {
            for key in ["path", "title", "artist", "album", "duration_s", "codec", "container", "sample_rate", "channels",
                        "bitrate", "size", "etag"] {
                #expect(track.keys.contains(key), "\(key) in \(track)")
            }
        }
        // The catalog carries the UTF-16 ID3v2 text of the Unicode track whole.
        let unicode = try #require(list.first { ($0["path"] as? String)?.hasPrefix("Album Ünïcode/") == true })
        #expect(unicode["title"] as? String == "Ça va — chanson")
        #expect(unicode["artist"] as? String == "Bände & Chœur")
        #expect(unicode["album"] as? String == "Album Ünïcode")
        let index = try c.request("GET", "/api/index/vbr-v2.mp3")
        #expect(index.status == 200)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(index.body)) as? [String: Any])
        let points = try #require(object["points"] as? [[String: Any]])
        let times = points.compactMap { $0["t"] as? Double }
        let duration = try #require(object["duration_s"] as? Double)
        #expect(times.first == 0)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 <= 1.0 }, "a point at least every second")
        #expect((times.last ?? 0) >= duration - 1.1)
        #expect(object["encoder_delay"] as? Int == 576)
    }

    @Test func keepAliveAndPipelining() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let one = "GET /media/pcm16.wav HTTP/1.1\r\nHost: x\r\nRange: bytes=0-3\r\n\r\n"
        let two = "HEAD /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n"
        let three = "GET /media/pcm16.wav HTTP/1.1\r\nHost: x\r\nRange: bytes=8-11\r\nConnection: close\r\n\r\n"
        try c.sendAll(one + two + three)
        #expect(try c.readResponse().body == Array("RIFF".utf8))
        #expect(try c.readResponse(head: true).status == 200)
        let last = try c.readResponse()
        #expect(last.body == Array("WAVE".utf8))
        #expect(last.header("Connection") == "close")
        #expect(c.isClosedByPeer())
    }

    @Test func hostileRequests() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let cases: [(String, Int)] = [
            ("GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            ("GET / HTTP/1.1\r\nHost: x\r\n" + (0..<120).map { "X-\($0): y\r\n" }.joined() + "\r\n", 431),
            ("GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "z", count: 20_000) + "\r\n\r\n", 431),
            ("BLAH\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nNo-Colon-Here\r\n\r\n", 400),
        ]
        for (text, status) in cases {
            let c = try RawConnection(port: server.port)
            try c.sendAll(text)
            let response = try c.readResponse()
            #expect(response.status == status, "\(text.prefix(40).debugDescription)")
            #expect(response.header("Connection") == "close")
            #expect(c.isClosedByPeer())
        }
        // The server still answers afterwards.
        #expect(try RawConnection(port: server.port).request("GET", "/api/tracks").status == 200)
    }

    @Test func pacedBody_takesTheTimeItShould() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let start = Date()
        // 64 kbit/s = 8000 B/s: 24,000 bytes take about 3 s (minus the 4 KiB burst).
        let r = try c.request("GET", "/media/pcm16.wav?kbps=64", headers: ["Range": "bytes=0-23999"])
        let elapsed = Date().timeIntervalSince(start)
        #expect(r.body.count == 24_000)
        #expect(elapsed > 2.2 && elapsed < 4.5, "paced transfer took \(elapsed) s")
    }

    @Test func gracefulShutdown_exitsCleanly() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        _ = try RawConnection(port: server.port).request("GET", "/api/tracks")
        let started = Date()
        #expect(server.stop() == 0)
        #expect(Date().timeIntervalSince(started) < 6)
    }

    @Test func missingFolder_isAClearError() throws {
        let streamd = TestPaths.streamd
        let result = try runCommand(streamd, ["/nonexistent/music", "--port", "0"])
        #expect(result.status == 1)
        #expect(String(decoding: result.stderr, as: UTF8.self).contains("no such folder"))
    }

    @Test func portInUse_isAClearError() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let first = try StreamdProcess(folder: library)
        let streamd = TestPaths.streamd
        let result = try runCommand(streamd, [library.path, "--port", String(first.port), "--db", TestPaths.temporaryDatabase()])
        #expect(result.status == 1)
        #expect(String(decoding: result.stderr, as: UTF8.self).contains("address already in use"))
    }
}
