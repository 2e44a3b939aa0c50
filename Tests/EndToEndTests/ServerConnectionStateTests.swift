import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// streamd against clients stuck in every connection state: half-closed non-readers,
/// pipeliners that never read, slow and paced readers, requests with bodies nobody reads.
/// None may cost CPU, lose a response to a reset, or leak a descriptor.
@Suite(.ownThreads) struct ServerConnectionStateTests {
    static let bigFile = "/media/pcm24-96k.wav"   // 5.7 MB: never fits in the socket buffers
    static let bigFileSize = 5_760_080

    /// The kinds of stuck client, each left connected and never reading.
    enum Stuck: CaseIterable {
        /// Sends a GET for a big file, half-closes (SHUT_WR), never reads.
        case halfClosedNonReader
        /// Sends 36 KB of pipelined requests for a big file in one go, never reads: the first
        /// answer fills the socket, the rest of the requests fill the server's read buffer.
        case pipeliner
        /// A paced GET (?kbps=), half-closed, never read.
        case halfClosedPaced
        /// Sends half a request head and waits.
        case partialHead
        /// Connects and sends nothing.
        case silent

        func open(port: Int) throws -> RawConnection {
            let c = try RawConnection(port: port, receiveBuffer: 4096)
            switch self {
            case .halfClosedNonReader:
                c.send("GET \(ServerConnectionStateTests.bigFile) HTTP/1.1\r\nHost: x\r\n\r\n")
                c.halfClose()
            case .pipeliner:
                let one = "GET \(ServerConnectionStateTests.bigFile) HTTP/1.1\r\nHost: x\r\n\r\n"
                c.sendSome(Array(String(repeating: one, count: 36 * 1024 / one.utf8.count + 1).utf8))
            case .halfClosedPaced:
                c.send("GET /media/pcm16.wav?kbps=64 HTTP/1.1\r\nHost: x\r\n\r\n")
                c.halfClose()
            case .partialHead:
                c.send("GET /api/tracks HTTP/1.1\r\nHo")
            case .silent:
                break
            }
            return c
        }
    }

    /// A running server, its pid and its descriptor count once warmed up (one request served).
    static func start(_ library: URL, _ arguments: [String] = []) throws -> (StreamdProcess, Int32, Int) {
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"] + arguments)
        let pid = server.process.processIdentifier
        #expect(try RawConnection(port: server.port).request("GET", "/api/tracks").status == 200)
        return (server, pid, ProcessProbe.settledDescriptors(pid: pid))
    }

    @Test(.timeLimit(.scaledMinutes(2))) func hundredStuckClients_costNoCPU() throws {
        ServerHostileTests.raiseFileLimit()
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let (server, pid, baseline) = try Self.start(library, ["--threads", "2"])
        var clients: [RawConnection] = []
        let mix: [(Stuck, Int)] = [(.halfClosedNonReader, 40), (.pipeliner, 40), (.halfClosedPaced, 20)]
        for (kind, count) in mix {
            for _ in 0..<count { clients.append(try kind.open(port: server.port)) }
        }
        var held = 0
        #expect(TestTiming.waitUntil(timeout: 5) {
            held = ProcessProbe.openDescriptors(pid: pid) - baseline
            return held >= 100
        }, "the server holds all 100 stuck connections (\(held))")
        #expect(server.process.isRunning, "streamd is still running: \(server.log.suffix(2000))")
        // The CPU window starts once the responses have filled the sockets (their sends are not
        // what is measured): the descriptor count proves the accepts, not the sends.
        Thread.sleep(forTimeInterval: 1)
        let share = try #require(ProcessProbe.cpuShare(pid: pid, over: 3))
        print("streamd CPU with 100 stuck clients (40 half-closed non-readers, 40 pipeliners, 20 half-closed paced): "
              + String(format: "%.1f%% of one core over 3 s", share * 100))
        #expect(share < 0.10, "stuck clients cost \(share * 100)% of a core")
        let t0 = Date()
        #expect(try RawConnection(port: server.port).request("GET", "/api/tracks").status == 200)
        #expect(Date().timeIntervalSince(t0) < 1, "others are served at once")
        clients.removeAll()
        #expect(ProcessProbe.waitForDescriptors(pid: pid, atMost: baseline, timeout: 10) == baseline)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func writeTimeout_closesAClientThatTakesNoBytes() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let (server, pid, baseline) = try Self.start(library, ["--write-timeout", "1"])
        let stuck = try RawConnection(port: server.port, receiveBuffer: 4096)
        stuck.send("GET \(Self.bigFile) HTTP/1.1\r\nHost: x\r\n\r\n")
        let started = Date()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(ProcessProbe.openDescriptors(pid: pid) > baseline, "still connected before the timeout")
        let count = ProcessProbe.waitForDescriptors(pid: pid, atMost: baseline, timeout: 5)
        let took = Date().timeIntervalSince(started)
        #expect(count == baseline, "closed after the write timeout")
        #expect(took > 0.8 && took < 3, "closed after \(took) s with --write-timeout 1")
        let (bytes, end) = stuck.readUntilEnd(quiet: 2)
        #expect(end != .open)
        #expect(bytes.count < Self.bigFileSize)

        // A slow reader that keeps taking bytes is not cut off, however long the response takes.
        let slow = try RawConnection(port: server.port, receiveBuffer: 16_384)
        slow.send("GET \(Self.bigFile) HTTP/1.1\r\nHost: x\r\n\r\n")
        var received = 0
        for _ in 0..<12 {
            Thread.sleep(forTimeInterval: 0.5)
            let (bytes, end) = slow.readSome(upTo: 16_384)
            #expect(end == .open, "a client reading 16 KB every 0.5 s stays connected")
            received += bytes.count
        }
        #expect(received > 0 && received < Self.bigFileSize)
        // Nor is a paced response, which waits on the server's own clock: 16,000 bytes at 8,000 B/s.
        let paced = try RawConnection(port: server.port)
        let r = try paced.request("GET", "/media/pcm16.wav?kbps=64", headers: ["Range": "bytes=0-15999"])
        #expect(r.status == 206 && r.body.count == 16_000)
    }

    @Test(.timeLimit(.scaledMinutes(2))) func errorResponse_withUnreadBody_isDeliveredBeforeTheClose() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let (server, _, _) = try Self.start(library)
        let body = String(repeating: "x", count: 4 * 1024 * 1024)
        let kinds: [(String, String)] = [
            ("GET with a 4 MiB body", "GET /api/nothing-here HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body),
            ("POST with a 4 MiB body", "POST /api/tracks HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body),
            ("malformed head, then 4 MiB", "GET / HTTP/1.1\r\nHost: x\r\nNo-Colon-Here\r\n\r\n" + body),
        ]
        for (name, request) in kinds {
            var delivered = 0
            for _ in 0..<30 {
                // A simple client: it writes the whole request, then reads. A reset while it is
                // still writing fails the send, and the answer is lost to it.
                let c = try RawConnection(port: server.port)
                let bytes = Array(request.utf8)
                let sent = c.send(bytes, timeout: 5)
                let response = c.readSizedResponse(timeout: 10)
                if sent == bytes.count, let response, (400..<500).contains(response.status),
                   response.body.starts(with: Array("{".utf8)) {
                    delivered += 1
                }
            }
            print("\(name): error response delivered \(delivered) of 30 times")
            #expect(delivered == 30, "\(name): the error response was lost to a reset \(30 - delivered) of 30 times")
        }
    }

    @Test(.timeLimit(.scaledMinutes(5))) func malformedRequest_thenHalfClose_stillGetsItsError() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let (server, _, _) = try Self.start(library)
        let cases: [(String, Int)] = [
            ("GET / HTTP/1.1\r\nHost: x\r\nNo-Colon-Here\r\n\r\n", 400),
            ("GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            ("GET / HTTP/1.1\r\nHost: x\r\n" + (0..<120).map { "X-\($0): y\r\n" }.joined() + "\r\n", 431),
            ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ]
        for (request, status) in cases {
            var answered = 0
            for _ in 0..<10 {
                let c = try RawConnection(port: server.port)
                c.send(request)
                c.halfClose()
                if c.readSizedResponse(timeout: 5)?.status == status { answered += 1 }
            }
            print("\(status) then half-close: answered \(answered) of 10 times")
            #expect(answered == 10, "\(status): the error was dropped \(10 - answered) of 10 times")
        }
        // A well-formed request followed by a half-close is served as before; a partial one just closes.
        let whole = try RawConnection(port: server.port)
        whole.send("GET /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n")
        whole.halfClose()
        #expect(whole.readSizedResponse()?.status == 200)
        let partial = try RawConnection(port: server.port)
        partial.send("GET /api/tracks HTTP/1.1\r\nHo")
        partial.halfClose()
        let (bytes, end) = partial.readUntilEnd(quiet: 3)
        #expect(bytes.isEmpty && end == .eof)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func headAndIdleTimeouts_close() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let (server, _, _) = try Self.start(library, ["--head-timeout", "1", "--idle-timeout", "2"])
        let idle = try RawConnection(port: server.port)
        idle.send("GET /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(idle.readSizedResponse()?.status == 200)
        let started = Date()
        let partial = try Stuck.partialHead.open(port: server.port)
        let silent = try Stuck.silent.open(port: server.port)
        let answer = partial.readSizedResponse(timeout: 4)
        #expect(answer?.status == 408, "a head not received in time gets 408")
        #expect(silent.readUntilEnd(quiet: 3).end == .eof, "a silent connection is closed")
        let headTook = Date().timeIntervalSince(started)
        #expect(headTook > 0.8 && headTook < 2.5, "head timeout 1 s took \(headTook) s")
        #expect(idle.readUntilEnd(quiet: 0.3).end == .open, "an idle keep-alive connection outlives the head timeout")
        #expect(idle.readUntilEnd(quiet: 3).end == .eof, "and is closed by the idle timeout")
        let idleTook = Date().timeIntervalSince(started)
        #expect(idleTook > 1.7 && idleTook < 3.5, "idle timeout 2 s took \(idleTook) s")
    }

    /// The defaults (head 10 s, idle 30 s) as the README promises them.
    @Test(.timeLimit(.scaledMinutes(5))) func defaultTimeouts_head10s_idle30s() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let (server, _, _) = try Self.start(library)
        let idle = try RawConnection(port: server.port)
        idle.send("GET /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(idle.readSizedResponse()?.status == 200)
        let started = Date()
        let partial = try Stuck.partialHead.open(port: server.port)
        Thread.sleep(forTimeInterval: 8.5)
        #expect(partial.readUntilEnd(quiet: 0.1).end == .open, "open at 8.5 s")
        #expect(partial.readSizedResponse(timeout: 4)?.status == 408, "408 by 12.5 s")
        Thread.sleep(forTimeInterval: max(0, 28 - Date().timeIntervalSince(started)))
        #expect(idle.readUntilEnd(quiet: 0.1).end == .open, "idle connection open at 28 s")
        #expect(idle.readUntilEnd(quiet: 5).end == .eof, "closed by 33 s")
        let took = Date().timeIntervalSince(started)
        #expect(took > 29 && took < 33.5, "idle timeout took \(took) s")
    }

    @Test(.timeLimit(.scaledMinutes(2))) func abandonedConnections_leaveNoDescriptors() throws {
        ServerHostileTests.raiseFileLimit()
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let (server, pid, baseline) = try Self.start(library)
        let body = String(repeating: "x", count: 64 * 1024)
        var clients: [RawConnection] = []
        for kind in Stuck.allCases {
            for _ in 0..<200 { clients.append(try kind.open(port: server.port)) }
        }
        for i in 0..<200 {
            // An error answer to a request whose body nobody reads (the lingering close).
            let errored = try RawConnection(port: server.port)
            errored.sendSome(Array("GET / HTTP/1.1\r\nHost: x\r\nNo-Colon\r\n\r\n\(body)".utf8))
            clients.append(errored)
            // A keep-alive client gone idle after one answer.
            let idle = try RawConnection(port: server.port)
            idle.send("GET /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = idle.readSizedResponse()
            clients.append(idle)
            // A reader that resets the connection in the middle of a file.
            let reset = try RawConnection(port: server.port, receiveBuffer: 4096)
            reset.send("GET \(Self.bigFile)\(i % 2 == 0 ? "" : "?kbps=512") HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = reset.readUntilEnd(quiet: 0.01, limit: 0.05)
            reset.abort()
        }
        var peak = 0
        _ = TestTiming.waitUntil(timeout: 5) {
            peak = ProcessProbe.openDescriptors(pid: pid)
            return peak - baseline >= 1200
        }
        #expect(peak - baseline >= 1200, "the server held the abandoned kinds (\(peak - baseline) descriptors)")
        for c in clients { c.close() }
        clients.removeAll()
        let after = ProcessProbe.waitForDescriptors(pid: pid, atMost: baseline, timeout: 15)
        print("descriptors: baseline \(baseline), peak \(peak), after the clients left \(after)")
        #expect(after == baseline, "descriptors back to baseline once the clients left")
        #expect(try RawConnection(port: server.port).request("GET", "/api/tracks").status == 200)
    }

    @Test(.timeLimit(.scaledMinutes(2))) func connectionsLeftOpen_areClosedByTheTimers() throws {
        ServerHostileTests.raiseFileLimit()
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let (server, pid, baseline) = try Self.start(
            library, ["--write-timeout", "1", "--head-timeout", "1", "--idle-timeout", "1"])
        var clients: [RawConnection] = []
        for kind in Stuck.allCases {
            for _ in 0..<200 { clients.append(try kind.open(port: server.port)) }
        }
        for _ in 0..<200 {
            let idle = try RawConnection(port: server.port)
            idle.send("GET /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = idle.readSizedResponse()
            clients.append(idle)
        }
        // The clients stay connected; the write, head and idle timeouts must close every one.
        let after = ProcessProbe.waitForDescriptors(pid: pid, atMost: baseline, timeout: 15)
        print("descriptors: baseline \(baseline), with 1,200 clients left open after the timers \(after)")
        #expect(after == baseline, "the timers closed every connection")
        var stillOpen = 0
        for c in clients where c.readUntilEnd(quiet: 0.05, limit: 5).end == .open { stillOpen += 1 }
        #expect(stillOpen == 0, "\(stillOpen) clients still see an open connection")
    }
}
