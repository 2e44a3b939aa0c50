import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Subsonic's `stream` on the real streamd: `format`, `maxBitRate`, `timeOffset` and
/// `estimateContentLength` mapped onto `/media/`'s transcoder, each answer decoded by an
/// independent decoder (mpg123, opusdec, ffmpeg) and measured.
@Suite(.ownThreads, .serialized) struct SubsonicStreamTests {
    typealias TC = TranscodeEndToEndTests

    /// TranscodeEndToEndTests' library (tone.flac: 3 s stereo 44.1 kHz; marker.flac: 48 kHz mono,
    /// silence to 2.5 s then 1 kHz) plus low.mp3: 2 s stereo 44.1 kHz CBR 96 kbit/s.
    static func makeLibrary() throws -> URL {
        let library = try TC.makeLibrary()
        let ffmpeg = try #require(which("ffmpeg"))
        let result = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=330:sample_rate=44100:duration=2",
                                             "-ac", "2", "-c:a", "libmp3lame", "-b:a", "96k", "-metadata", "title=Low",
                                             library.appendingPathComponent("music/low.mp3").path])
        guard result.status == 0 else { throw TestFailure("ffmpeg low.mp3: \(String(decoding: result.stderr, as: UTF8.self))") }
        return library
    }

    /// The Subsonic id of each song, by file name (the open server takes any credentials).
    static func songIDs(_ server: StreamdProcess) throws -> [String: String] {
        let answer = try TC.curl(server.baseURL + "/rest/search3?u=e2e&p=x&v=1.16.1&c=e2e&f=json&query=&songCount=500")
        let object = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
        let response = try #require(object["subsonic-response"] as? [String: Any])
        let result = try #require(response["searchResult3"] as? [String: Any])
        let songs = try #require(result["song"] as? [[String: Any]])
        var ids: [String: String] = [:]
        for song in songs {
            if let id = song["id"] as? String, let path = song["path"] as? String {
                ids[String(path.split(separator: "/").last ?? "")] = id
            }
        }
        return ids
    }

    static func stream(_ server: StreamdProcess, _ id: String, _ query: String)
        throws -> (status: Int, headers: [String: String], body: Data, exit: Int32) {
        try TC.curl(server.baseURL + "/rest/stream.view?u=e2e&p=x&v=1.16.1&c=e2e&id=\(id)" + (query.isEmpty ? "" : "&" + query))
    }

    /// ffprobe's bitrate (bit/s), rate and channels of the first audio stream of `path`.
    static func probe(_ path: URL) throws -> (bitrate: Int, rate: Int, channels: Int) {
        let result = try runCommand(try #require(which("ffprobe")), ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                                                     "stream=bit_rate,sample_rate,channels", "-of", "default=nw=1", path.path])
        var fields: [String: Int] = [:]
        for line in String(decoding: result.stdout, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = Int(parts[1]) }
        }
        return (fields["bit_rate"] ?? 0, fields["sample_rate"] ?? 0, fields["channels"] ?? 0)
    }

    @Test(.timeLimit(.scaledMinutes(4))) func formatBitrateOffsetEstimate_throughTheTranscoder() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try TC.server(library)
        defer { server.stop() }
        let ids = try Self.songIDs(server)
        let tone = try #require(ids["tone.flac"], "\(ids)"), marker = try #require(ids["marker.flac"]), low = try #require(ids["low.mp3"])

        // format=mp3&maxBitRate=128: MP3 at 128 kbit/s, the source's rate, channels and length.
        let mp3 = try Self.stream(server, tone, "format=mp3&maxBitRate=128")
        #expect(mp3.status == 200 && mp3.headers["content-type"] == "audio/mpeg", "\(mp3.status) \(mp3.headers)")
        let mp3File = try TC.file(mp3.body, ext: "mp3")
        defer { try? FileManager.default.removeItem(at: mp3File) }
        let probed = try Self.probe(mp3File)
        #expect(probed.bitrate == 128_000 && probed.rate == 44_100 && probed.channels == 2, "\(probed)")
        let decoded = try TC.decode(mp3File, with: "mpg123")
        #expect(decoded.sampleRate == 44_100 && decoded.channels == 2, "\(decoded.sampleRate) Hz \(decoded.channels) ch")
        // A stream has no LAME frame (it is written to the cached file at the end): the decoder keeps the
        // encoder's delay (576 + 529) and the last frame's padding, at most 2,304 more frames in all.
        #expect((132_300...132_300 + 2304).contains(decoded.frames), "mpg123: \(decoded.frames) frames of 132300")

        // maxBitRate alone, below the FLAC's bitrate: the default format, MP3, at that bitrate.
        let limited = try Self.stream(server, tone, "maxBitRate=96")
        let limitedFile = try TC.file(limited.body, ext: "mp3")
        defer { try? FileManager.default.removeItem(at: limitedFile) }
        let limitedBitrate = try Self.probe(limitedFile).bitrate
        #expect(limited.headers["content-type"] == "audio/mpeg" && limitedBitrate == 96_000, "\(limited.headers) \(limitedBitrate)")

        // format=opus: Ogg Opus that opusdec decodes to the whole length (48 kHz).
        let opus = try Self.stream(server, tone, "format=opus")
        #expect(opus.status == 200 && opus.headers["content-type"] == "audio/ogg; codecs=opus", "\(opus.headers)")
        let opusFile = try TC.file(opus.body, ext: "opus")
        defer { try? FileManager.default.removeItem(at: opusFile) }
        let opusDecoded = try TC.decode(opusFile, with: "opusdec")
        #expect(opusDecoded.sampleRate == 48_000 && opusDecoded.channels == 2 && opusDecoded.frames == 144_000,
                "opusdec: \(opusDecoded.sampleRate) Hz \(opusDecoded.channels) ch \(opusDecoded.frames) frames")

        // timeOffset=1 (no format: MP3): the marker's tone starts at 1.5 s instead of 2.5 s.
        let offset = try Self.stream(server, marker, "timeOffset=1")
        #expect(offset.status == 200 && offset.headers["x-content-duration"] == "2.500", "\(offset.headers)")
        let offsetFile = try TC.file(offset.body, ext: "mp3")
        defer { try? FileManager.default.removeItem(at: offsetFile) }
        let offsetSamples = try TC.decode(offsetFile, with: "mpg123").samples()
        let onset = try #require(offsetSamples.firstIndex { abs($0) > 0.25 })
        // Later by the encoder's delay (1,105 samples: no LAME frame in a stream).
        #expect((72_000...72_000 + 1105 + 48).contains(onset), "the tone starts at \(onset), not 72000 (1.5 s at 48 kHz)")
        #expect((120_000...120_000 + 2304).contains(offsetSamples.count), "\(offsetSamples.count) samples from 1 s of 3.5 s")
        // format=opus&timeOffset=1: the same through Opus.
        let opusOffset = try Self.stream(server, marker, "format=opus&timeOffset=1&estimateContentLength=true")
        // Its estimate is met exactly (hard CBR, padded inside the last packets), from the offset on.
        let opusLength = try #require(opusOffset.headers["content-length"].flatMap(Int.init), "\(opusOffset.headers)")
        #expect(opusOffset.exit == 0 && opusOffset.body.count == opusLength, "curl \(opusOffset.exit): \(opusOffset.body.count) of \(opusLength)")
        let opusOffsetFile = try TC.file(opusOffset.body, ext: "opus")
        defer { try? FileManager.default.removeItem(at: opusOffsetFile) }
        #expect(try TC.decode(opusOffsetFile, with: "opusdec").frames == 120_000)

        // estimateContentLength=true: a Content-Length, and the body is exactly that (never short).
        let estimated = try Self.stream(server, tone, "format=mp3&maxBitRate=128&estimateContentLength=true")
        let length = try #require(estimated.headers["content-length"].flatMap(Int.init), "\(estimated.headers)")
        #expect(estimated.exit == 0 && estimated.body.count == length, "curl \(estimated.exit): \(estimated.body.count) of \(length)")
        #expect(length >= mp3.body.count, "estimate \(length) below the transcode's \(mp3.body.count) bytes")

        // maxBitRate above the original's (96 kbit/s MP3), or format=mp3 on it, or format=raw: the original bytes.
        let original = try Data(contentsOf: library.appendingPathComponent("music/low.mp3"))
        for query in ["maxBitRate=320", "format=mp3&maxBitRate=128", "format=mp3", "format=raw&maxBitRate=64", "", "maxBitRate=0"] {
            let answer = try Self.stream(server, low, query)
            #expect(answer.status == 200 && answer.body == original, "\(query): \(answer.body.count) bytes of \(original.count)")
        }
        // Below it: transcoded (to MP3 at 64 kbit/s).
        let lower = try Self.stream(server, low, "maxBitRate=64")
        let lowerFile = try TC.file(lower.body, ext: "mp3")
        defer { try? FileManager.default.removeItem(at: lowerFile) }
        let lowerBitrate = try Self.probe(lowerFile).bitrate
        #expect(lower.body != original && lowerBitrate == 64_000, "\(lowerBitrate)")

        // The same parameters as a form POST (OpenSubsonic formPost).
        let posted = try TC.curl(server.baseURL + "/rest/stream", ["--data", "u=e2e&p=x&v=1.16.1&c=e2e&id=\(tone)&format=opus&maxBitRate=64"])
        #expect(posted.status == 200 && posted.headers["content-type"] == "audio/ogg; codecs=opus", "\(posted.status) \(posted.headers)")
        let postedFile = try TC.file(posted.body, ext: "opus")
        defer { try? FileManager.default.removeItem(at: postedFile) }
        #expect(try TC.decode(postedFile, with: "opusdec").frames == 144_000)

        // The extension is advertised now that timeOffset works.
        let extensions = try TC.curl(server.baseURL + "/rest/getOpenSubsonicExtensions?f=json")
        #expect(String(decoding: extensions.body, as: UTF8.self).contains("\"transcodeOffset\""))
        // Bad parameters answer the error envelope, not a stream.
        let bad = try Self.stream(server, tone, "timeOffset=-1&f=json")
        #expect(String(decoding: bad.body, as: UTF8.self).contains("\"failed\""), "\(String(decoding: bad.body, as: UTF8.self))")
    }
}
