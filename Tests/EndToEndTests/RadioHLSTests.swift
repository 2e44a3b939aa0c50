import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// A radio channel as live HLS on the real streamd (`/radio/NAME/index.m3u8`): the playlist is
/// valid RFC 8216 and slides, segments are packed audio that decodes, HLS and HTTP listeners get
/// the same frames, and ffmpeg plays the live playlist.
@Suite struct RadioHLSTests {
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
}
