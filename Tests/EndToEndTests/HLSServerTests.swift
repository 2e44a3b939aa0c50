import Foundation
import StreamShared
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// streamd's HLS: playlists checked against RFC 8216, segments checked byte by byte, and Debian's
/// ffmpeg as an independent client that must decode our HLS like the original file.
@Suite(.ownThreads) struct HLSServerTests {
    /// A GET that waits longer than a variant's request may be parked for its encode (10 s,
    /// `HLSLadder.wait`): on a loaded machine the server's 503 is what comes, not a client time-out.
    static func get(_ server: StreamdProcess, _ target: String, headers: [String: String] = [:]) throws -> RawResponse {
        try RawConnection(port: server.port, timeout: 30).request("GET", target, headers: headers)
    }

    static func text(_ response: RawResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    /// The `/api/index` facts the comparisons need.
    static func indexFacts(_ server: StreamdProcess, _ path: String) throws -> (delay: Int, padding: Int, firstByte: Int, audioEnd: Int) {
        let response = try get(server, "/api/index/" + encode(path))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        let points = try #require(object["points"] as? [[String: Any]])
        return (object["encoder_delay"] as? Int ?? 0, object["encoder_padding"] as? Int ?? 0,
                points.first?["byte"] as? Int ?? -1, object["audio_end_offset"] as? Int ?? -1)
    }

    /// Percent-encodes a library path the way streamd's URLs do.
    static func encode(_ path: String) -> String {
        path.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn:
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")) ?? path
    }

    /// Decodes `input` (a file or URL) to WAV with ffmpeg; throws with ffmpeg's stderr on failure.
    static func ffmpegDecode(_ input: String, to output: URL) throws {
        let ffmpeg = try #require(which("ffmpeg"), "ffmpeg is installed by scripts/deps.sh")
        let run = try runCommand(ffmpeg, ["-nostdin", "-v", "error", "-y", "-i", input, "-f", "wav", output.path], timeout: 120)
        guard run.status == 0 else { throw TestFailure("ffmpeg \(input): \(String(decoding: run.stderr, as: UTF8.self))") }
    }

    /// pcm-compare's verdict line; `slack` bounds both the offset and the length difference in frames.
    static func compare(_ reference: URL, _ test: URL, slack: Int) throws -> (ok: Bool, verdict: String) {
        let tool = try #require(TestPaths.pcmCompare, "pcm-compare from ../shared/tools")
        let run = try runCommand("/usr/bin/env", ["python3", tool, reference.path, test.path, "--min-snr", "60",
                                                  "--max-len-diff", String(slack), "--max-offset", String(slack)])
        let verdict = String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        return (run.status == 0, verdict)
    }

    /// How many frames HLS may legitimately differ from the file's own decode: the priming and
    /// padding that the file's gapless tag (LAME, edit list) trims and a packed stream cannot carry,
    /// plus mpg123/ffmpeg's 529-sample MP3 decoder delay.
    static func primingSlack(_ facts: (delay: Int, padding: Int, firstByte: Int, audioEnd: Int), path: String) -> Int {
        facts.delay + facts.padding + (path.hasSuffix(".mp3") ? 529 : 0)
    }

    // MARK: Playlists

    @Test func playlists_followRFC8216() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let expectations: [(path: String, codec: String, ext: String)] = [
            ("cbr-128k-44k.mp3", "mp4a.40.34", "mp3"), ("vbr-v2.mp3", "mp4a.40.34", "mp3"), ("mono-48k.mp3", "mp4a.40.34", "mp3"),
            ("adts.aac", "mp4a.40.2", "aac"), ("adts-8k-mono.aac", "mp4a.40.2", "aac"), ("track.m4a", "mp4a.40.2", "m4s"),
            ("moov-at-end.m4a", "mp4a.40.2", "m4s"), ("Album Ünïcode/01 Ça va — chanson.mp3", "mp4a.40.34", "mp3"),
        ]
        for (path, codec, ext) in expectations {
            let base = "/hls/" + Self.encode(path) + "/"
            let index = try Self.get(server, base + "index.m3u8")
            #expect(index.status == 200, "\(path) index")
            #expect(index.header("Content-Type") == "application/vnd.apple.mpegurl")
            #expect(index.header("ETag")?.hasPrefix("\"") == true, "strong ETag on playlists")
            let (media, problems) = M3U8Rules.checkMedia(Self.text(index), vod: true)
            #expect(problems.isEmpty, "\(path): \(problems)")
            #expect(media.targetDuration == 6, "\(path): target duration 6")
            #expect(media.segments.allSatisfy { $0.uri.hasPrefix("seg-") && $0.uri.contains(".\(ext)?v=") }, "\(path) segment names")
            #expect((media.map != nil) == (ext == "m4s"), "\(path): EXT-X-MAP exactly for fMP4")
            let analysis = try TrackAnalyzer.analyze(MemoryBytes(try ServerEndToEndTests.bytes(of: library.appendingPathComponent(path))))
            let total = media.segments.reduce(0) { $0 + $1.duration }
            #expect(abs(total - analysis.seekIndex.durationSeconds) < 1e-3, "\(path): EXTINF add up to every frame")
            #expect(media.segments.dropLast().allSatisfy { $0.duration > 4.5 }, "\(path): segments near the target")

            let master = try Self.get(server, base + "master.m3u8")
            let (variants, masterProblems) = M3U8Rules.checkMaster(Self.text(master))
            #expect(masterProblems.isEmpty, "\(path) master: \(masterProblems)")
            let variant = try #require(variants.first)
            #expect(variant.attributes["CODECS"] == codec, "\(path) CODECS")
            let bandwidth = Int(variant.attributes["BANDWIDTH"] ?? "") ?? 0
            let average = Int(variant.attributes["AVERAGE-BANDWIDTH"] ?? "") ?? 0
            #expect(bandwidth >= average && average > analysis.bitrate / 2 && average < analysis.bitrate * 2,
                    "\(path): BANDWIDTH \(bandwidth) ≥ AVERAGE-BANDWIDTH \(average) ≈ bitrate \(analysis.bitrate)")
            #expect(variant.uri == "index.m3u8")

            let ranges = try Self.get(server, base + "index.m3u8?byterange=1")
            if ext == "m4s" {
                #expect(ranges.status == 422, "\(path): no byte-range playlist for MP4")
                continue
            }
            let (ranged, rangeProblems) = M3U8Rules.checkMedia(Self.text(ranges), vod: true)
            #expect(rangeProblems.isEmpty, "\(path) byterange: \(rangeProblems)")
            #expect(ranged.segments.count == media.segments.count)
            let version = media.segments.first?.uri.split(separator: "?").last.map(String.init) ?? ""
            #expect(ranged.segments.allSatisfy { $0.uri == "packed.\(ext)?\(version)" }, "\(path): ranges of the packed file")
            // RFC 8216 section 3.4: every range is a whole packed segment, its ID3 timestamp first;
            // the packed file is the segments back to back.
            var offset = 0
            var concatenated: [UInt8] = []
            for (i, segment) in ranged.segments.enumerated() {
                let length = segment.byteRange?.length ?? 0
                let start = segment.byteRange?.offset ?? offset
                let piece = try Self.get(server, base + segment.uri, headers: ["Range": "bytes=\(start)-\(start + length - 1)"])
                let whole = try Self.get(server, base + media.segments[i].uri)
                #expect(piece.status == 206 && piece.body == whole.body, "\(path) range \(i) is segment \(i)")
                #expect(Array(piece.body.prefix(3)) == Array("ID3".utf8), "\(path) range \(i) starts with its ID3 tag")
                concatenated += whole.body
                offset = start + length
            }
            let packed = try Self.get(server, base + "packed.\(ext)?\(version)")
            #expect(packed.status == 200 && packed.body == concatenated, "\(path): packed file = the segments back to back")
            #expect(packed.header("Cache-Control") == "public, max-age=31536000, immutable" && packed.header("ETag") != nil)
            let etag = packed.header("ETag") ?? ""
            #expect(try Self.get(server, base + "packed.\(ext)", headers: ["If-None-Match": etag]).status == 304)
            #expect(try Self.get(server, base + "packed.\(ext)?v=000000000000").status == 404, "another version of the file")
            #expect(try Self.get(server, base + "packed.\(ext)", headers: ["Range": "bytes=\(concatenated.count)-"]).status == 416)
        }
        let wav = try Self.get(server, "/hls/pcm16.wav/index.m3u8")
        #expect(wav.status == 415 && Self.text(wav).contains("HLS not available") && Self.text(wav).contains("HLS carries MP3, AAC, FLAC and Opus"),
                "WAV has no HLS form: 415 with the reason")
        let fragmented = try Self.get(server, "/hls/fragmented.m4a/index.m3u8")
        #expect(fragmented.status == 415 && Self.text(fragmented).contains("already fragmented"), "an fMP4 source is not re-cut")
    }

    // MARK: ffmpeg as the independent client

    @Test(arguments: [
        ("vbr-v2.mp3", "index.m3u8"), ("cbr-128k-44k.mp3", "index.m3u8"), ("adts.aac", "index.m3u8"),
        ("track.m4a", "index.m3u8"), ("moov-at-end.m4a", "index.m3u8"),
        ("vbr-v2.mp3", "index.m3u8?byterange=1"), ("adts.aac", "index.m3u8?byterange=1"),
        ("Album Ünïcode/01 Ça va — chanson.mp3", "index.m3u8"),
    ])
    func ffmpeg_decodesOurHLSLikeTheFile(path: String, playlist: String) throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let reference = library.appendingPathComponent("ref.wav"), decoded = library.appendingPathComponent("hls.wav")
        try Self.ffmpegDecode(library.appendingPathComponent(path).path, to: reference)
        try Self.ffmpegDecode("\(server.baseURL)/hls/\(Self.encode(path))/\(playlist)", to: decoded)
        let slack = Self.primingSlack(try Self.indexFacts(server, path), path: path)
        let result = try Self.compare(reference, decoded, slack: slack)
        #expect(result.ok, "\(path) \(playlist): \(result.verdict) (slack \(slack))")
        // Whole segments went over HTTP: the access log shows them.
        let fetched = playlist.contains("byterange") ? "/packed." : "/seg-"
        #expect(server.log.contains(fetched), "ffmpeg fetched \(fetched) URLs")
    }

    // MARK: Segment bytes

    @Test func packedSegments_carryID3TimestampsAndTheFilesFrames() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        for path in ["vbr-v2.mp3", "adts.aac"] {
            let original = try ServerEndToEndTests.bytes(of: library.appendingPathComponent(path))
            let facts = try Self.indexFacts(server, path)
            let (media, _) = M3U8Rules.checkMedia(Self.text(try Self.get(server, "/hls/\(path)/index.m3u8")), vod: true)
            var joined: [UInt8] = []
            var elapsed = 0.0
            for segment in media.segments {
                let response = try Self.get(server, "/hls/\(path)/" + segment.uri)
                #expect(response.status == 200)
                let body = response.body
                let tagSize = try ID3v2.totalSize(atStartOf: body[...]) ?? 0
                #expect(tagSize == 73, "\(path) \(segment.uri) starts with the ID3 timestamp tag")
                let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8)
                #expect(Array(body[10..<14]) == Array("PRIV".utf8) && Array(body[20..<(20 + owner.count)]) == owner)
                let stamp = body[(tagSize - 8)..<tagSize].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let presented = 1 + elapsed // HLSTrackPlan.timelineOrigin: source sample 0 at 1 s
                #expect(abs(Double(stamp) - presented * 90_000) <= 1, "\(segment.uri): PTS \(stamp) at \(elapsed) s after the origin")
                // Right after the tag: a frame sync (MPEG 0xFFE, ADTS 0xFFF).
                #expect(body[tagSize] == 0xFF && body[tagSize + 1] & 0xE0 == 0xE0, "\(segment.uri) starts on a frame")
                joined += body[tagSize...]
                elapsed += segment.duration
            }
            #expect(joined == Array(original[facts.firstByte..<facts.audioEnd]), "\(path): the segments are the file's frames, in order")
        }
    }

    @Test func fmp4Segments_initTfdtAndSamples() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let path = "moov-at-end.m4a"
        let file = try ServerEndToEndTests.bytes(of: library.appendingPathComponent(path))
        let top = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count).0
        let moovRange = try #require(top.moovRange)
        let originalTrack = try #require(try MP4Movie.parse(moov: file[moovRange]).audio)
        var samples: [UInt8] = []
        for n in 0..<originalTrack.sampleCount {
            let location = try #require(originalTrack.sampleLocation(n))
            samples += file[location.offset..<(location.offset + location.size)]
        }

        let (media, _) = M3U8Rules.checkMedia(Self.text(try Self.get(server, "/hls/\(path)/index.m3u8")), vod: true)
        let initResponse = try Self.get(server, "/hls/\(path)/" + (media.map ?? "init.mp4"))
        #expect(initResponse.status == 200 && initResponse.header("Content-Type") == "audio/mp4")
        let initTop = try MP4TopLevel.scan(prefix: initResponse.body[...], fileSize: initResponse.body.count).0
        let initMoov = try #require(initTop.moovRange)
        let movie = try MP4Movie.parse(moov: initResponse.body[initMoov])
        #expect(movie.isFragmented, "the init segment's moov has mvex")
        let track = try #require(movie.audio)
        #expect(track.decoderSpecificInfo == originalTrack.decoderSpecificInfo && track.timescale == originalTrack.timescale)

        var payload: [UInt8] = []
        var expectedTime = 0
        for (i, segment) in media.segments.enumerated() {
            let body = try Self.get(server, "/hls/\(path)/" + segment.uri).body
            let outline = try MP4Outline.parse(body[...])
            #expect(outline.entries.map { $0.header.type } == ["moof", "mfhd", "traf", "tfhd", "tfdt", "trun", "mdat"])
            func field(_ type: String, _ at: Int, _ width: Int = 4) throws -> Int {
                let h = try #require(outline.entries.first { $0.header.type == type }?.header)
                let start = h.offset + h.headerSize + at
                return body[start..<(start + width)].reduce(0) { $0 << 8 | Int($1) }
            }
            #expect(try field("mfhd", 4) == i + 1, "sequence numbers count up from 1")
            #expect(try field("tfdt", 4, 8) == track.timescale + expectedTime,
                    "segment \(i): tfdt is the decode time of its first sample, after the 1 s origin")
            let count = try field("trun", 4)
            var ticks = 0
            for s in 0..<count { ticks += try field("trun", 12 + 8 * s) }
            #expect(abs(Double(ticks) / Double(track.timescale) - segment.duration) < 1e-5, "EXTINF is the fragment's duration")
            expectedTime += ticks
            let mdat = try #require(outline.entries.last?.header)
            #expect(try field("trun", 8) == mdat.offset + 8, "data_offset points at the mdat payload")
            payload += body[(mdat.offset + 8)...]
        }
        #expect(expectedTime == originalTrack.totalTicks, "fragments cover every sample")
        #expect(payload == samples, "the fragments carry the file's AAC samples unchanged")
    }

    // MARK: Caching

    @Test func etagsCacheControlAndTheBoundedCache() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        // 1 MiB of cache: the segments of the 128 kbit/s MP3 (~95 KB each) fit ten at a time.
        let server = try StreamdProcess(folder: library, extraArguments: ["--hls-cache-mb", "1"])
        let (media, _) = M3U8Rules.checkMedia(Self.text(try Self.get(server, "/hls/cbr-128k-44k.mp3/index.m3u8")), vod: true)
        let first = "/hls/cbr-128k-44k.mp3/" + media.segments[0].uri
        let a = try Self.get(server, first)
        #expect(a.header("X-Cache") == "MISS" && a.header("Cache-Control")?.contains("immutable") == true)
        let etag = try #require(a.header("ETag"))
        #expect(etag.hasPrefix("\"") && !etag.hasPrefix("W/"), "a strong ETag")
        let b = try Self.get(server, first)
        #expect(b.header("X-Cache") == "HIT" && b.header("ETag") == etag && b.body == a.body, "the same bytes from the cache")
        let notModified = try Self.get(server, first, headers: ["If-None-Match": etag])
        #expect(notModified.status == 304 && notModified.body.isEmpty)
        let part = try Self.get(server, first, headers: ["Range": "bytes=100-199"])
        #expect(part.status == 206 && part.body == Array(a.body[100..<200]), "one range of a segment")
        #expect(part.header("Content-Range") == "bytes 100-199/\(a.body.count)")
        let changed = try Self.get(server, first, headers: ["Range": "bytes=100-199", "If-Range": "\"other\""])
        #expect(changed.status == 200 && changed.body == a.body, "If-Range that does not match: the whole segment")
        #expect(try Self.get(server, first, headers: ["Range": "bytes=\(a.body.count)-"]).status == 416)
        // If-Match (RFC 9110 section 13.2.2): 412 when the client's copy is another one, before Range.
        let mismatch = try Self.get(server, first, headers: ["If-Match": "\"other\"", "Range": "bytes=0-9"])
        #expect(mismatch.status == 412, "If-Match of another version: 412, not the range")
        let match = try Self.get(server, first, headers: ["If-Match": etag, "Range": "bytes=0-9"])
        #expect(match.status == 206 && match.body == Array(a.body[0..<10]), "If-Match of this version: the range")
        let playlist = try Self.get(server, "/hls/cbr-128k-44k.mp3/index.m3u8")
        #expect(playlist.header("Cache-Control") == "no-cache", "playlists are revalidated")
        let stale = try Self.get(server, "/hls/cbr-128k-44k.mp3/seg-0.mp3?v=000000000000")
        #expect(stale.status == 404, "a segment URL of another file version is refused, not served with new bytes")
        // More than 1 MiB of other segments pushes the first one out.
        var pushed = 0
        for path in ["vbr-v2.mp3", "adts.aac", "track.m4a", "mono-48k.mp3"] {
            let (other, _) = M3U8Rules.checkMedia(Self.text(try Self.get(server, "/hls/\(path)/index.m3u8")), vod: true)
            for segment in other.segments { pushed += try Self.get(server, "/hls/\(path)/" + segment.uri).body.count }
        }
        #expect(pushed > 1 << 20)
        #expect(try Self.get(server, first).header("X-Cache") == "MISS", "evicted: the cache stays within --hls-cache-mb")
        #expect(try Self.get(server, first).header("X-Cache") == "HIT")

        let uncached = try StreamdProcess(folder: library, extraArguments: ["--hls-cache-mb", "0"])
        _ = try Self.get(uncached, first)
        let again = try Self.get(uncached, first)
        #expect(again.header("X-Cache") == "MISS" && again.body == a.body, "--hls-cache-mb 0 regenerates identical bytes")
    }

    @Test func noHLS_turnsTheRoutesOff() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--no-hls"])
        #expect(try Self.get(server, "/hls/vbr-v2.mp3/index.m3u8").status == 404)
        #expect(try Self.get(server, "/media/vbr-v2.mp3").status == 200, "files are still served")
    }

    // MARK: Hostile requests

    @Test func hostilePaths_getClearRefusals() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--live", "loop=\(library.path)/adts.aac"])
        let cases: [(String, Int)] = [
            ("/hls/../../etc/passwd/index.m3u8", 400), ("/hls/%2e%2e/%2e%2e/etc/passwd/index.m3u8", 400),
            ("/hls/escape.mp3/index.m3u8", 403), ("/hls/notes.txt/index.m3u8", 422), ("/hls/pcm16.wav/seg-0.mp3", 415),
            ("/hls/nope.mp3/index.m3u8", 404), ("/hls/vbr-v2.mp3%00/index.m3u8", 400), ("/hls/vbr-v2.mp3\\x/index.m3u8", 400),
            ("/hls/vbr-v2.mp3", 404), ("/hls/index.m3u8", 404), ("/hls//index.m3u8", 400), ("/hls/vbr-v2.mp3/", 404),
            ("/hls/vbr-v2.mp3/seg-99999.mp3", 404), ("/hls/vbr-v2.mp3/seg--1.mp3", 404), ("/hls/vbr-v2.mp3/seg-01.mp3", 404),
            ("/hls/vbr-v2.mp3/seg-1.aac", 404), ("/hls/vbr-v2.mp3/seg-99999999999999999999999999.mp3", 404),
            ("/hls/vbr-v2.mp3/seg-.mp3", 404), ("/hls/vbr-v2.mp3/seg-0.mp3.mp3", 404), ("/hls/vbr-v2.mp3/init.mp4", 404),
            ("/hls/vbr-v2.mp3/index.m3u8?byterange=1&byterange=1", 200), ("/hls/track.m4a/seg-0.mp3", 404),
            ("/hls/track.m4a/packed.m4s", 404), ("/hls/vbr-v2.mp3/packed.aac", 404), ("/hls/vbr-v2.mp3/packed.mp3?v=x", 404),
            ("/hls/track.m4a/init.mp4?v=x", 404), ("/hls/vbr-v2.mp3/master.m3u8/extra", 404),
            ("/live/nope/index.m3u8", 404), ("/live/../hls/index.m3u8", 404), ("/live/loop/seg-999999.aac", 404),
            ("/live/loop/seg-0.mp3", 404), ("/live/loop", 404), ("/live/loop/index.m3u8/x", 404), ("/live//index.m3u8", 404),
            ("/hls/" + String(repeating: "a/", count: 4500) + "index.m3u8", 414),
        ]
        for (target, status) in cases {
            let response = try Self.get(server, target)
            #expect(response.status == status, "\(target.prefix(80)): \(response.status) \(Self.text(response).prefix(120))")
            if response.status >= 400 { #expect(Self.text(response).hasPrefix("{\"error\":"), "\(target.prefix(80)): JSON error") }
        }
        #expect(try Self.get(server, "/hls/vbr-v2.mp3/index.m3u8").status == 200, "still serving")
        #expect(server.process.isRunning)
    }

    // MARK: Live

    @Test(.timeLimit(.scaledMinutes(5))) func live_slidingWindowOfFive() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        // adts.aac is 23 s in 5 segments, so a loop (and its discontinuity) shows up within a minute.
        let server = try StreamdProcess(folder: library, extraArguments: ["--live", "radio=\(library.path)/adts.aac"])
        let first = try Self.get(server, "/live/radio/index.m3u8")
        #expect(first.status == 200 && first.header("Cache-Control") == "no-cache")
        let (a, problems) = M3U8Rules.checkMedia(Self.text(first), vod: false)
        #expect(problems.isEmpty, "\(problems)")
        #expect(a.segments.count == 5, "a window of five segments from the start")
        #expect(a.segments.enumerated().allSatisfy { $0.element.uri == "seg-\(a.mediaSequence + $0.offset).aac" })
        // Wait for the window to slide (segments are ≤ 6 s).
        var b = a
        let deadline = Date().addingTimeInterval(8)
        while b.mediaSequence == a.mediaSequence, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.25)
            b = M3U8Rules.checkMedia(Self.text(try Self.get(server, "/live/radio/index.m3u8")), vod: false).0
        }
        #expect(b.mediaSequence == a.mediaSequence + 1, "the window moved by one segment")
        #expect(b.segments.count == 5)
        #expect(Array(a.segments.dropFirst().map(\.uri)) == Array(b.segments.dropLast().map(\.uri)), "same segments, shifted")
        // Timestamps run on across the window, through the loop's discontinuity.
        var previous: (stamp: UInt64, duration: Double)?
        var sawDiscontinuity = false
        for segment in b.segments {
            let body = try Self.get(server, "/live/radio/" + segment.uri).body
            let tagSize = try ID3v2.totalSize(atStartOf: body[...]) ?? 0
            #expect(tagSize == 73)
            let stamp = body[(tagSize - 8)..<tagSize].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if let previous { #expect(abs(Double(stamp) - Double(previous.stamp) - previous.duration * 90_000) <= 1, "\(segment.uri)") }
            previous = (stamp, segment.duration)
            sawDiscontinuity = sawDiscontinuity || segment.discontinuity
        }
        #expect(sawDiscontinuity, "the loop back to the start is marked (5-segment track, window of 5 after one slide)")
        let sequence = b.mediaSequence
        #expect(b.discontinuitySequence == (sequence > 0 ? (sequence - 1) / 5 : 0))
        #expect(try Self.get(server, "/live/radio/seg-\(sequence + 5).aac").status == 404, "no segment from the future")
        // ffmpeg joins the live stream and decodes 8 s of it.
        let out = library.appendingPathComponent("live.wav")
        let ffmpeg = try #require(which("ffmpeg"))
        let run = try runCommand(ffmpeg, ["-nostdin", "-v", "error", "-y", "-i", "\(server.baseURL)/live/radio/index.m3u8",
                                          "-t", "8", "-f", "wav", out.path], timeout: 40)
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let size = (try? FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int) ?? 0
        #expect(abs(size - 44 - 8 * 44_100 * 4) < 44_100, "8 s of 44.1 kHz stereo (\(size) bytes)")
    }

    @Test func live_badArgumentsExitClearly() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let streamd = TestPaths.streamd
        let badName = try runCommand(streamd, [library.path, "--port", "0", "--live", "a/b=\(library.path)/adts.aac", "--db", TestPaths.temporaryDatabase()], timeout: 10)
        #expect(badName.status != 0 && String(decoding: badName.stderr, as: UTF8.self).contains("NAME=PATH"))
        let missing = try runCommand(streamd, [library.path, "--port", "0", "--live", "x=\(library.path)/nope.mp3", "--db", TestPaths.temporaryDatabase()], timeout: 10)
        #expect(missing.status == 1 && String(decoding: missing.stderr, as: UTF8.self).contains("--live x"))
        let notAudio = try runCommand(streamd, [library.path, "--port", "0", "--live", "x=\(library.path)/notes.txt", "--db", TestPaths.temporaryDatabase()], timeout: 10)
        #expect(notAudio.status == 1, "\(String(decoding: notAudio.stderr, as: UTF8.self))")
    }
}
