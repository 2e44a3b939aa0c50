import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// A radio channel as live HLS on the real streamd (`/radio/NAME/index.m3u8`): the playlist is
/// valid RFC 8216 and slides, segments are packed audio that decodes, HLS and HTTP listeners get
/// the same frames, and ffmpeg plays the live playlist.
@Suite(.ownThreads) struct RadioHLSTests {
    static let playlistPath = "/radio/main/index.m3u8"

    /// The live playlist once it lists at least `segments` segments (the channel starts with 4 s
    /// of pre-roll, so the first 6 s segment is complete about 2 s after start).
    static func waitForPlaylist(_ server: StreamdProcess, segments: Int) throws -> (text: String, response: RawResponse) {
        let deadline = Date().addingTimeInterval(TestTiming.seconds(30))
        while Date() < deadline {
            let response = try HLSServerTests.get(server, playlistPath)
            if response.status == 200 {
                let text = HLSServerTests.text(response)
                if text.components(separatedBy: "#EXTINF").count - 1 >= segments { return (text, response) }
            } else {
                #expect(response.status == 503, "before the first segment: 503, got \(response.status)")
            }
            usleep(250_000)
        }
        throw TestFailure("no live playlist with \(segments) segments within 30 s")
    }

    /// The EXT-X-PROGRAM-DATE-TIME values, in order, as seconds since 1970.
    static func programDates(_ text: String) throws -> [Double] {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") }.map { line in
            let value = String(line.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count))
            return try #require(formatter.date(from: value), "date-time '\(value)'").timeIntervalSince1970
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func livePlaylist_isValid_slides_andSegmentsAreTheHTTPStream() throws {
        try RadioEndToEndTests.withServer { server in
            let (text, response) = try Self.waitForPlaylist(server, segments: 2)
            #expect(response.header("Content-Type") == "application/vnd.apple.mpegurl")
            #expect(response.header("Cache-Control") == "max-age=1")
            let (rules, problems) = M3U8Rules.checkMedia(text, vod: false)
            #expect(problems.isEmpty, "\(problems)\n\(text)")
            guard case .media(let parsed) = try M3U8Parser.parse(Array(text.utf8)[...]) else {
                throw TestFailure("not a media playlist:\n\(text)")
            }
            #expect(parsed.isLive && parsed.targetDuration == 6)
            let dates = try Self.programDates(text)
            #expect(dates.count == rules.segments.count, "a PROGRAM-DATE-TIME before every segment")
            for (i, pair) in zip(dates, dates.dropFirst()).enumerated() {
                #expect(abs(pair.1 - pair.0 - rules.segments[i].duration) < 0.01, "dates spaced by the durations: \(dates)")
            }
            #expect(abs((dates.last ?? 0) - Date().timeIntervalSince1970) < 20, "dates are the wall clock")

            // An HTTP listener for 10 s: its burst and stream cover the segments cut meanwhile.
            let (_, http) = try RadioEndToEndTests.listen(port: server.port, version: "1.0", seconds: 10)
            let later = try Self.waitForPlaylist(server, segments: 2).text
            let (slid, laterProblems) = M3U8Rules.checkMedia(later, vod: false)
            #expect(laterProblems.isEmpty, "\(laterProblems)")
            let lastBefore = rules.mediaSequence + rules.segments.count - 1
            let lastAfter = slid.mediaSequence + slid.segments.count - 1
            #expect(lastAfter >= lastBefore + 1, "the sequence advanced: \(lastBefore) → \(lastAfter)")

            // Every listed segment: packed MP3 with its ID3 timestamp, timestamps consecutive,
            // decodable; the newest is frames an HTTP listener received, byte for byte.
            var previous: (ticks: UInt64, duration: Double)?
            for (i, entry) in slid.segments.enumerated() {
                let segment = try HLSServerTests.get(server, "/radio/main/" + entry.uri)
                #expect(segment.status == 200 && segment.header("Content-Type") == "audio/mpeg")
                #expect(segment.header("Cache-Control")?.contains("immutable") == true)
                let tag = try #require(try PackedAudioTag.parse(segment.body[...]), "segment \(i) starts with its ID3 tag")
                let ticks = try #require(tag.timestamp)
                if let previous {
                    let expected = Double(previous.ticks) + previous.duration * 90_000
                    #expect(abs(Double(ticks) - expected) <= 2, "segment \(i): timestamp \(ticks), expected \(expected)")
                }
                previous = (ticks, entry.duration)
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("radio-hls-\(getpid())-\(i).mp3")
                let wav = file.deletingPathExtension().appendingPathExtension("wav")
                defer {
                    try? FileManager.default.removeItem(at: file)
                    try? FileManager.default.removeItem(at: wav)
                }
                try Data(segment.body).write(to: file)
                try HLSServerTests.ffmpegDecode(file.path, to: wav)
                let frames = try HLSGStreamerTests.wavFrames(wav)
                #expect(abs(Double(frames) - entry.duration * 44_100) <= 2 * 1152 + 1105,
                        "segment \(i) decodes to \(frames) frames for \(entry.duration) s")
                if i == slid.segments.count - 1 {
                    let audio = segment.body[tag.size...]
                    #expect(http.firstRange(of: Array(audio)) != nil, "the newest segment's frames are in the HTTP stream")
                }
            }

            // Refusals: the future, another run, other names.
            let token = try #require(slid.segments.first?.uri.split(separator: "=").last.map(String.init))
            for (target, status) in [("/radio/main/seg-\(lastAfter + 2).mp3", 404), ("/radio/main/seg-\(lastAfter).mp3?v=other", 404),
                                     ("/radio/main/seg-\(lastAfter).aac", 404), ("/radio/main/seg-x.mp3", 404),
                                     ("/radio/main/seg-0\(lastAfter).mp3", 404), ("/radio/nope/index.m3u8", 404),
                                     ("/radio/main/master.m3u8", 404), ("/radio/main/seg-\(lastAfter).mp3?v=\(token)", 200)] {
                #expect(try HLSServerTests.get(server, target).status == status, "\(target)")
            }
            // The status page counts what the origin served.
            let channels = try HLSServerTests.get(server, "/api/channels")
            let list = try #require(try JSONSerialization.jsonObject(with: Data(channels.body)) as? [[String: Any]])
            let main = try #require(list.first { $0["name"] as? String == "main" })
            #expect(main["hls_url"] as? String == Self.playlistPath)
            #expect((main["hls_segment_requests"] as? Int ?? 0) >= slid.segments.count + 1)
            #expect((main["hls_playlist_requests"] as? Int ?? 0) >= 2)
        }
    }

    @Test(.timeLimit(.scaledMinutes(3))) func ffmpeg_playsTheLivePlaylist() throws {
        try RadioEndToEndTests.withServer { server in
            _ = try Self.waitForPlaylist(server, segments: 1)
            let url = server.baseURL + Self.playlistPath
            // ffmpeg: 5 s of the live stream, decoded.
            let ffmpeg = try #require(which("ffmpeg"))
            let wav = FileManager.default.temporaryDirectory.appendingPathComponent("radio-hls-ffmpeg-\(getpid()).wav")
            defer { try? FileManager.default.removeItem(at: wav) }
            let run = try runCommand(ffmpeg, ["-nostdin", "-v", "error", "-y", "-i", url, "-t", "5", "-f", "wav", wav.path], timeout: 60)
            #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
            let frames = try HLSGStreamerTests.wavFrames(wav)
            #expect(frames >= 44_100 * 49 / 10, "ffmpeg decoded \(frames) frames of the live playlist")
        }
    }

    /// What the origin served, from its own status page.
    static func originCounts(_ server: StreamdProcess) throws -> (playlists: Int, segments: Int) {
        let channels = try HLSServerTests.get(server, "/api/channels")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(channels.body)) as? [[String: Any]])
        let main = try #require(list.first { $0["name"] as? String == "main" })
        return (try #require(main["hls_playlist_requests"] as? Int), try #require(main["hls_segment_requests"] as? Int))
    }

    /// Scale-out the usual way: nginx `proxy_cache` in front of the channel's HLS. 200 clients
    /// follow the live playlist through the cache for 15 s; the origin serves each segment once and
    /// the playlist at most about once a second (its max-age), and every client gets the origin's bytes.
    @Test(.timeLimit(.scaledMinutes(5))) func nginxProxyCache_200Clients_costTheOriginOneRequestPerSegment() throws {
        try RadioEndToEndTests.withServer { server in
            _ = try Self.waitForPlaylist(server, segments: 2)
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("radio-nginx-\(getpid())-\(UUID().uuidString.prefix(8))")
            defer { try? FileManager.default.removeItem(at: work) }
            let p = work.appendingPathComponent("nginx").path
            // The README's configuration: cache segments as the origin says (immutable) and the
            // playlist for its max-age; one request to the origin per missing or expired object.
            let nginx = try HLSPackageTests.Nginx(root: work, prefix: work.appendingPathComponent("nginx"), http: """
                proxy_cache_path \(p)/cache levels=1:2 keys_zone=radio:4m max_size=256m inactive=10m use_temp_path=off;
                """, server: """
                location /radio/ {
                    proxy_pass http://127.0.0.1:\(server.port);
                    proxy_http_version 1.1;
                    proxy_cache radio;
                    proxy_cache_lock on;
                    proxy_cache_lock_timeout 10s;
                    proxy_cache_use_stale updating;
                    proxy_cache_background_update on;
                    add_header X-Cache-Status $upstream_cache_status;
                }
                """, readyPath: Self.playlistPath)
            let before = try Self.originCounts(server)
            let clients = 200, seconds = 15.0
            let results = CacheClients()
            let port = nginx.port
            let group = DispatchGroup()
            for client in 0..<clients {
                group.enter()
                let thread = Thread {
                    defer { group.leave() }
                    var seen: Set<String> = []
                    let end = Date().addingTimeInterval(seconds)
                    usleep(UInt32(client % 50) * 20_000)   // arrivals spread over 1 s
                    while Date() < end {
                        do {
                            let response = try RawConnection(port: port, timeout: 20).request("GET", Self.playlistPath)
                            guard response.status == 200 else { throw TestFailure("playlist: \(response.status)") }
                            let uris = HLSServerTests.text(response).split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
                            results.record { $0.playlistsRead += 1 }
                            // Like a player: the last three segments to start, then each new one.
                            for uri in (seen.isEmpty ? Array(uris.suffix(3)) : uris) where !seen.contains(uri) {
                                let segment = try RawConnection(port: port, timeout: 20).request("GET", "/radio/main/" + uri)
                                guard segment.status == 200 else { throw TestFailure("\(uri): \(segment.status)") }
                                seen.insert(uri)
                                results.record { _ = $0.fetched[uri, default: []].insert(segment.body) }
                            }
                        } catch {
                            results.record { $0.failures.append("client \(client): \(error)") }
                            return
                        }
                        usleep(2_000_000)
                    }
                }
                thread.stackSize = 256 * 1024
                thread.start()
            }
            #expect(group.wait(timeout: .now() + TestTiming.seconds(120)) == .success, "clients still running after 120 s")
            let after = try Self.originCounts(server)
            let (segmentsFetched, reads, problems) = results.record { ($0.fetched, $0.playlistsRead, $0.failures) }
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            #expect(reads >= clients * 5, "\(reads) playlist reads by \(clients) clients in \(seconds) s")
            #expect(segmentsFetched.count >= 4, "the clients followed the live edge: \(segmentsFetched.keys.sorted())")
            let originSegments = after.segments - before.segments
            #expect(originSegments == segmentsFetched.count,
                    "\(segmentsFetched.count) distinct segments to \(clients) clients cost the origin \(originSegments) requests")
            let originPlaylists = after.playlists - before.playlists
            #expect(originPlaylists <= Int(seconds * 2) + 4,
                    "\(reads) playlist reads cost the origin \(originPlaylists) (max-age=1 over \(seconds) s)")
            // Every client got the origin's bytes.
            for (uri, bodies) in segmentsFetched {
                #expect(bodies.count == 1, "\(uri): \(bodies.count) different bodies through the cache")
                let origin = try HLSServerTests.get(server, "/radio/main/" + uri)
                if origin.status == 200 { #expect(bodies.first == origin.body, "\(uri): the cache's bytes are the origin's") }
            }
            print("nginx proxy_cache: \(clients) clients, \(reads) playlist reads, \(segmentsFetched.count) segments; origin served \(originPlaylists) playlists, \(originSegments) segments")
        }
    }
}

/// What the cache test's client threads saw, behind a lock.
final class CacheClients: @unchecked Sendable {
    // @unchecked: `state` is only touched inside `record`, under `lock`.
    struct State {
        /// Segment URI → the distinct bodies clients got for it.
        var fetched: [String: Set<[UInt8]>] = [:]
        var failures: [String] = []
        var playlistsRead = 0
    }
    private let lock = NSLock()
    private var state = State()

    func record<T>(_ body: (inout State) -> T) -> T { lock.withLock { body(&state) } }
}
