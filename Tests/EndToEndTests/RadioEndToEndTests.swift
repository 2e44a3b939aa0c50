import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// Radio channels on the real streamd: a folder channel heard by raw sockets, curl, ffmpeg and
/// mpv, ICY metadata in band, HTTP/1.0 framing, status pages, and a stalled listener that must
/// not slow another.
@Suite(.ownThreads) struct RadioEndToEndTests {
    /// 128 kbit/s MP3 at 44.1 kHz stereo: 16,000 bytes a second.
    static let rate = 16_000.0

    /// A library with a channel folder `ch`: two 3-second tagged MP3 tracks (ID3v2 and an Info
    /// frame, both to be left out of the stream) of one format, so their frames pass as they are,
    /// and one mono 48 kHz track beside the folder (RadioTranscodeTests mixes formats).
    static func makeLibrary() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-radio-\(getpid())-\(UUID().uuidString.prefix(8))")
        let ch = dir.appendingPathComponent("ch")
        try FileManager.default.createDirectory(at: ch, withIntermediateDirectories: true)
        let ffmpeg = try #require(which("ffmpeg"))
        for (name, artist, title, frequency, layout) in [("a.mp3", "Alpha", "One", 440, "-ac 2 -ar 44100"),
                                                          ("b.mp3", "Beta", "Two", 660, "-ac 2 -ar 44100"),
                                                          ("c-mono.mp3", "Gamma", "Three", 880, "-ac 1 -ar 48000")] {
            let result = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(frequency):duration=3"]
                                        + layout.split(separator: " ").map(String.init)
                                        + ["-c:a", "libmp3lame", "-b:a", "128k", "-metadata", "artist=\(artist)",
                                           "-metadata", "title=\(title)",
                                           (name.contains("mono") ? dir : ch).appendingPathComponent(name).path])
            guard result.status == 0 else { throw TestFailure("ffmpeg could not make \(name): \(String(decoding: result.stderr, as: UTF8.self))") }
        }
        return dir
    }

    /// A GET on a raw socket, read for `seconds`: the response head and the body bytes.
    static func listen(port: Int, path: String = "/radio/main", version: String = "1.1", headers: [String] = [],
                       seconds: Double) throws -> (head: String, body: [UInt8]) {
        let socket = try RawConnection(port: port)
        socket.send("GET \(path) HTTP/\(version)\r\nHost: 127.0.0.1\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n")
        let (bytes, _) = socket.readUntilEnd(quiet: seconds, limit: seconds)
        guard let split = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { throw TestFailure("no response head") }
        return (String(decoding: bytes[..<split.lowerBound], as: UTF8.self), Array(bytes[split.upperBound...]))
    }

    static func header(_ name: String, in head: String) -> String? {
        for line in head.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    /// Undoes chunked framing (the stream never ends, so the last chunk may be cut).
    static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var payload: [UInt8] = []
        var i = 0
        while i < bytes.count {
            guard let lineEnd = bytes[i...].firstIndex(of: 0x0A), lineEnd > i else { break }
            guard let size = Int(String(decoding: bytes[i..<(lineEnd - 1)], as: UTF8.self), radix: 16) else {
                throw TestFailure("bad chunk size line at \(i)")
            }
            let start = lineEnd + 1
            if size == 0 { break }
            payload += bytes[start..<min(bytes.count, start + size)]
            guard start + size + 2 <= bytes.count else { break }
            #expect(bytes[start + size] == 0x0D && bytes[start + size + 1] == 0x0A)
            i = start + size + 2
        }
        return payload
    }

    static func withServer<T>(_ extra: [String] = [], _ body: (StreamdProcess) throws -> T) throws -> T {
        let library = try makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch"] + extra)
        defer { server.stop() }
        return try body(server)
    }

    /// A listener stream split by the checked `ICYStreamReader` (a block that is not metadata
    /// fails the test): the audio, and each block's title (nil for a block without one).
    static func splitICY(_ stream: [UInt8], metaint: Int) throws -> (audio: [UInt8], titles: [String?]) {
        var reader = try ICYStreamReader(metaint: metaint)
        var audio: [UInt8] = []
        var titles: [String?] = []
        try reader.feed(stream[...], audio: { audio += $0 }, update: { titles.append($0.title) })
        return (audio, titles)
    }

    @Test(.timeLimit(.scaledMinutes(2))) func folderChannel_playsAtItsRate_withTitlesInBand() throws {
        try Self.withServer { server in
            let seconds = 8.0
            let (head, body) = try Self.listen(port: server.port, headers: ["Icy-MetaData: 1"], seconds: seconds)
            #expect(head.hasPrefix("HTTP/1.1 200"))
            #expect(Self.header("Content-Type", in: head) == "audio/mpeg")
            #expect(Self.header("Transfer-Encoding", in: head) == "chunked")
            #expect(Self.header("icy-name", in: head) == "main")
            #expect(Self.header("icy-br", in: head) == "128")
            let metaint = try #require(Self.header("icy-metaint", in: head).flatMap { Int($0) })
            let (audio, heard) = try Self.splitICY(try Self.dechunk(body), metaint: metaint)
            let titles = try heard.map { try #require($0) }
            // The burst (64 KiB) at once, then the stream's rate.
            let expected = 65_536 + Self.rate * seconds
            #expect(Double(audio.count) > expected * 0.85 && Double(audio.count) < expected * 1.15,
                    "\(audio.count) bytes in \(seconds) s, expected about \(Int(expected))")
            // 3-second tracks: in 8 s of stream (plus the 4 s burst) both titles come, in turn.
            #expect(Set(titles).isSuperset(of: ["Alpha - One", "Beta - Two"]), "\(titles)")
            for (a, b) in zip(titles, titles.dropFirst()) { #expect(a != b, "a title repeated instead of the zero block") }
            #expect(!titles.contains("Gamma - Three"))
            // Every byte is MPEG audio of one format: frames back to back, no tags, no Info frame.
            var splitter = AudioFrameSplitter(codec: .mpeg)
            var offset = 0
            var frames = 0
            while offset < audio.count {
                guard case .frame(let frame) = try splitter.next(in: audio[offset...]) else { break }
                #expect(frame.sampleRate == 44_100 && frame.channels == 2)
                offset += frame.length
                frames += 1
            }
            #expect(audio.count - offset < 1500, "stream not frames back to back: stopped at \(offset) of \(audio.count)")
            #expect(frames > 300)
            // One format: the frames pass as they are, nothing is transcoded.
            #expect(!server.log.contains("transcoded"))
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func http10Listener_isCloseDelimited_andRawMP3() throws {
        try Self.withServer { server in
            let (head, body) = try Self.listen(port: server.port, version: "1.0", seconds: 2)
            #expect(head.hasPrefix("HTTP/1.1 200"))
            #expect(Self.header("Transfer-Encoding", in: head) == nil)
            #expect(Self.header("Connection", in: head) == "close")
            #expect(Self.header("icy-metaint", in: head) == nil)
            #expect(body.count >= 65_536)
            #expect(body.first == 0xFF && (body.dropFirst().first ?? 0) & 0xE0 == 0xE0, "does not start on a frame")
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func curlFfmpegAndMpv_hearTheChannel() throws {
        try Self.withServer { server in
            let url = "\(server.baseURL)/radio/main"
            let curl = try #require(which("curl"))
            let dump = FileManager.default.temporaryDirectory.appendingPathComponent("radio-curl-\(getpid()).mp3")
            defer { try? FileManager.default.removeItem(at: dump) }
            _ = try runCommand(curl, ["-s", "--max-time", "5", "-o", dump.path, url], timeout: 30)
            let size = (try? FileManager.default.attributesOfItem(atPath: dump.path)[.size] as? Int) ?? 0
            let expected = 65_536 + Self.rate * 5
            #expect(Double(size) > expected * 0.8 && Double(size) < expected * 1.2, "curl got \(size) bytes in 5 s")

            // ffmpeg decodes 6 s of the live stream to WAV without a single complaint.
            let ffmpeg = try #require(which("ffmpeg"))
            let wav = FileManager.default.temporaryDirectory.appendingPathComponent("radio-ffmpeg-\(getpid()).wav")
            defer { try? FileManager.default.removeItem(at: wav) }
            let decoded = try runCommand(ffmpeg, ["-v", "error", "-y", "-t", "6", "-i", url, wav.path], timeout: 60)
            #expect(decoded.status == 0)
            #expect(String(decoding: decoded.stderr, as: UTF8.self).isEmpty, "\(String(decoding: decoded.stderr, as: UTF8.self))")
            let wavSize = (try? FileManager.default.attributesOfItem(atPath: wav.path)[.size] as? Int) ?? 0
            let wavSeconds = Double(wavSize - 44) / (44_100.0 * 4)
            #expect(abs(wavSeconds - 6) < 0.2, "WAV of \(wavSize) bytes for 6 s")

            let mpv = try #require(which("mpv"), "mpv is installed by scripts/deps.sh")
            let played = try runCommand(mpv, ["--no-config", "--no-video", "--ao=null", "--length=3", "--really-quiet", url], timeout: 60)
            #expect(played.status == 0, "mpv: \(String(decoding: played.stderr, as: UTF8.self))")
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func stalledListener_doesNotSlowAnother() throws {
        try Self.withServer { server in
            // Five listeners that never read, with tiny receive windows.
            var stalled: [RawConnection] = []
            for _ in 0..<5 {
                let socket = try RawConnection(port: server.port, receiveBuffer: 2048)
                socket.send("GET /radio/main HTTP/1.1\r\nHost: x\r\nIcy-MetaData: 1\r\n\r\n")
                stalled.append(socket)
            }
            let seconds = 6.0
            let (_, body) = try Self.listen(port: server.port, seconds: seconds)
            let audio = try Self.dechunk(body)
            let expected = 65_536 + Self.rate * seconds
            #expect(Double(audio.count) > expected * 0.85, "\(audio.count) bytes in \(seconds) s next to stalled listeners")
            // The listener that left may take the server a moment to see go.
            var main: [String: Any] = [:]
            for _ in 0..<20 {
                let channels = try JSONSerialization.jsonObject(with: Data(try RawConnection(port: server.port).request("GET", "/api/channels").body)) as? [[String: Any]]
                main = try #require(channels?.first)
                if main["listeners"] as? Int == 5 { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(main["listeners"] as? Int == 5)
            #expect(main["listener_peak"] as? Int == 6)
            _ = stalled
        }
    }

    /// streamd stopped (SIGSTOP, as Ctrl-Z does) for 7 s and continued: the channel goes on from
    /// then at its rate and says so, instead of publishing the 7 missed seconds at once, which
    /// would push its listeners 7 s behind the live edge in one go.
    @Test(.timeLimit(.scaledMinutes(2))) func stoppedServer_goesOnFromNow_withoutACatchUpBurst() throws {
        try Self.withServer { server in
            let socket = try RawConnection(port: server.port)
            socket.send("GET /radio/main HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = socket.readUntilEnd(quiet: 3, limit: 3)   // the burst, then the stream at its rate
            let pid = server.process.processIdentifier
            kill(pid, SIGSTOP)
            Thread.sleep(forTimeInterval: 7)
            kill(pid, SIGCONT)
            let seconds = 3.0
            let (after, _) = socket.readUntilEnd(quiet: seconds, limit: seconds)
            // At the rate: 3 s of stream, and what a 400 ms write interval and the tick hold back.
            let most = Self.rate * (seconds + 1.5)
            #expect(Double(after.count) < most, "\(after.count) bytes in the \(seconds) s after a 7 s stop (at most \(Int(most)))")
            #expect(Double(after.count) > Self.rate * (seconds - 1.5), "\(after.count) bytes: the stream went on")
            var logged = false
            for _ in 0..<20 where !logged {
                logged = server.log.contains("stalled for")
                if !logged { Thread.sleep(forTimeInterval: 0.1) }
            }
            #expect(logged, "the stall is logged: \(server.log.suffix(500))")
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func statusPages_describeTheChannel() throws {
        try Self.withServer { server in
            let listener = try RawConnection(port: server.port)
            listener.send("GET /radio/main HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = listener.readUntilEnd(quiet: 1, limit: 1)
            let connection = try RawConnection(port: server.port)
            let api = try connection.request("GET", "/api/channels")
            #expect(api.status == 200)
            let channels = try #require(try JSONSerialization.jsonObject(with: Data(api.body)) as? [[String: Any]])
            let main = try #require(channels.first)
            #expect(main["name"] as? String == "main")
            #expect(main["listeners"] as? Int == 1)
            #expect(main["listener_peak"] as? Int == 1)
            #expect(["Alpha - One", "Beta - Two"].contains(main["now_playing"] as? String ?? ""))
            #expect(main["source_connected"] as? Bool == false)
            #expect((main["bytes_out"] as? Int ?? 0) >= 65_536)
            #expect(main["skips"] as? Int == 0)

            let ice = try connection.request("GET", "/status-json.xsl")
            #expect(ice.status == 200)
            let root = try #require(try JSONSerialization.jsonObject(with: Data(ice.body)) as? [String: Any])
            let stats = try #require(root["icestats"] as? [String: Any])
            let sources = try #require(stats["source"] as? [[String: Any]])
            let source = try #require(sources.first)
            #expect(source["listenurl"] as? String == "http://x/radio/main" || (source["listenurl"] as? String ?? "").hasSuffix("/radio/main"))
            #expect(source["listeners"] as? Int == 1)
            #expect(source["listener_peak"] as? Int == 1)
            #expect(source["bitrate"] as? Int == 128)
            #expect(source["server_name"] as? String == "main")
            #expect(source["server_type"] as? String == "audio/mpeg")
            #expect((source["audio_info"] as? String ?? "").contains("samplerate=44100"))
            #expect(["Alpha - One", "Beta - Two"].contains(source["title"] as? String ?? ""))

            #expect(try connection.request("GET", "/radio/nope").status == 404)
            let head = try connection.request("HEAD", "/radio/main")
            #expect(head.status == 200)
            #expect(head.header("Content-Type") == "audio/mpeg")
        }
    }

    @Test(.timeLimit(.scaledMinutes(2))) func playlistChannel_playsInThePlaylistsOrder() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        // b, a, a (the folder's order is a, b), a track that is not in the library and a URL: both
        // left out with a warning.
        try Data("#EXTM3U\n#EXTINF:3,Beta\nb.mp3\nmissing.mp3\nhttp://example.org/x.mp3\n#EXTINF:3,Alpha\na.mp3\na.mp3\n".utf8)
            .write(to: library.appendingPathComponent("ch/list.m3u"))
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch/list.m3u"])
        defer { server.stop() }
        let (head, body) = try Self.listen(port: server.port, headers: ["Icy-MetaData: 1"], seconds: 7)
        let metaint = try #require(Self.header("icy-metaint", in: head).flatMap { Int($0) })
        let titles = try Self.splitICY(try Self.dechunk(body), metaint: metaint).titles.map { try #require($0) }
        // Each track start announces its title, so the playlist's order shows: a twice, then b.
        let pairs = zip(titles, titles.dropFirst()).map { "\($0)|\($1)" }
        #expect(pairs.contains("Alpha - One|Alpha - One"), "\(titles)")
        #expect(pairs.contains("Alpha - One|Beta - Two") || pairs.contains("Beta - Two|Alpha - One"), "\(titles)")
        #expect(!pairs.contains("Beta - Two|Beta - Two"), "\(titles)")
    }

    @Test func badChannelOption_isAUsageError() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let streamd = TestPaths.streamd
        let bad = try runCommand(streamd, [library.path, "--port", "0", "--channel", "no name=ch"], timeout: 30)
        #expect(bad.status != 0)
        #expect(String(decoding: bad.stderr, as: UTF8.self).contains("--channel"))
        let missing = try runCommand(streamd, [library.path, "--port", "0", "--channel", "x=nothing-here"], timeout: 30)
        #expect(missing.status == 1)
        #expect(String(decoding: missing.stderr, as: UTF8.self).contains("no library file"))
    }
}
