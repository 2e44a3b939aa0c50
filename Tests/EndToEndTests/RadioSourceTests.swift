import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// A live source over a raw socket: sends an MP3 file at its real rate (16 kB/s for 128 kbit/s)
/// on a background thread, until stopped or the file ends.
final class PacedSource: @unchecked Sendable {
    let socket: RawConnection
    private let lock = NSLock()
    private var stopped = false
    private var sent = 0
    private let done = DispatchSemaphore(value: 0)
    /// The response head the server sent (read once sending is over or the server answered).
    private(set) var answer = ""

    /// Sends the request head and waits for the 100 or 200 (or the refusal) before streaming.
    init(port: Int, mount: String, password: String, file: URL, method: String = "PUT",
         headers: [String] = ["Content-Type: audio/mpeg", "ice-name: Test Live", "ice-genre: Test"],
         bytesPerSecond: Int = 16_000) throws {
        socket = try RawConnection(port: port)
        let auth = Data("source:\(password)".utf8).base64EncodedString()
        let version = method == "SOURCE" ? "1.0" : "1.1"
        let expect = method == "PUT" ? "Expect: 100-continue\r\n" : ""
        socket.send("\(method) \(mount) HTTP/\(version)\r\nHost: 127.0.0.1\r\nAuthorization: Basic \(auth)\r\n\(expect)"
                    + headers.map { $0 + "\r\n" }.joined() + "\r\n")
        // The answer's head, however long a loaded server takes (it once took more than the 1 s
        // this waited for silence), then what else a refusal sends.
        var (head, end) = socket.readHead(limit: TestTiming.seconds(10))
        let accepted = head.starts(with: Array("HTTP/1.1 100".utf8)) || head.starts(with: Array("HTTP/1.1 200".utf8))
        if end == .open, !accepted { head += socket.readUntilEnd(quiet: 0.3, limit: 1).bytes }
        answer = String(decoding: head, as: UTF8.self)
        guard answer.hasPrefix("HTTP/1.1 100") || answer.hasPrefix("HTTP/1.1 200") else { return }
        // From the first frame: a tag at the real rate would be seconds of silence on the air.
        let whole = Array(try Data(contentsOf: file))
        let tag = (try? ID3v2.totalSize(atStartOf: whole[...])) ?? 0
        let bytes = Array(whole[min(whole.count, tag)...])
        let fd = socket.fd
        Thread.detachNewThread { [self] in
            var offset = 0
            let step = bytesPerSecond / 10
            while offset < bytes.count, !isStopped {
                let end = min(bytes.count, offset + step)
                if RawConnection.send(fd: fd, Array(bytes[offset..<end]), timeout: 5) <= 0 { break }
                offset = end
                lock.lock()
                sent = offset
                lock.unlock()
                Thread.sleep(forTimeInterval: 0.1)
            }
            done.signal()
        }
    }

    var isStreaming: Bool { answer.hasPrefix("HTTP/1.1 100") || answer.hasPrefix("HTTP/1.1 200") }

    /// Bytes sent so far.
    var bytesSent: Int {
        lock.lock()
        defer { lock.unlock() }
        return sent
    }

    /// Waits until at least `count` bytes went out (a loaded machine paces slower than the clock),
    /// at most `seconds`; false if it never came to that.
    func waitUntilSent(_ count: Int, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while bytesSent < count {
            if Date() >= deadline || isStopped { return false }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return true
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// Stops sending and closes the connection (the source drops).
    func drop() {
        lock.lock()
        stopped = true
        lock.unlock()
        if isStreaming { done.wait() }
        socket.close()
    }
}

/// Live sources on the real streamd: Icecast's PUT and SOURCE from raw sockets, ffmpeg's
/// icecast:// protocol and curl -T; 401/403; metadata updates; fallback and source timeout.
@Suite(.ownThreads) struct RadioSourceTests {
    static let password = "hackme"

    static func withServer<T>(_ extra: [String] = [], _ body: (StreamdProcess, URL) throws -> T) throws -> T {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch",
                                                                          "--source-password", password] + extra)
        defer { server.stop() }
        return try body(server, TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"))
    }

    /// Titles and audio bytes heard on `path` with ICY metadata for `seconds`.
    static func hear(_ port: Int, path: String, seconds: Double) throws -> (titles: [String], audio: [UInt8], head: String) {
        let (head, body) = try RadioEndToEndTests.listen(port: port, path: path, headers: ["Icy-MetaData: 1"], seconds: seconds)
        guard let metaint = RadioEndToEndTests.header("icy-metaint", in: head).flatMap({ Int($0) }) else { return ([], [], head) }
        let (audio, titles) = try RadioEndToEndTests.splitICY(try RadioEndToEndTests.dechunk(body), metaint: metaint)
        return (titles.map { $0 ?? "?" }, audio, head)
    }

    static func channels(_ server: StreamdProcess) throws -> [String: [String: Any]] {
        let body = try RawConnection(port: server.port).request("GET", "/api/channels").body
        let list = try JSONSerialization.jsonObject(with: Data(body)) as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: list.compactMap { item in (item["name"] as? String).map { ($0, item) } })
    }

    /// Waits until channel `name` says its source is connected (and, with `bitrate`, that it knows
    /// the source's bitrate from its frames), instead of sleeping long enough for it.
    static func waitForSource(_ server: StreamdProcess, _ name: String, bitrate: Bool = false) throws {
        let connected = try TestTiming.waitUntil(timeout: 5) {
            guard let channel = try channels(server)[name] else { return false }
            return channel["source_connected"] as? Bool == true && (!bitrate || channel["bitrate_kbps"] as? Int ?? 0 > 0)
        }
        #expect(connected, "channel \(name)'s source connected within 5 s")
    }

    @Test(.timeLimit(.scaledMinutes(2))) func putSource_isHeardLive_withMetadataUpdates() throws {
        try Self.withServer { server, file in
            let source = try PacedSource(port: server.port, mount: "/radio/live", password: Self.password, file: file)
            defer { source.drop() }
            #expect(source.answer.hasPrefix("HTTP/1.1 100 Continue"))
            try Self.waitForSource(server, "live", bitrate: true)
            let live = try #require(try Self.channels(server)["live"])
            #expect(live["source_connected"] as? Bool == true)
            #expect(live["bitrate_kbps"] as? Int == 128)
            // A metadata update reaches a listener in band within 2 s.
            let update = DispatchQueue.global()
            let auth = Data("source:\(Self.password)".utf8).base64EncodedString()
            nonisolated(unsafe) var updateStatus = 0
            let updated = DispatchSemaphore(value: 0)
            let port = server.port
            update.asyncAfter(deadline: .now() + 1) {
                updateStatus = (try? RawConnection(port: port).request(
                    "GET", "/admin/metadata?mount=/radio/live&mode=updinfo&song=Live%20Artist+-+Live%20Song",
                    headers: ["Authorization": "Basic \(auth)"]).status) ?? 0
                updated.signal()
            }
            let heard = try Self.hear(server.port, path: "/radio/live", seconds: 4)
            updated.wait()
            #expect(updateStatus == 200)
            #expect(RadioEndToEndTests.header("icy-name", in: heard.head) == "Test Live")
            #expect(RadioEndToEndTests.header("icy-genre", in: heard.head) == "Test")
            #expect(heard.titles.contains("Live Artist - Live Song"), "\(heard.titles)")
            // What was heard is the source's audio, frames back to back, at its rate.
            #expect(heard.audio.count > 16_000 * 3 && heard.audio.count < 16_000 * 4 + 65_536, "\(heard.audio.count)")
            let original = Array(try Data(contentsOf: file))
            #expect(original.firstRange(of: heard.audio.prefix(4096)) != nil, "the listener's audio is not from the source file")
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func wrongPassword_is401_andMountInUse_is403() throws {
        try Self.withServer { server, file in
            let wrong = try PacedSource(port: server.port, mount: "/radio/live", password: "nope", file: file)
            #expect(wrong.answer.hasPrefix("HTTP/1.1 401"), "\(wrong.answer)")
            #expect(wrong.answer.contains("WWW-Authenticate: Basic"))
            let first = try PacedSource(port: server.port, mount: "/radio/live", password: Self.password, file: file)
            defer { first.drop() }
            #expect(first.isStreaming)
            let second = try PacedSource(port: server.port, mount: "/radio/live", password: Self.password, file: file)
            #expect(second.answer.hasPrefix("HTTP/1.1 403"), "\(second.answer)")
            let playlist = try PacedSource(port: server.port, mount: "/radio/main", password: Self.password, file: file)
            #expect(playlist.answer.hasPrefix("HTTP/1.1 403"), "\(playlist.answer)")
            let webm = try PacedSource(port: server.port, mount: "/radio/other", password: Self.password, file: file,
                                       headers: ["Content-Type: video/webm"])
            #expect(webm.answer.hasPrefix("HTTP/1.1 415"), "\(webm.answer)")
            let auth = Data("source:nope".utf8).base64EncodedString()
            let metadata = try RawConnection(port: server.port).request(
                "GET", "/admin/metadata?mount=/radio/live&mode=updinfo&song=x", headers: ["Authorization": "Basic \(auth)"])
            #expect(metadata.status == 401)
            // Other requests with a body are still refused: a method the route does not take is
            // judged before the body (405), a route that takes no body answers 413.
            let post = try RawConnection(port: server.port)
            post.send("PUT /media/a.mp3 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            #expect(post.readSizedResponse()?.status == 405)
            let get = try RawConnection(port: server.port)
            get.send("GET /api/tracks HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            #expect(get.readSizedResponse()?.status == 413)
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func legacySourceMethod_works() throws {
        try Self.withServer { server, file in
            let source = try PacedSource(port: server.port, mount: "/radio/old", password: Self.password, file: file, method: "SOURCE")
            defer { source.drop() }
            #expect(source.answer.hasPrefix("HTTP/1.1 200"), "\(source.answer)")
            try Self.waitForSource(server, "old")
            let heard = try Self.hear(server.port, path: "/radio/old", seconds: 2)
            #expect(heard.audio.count > 16_000)
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func droppedSource_movesListenersToTheFallback_andBack() throws {
        try Self.withServer(["--fallback", "live=main"]) { server, file in
            // Before any source, the live channel plays its fallback.
            nonisolated(unsafe) var heard: (titles: [String], audio: [UInt8], head: String) = ([], [], "")
            let listening = DispatchSemaphore(value: 0)
            let port = server.port
            Thread.detachNewThread {
                heard = (try? Self.hear(port, path: "/radio/live", seconds: 10)) ?? ([], [], "")
                listening.signal()
            }
            Thread.sleep(forTimeInterval: 2)
            let source = try PacedSource(port: server.port, mount: "/radio/live", password: Self.password, file: file)
            #expect(source.isStreaming)
            let auth = Data("source:\(Self.password)".utf8).base64EncodedString()
            try Self.waitForSource(server, "live")
            #expect(try RawConnection(port: server.port).request(
                "GET", "/admin/metadata?mount=%2Fradio%2Flive&mode=updinfo&song=On+Air",
                headers: ["Authorization": "Basic \(auth)"]).status == 200)
            Thread.sleep(forTimeInterval: 3)
            source.drop()
            listening.wait()
            let titles = heard.titles
            // main's tracks, then the source, then main again: one listener, never disconnected.
            guard let air = titles.firstIndex(of: "On Air") else {
                Issue.record("the source's title never came: \(titles)")
                return
            }
            #expect(titles[..<air].contains { $0 == "Alpha - One" || $0 == "Beta - Two" }, "\(titles)")
            #expect(titles[(air + 1)...].contains { $0 == "Alpha - One" || $0 == "Beta - Two" }, "\(titles)")
            // 10 s of stream (the live channel's burst is what it relayed since streamd started), less
            // what a loaded machine delays: the point is one connection through all three phases.
            #expect(heard.audio.count > 16_000 * 7, "\(heard.audio.count) bytes in 10 s")
            #expect(try Self.channels(server)["live"]?["source_connected"] as? Bool == false)
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func droppedSource_withoutFallback_closesListenersAfterTheTimeout() throws {
        try Self.withServer(["--source-timeout", "1"]) { server, file in
            let source = try PacedSource(port: server.port, mount: "/radio/live", password: Self.password, file: file)
            try Self.waitForSource(server, "live")
            let listener = try RawConnection(port: server.port)
            listener.send("GET /radio/live HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = listener.readUntilEnd(quiet: 0.5, limit: 0.5)
            let dropped = Date()
            source.drop()
            let (rest, end) = listener.readUntilEnd(quiet: 5, limit: 8)
            #expect(end == .eof)
            #expect(Date().timeIntervalSince(dropped) < 4)
            #expect(String(decoding: rest.suffix(5), as: UTF8.self) == "0\r\n\r\n")
            #expect(try RawConnection(port: server.port).request("GET", "/radio/live").status == 404)
            // The mount is free again.
            let again = try PacedSource(port: server.port, mount: "/radio/live", password: Self.password, file: file)
            defer { again.drop() }
            #expect(again.isStreaming)
        }
    }

    /// A source that stays connected but sends nothing is dropped after --source-timeout (its
    /// deadline is checked on whole seconds: at most a second late).
    @Test(.timeLimit(.scaledMinutes(2))) func silentSource_isDroppedAfterTheTimeout() throws {
        try Self.withServer(["--source-timeout", "1"]) { server, file in
            let source = try RawConnection(port: server.port)
            let auth = Data("source:\(Self.password)".utf8).base64EncodedString()
            source.send("PUT /radio/quiet HTTP/1.1\r\nHost: x\r\nAuthorization: Basic \(auth)\r\nContent-Type: audio/mpeg\r\n"
                        + "Expect: 100-continue\r\n\r\n")
            let (head, _) = source.readUntilEnd(quiet: 0.3, limit: 1)
            #expect(String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 100"))
            // A second of audio, then silence on a connection left open.
            let audio = Array(try Data(contentsOf: file).prefix(16_000))
            #expect(RawConnection.send(fd: source.fd, audio, timeout: 5) == audio.count)
            let quietSince = Date()
            let (_, end) = source.readUntilEnd(quiet: TestTiming.seconds(6), limit: TestTiming.seconds(8))
            let after = Date().timeIntervalSince(quietSince)
            #expect(end == .eof || end == .reset, "the silent source is still connected after \(after) s")
            #expect(after >= 0.9 && after < TestTiming.seconds(3.5), "dropped after \(after) s of silence")
            // The channel lets the source go (it waits the same timeout for it to come back).
            var quiet = try Self.channels(server)["quiet"]
            let deadline = Date().addingTimeInterval(TestTiming.seconds(4))
            while quiet?["source_connected"] as? Bool == true, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
                quiet = try Self.channels(server)["quiet"]
            }
            #expect(quiet == nil || quiet?["source_connected"] as? Bool == false, "\(String(describing: quiet))")
            source.close()
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func ffmpegAndCurlSources_areHeard() throws {
        try Self.withServer { server, file in
            let ffmpeg = try #require(which("ffmpeg"))
            let url = "icecast://source:\(Self.password)@127.0.0.1:\(server.port)/radio/ff"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ffmpeg)
            process.arguments = ["-v", "error", "-re", "-i", file.path, "-t", "8", "-c", "copy", "-f", "mp3",
                                 "-content_type", "audio/mpeg", "-ice_name", "FF Radio", url]
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            try Self.waitForSource(server, "ff")
            let heard = try Self.hear(server.port, path: "/radio/ff", seconds: 3)
            #expect(RadioEndToEndTests.header("icy-name", in: heard.head) == "FF Radio")
            #expect(heard.audio.count > 16_000 * 2, "\(heard.audio.count) bytes from the ffmpeg source")
            // A second decoder hears it cleanly too.
            let decoded = try runCommand(ffmpeg, ["-v", "error", "-t", "2", "-i", "\(server.baseURL)/radio/ff", "-f", "null", "-"], timeout: 30)
            #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(String(decoding: decoded.stderr, as: UTF8.self))")
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")

            // curl -T - (chunked upload after Expect: 100-continue) of a 3-second track.
            let track = file
            let curl = try #require(which("curl"))
            let upload = Process()
            upload.executableURL = URL(fileURLWithPath: curl)
            upload.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-T", "-", "-u", "source:\(Self.password)",
                                "-H", "Content-Type: audio/mpeg", "\(server.baseURL)/radio/curl"]
            let input = Pipe(), output = Pipe()
            upload.standardInput = input
            upload.standardOutput = output
            try upload.run()
            let bytes = try Data(contentsOf: track).prefix(200_000)
            input.fileHandleForWriting.write(bytes)
            try Self.waitForSource(server, "curl")
            let fromCurl = try Self.hear(server.port, path: "/radio/curl", seconds: 2)
            #expect(fromCurl.audio.count > 16_000, "\(fromCurl.audio.count) bytes from the curl source")
            try input.fileHandleForWriting.close()
            upload.waitUntilExit()
            let code = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(upload.terminationStatus == 0)
            #expect(code == "200", "curl's final status \(code)")
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func relayOfARelay_carriesAudioAndTitles() throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let origin = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch"])
        defer { origin.stop() }
        let first = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--relay", "copy=\(origin.baseURL)/radio/main"])
        defer { first.stop() }
        let second = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--relay", "copy2=\(first.baseURL)/radio/copy"])
        defer { second.stop() }
        try Self.waitForSource(first, "copy")
        try Self.waitForSource(second, "copy2")
        let heard = try Self.hear(second.port, path: "/radio/copy2", seconds: 7)
        #expect(heard.head.hasPrefix("HTTP/1.1 200"), "\(heard.head)")
        #expect(RadioEndToEndTests.header("icy-name", in: heard.head) == "main")
        #expect(heard.audio.count > 16_000 * 5, "\(heard.audio.count) bytes through two relays")
        #expect(heard.titles.contains("Alpha - One") || heard.titles.contains("Beta - Two"), "\(heard.titles)")
        // Frames back to back after two hops.
        var splitter = AudioFrameSplitter(codec: .mpeg)
        var offset = 0
        while offset < heard.audio.count, case .frame(let frame) = try splitter.next(in: heard.audio[offset...]) {
            offset += frame.length
        }
        #expect(heard.audio.count - offset < 1500)
        let bad = try runCommand(TestPaths.streamd,
                                 [library.path, "--port", "0", "--relay", "x=ftp://h/"], timeout: 30)
        #expect(bad.status == 1)
    }
}
