import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// streamd under hostile and broken clients; it must keep serving everyone else.
@Suite(.serialized, .ownThreads) struct ServerHostileTests {
    static func raiseFileLimit() {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = min(limit.rlim_max, 8192)
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func slowloris_2000Connections() throws {
        Self.raiseFileLimit()
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        var slow: [Int32] = []
        defer { slow.forEach { close($0) } }
        for _ in 0..<2000 {
            guard let fd = (try? connectLoopback(port: server.port)) else { break }
            slow.append(fd)
        }
        #expect(slow.count == 2000)
        let started = Date()
        // One byte of a request head every 5 s; meanwhile a normal client is served at once.
        var round = 0
        while Date().timeIntervalSince(started) < 12 {
            let text: [UInt8] = Array("GET / HTTP/1.1\r\n".utf8)
            if round < text.count {
                for fd in slow { _ = withUnsafePointer(to: text[round]) { send(fd, $0, 1, Int32(MSG_NOSIGNAL)) } }
            }
            round += 1
            let t0 = Date()
            let ok = try RawConnection(port: server.port).request("GET", "/api/tracks").status
            #expect(ok == 200)
            #expect(Date().timeIntervalSince(t0) < 1.0, "a normal request is not starved by slow clients")
            Thread.sleep(forTimeInterval: 5)
        }
        // The head timeout (10 s) has closed every slow connection by now.
        var closed = 0
        for fd in slow {
            var tv = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 4096)
            var n = 0
            repeat { n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } } while n > 0
            // EOF, or a reset when a byte crossed the server's close: either way the server hung up.
            if n == 0 || (n < 0 && errno == ECONNRESET) { closed += 1 }
        }
        #expect(closed == slow.count, "\(closed) of \(slow.count) slow connections were closed by the server")
    }

    @Test func clientsVanishingMidBody_andGarbage() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        for i in 0..<50 {
            let c = try RawConnection(port: server.port)
            // A large body, abandoned after the first bytes: the server must just drop it.
            try c.sendAll("GET /media/pcm16.wav\(i % 2 == 0 ? "?kbps=256" : "") HTTP/1.1\r\nHost: x\r\n\r\n")
        }
        for garbage in [[UInt8](repeating: 0, count: 4096), (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) },
                        Array("\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}".utf8)] {
            let c = try RawConnection(port: server.port)
            try c.sendAll(garbage)
            let response = try c.readResponse()
            #expect(response.status == 400)
            #expect(c.isClosedByPeer())
        }
        let pcm = try ServerEndToEndTests.bytes(of: library.appendingPathComponent("pcm16.wav"))
        #expect(try RawConnection(port: server.port).request("GET", "/media/pcm16.wav").body == pcm)
        #expect(server.process.isRunning)
    }

    @Test func traversalVariants() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        let attempts = ["/media/../../etc/passwd", "/media/..%2f..%2fetc%2fpasswd", "/media/%2e%2e%2f%2e%2e%2fetc/passwd",
                        "/media//etc/passwd", "/media/%2Fetc%2Fpasswd", "/media/./pcm16.wav", "/media/Album%20%C3%9Cn%C3%AFcode/..",
                        "/media/%c0%ae%c0%ae/etc/passwd", "/media/pcm16.wav%00.txt", "/api/index/../../etc/passwd"]
        for path in attempts {
            let r = try c.request("GET", path)
            #expect([400, 403, 404].contains(r.status), "\(path) → \(r.status)")
            #expect(!String(decoding: r.body, as: UTF8.self).contains("root:"), "\(path) leaked a file")
        }
        #expect(try c.request("GET", "http://127.0.0.1/etc/passwd").status == 404, "absolute-form outside /media")
    }

    @Test func connectionCap_closesExtraConnectionsAtOnce() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--max-connections", "20"])
        var held: [RawConnection] = []
        for _ in 0..<20 {
            let c = try RawConnection(port: server.port, timeout: 2)
            #expect(try c.request("GET", "/api/tracks").status == 200)
            held.append(c)
        }
        let extra = try RawConnection(port: server.port, timeout: 2)
        #expect(extra.isClosedByPeer(), "the 21st connection is closed without an answer")
        held.removeAll()
        #expect(TestTiming.waitUntil(timeout: 3, poll: 0.05) {
            (try? RawConnection(port: server.port).request("GET", "/api/tracks"))?.status == 200
        }, "room again once others left")
    }

    @Test func newFile_appearsAfterRescan() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let before = try RawConnection(port: server.port).request("GET", "/api/tracks").body
        #expect(!String(decoding: before, as: UTF8.self).contains("copy.wav"))
        try FileManager.default.copyItem(at: library.appendingPathComponent("pcm16.wav"), to: library.appendingPathComponent("copy.wav"))
        func listed() throws -> Bool {
            String(decoding: try RawConnection(port: server.port).request("GET", "/api/tracks").body, as: UTF8.self).contains("copy.wav")
        }
        #expect(try TestTiming.waitUntil(timeout: 5) { try listed() }, "the folder's mtime changed: rescanned")
        // SIGHUP rescans too.
        try FileManager.default.removeItem(at: library.appendingPathComponent("copy.wav"))
        kill(server.process.processIdentifier, SIGHUP)
        #expect(try TestTiming.waitUntil(timeout: 5) { try !listed() }, "SIGHUP rescanned")
    }

    @Test func quiet_turnsTheAccessLogOff() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let loud = try StreamdProcess(folder: library)
        _ = try RawConnection(port: loud.port).request("GET", "/api/tracks")
        let quiet = try StreamdProcess(folder: library, extraArguments: ["--quiet"])
        _ = try RawConnection(port: quiet.port).request("GET", "/api/tracks")
        #expect(TestTiming.waitUntil(timeout: 3) { loud.log.contains("GET /api/tracks 200") })
        // A check of absence: by now the quiet one has answered, and a loud one would have logged.
        #expect(!quiet.log.contains("GET /api/tracks"))
    }
}
