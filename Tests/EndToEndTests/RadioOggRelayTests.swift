import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// `--relay` of an upstream answering `audio/ogg`: a second streamd's Ogg channel (an Opus
/// chain) and a real Icecast 2 mount (a Vorbis chain). The relay's channel passes the pages
/// through: a listener starts on the current link's header pages, the next link's come in band,
/// the stream decodes (opusdec / oggdec), and the second link's title from its comments reaches
/// /api/channels, /status-json.xsl and streamplay.
@Suite(.ownThreads) struct RadioOggRelayTests {
    enum Upstream: String, CaseIterable { case streamdOpus, icecastVorbis }

    @Test(.timeLimit(.scaledMinutes(2)), arguments: Upstream.allCases)
    func oggUpstream_isRelayedPageByPage_withHeadersFirst_andTitles(_ upstream: Upstream) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-oggrelay-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let opus = upstream == .streamdOpus
        let chainFile = try Self.chain(in: dir, opus: opus, links: [(11, 440, "First Song", 3), (22, 880, "Second Song", 7)])

        // The upstream and its source (sending faster than real time: the upstream paces it).
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        var origin: StreamdProcess?
        var icecast: IcecastProcess?
        defer {
            origin?.stop()
            icecast?.stop()
        }
        let url: String
        let source: PacedSource
        let headers = ["Content-Type: audio/ogg", "ice-name: Ogg Upstream"]
        switch upstream {
        case .streamdOpus:
            let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--source-password", RadioSourceTests.password,
                                                                              "--burst-kb", "4"])
            origin = server
            source = try PacedSource(port: server.port, mount: "/radio/up", password: RadioSourceTests.password, file: chainFile,
                                     headers: headers, bytesPerSecond: 12_000)
            try RadioSourceTests.waitForSource(server, "up")
            url = "\(server.baseURL)/radio/up"
        case .icecastVorbis:
            let server = try IcecastProcess()
            icecast = server
            source = try PacedSource(port: server.port, mount: "/up.ogg", password: server.password, file: chainFile,
                                     headers: headers, bytesPerSecond: 12_000)
            url = "http://127.0.0.1:\(server.port)/up.ogg"
        }
        defer { source.drop() }
        #expect(source.isStreaming, "\(source.answer)")

        let relay = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--burst-kb", "4", "--relay", "copy=\(url)"])
        defer { relay.stop() }
        try RadioSourceTests.waitForSource(relay, "copy")
        // Join inside the first link, after its header pages went by.
        Thread.sleep(forTimeInterval: 1.5)
        let (head, body) = try RadioEndToEndTests.listen(port: relay.port, path: "/radio/copy", headers: ["Icy-MetaData: 1"], seconds: 3.5)
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        #expect(RadioEndToEndTests.header("Content-Type", in: head) == "audio/ogg")
        #expect(RadioEndToEndTests.header("icy-metaint", in: head) == nil, "no ICY blocks inside Ogg")
        let audio = try RadioEndToEndTests.dechunk(body)
        try #require(audio.count > 200, "\(audio.count) bytes")
        // The current link's BOS page with its identification header first.
        #expect(Array(audio.prefix(4)) == Array("OggS".utf8) && audio[5] & 0x02 != 0, "the stream starts with a BOS page")
        let identification: [UInt8] = opus ? Array("OpusHead".utf8) : [1] + Array("vorbis".utf8)
        #expect(Array(audio[28..<(28 + identification.count)]) == identification, "\(upstream): identification header first")
        #expect(audio.firstRange(of: Array("Second Song".utf8)) != nil, "the second link's comments came in band")
        // What was heard decodes with the codec's reference decoder.
        let heard = dir.appendingPathComponent(opus ? "heard.opus" : "heard.ogg")
        let wav = dir.appendingPathComponent("heard.wav")
        try Data(audio).write(to: heard)
        let decoder = try #require(which(opus ? "opusdec" : "oggdec"))
        let decoded = try runCommand(decoder, opus ? ["--quiet", "--rate", "48000", heard.path, wav.path]
                                                   : ["--quiet", "-o", wav.path, heard.path])
        #expect(decoded.status == 0, "\(String(decoding: decoded.stderr, as: UTF8.self))")
        let seconds = Double(((try? Data(contentsOf: wav).count) ?? 44) - 44) / Double((opus ? 48_000 : 44_100) * 2 * 2)
        #expect(seconds > 2.5, "\(seconds) s decoded from \(audio.count) bytes")

        // The second link's title reaches the status documents and streamplay.
        let titled = try TestTiming.waitUntil(timeout: 5) {
            try RadioSourceTests.channels(relay)["copy"]?["now_playing"] as? String == "Ogg Artist - Second Song"
        }
        let channel = try RadioSourceTests.channels(relay)["copy"] ?? [:]
        #expect(titled, "\(channel)")
        let status = String(decoding: try RawConnection(port: relay.port).request("GET", "/status-json.xsl").body, as: UTF8.self)
        #expect(status.contains("Ogg Artist - Second Song") && status.contains("audio/ogg"), "\(status)")
        let played = try runCommand(PlayerTests.streamplay, ["\(relay.baseURL)/radio/copy", "--output", "null", "--realtime",
                                                             "--duration", "1", "--stats"], timeout: 30)
        #expect(played.status == 0, "\(String(decoding: played.stderr, as: UTF8.self))")
        let stats = try PlayerTests.stats(played.stdout)
        #expect(RadioPlayerTests.titles(stats).contains("Ogg Artist - Second Song"), "\(stats)")
    }

    /// A chained Ogg file (Opus or Vorbis, made by ffmpeg): one link per entry, each with its own
    /// serial and TITLE/ARTIST comments.
    static func chain(in dir: URL, opus: Bool, links: [(serial: Int, hz: Int, title: String, seconds: Int)]) throws -> URL {
        let ffmpeg = try #require(which("ffmpeg"))
        var chain = Data()
        for link in links {
            let file = dir.appendingPathComponent("\(link.serial).\(opus ? "opus" : "ogg")")
            let codec = opus ? ["-c:a", "libopus", "-b:a", "64k"] : ["-c:a", "libvorbis", "-q:a", "2"]
            let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(link.hz):duration=\(link.seconds)",
                                               "-ac", "2", "-ar", opus ? "48000" : "44100"] + codec
                                               + ["-page_duration", "200000", "-metadata", "title=\(link.title)",
                                                  "-metadata", "artist=Ogg Artist", "-serial_offset", "\(link.serial)", file.path])
            #expect(made.status == 0, "\(String(decoding: made.stderr, as: UTF8.self))")
            chain += try Data(contentsOf: file)
        }
        let chainFile = dir.appendingPathComponent(opus ? "chain.opus" : "chain.ogg")
        try chain.write(to: chainFile)
        return chainFile
    }
}
