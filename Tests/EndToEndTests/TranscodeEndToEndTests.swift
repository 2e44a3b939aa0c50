import Foundation
import StreamShared
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `/media/<path>?format=opus|mp3` on the real streamd: each transcode decoded by independent
/// decoders (opusdec, mpg123, ffmpeg), the cached file's length sample-exact against the source's
/// own decode, tags in ffprobe, `offset` checked on a marker, the cache served with ranges, one
/// encode for concurrent identical requests, 503 beyond the queue, a disconnect stopping the
/// worker, a crashing worker costing its one response, and ffmpeg and mpv playing and seeking.
@Suite(.ownThreads, .serialized) struct TranscodeEndToEndTests {
    /// tone.flac: 3 s stereo 44.1 kHz 440/660 Hz, tagged, ReplayGain -6 dB; marker.flac: 48 kHz
    /// mono, silence to 2.5 s then 1 kHz for 1 s; slow.flac: 20 s, decoded slowly by the worker's
    /// fault drill (20 ms per unit: an encode of at least 4 s); crash.flac, hang.flac, garbage.flac:
    /// 8 s, trapping, hanging, speaking nonsense.
    static func makeLibrary() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-tc-\(getpid())-\(UUID().uuidString.prefix(8))")
        let music = dir.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        let ffmpeg = try #require(which("ffmpeg"))
        func make(_ name: String, _ arguments: [String]) throws {
            let result = try runCommand(ffmpeg, ["-v", "error", "-y"] + arguments + [music.appendingPathComponent(name).path])
            guard result.status == 0 else { throw TestFailure("ffmpeg \(name): \(String(decoding: result.stderr, as: UTF8.self))") }
        }
        try make("tone.flac", ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=3", "-f", "lavfi", "-i",
                               "sine=frequency=660:sample_rate=44100:duration=3", "-filter_complex", "[0][1]amerge=inputs=2",
                               "-metadata", "title=Tone Title", "-metadata", "artist=Tone Artist", "-metadata", "album=Tone Album",
                               "-metadata", "REPLAYGAIN_TRACK_GAIN=-6.00 dB", "-c:a", "flac"])
        try make("marker.flac", ["-f", "lavfi", "-i", "aevalsrc='if(gte(n,120000),0.5*sin(2*PI*1000*(n-120000)/48000),0)':s=48000:d=3.5",
                                 "-c:a", "flac"])
        try make("slow.flac", ["-f", "lavfi", "-i", "sine=frequency=550:sample_rate=44100:duration=20", "-c:a", "flac"])
        for name in ["crash.flac", "hang.flac", "garbage.flac"] {
            try make(name, ["-f", "lavfi", "-i", "sine=frequency=550:sample_rate=44100:duration=8", "-c:a", "flac"])
        }
        return dir
    }

    static func server(_ library: URL, extra: [String] = []) throws -> StreamdProcess {
        try StreamdProcess(folder: library.appendingPathComponent("music"),
                           extraArguments: ["--transcode-cache", library.appendingPathComponent("cache").path] + extra,
                           decoderFault: "slow:slow.flac,trap:crash.flac,hang:hang.flac,garbage:garbage.flac")
    }

    /// curl's answer: status, headers (lower-cased names), body; curl's exit status.
    static func curl(_ url: String, _ extra: [String] = []) throws -> (status: Int, headers: [String: String], body: Data, exit: Int32) {
        let curl = try #require(which("curl"))
        let headersFile = FileManager.default.temporaryDirectory.appendingPathComponent("tc-h-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: headersFile) }
        let result = try runCommand(curl, ["-s", "--max-time", "60", "-D", headersFile.path, "-o", "-"] + extra + [url])
        let text = (try? String(contentsOf: headersFile, encoding: .utf8)) ?? ""
        var status = 0
        var headers: [String: String] = [:]
        for line in text.split(separator: "\r\n") {
            if line.hasPrefix("HTTP/") { status = Int(line.split(separator: " ")[1]) ?? 0; headers = [:]; continue }
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers, result.stdout, result.status)
    }

    /// Writes `bytes` to a temporary file with `ext`.
    static func file(_ bytes: Data, ext: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tc-\(getpid())-\(UUID().uuidString.prefix(8)).\(ext)")
        try bytes.write(to: url)
        return url
    }

    /// `path` decoded by `tool` to a WAV, read back.
    static func decode(_ path: URL, with tool: String) throws -> PCMFile {
        let wav = path.deletingPathExtension().appendingPathExtension("\(tool).wav")
        defer { try? FileManager.default.removeItem(at: wav) }
        let arguments: [String]
        switch tool {
        case "opusdec": arguments = ["--quiet", "--float", path.path, wav.path]
        case "mpg123": arguments = ["-q", "-w", wav.path, path.path]
        case "flac": arguments = ["-s", "-d", "-f", "-o", wav.path, path.path]
        default: arguments = ["-v", "error", "-y", "-i", path.path, "-c:a", "pcm_f32le", wav.path]
        }
        let result = try runCommand(try #require(which(tool == "ffmpeg" ? "ffmpeg" : tool)), arguments)
        guard result.status == 0 else { throw TestFailure("\(tool) \(path.lastPathComponent): \(String(decoding: result.stderr, as: UTF8.self))") }
        return try PCMFile(path: wav.path)
    }

    /// The cached response of `target`: asked until it comes with a Content-Length (the encode done).
    static func cached(_ server: StreamdProcess, _ target: String) throws -> (headers: [String: String], body: Data) {
        let deadline = Date().addingTimeInterval(TestTiming.seconds(30))
        while Date() < deadline {
            let answer = try curl(server.baseURL + target)
            if answer.status == 200, answer.headers["content-length"] != nil, answer.headers["accept-ranges"] == "bytes" {
                return (answer.headers, answer.body)
            }
            usleep(100_000)
        }
        throw TestFailure("\(target) was never served from the cache")
    }

    static func count(_ text: String, in log: String) -> Int { log.components(separatedBy: text).count - 1 }

    /// The transcode counters of `/api/status`.
    static func counters(_ server: StreamdProcess) throws -> StatusDocument.Transcodes {
        let answer = try curl(server.baseURL + "/api/status")
        guard answer.status == 200 else { throw TestFailure("/api/status: \(answer.status)") }
        return try #require(try StatusDocument.decode(Array(answer.body)).transcodes, "no transcode counters")
    }

    /// The counters once `done` holds for them (each change is an event the server reports at
    /// once; the deadline only ends a test whose event never comes).
    static func counters(_ server: StreamdProcess, until done: (StatusDocument.Transcodes) -> Bool) throws -> StatusDocument.Transcodes {
        let deadline = Date().addingTimeInterval(TestTiming.seconds(10))
        var last = try counters(server)
        while !done(last), Date() < deadline {
            usleep(20_000)
            last = try counters(server)
        }
        return last
    }

    @Test(.timeLimit(.scaledMinutes(4))) func opusAndMP3_streamThenCache_exactLengthTagsRanges() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try Self.server(library)
        defer { server.stop() }
        let source = try Self.decode(library.appendingPathComponent("music/tone.flac"), with: "flac")
        #expect(source.frames == 132_300)
        for (format, tool, rate) in [("opus", "opusdec", 48_000), ("mp3", "mpg123", 44_100)] {
            let target = "/media/tone.flac?format=\(format)&bitrate=\(format == "opus" ? 96 : 160)"
            // The first answer is the encode in progress: chunked, no ranges, the duration said.
            let first = try Self.curl(server.baseURL + target)
            #expect(first.status == 200 && first.exit == 0, "\(format): \(first.status) curl \(first.exit)")
            #expect(first.headers["transfer-encoding"] == "chunked", "\(format): \(first.headers)")
            #expect(first.headers["accept-ranges"] == "none")
            #expect(first.headers["x-content-duration"] == "3.000")
            let streamed = try Self.decode(try Self.file(first.body, ext: format), with: tool)
            #expect(streamed.sampleRate == rate && streamed.channels == 2, "\(format): \(streamed.sampleRate) Hz \(streamed.channels) ch")
            #expect(abs(streamed.frames - rate * 3) < rate / 10, "\(format) streamed: \(streamed.frames) frames")

            let (headers, body) = try Self.cached(server, target)
            #expect(headers["etag"] != nil && headers["content-length"] == String(body.count))
            let cachedFile = try Self.file(body, ext: format)
            defer { try? FileManager.default.removeItem(at: cachedFile) }
            // Sample-exact: the source's own length at the output rate.
            let decoded = try Self.decode(cachedFile, with: tool)
            #expect(decoded.sampleRate == rate && decoded.channels == 2)
            #expect(decoded.frames == source.frames * rate / 44_100, "\(format) cached: \(decoded.frames) frames, source \(source.frames)")
            let viaFFmpeg = try Self.decode(cachedFile, with: "ffmpeg")
            #expect(viaFFmpeg.frames == source.frames * rate / 44_100, "\(format) cached, ffmpeg: \(viaFFmpeg.frames) frames")
            // Tags carried over, and the duration known to ffprobe.
            let probe = try runCommand(try #require(which("ffprobe")), ["-v", "error", "-show_entries",
                                                                       "format=duration:format_tags:stream=initial_padding:stream_tags",
                                                                       "-of", "flat", cachedFile.path])
            let probed = String(decoding: probe.stdout, as: UTF8.self)
            for tag in ["Tone Title", "Tone Artist", "Tone Album"] { #expect(probed.contains(tag), "\(format): \(probed)") }
            #expect(probed.contains("format.duration=\"3.0"), "\(format): \(probed)")
            if format == "opus" {
                // opusinfo: the pre-skip libopus asks for, and the playback length the last granule gives.
                let info = String(decoding: try runCommand(try #require(which("opusinfo")), [cachedFile.path]).stdout, as: UTF8.self)
                #expect(info.contains("Pre-skip: 312") && info.contains("Playback length: 0m:03.000s"), "\(info)")
            }
            // A range of the cached file, as curl asks for it.
            let range = try Self.curl(server.baseURL + target, ["-r", "1000-1999"])
            #expect(range.status == 206 && range.body == body[1000..<2000], "\(format) range: \(range.status) \(range.body.count)")
        }
        #expect(Self.count("encoding tone.flac", in: server.log) == 2, "\(server.log)")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func offset_startsAtTheMarker_andGainIsBaked() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try Self.server(library)
        defer { server.stop() }
        // The tone starts at 2.5 s: from offset 2 it starts at 0.5 s (24,000 samples at 48 kHz).
        let answer = try Self.curl(server.baseURL + "/media/marker.flac?format=opus&offset=2")
        #expect(answer.status == 200 && answer.headers["x-content-duration"] == "1.500", "\(answer.headers)")
        let decoded = try Self.decode(try Self.file(answer.body, ext: "opus"), with: "opusdec").samples()
        let onset = try #require(decoded.firstIndex { abs($0) > 0.25 })
        #expect(abs(onset - 24_000) <= 24, "the tone starts at \(onset), not 24000")
        #expect(abs(decoded.count - 72_000) <= 0, "\(decoded.count) samples from offset 2 of 3.5 s")

        // gain=track: -6 dB baked in (RMS against the plain transcode).
        func rms(_ target: String) throws -> Double {
            let body = try Self.curl(server.baseURL + target).body
            let x = try Self.decode(try Self.file(body, ext: "opus"), with: "opusdec").samples()
            return sqrt(x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count)))
        }
        let plain = try rms("/media/tone.flac?format=opus"), gained = try rms("/media/tone.flac?format=opus&gain=track")
        let difference = 20 * log10(gained / plain)
        #expect(abs(difference + 6) < 0.3, "gain: \(difference) dB")
    }

    /// `format=wav` (the page's Web Audio player): 32-bit float WAV at the source's rate equal
    /// to `flac -d`'s samples, bit for bit, as it streams and again (never cached); `rate=`
    /// resamples to the asked rate with the length scaled; `offset=` starts at the marker;
    /// a bitrate, or a rate for another format, is a 400.
    @Test(.timeLimit(.scaledMinutes(3))) func wav_isTheDecodedPCM_atTheAskedRate() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try Self.server(library)
        defer { server.stop() }
        let reference = try Self.decode(library.appendingPathComponent("music/tone.flac"), with: "flac")
        for attempt in 0..<2 {
            let answer = try Self.curl(server.baseURL + "/media/tone.flac?format=wav")
            #expect(answer.status == 200 && answer.headers["content-type"] == "audio/wav"
                    && answer.headers["content-length"] == nil, "attempt \(attempt): \(answer.headers)")
            let wav = try PCMFile(path: try Self.file(answer.body, ext: "wav").path)
            #expect(wav.isFloat && wav.bitsPerSample == 32 && wav.sampleRate == 44_100 && wav.channels == 2)
            #expect(wav.frames == reference.frames, "\(wav.frames) frames, flac -d \(reference.frames)")
            #expect(wav.samples() == reference.samples(), "the samples are flac -d's")
        }
        let resampled = try PCMFile(path: try Self.file(try Self.curl(server.baseURL + "/media/tone.flac?format=wav&rate=48000").body,
                                                        ext: "wav").path)
        #expect(resampled.sampleRate == 48_000 && abs(resampled.frames - 144_000) <= 1, "\(resampled.sampleRate) Hz, \(resampled.frames) frames")
        let marker = try PCMFile(path: try Self.file(try Self.curl(server.baseURL + "/media/marker.flac?format=wav&offset=2").body,
                                                     ext: "wav").path).samples()
        let onset = try #require(marker.firstIndex { abs($0) > 0.25 })
        #expect(abs(onset - 24_000) <= 24 && marker.count == 72_000, "the tone starts at \(onset) of \(marker.count)")
        #expect(try Self.curl(server.baseURL + "/media/tone.flac?format=wav&bitrate=128").status == 400)
        #expect(try Self.curl(server.baseURL + "/media/tone.flac?format=mp3&rate=48000").status == 400)
    }

    /// The spool files (`.partial-*`, unlinked or not) streamd holds open now, by their size on
    /// disk (`st_size`, and the blocks allocated): read through `/proc/PID/fd`.
    static func spoolSizes(_ server: StreamdProcess) -> [(size: Int, allocated: Int)] {
        let fdDirectory = "/proc/\(server.process.processIdentifier)/fd"
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? []
        return fds.compactMap { fd in
            let path = fdDirectory + "/" + fd
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path), target.contains("/.partial-") else { return nil }
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            return (Int(info.st_size), Int(info.st_blocks) * 512)
        }
    }

    /// `format=wav` is paced to its reader (issue: it spooled a whole track, ~1.3 GB an hour, as
    /// fast as it decoded): a 70 s track (24.7 MB of float WAV) read slowly never has more than
    /// the ring (10 s: 3,528,000 bytes) on disk, and still arrives bit for bit as `flac -d`
    /// decodes it; a reader that leaves stops the encode and its decode worker.
    @Test(.timeLimit(.scaledMinutes(3))) func wav_isPacedToItsReader_andStopsWhenItLeaves() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-tcwav-\(getpid())-\(UUID().uuidString.prefix(8))")
        let music = dir.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = try #require(which("ffmpeg"))
        let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=70",
                                           "-ac", "2", "-c:a", "flac", music.appendingPathComponent("long.flac").path])
        #expect(made.status == 0)
        let server = try StreamdProcess(folder: music, extraArguments: ["--transcode-cache", dir.appendingPathComponent("cache").path])
        defer { server.stop() }
        let ring = 10 * 44_100 * 2 * 4
        let whole = 44 + 70 * 44_100 * 2 * 4

        // HTTP/1.0: the bare body up to the close. A small receive buffer keeps the client slow.
        let slow = try RawConnection(port: server.port, timeout: 60, receiveBuffer: 64 * 1024)
        try slow.sendAll("GET /media/long.flac?format=wav HTTP/1.0\r\n\r\n")
        var received: [UInt8] = []
        func read(until count: Int, within seconds: Double) -> RawConnection.End {
            let deadline = Date().addingTimeInterval(TestTiming.seconds(seconds))
            while received.count < count, Date() < deadline {
                var poller = pollfd(fd: slow.fd, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 100) <= 0 { continue }
                let (bytes, end) = slow.readSome(upTo: 65_536)
                received += bytes
                if end != .open { return end }
            }
            return .open
        }
        _ = read(until: 1 << 20, within: 30)
        #expect(received.count >= 1 << 20, "only \(received.count) bytes came")
        // The reader stops for 3 s: the encode waits at a ring ahead of it (unpaced, it wrote the
        // whole 24.7 MB in that time). Sampled every 50 ms: never more than the ring on disk.
        var largest = 0, seen = 0
        let pause = Date().addingTimeInterval(3)
        while Date() < pause {
            for spool in Self.spoolSizes(server) {
                seen += 1
                // The blocks allocated round up to the file system's 4 KiB.
                largest = max(largest, spool.size, spool.allocated - 4095)
            }
            usleep(50_000)
        }
        #expect(seen > 0, "no spool file was open during the pause")
        #expect(largest <= ring, "the spool held \(largest) bytes, more than the ring's \(ring)")
        #expect(try Self.counters(server).active == 1, "the paced encode is still under way")
        // The rest, read in full: the samples are flac -d's, bit for bit.
        let end = read(until: Int.max, within: 120)
        #expect(end == .eof && received.count - (received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? 0) == whole,
                "\(end), \(received.count) bytes with the head, \(whole) expected in the body")
        let body = Data(received[(received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? 0)...])
        let wav = try PCMFile(path: try Self.file(body, ext: "wav").path)
        let reference = try Self.decode(music.appendingPathComponent("long.flac"), with: "flac")
        #expect(wav.frames == reference.frames && wav.samples() == reference.samples(),
                "\(wav.frames) frames, flac -d \(reference.frames); the samples differ")
        #expect(Self.spoolSizes(server).allSatisfy { $0.size <= ring }, "a spool grew past the ring")

        // A reader that leaves half way: its encode stops, its decode worker is killed.
        let leaving = try RawConnection(port: server.port, timeout: 60, receiveBuffer: 64 * 1024)
        try leaving.sendAll("GET /media/long.flac?format=wav HTTP/1.0\r\n\r\n")
        let deadline = Date().addingTimeInterval(TestTiming.seconds(20))
        var got = 0
        while got < 512 * 1024, Date() < deadline {
            var poller = pollfd(fd: leaving.fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 100) > 0 { got += leaving.readSome(upTo: 65_536).bytes.count }
        }
        leaving.close()
        let settled = try Self.counters(server) { $0.active == 0 }
        #expect(settled.active == 0 && settled.started == 2, "\(settled)")
        #expect(server.log.contains("no listener left"), "\(server.log.suffix(2000))")
        let stopDeadline = Date().addingTimeInterval(TestTiming.seconds(10))
        while !AnalyzerIsolationTests.children(of: server.process.processIdentifier).isEmpty, Date() < stopDeadline { usleep(50_000) }
        #expect(AnalyzerIsolationTests.children(of: server.process.processIdentifier).isEmpty, "the decode worker still runs")
    }

    /// `offset` on lossy sources (MP3, AAC in MP4 and ADTS, Opus, Vorbis), which the decoder
    /// starts at their seek index point: the transcode from 5 s of a 6.5 s file whose tone starts
    /// at 5.5 s has it at 0.5 s, as ffmpeg's decode of the source has it 5 s later, and as many
    /// samples as the source's decode from 5 s on.
    @Test(.timeLimit(.scaledMinutes(3))) func offset_onLossySources_landsOnTheReferenceSample() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let music = library.appendingPathComponent("music")
        let ffmpeg = try #require(which("ffmpeg"))
        let tone = ["-f", "lavfi", "-i", "aevalsrc='if(gte(n,264000),0.5*sin(2*PI*1000*(n-264000)/48000),0)':s=48000:d=6.5"]
        for (name, codec) in [("lossy.mp3", ["-c:a", "libmp3lame", "-b:a", "128k"]), ("lossy.m4a", ["-c:a", "aac", "-b:a", "128k"]),
                              ("lossy.aac", ["-c:a", "aac", "-b:a", "128k", "-f", "adts"]), ("lossy.opus", ["-c:a", "libopus"]),
                              ("lossy.ogg", ["-c:a", "libvorbis"])] {
            let made = try runCommand(ffmpeg, ["-v", "error", "-y"] + tone + codec + [music.appendingPathComponent(name).path])
            #expect(made.status == 0, "\(name): \(String(decoding: made.stderr, as: UTF8.self))")
        }
        let server = try Self.server(library)
        defer { server.stop() }
        func onset(_ samples: [Float]) -> Int? { samples.firstIndex { abs($0) > 0.25 } }
        for name in ["lossy.mp3", "lossy.m4a", "lossy.aac", "lossy.opus", "lossy.ogg"] {
            // AAC: ffmpeg's decode less the priming and padding it keeps (FFmpegAACReference).
            var referenceOnset: Int, referenceLength: Int
            if name.hasSuffix(".m4a") || name.hasSuffix(".aac") {
                let wav = library.appendingPathComponent("\(name).ref.wav").path
                let aac = try FFmpegAACReference(file: music.appendingPathComponent(name).path, wav: wav)
                referenceOnset = try #require(onset(aac.samples), "\(name): no tone in ffmpeg's decode") - aac.offset
                referenceLength = aac.expectedFrames
            } else {
                let reference = try Self.decode(music.appendingPathComponent(name), with: "ffmpeg")
                #expect(reference.sampleRate == 48_000 && reference.channels == 1)
                let samples = reference.samples()
                referenceOnset = try #require(onset(samples), "\(name): no tone in ffmpeg's decode")
                referenceLength = samples.count
            }
            // The catalog may still be reading the folder: asked until the track is listed.
            var answer = try Self.curl(server.baseURL + "/media/\(name)?format=opus&offset=5")
            let deadline = Date().addingTimeInterval(TestTiming.seconds(20))
            while answer.status == 404, Date() < deadline {
                usleep(100_000)
                answer = try Self.curl(server.baseURL + "/media/\(name)?format=opus&offset=5")
            }
            #expect(answer.status == 200 && answer.exit == 0, "\(name): \(answer.status) curl \(answer.exit)")
            let decoded = try Self.decode(try Self.file(answer.body, ext: "opus"), with: "opusdec").samples()
            let heard = try #require(onset(decoded), "\(name): no tone from offset 5")
            #expect(abs(heard - (referenceOnset - 240_000)) <= 24, "\(name): the tone at \(heard), ffmpeg's decode has it at \(referenceOnset - 240_000) from 5 s")
            #expect(decoded.count == referenceLength - 240_000, "\(name): \(decoded.count) samples from 5 s, ffmpeg's decode \(referenceLength - 240_000)")
        }
    }

    /// `estimate=1` for Opus: a Content-Length said before the encode (hard CBR, bounded from the
    /// duration) and met exactly by padding inside the last packets (RFC 6716 §3.2.5), so the
    /// stream is as long as said and decodes to exactly the source's samples: opusdec, ffmpeg,
    /// mpv and GStreamer over HTTP all trust the length and hear 3 s.
    @Test(.timeLimit(.scaledMinutes(3))) func estimate_opus_isExactlyTheLengthSaid_andDecodesWhole() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try Self.server(library)
        defer { server.stop() }
        for kbps in [64, 128] {
            let target = "/media/tone.flac?format=opus&bitrate=\(kbps)&estimate=1"
            let answer = try Self.curl(server.baseURL + target)
            let length = try #require(answer.headers["content-length"].flatMap(Int.init), "\(answer.headers)")
            #expect(answer.status == 200 && answer.exit == 0 && answer.body.count == length, "curl \(answer.exit): \(answer.body.count) of \(length)")
            // The bound is a little high, not much: the padding is a few percent at most.
            #expect(length < 3 * kbps * 1000 / 8 * 106 / 100 + 6_000, "estimate \(length) bytes for 3 s at \(kbps) kbit/s")
            let file = try Self.file(answer.body, ext: "opus")
            defer { try? FileManager.default.removeItem(at: file) }
            let viaOpusdec = try Self.decode(file, with: "opusdec"), viaFFmpeg = try Self.decode(file, with: "ffmpeg")
            #expect(viaOpusdec.frames == 144_000 && viaFFmpeg.frames == 144_000, "\(kbps): opusdec \(viaOpusdec.frames), ffmpeg \(viaFFmpeg.frames) frames")
            let info = String(decoding: try runCommand(try #require(which("opusinfo")), [file.path]).stdout, as: UTF8.self)
            #expect(info.contains("Playback length: 0m:03.000s") && !info.lowercased().contains("warning"), "\(info)")
            // ffmpeg straight from the URL (it trusts the length and reads to it).
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("tc-est-\(UUID().uuidString.prefix(8)).wav")
            defer { try? FileManager.default.removeItem(at: out) }
            let ffmpeg = try runCommand(try #require(which("ffmpeg")), ["-v", "error", "-y", "-i", server.baseURL + target, "-c:a", "pcm_f32le", out.path])
            let fromURL = try PCMFile(path: out.path)
            #expect(ffmpeg.status == 0 && fromURL.frames == 144_000, "ffmpeg: \(fromURL.frames) frames \(String(decoding: ffmpeg.stderr, as: UTF8.self))")
            // mpv from the URL.
            let pcm = FileManager.default.temporaryDirectory.appendingPathComponent("tc-est-mpv-\(UUID().uuidString.prefix(8)).wav")
            defer { try? FileManager.default.removeItem(at: pcm) }
            let played = try runCommand(try #require(which("mpv")), ["--no-config", "--no-video", "--ao=pcm", "--ao-pcm-file=\(pcm.path)",
                                                                    "--audio-format=float", server.baseURL + target])
            let heard = try PCMFile(path: pcm.path)
            #expect(played.status == 0 && heard.frames == 144_000, "mpv: \(heard.frames) frames")
            // GStreamer from the URL (souphttpsrc takes the length), decoded to raw floats.
            if let gst = which("gst-launch-1.0") {
                let raw = FileManager.default.temporaryDirectory.appendingPathComponent("tc-est-gst-\(UUID().uuidString.prefix(8)).raw")
                defer { try? FileManager.default.removeItem(at: raw) }
                let run = try runCommand(gst, ["-q", "souphttpsrc", "location=\(server.baseURL + target)", "!", "oggdemux", "!", "opusdec", "!",
                                               "audioconvert", "!", "audio/x-raw,format=F32LE,channels=2,rate=48000", "!", "filesink",
                                               "location=\(raw.path)"])
                let bytes = (try? Data(contentsOf: raw).count) ?? 0
                #expect(run.status == 0 && bytes == 144_000 * 8, "GStreamer: \(bytes / 8) frames")
            }
        }
        // Never cached: each of the eight requests (curl, ffmpeg, mpv, GStreamer, at two bitrates) was an encode.
        let counters = try Self.counters(server)
        #expect(counters.started >= 8 && counters.cacheHits == 0, "\(counters)")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func estimate_isNeverShort_andPlays() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try Self.server(library)
        defer { server.stop() }
        let answer = try Self.curl(server.baseURL + "/media/tone.flac?format=mp3&estimate=1")
        let length = try #require(answer.headers["content-length"].flatMap(Int.init), "\(answer.headers)")
        #expect(answer.exit == 0 && answer.body.count == length, "curl \(answer.exit): \(answer.body.count) of \(length)")
        // The padding is silence in whole frames: ffmpeg reads every frame.
        let decoded = try Self.decode(try Self.file(answer.body, ext: "mp3"), with: "ffmpeg")
        #expect(decoded.sampleRate == 44_100 && decoded.frames >= 132_300, "\(decoded.frames) frames")
        // ffmpeg trusts the length: it reads to the announced end without an error.
        // Never short, and not much long: the silence added is a fraction of a second.
        #expect(length < 3 * 192_000 / 8 + 12_000, "estimate \(length) bytes for 3 s at 192 kbit/s")
        #expect(decoded.frames < 132_300 + 44_100 / 2, "\(decoded.frames) frames with the padding")
    }

    @Test(.timeLimit(.scaledMinutes(4))) func join_bounds_disconnect_crash() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try Self.server(library, extra: ["--transcode-jobs", "1", "--decode-timeout", "2"])
        defer { server.stop() }
        // Two identical requests while the (slow) encode runs: one encode.
        let a = try RawConnection(port: server.port), b = try RawConnection(port: server.port)
        a.send("GET /media/slow.flac?format=opus HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(300_000)
        b.send("GET /media/slow.flac?format=opus HTTP/1.1\r\nHost: x\r\n\r\n")
        // The queue takes two more (jobs 1, queue 2); the next is refused with Retry-After.
        let c = try RawConnection(port: server.port), d = try RawConnection(port: server.port)
        c.send("GET /media/slow.flac?format=opus&bitrate=64 HTTP/1.1\r\nHost: x\r\n\r\n")
        d.send("GET /media/slow.flac?format=opus&bitrate=80 HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(300_000)
        let refused = try Self.curl(server.baseURL + "/media/slow.flac?format=opus&bitrate=112")
        #expect(refused.status == 503 && refused.headers["retry-after"] != nil, "\(refused.status) \(refused.headers)")
        let full = try Self.counters(server)
        #expect(full.active == 1 && full.queued == 2 && full.started == 1 && full.joined == 1 && full.refused == 1
                && full.cacheMisses == 5 && full.cacheHits == 0, "\(full)")
        // The queued ones leave: their jobs are dropped from the queue as their connections close,
        // while the slow encode still runs (it takes at least 4 s; this waits for the two closes only).
        c.close(); d.close()
        let left = try Self.counters(server) { $0.queued == 0 }
        #expect(left.queued == 0 && left.droppedFromQueue == 2 && left.started == 1, "\(left)")
        // So the queue has room again: two new requests wait in it (or start), neither is refused.
        let f = try RawConnection(port: server.port), g = try RawConnection(port: server.port)
        f.send("GET /media/tone.flac?format=opus&bitrate=72 HTTP/1.1\r\nHost: x\r\n\r\n")
        g.send("GET /media/tone.flac?format=opus&bitrate=88 HTTP/1.1\r\nHost: x\r\n\r\n")
        let whole = try a.readResponse(), joined = try b.readResponse()
        #expect(whole.status == 200 && joined.status == 200 && whole.body == joined.body && !whole.body.isEmpty,
                "\(whole.body.count) and \(joined.body.count) bytes")
        let waited = try f.readResponse(), alsoWaited = try g.readResponse()
        #expect(waited.status == 200 && alsoWaited.status == 200 && waited.body.count > 10_000 && alsoWaited.body.count > 10_000,
                "\(waited.status) \(alsoWaited.status)")
        // One slow encode (the dropped jobs never started), then the two waiting ones; and each
        // response ended only after its job's slot was given back: nothing runs or waits now.
        let settled = try Self.counters(server)
        #expect(settled.active == 0 && settled.queued == 0 && settled.started == 3 && settled.refused == 1, "\(settled)")
        #expect(Self.count("encoding slow.flac", in: server.log) == 1, "\(server.log)")
        #expect(Self.count("joined by another request", in: server.log) == 1, "\(server.log)")
        #expect(Self.count("dropped from the queue", in: server.log) == 2, "\(server.log)")
        // A cached transcode is a hit.
        _ = try Self.cached(server, "/media/tone.flac?format=opus&bitrate=72")
        #expect(try Self.counters(server).cacheHits == 1)

        // A client that leaves mid-encode stops it (nobody else reads): the worker is killed.
        let e = try RawConnection(port: server.port)
        e.send("GET /media/slow.flac?format=mp3 HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = e.readSome(upTo: 100)
        e.close()
        let deadline = Date().addingTimeInterval(TestTiming.seconds(10))
        while Self.count("stopped slow.flac", in: server.log) == 0 && Self.count("/slow.flac: no listener left", in: server.log) == 0,
              Date() < deadline { usleep(50_000) }
        #expect(server.log.contains("no listener left"), "\(server.log)")
        // ... and its decode worker is gone: streamd has no child process left.
        let pid = server.process.processIdentifier
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        let children = tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/children", encoding: .utf8) }
            .joined().split(separator: " ")
        #expect(children.isEmpty, "streamd still has child processes \(children)")

        // A worker that crashes costs its one response; the next request is served.
        let crash = try Self.curl(server.baseURL + "/media/crash.flac?format=opus")
        #expect(crash.exit != 0, "the crashed transcode must end cut short (curl \(crash.exit))")
        let after = try Self.curl(server.baseURL + "/media/tone.flac?format=mp3")
        #expect(after.status == 200 && after.exit == 0 && after.body.count > 10_000)
        #expect(server.log.contains("decoder crashed"), "\(server.log)")
        // A worker that hangs (killed after --decode-timeout) or sends garbage: the same.
        for name in ["hang.flac", "garbage.flac"] {
            let bad = try Self.curl(server.baseURL + "/media/\(name)?format=mp3")
            #expect(bad.exit != 0, "\(name): the transcode must end cut short (curl \(bad.exit))")
            let good = try Self.curl(server.baseURL + "/media/tone.flac?format=opus&bitrate=\(name.count + 64)")
            #expect(good.status == 200 && good.exit == 0 && good.body.count > 10_000, "after \(name)")
        }
        #expect(server.log.contains("decoding timed out"), "\(server.log)")
        #expect(server.log.contains("sent a frame of kind 127"), "\(server.log)")
    }

    /// SIGTERM while an encode runs and another waits: the server's stop hook drops the queued
    /// one, stops the running one (its decode worker killed and reaped by its own thread, not by
    /// the last-resort kill of leftover workers) and streamd exits 0 within its 5 s budget.
    @Test(.timeLimit(.scaledMinutes(2))) func sigterm_stopsTheEncodes_reapsTheirWorkers() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try Self.server(library, extra: ["--transcode-jobs", "1"])
        defer { server.stop() }
        let a = try RawConnection(port: server.port), b = try RawConnection(port: server.port)
        a.send("GET /media/slow.flac?format=opus HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = a.readSome(upTo: 100)
        b.send("GET /media/slow.flac?format=mp3 HTTP/1.1\r\nHost: x\r\n\r\n")
        let busy = try Self.counters(server) { $0.active == 1 && $0.queued == 1 }
        #expect(busy.active == 1 && busy.queued == 1, "\(busy)")
        let pid = server.process.processIdentifier
        let children = ShutdownTests.children(of: pid)
        #expect(!children.isEmpty, "the encode's decode worker runs")
        ShutdownTests.expectCleanExit(server, childrenSeen: children)
        server.stop()
        // (Which of the two the pool admitted first is not fixed: one ran, the other waited.)
        #expect(Self.count("encoding slow.flac", in: server.log) == 1 && Self.count("queued slow.flac", in: server.log) == 1,
                "the queued encode never started: \(server.log)")
        // Its listener's connection closes in the drain, so it may stop for that before the hook says why.
        #expect(server.log.contains("slow.flac: the server is stopping") || server.log.contains("slow.flac: no listener left"),
                "\(server.log)")
        let shutdownLines = server.log.split(separator: "\n").filter { $0.contains("shutdown") || $0.contains("warning") }
        #expect(!server.log.contains("did not stop") && !server.log.contains("killing"), "\(shutdownLines.joined(separator: "\n"))")
    }

    /// The picture mutagen reads from a transcode: OpusTags' METADATA_BLOCK_PICTURE, or an ID3v2 APIC.
    static let mutagenPicture = """
        import sys, base64, mutagen
        from mutagen.flac import Picture
        f = mutagen.File(sys.argv[1])
        if sys.argv[1].endswith(".mp3"):
            frames = f.tags.getall("APIC")
            assert len(frames) == 1 and frames[0].type == 3, frames
            data, mime = frames[0].data, frames[0].mime
        else:
            values = f.tags["metadata_block_picture"]
            assert len(values) == 1, len(values)
            picture = Picture(base64.b64decode(values[0]))
            assert picture.type == 3, picture.type
            data, mime = picture.data, picture.mime
        open(sys.argv[2], "wb").write(data)
        print(mime)
        """

    /// A transcode carries the cover: the track's own picture (covered.flac, a PNG in its PICTURE
    /// block), else the album's image beside it (art/plain.flac and art/cover.png). mutagen reads
    /// the same bytes back, ffprobe sees an attached picture.
    @Test(.timeLimit(.scaledMinutes(3))) func covers_carriedIntoOpusAndMP3_bytesAsTheSource() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-tc-cover-\(getpid())-\(UUID().uuidString.prefix(8))")
        let art = dir.appendingPathComponent("music/art")
        try FileManager.default.createDirectory(at: art, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = try #require(which("ffmpeg")), metaflac = try #require(which("metaflac"))
        let python = try #require(which("python3")), ffprobe = try #require(which("ffprobe"))
        func run(_ tool: String, _ arguments: [String]) throws {
            let result = try runCommand(tool, arguments)
            guard result.status == 0 else { throw TestFailure("\(tool): \(String(decoding: result.stderr, as: UTF8.self))") }
        }
        let embedded = dir.appendingPathComponent("embedded.png"), beside = art.appendingPathComponent("cover.png")
        try run(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=48x32", "-frames:v", "1", embedded.path])
        try run(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:size=40x40", "-frames:v", "1", beside.path])
        let covered = dir.appendingPathComponent("music/covered.flac")
        try run(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=2",
                         "-metadata", "title=Covered", "-metadata", "album=Covered Album", "-c:a", "flac", covered.path])
        try run(metaflac, ["--import-picture-from=\(embedded.path)", covered.path])
        try run(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=330:sample_rate=44100:duration=2",
                         "-metadata", "title=Plain", "-metadata", "album=Folder Album", "-c:a", "flac",
                         art.appendingPathComponent("plain.flac").path])
        let server = try Self.server(dir)
        defer { server.stop() }
        for (path, source) in [("covered.flac", embedded), ("art/plain.flac", beside)] {
            let expected = try Data(contentsOf: source)
            for format in ["opus", "mp3"] {
                let (_, body) = try Self.cached(server, "/media/\(path)?format=\(format)")
                let file = try Self.file(body, ext: format)
                let picture = file.appendingPathExtension("picture")
                defer { try? FileManager.default.removeItem(at: file); try? FileManager.default.removeItem(at: picture) }
                let read = try runCommand(python, ["-c", Self.mutagenPicture, file.path, picture.path])
                #expect(read.status == 0, "\(path) \(format): mutagen: \(String(decoding: read.stderr, as: UTF8.self))")
                #expect(String(decoding: read.stdout, as: UTF8.self).hasPrefix("image/png"), "\(path) \(format)")
                #expect((try? Data(contentsOf: picture)) == expected, "\(path) \(format): the picture's bytes are the source cover's")
                let probe = try runCommand(ffprobe, ["-v", "error", "-show_entries", "stream=codec_type,codec_name:stream_disposition=attached_pic",
                                                     "-of", "flat", file.path])
                let probed = String(decoding: probe.stdout, as: UTF8.self)
                #expect(probed.contains("codec_name=\"png\"") && probed.contains("attached_pic=1"), "\(path) \(format): \(probed)")
            }
        }
    }

    @Test(.timeLimit(.scaledMinutes(4))) func ffmpegAndMPV_playAndSeek_theCachedTranscodes() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try Self.server(library)
        defer { server.stop() }
        let ffmpeg = try #require(which("ffmpeg")), mpv = try #require(which("mpv"))
        for format in ["opus", "mp3"] {
            let target = "/media/tone.flac?format=\(format)"
            _ = try Self.cached(server, target)
            // ffmpeg seeks 1.5 s in (a Range request) and reads the rest: 1.5 s.
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("tc-seek-\(UUID().uuidString.prefix(8)).wav")
            defer { try? FileManager.default.removeItem(at: out) }
            let seek = try runCommand(ffmpeg, ["-v", "error", "-y", "-ss", "1.5", "-i", server.baseURL + target, "-c:a", "pcm_f32le", out.path])
            #expect(seek.status == 0, "\(String(decoding: seek.stderr, as: UTF8.self))")
            let rest = try PCMFile(path: out.path)
            let rate = format == "opus" ? 48_000 : 44_100
            #expect(abs(rest.frames - rate * 3 / 2) < rate / 20, "\(format): ffmpeg read \(rest.frames) frames after its seek")
            // mpv knows the duration and plays from 2 s to the end.
            let pcm = FileManager.default.temporaryDirectory.appendingPathComponent("tc-mpv-\(UUID().uuidString.prefix(8)).wav")
            defer { try? FileManager.default.removeItem(at: pcm) }
            let played = try runCommand(mpv, ["--no-config", "--no-video", "--start=2", "--ao=pcm", "--ao-pcm-file=\(pcm.path)",
                                               "--audio-format=float", "--msg-level=all=v", server.baseURL + target])
            #expect(played.status == 0, "mpv: \(String(decoding: played.stderr, as: UTF8.self).suffix(2000))")
            let heard = try PCMFile(path: pcm.path)
            let seconds = Double(heard.frames) / Double(heard.sampleRate)
            #expect(abs(seconds - 1.0) < 0.1, "\(format): mpv played \(seconds) s from 2 s of 3 s")
            // GStreamer (souphttpsrc): the cached file has a length, so a duration and seeking.
            if let discoverer = which("gst-discoverer-1.0") {
                // Over HTTP GStreamer sees a length, so the MP3 is seekable. For Ogg Opus its
                // answer is a coin toss whoever serves it: nginx-light serving opusenc's own file
                // of the same FLAC got "Seekable: no" and no duration 6 times of 6, the cached
                // transcode from nginx or streamd about half the time, so only MP3 is held to it.
                let remote = String(decoding: try runCommand(discoverer, [server.baseURL + target]).stdout, as: UTF8.self)
                #expect(format != "mp3" || remote.contains("Seekable: yes"), "\(format): \(remote)")
                // Its duration is read from the bytes themselves: GStreamer 1.22's Ogg demuxer gives
                // 0.39 s for these 3 s over HTTP from nginx as from streamd (its end probe is off; from a
                // local file it says 3 s), so the duration is checked on the bytes streamd served.
                let copy = FileManager.default.temporaryDirectory.appendingPathComponent("tc-gst-\(UUID().uuidString.prefix(8)).\(format)")
                defer { try? FileManager.default.removeItem(at: copy) }
                try Self.cached(server, target).body.write(to: copy)
                let local = String(decoding: try runCommand(discoverer, [copy.path]).stdout, as: UTF8.self)
                // (GStreamer 1.22's Ogg demuxer may take the pre-skip off once more: 2.9935 s for Opus.)
                let duration = local.split(separator: "\n").first { $0.contains("Duration: 0:00:") }
                    .flatMap { Double($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
                #expect(duration.map { abs($0 - 3) < 0.05 } == true, "\(format): \(local)")
                // For MP3 the length and the Info frame give GStreamer the duration over HTTP too.
                if format == "mp3" {
                    let overHTTP = remote.split(separator: "\n").first { $0.contains("Duration: 0:00:") }
                        .flatMap { Double($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
                    #expect(overHTTP.map { abs($0 - 3) < 0.05 } == true, "mp3 over HTTP: \(remote)")
                }
            }
        }
    }
}
