import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// An Icecast-style source sending `audio/ogg` (a chained Ogg Opus stream: two links, each with
/// its own OpusTags title) on the real streamd: passed through page by page; a listener joining
/// mid-link first gets that link's header pages, then pages from a page boundary, and the stream
/// it hears decodes (opusdec); the links' titles reach /api/channels and /status-json.xsl.
@Suite(.ownThreads) struct RadioOggSourceTests {
    @Test(.timeLimit(.scaledMinutes(2))) func oggSource_isPassedThrough_withHeadersFirst_andTitlesFromItsComments() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-oggsource-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = try #require(which("ffmpeg"))
        var chain = Data()
        for (serial, hz, title) in [(11, 440, "First Song"), (22, 880, "Second Song")] {
            let file = dir.appendingPathComponent("\(serial).opus")
            let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(hz):duration=3",
                                               "-ac", "2", "-c:a", "libopus", "-b:a", "64k", "-page_duration", "200000",
                                               "-metadata", "title=\(title)", "-metadata", "artist=Ogg Artist",
                                               "-serial_offset", "\(serial)", file.path])
            #expect(made.status == 0, "\(String(decoding: made.stderr, as: UTF8.self))")
            chain += try Data(contentsOf: file)
        }
        let chainFile = dir.appendingPathComponent("chain.opus")
        try chain.write(to: chainFile)

        // A 4 KiB burst: the join point lies inside the first link, well after its header pages.
        // The source goes quiet once its 6 s are sent but stays connected; streamplay comes after
        // opusdec and the status checks, which on a loaded machine took longer than the default
        // 10 s source timeout (the mount was gone: 404), so the timeout here is a minute.
        try RadioSourceTests.withServer(["--burst-kb", "4", "--source-timeout", "60"]) { server, _ in
            let source = try PacedSource(port: server.port, mount: "/radio/oggy", password: RadioSourceTests.password, file: chainFile,
                                         headers: ["Content-Type: audio/ogg", "ice-name: Ogg Live"], bytesPerSecond: 9_000)
            defer { source.drop() }
            #expect(source.isStreaming, "\(source.answer)")
            try RadioSourceTests.waitForSource(server, "oggy")
            // Join 2 s in, inside the 3 s first link (its header pages went out long before): by the
            // bytes sent, since a loaded machine sends slower than the clock. The 4 KiB burst takes
            // the join back about 0.5 s, so the listener's first audio page lies past the first second.
            #expect(source.waitUntilSent(9_000 * 2, seconds: TestTiming.seconds(10)), "sent \(source.bytesSent) bytes")
            let (head, body) = try RadioEndToEndTests.listen(port: server.port, path: "/radio/oggy", headers: ["Icy-MetaData: 1"],
                                                             seconds: 3.5)
            #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
            #expect(RadioEndToEndTests.header("Content-Type", in: head) == "audio/ogg")
            #expect(RadioEndToEndTests.header("icy-metaint", in: head) == nil, "no ICY blocks inside Ogg")
            let audio = try RadioEndToEndTests.dechunk(body)
            // The link's BOS page with OpusHead first, then its OpusTags.
            try #require(audio.count > 200, "\(audio.count) bytes")
            #expect(Array(audio.prefix(4)) == Array("OggS".utf8) && audio[5] & 0x02 != 0, "the stream starts with a BOS page")
            #expect(Array(audio[28..<36]) == Array("OpusHead".utf8))
            let tags = try #require(audio.firstRange(of: Array("OpusTags".utf8)))
            // Then audio pages of the link from a page boundary: the third page is not a header page
            // of a stream starting there (its granule is well past the first second).
            let third = try #require(Self.pageStarts(audio).dropFirst(2).first)
            let granule = (0..<8).reduce(UInt64(0)) { $0 | UInt64(audio[third + 6 + $1]) << (8 * UInt64($1)) }
            #expect(tags.lowerBound < third && granule > 48_000, "joined at granule \(granule)")
            // opusdec plays what was heard: both links, so the second link's header pages came in band.
            let heard = dir.appendingPathComponent("heard.opus")
            try Data(audio).write(to: heard)
            let opusdec = try #require(which("opusdec"))
            let decoded = try runCommand(opusdec, ["--quiet", "--rate", "48000", "--float", heard.path, dir.appendingPathComponent("heard.wav").path])
            #expect(decoded.status == 0, "\(String(decoding: decoded.stderr, as: UTF8.self))")
            let wav = try Data(contentsOf: dir.appendingPathComponent("heard.wav"))
            let seconds = Double(wav.count - 44) / (48_000 * 2 * 4)
            #expect(seconds > 3, "\(seconds) s decoded")
            #expect(audio.firstRange(of: Array("Second Song".utf8)) != nil, "the second link's tags came in band")

            // The second link's title in the status pages.
            let titled = try TestTiming.waitUntil(timeout: 5) {
                try RadioSourceTests.channels(server)["oggy"]?["now_playing"] as? String == "Ogg Artist - Second Song"
            }
            let channel = try RadioSourceTests.channels(server)["oggy"] ?? [:]
            #expect(titled, "\(channel)")
            let status = String(decoding: try RawConnection(port: server.port).request("GET", "/status-json.xsl").body, as: UTF8.self)
            #expect(status.contains("Ogg Artist - Second Song") && status.contains("audio/ogg"), "\(status)")
            // streamplay plays the channel and shows the links' titles from their comments.
            let played = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/radio/oggy", "--output", "null", "--realtime",
                                                                 "--duration", "1", "--stats"], timeout: 30)
            #expect(played.status == 0, "\(String(decoding: played.stderr, as: UTF8.self))")
            let stats = try PlayerTests.stats(played.stdout)
            #expect(RadioPlayerTests.titles(stats).contains("Ogg Artist - Second Song"), "\(stats)")
            // No live HLS for Ogg, and it says so.
            let hls = try RawConnection(port: server.port).request("GET", "/radio/oggy/index.m3u8")
            #expect(hls.status == 415, "\(hls.status)")
        }
    }

    /// Offsets of the pages of `bytes` (walked by their lengths).
    static func pageStarts(_ bytes: [UInt8]) -> [Int] {
        var starts: [Int] = []
        var at = 0
        while at + 27 <= bytes.count, bytes[at..<(at + 4)].elementsEqual("OggS".utf8) {
            let segments = Int(bytes[at + 26])
            guard at + 27 + segments <= bytes.count else { break }
            starts.append(at)
            at += 27 + segments + bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
        }
        return starts
    }
}
