import Foundation
import Testing
import TestSupport

/// Issue 24 item 4: mpv and GStreamer switch variants of the ladder mid-track on the real streamd.
///
/// The track is 23 s of noise (four 6 s segments on the variants' grid), so every 25 ms of a
/// player's output can be found in the source by cross-correlation. `Tests/hls/switch_timeline.py`
/// does that (numpy) and the assertions here read its timeline: which source frames each stretch of
/// output holds (a skip forward is audio lost, a step back is audio heard twice) and which variant's
/// decode it matches (ffmpeg's decode of each variant's own playlist, at offset 0 against the source).
///
/// What the players do (measured, see docs/DESIGN.md "HLS renditions"):
/// - GStreamer's hlsdemux2 switches at a segment boundary, gapless: one offset over the whole
///   output (its 1,105 frames of MP3 priming, which packed audio has no way to trim). Only within
///   one codec: from Opus (fMP4) to MP3 it stalls, on ffmpeg's own ladders too (not tested here:
///   a stall is only seen as a timeout).
/// - mpv switching `aid` between MP3 variants refresh-seeks the new stream to its playback position,
///   which lags what it has already written out by a few tenths of a second: that much is heard twice,
///   nothing is lost. ffmpeg's own `-f hls` MP3 ladder does the same.
/// - mpv switching into an Opus (fMP4) variant ends playback there: ffmpeg's HLS demuxer gave the
///   fMP4 variant's MP4 reader end-of-file while it was not selected, and the reader never reads
///   again. ffmpeg's own fMP4 ladder, served by nginx, ends the same way.
@Suite(.timeLimit(.scaledMinutes(6)), .ownThreads) struct HLSVariantSwitchTests {
    static let sourceSeconds = 23
    static let rate = 48_000

    /// The library (`music/noise.flac`, 44.1 kHz stereo) and the source at 48 kHz (`source48k.wav`).
    static func makeLibrary() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-hls-switch-\(getpid())-\(UUID().uuidString.prefix(8))")
        let music = root.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        let wav = root.appendingPathComponent("source.wav").path
        // Noise below 4 kHz: every variant keeps it (the 64 kbit/s rungs cut higher), and its
        // cross-correlation has one peak, unlike a sweep's.
        try HLSLadderTests.run("sox", ["-q", "-R", "-n", "-r", "44100", "-c", "2", "-b", "16", wav,
                                       "synth", String(sourceSeconds), "whitenoise", "lowpass", "4000", "gain", "-3"])
        try HLSLadderTests.run("flac", ["--silent", "--force", "-5", "-o", music.appendingPathComponent("noise.flac").path, wav])
        try HLSLadderTests.run("sox", [wav, "-b", "16", root.appendingPathComponent("source48k.wav").path, "rate", "-v", "48000"])
        return root
    }

    /// streamd with the ladder of HLSLadderTests (64 and 192 kbit/s) and its access log on (not
    /// `--quiet`): the log says which variant's segments a player fetched.
    static func start(_ root: URL) throws -> StreamdProcess {
        try StreamdProcess(folder: root.appendingPathComponent("music"),
                           extraArguments: ["--transcode-cache", root.appendingPathComponent("cache").path,
                                            "--hls-ladder", HLSLadderTests.ladder.map(String.init).joined(separator: ",")])
    }

    /// The master playlist's variant folders in its order (mpv numbers its audio tracks so: aid = index + 1).
    static func variants(_ server: StreamdProcess) throws -> [String] {
        let master = HLSServerTests.text(try HLSServerTests.get(server, "/hls/noise.flac/master.m3u8"))
        let (variants, problems) = M3U8Rules.checkMaster(master)
        #expect(problems.isEmpty, "\(problems)")
        return variants.map { $0.uri.replacingOccurrences(of: "/index.m3u8", with: "") }
    }

    /// Every transcoded variant encoded and cached (each playlist answers 200), so the players never
    /// meet a 503 and the master's BANDWIDTH is measured, and ffmpeg's decode of the playlists of
    /// `decode` as the references.
    static func warm(_ server: StreamdProcess, _ root: URL, decode: [String]) throws -> [String: URL] {
        for folder in try variants(server) where folder != "index.m3u8" {
            let index = try HLSLadderTests.getReady(server, "/hls/noise.flac/\(folder)/index.m3u8")
            #expect(index.status == 200, "\(folder): \(index.status)")
        }
        var decodes: [String: URL] = [:]
        for folder in decode {
            let wav = root.appendingPathComponent("ref-\(folder).wav")
            try HLSLadderTests.ffmpeg("\(server.baseURL)/hls/noise.flac/\(folder)/index.m3u8", wav)
            decodes[folder] = wav
        }
        return decodes
    }

    /// switch_timeline.py's answer.
    struct Timeline: Decodable {
        struct Run: Decodable { let start: Int, end: Int, shift: Int }
        struct ReferenceRun: Decodable { let start: Int, end: Int, reference: Int, windows: Int, median_snr: Double }
        /// A change of shift to the frame: output frame `at` is source frame `source` of the new stretch.
        struct Join: Decodable { let at: Int, source: Int }
        let frames: Int, source_frames: Int, window: Int
        let runs: [Run]
        let reference_runs: [ReferenceRun]
        let silent: [Int]
        let unmatched: [Int]
        let joins: [Join]
    }

    static func script(_ name: String) -> String {
        TestPaths.packageRoot.appendingPathComponent("Tests/hls/\(name)").path
    }

    static func timeline(_ root: URL, _ output: URL, _ references: [URL]) throws -> Timeline {
        let run = try runCommand("/usr/bin/env", ["python3", script("switch_timeline.py"), root.appendingPathComponent("source48k.wav").path,
                                                  output.path] + references.map(\.path), timeout: 120)
        guard run.status == 0 else { throw TestFailure("switch_timeline.py: \(String(decoding: run.stderr, as: UTF8.self))") }
        return try JSONDecoder().decode(Timeline.self, from: run.stdout)
    }

    /// The access log from `mark` (a length of `server.log` in UTF-8 bytes) on: what the player asked for,
    /// without the test's own warming and reference decodes.
    static func logSince(_ server: StreamdProcess, _ mark: Int) -> String {
        String(decoding: server.log.utf8.dropFirst(mark), as: UTF8.self)
    }

    /// The segment numbers of `folder` that the access log shows fetched, in order.
    static func fetched(_ log: String, _ prefix: String, _ folder: String, ext: String) -> [Int] {
        log.split(separator: "\n").compactMap { line -> Int? in
            guard let range = line.range(of: "GET \(prefix)\(folder)/seg-") else { return nil }
            let rest = line[range.upperBound...]
            guard let dot = rest.firstIndex(of: "."), rest[dot...].hasPrefix(".\(ext)") else { return nil }
            return Int(rest[..<dot])
        }
    }

    /// The position mpv's refresh seek went to, in seconds ("refresh seek to 10.464000" in its -v log).
    static func refreshTarget(_ mpvLog: String) -> Double? {
        mpvLog.split(separator: "\n").compactMap { line -> Double? in
            guard let range = line.range(of: "refresh seek to ") else { return nil }
            return Double(line[range.upperBound...].trimmingCharacters(in: .whitespaces))
        }.first
    }

    /// mpv driven through its JSON IPC (`Tests/hls/mpv_switch.py`), from `fromAid` to `toAid` once
    /// time-pos reaches `at`; returns the output and mpv's log.
    static func mpvSwitch(_ url: String, _ output: URL, from fromAid: Int, to toAid: Int, at: Double, options: [String] = []) throws -> String {
        _ = try #require(which("mpv"), "mpv is installed by scripts/deps.sh")
        let log = output.deletingPathExtension().appendingPathExtension("log")
        let run = try runCommand("/usr/bin/env", ["python3", script("mpv_switch.py"), url, output.path, log.path,
                                                  String(fromAid), String(toAid), String(at)] + options, timeout: 180)
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard run.status == 0 else {
            throw TestFailure("mpv_switch.py: \(run.status) \(String(decoding: run.stdout + run.stderr, as: UTF8.self))\n\(text.suffix(2000))")
        }
        return text
    }

    /// mpv from the 64 kbit/s MP3 variant to the 192 kbit/s one at 8 s: the output is the low
    /// variant's decode from the start, then the high one's to the end, under a second heard twice
    /// at the switch (mpv's refresh seek; 0.26-0.44 s measured), nothing lost, no silence. mpv does
    /// the same on ffmpeg's own MP3 ladder (`-f hls`, MPEG-TS segments) served by nginx.
    @Test func mpv_switchesMP3Variants_withNoAudioLost() throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        let folders = try Self.variants(server)
        let low = "mp3-64", high = "mp3-192"
        let fromAid = try #require(folders.firstIndex(of: low)) + 1, toAid = try #require(folders.firstIndex(of: high)) + 1
        let references = try Self.warm(server, root, decode: [low, high])
        let output = root.appendingPathComponent("mpv-mp3.wav")
        let mark = server.log.utf8.count
        let mpvLog = try Self.mpvSwitch("\(server.baseURL)/hls/noise.flac/master.m3u8", output, from: fromAid, to: toAid, at: 8)
        #expect(mpvLog.contains("Now receiving playlist"), "mpv's HLS demuxer took up the new variant")

        // Both variants fetched: mpv's probe reads segments 0 and 1 of every variant, so the last
        // segment of the new variant shows it really played on from it.
        let log = Self.logSince(server, mark)
        let lowSegments = Self.fetched(log, "/hls/noise.flac/", low, ext: "mp3")
        let highSegments = Self.fetched(log, "/hls/noise.flac/", high, ext: "mp3")
        #expect(lowSegments.contains(0) && highSegments.contains(3), "segments fetched: \(low) \(lowSegments), \(high) \(highSegments)")

        let timeline = try Self.timeline(root, output, [try #require(references[low]), try #require(references[high])])
        let context = "\(timeline)"
        #expect(timeline.silent.isEmpty, "no dropout: \(context)")
        // Only the window holding the switch may match nothing, and the last ones (they reach past
        // the source's end, by what was repeated).
        #expect(timeline.unmatched.filter { $0 < timeline.frames - 2 * timeline.window }.count <= 1, "\(context)")
        try #require(timeline.runs.count == 2, "one switch, one discontinuity: \(context)")
        let before = timeline.runs[0], after = timeline.runs[1]
        #expect(before.start == 0 && before.shift == 0, "the start at the source's place: \(context)")
        // A step back (audio repeated), never forward (audio lost), and bounded.
        let repeated = -after.shift
        #expect((1...Self.rate).contains(repeated), "\(repeated) frames repeated at the switch: \(context)")
        #expect(before.end >= 6 * Self.rate, "the switch is mid-track: \(context)")
        // The end of the output is the end of the source: the whole track, plus what was repeated.
        // (ffmpeg's decode of a packed MP3 variant keeps its last frame whole: up to 1,152 more.)
        #expect((0..<1152).contains(timeline.frames - timeline.source_frames - repeated),
                "length: \(timeline.frames) = \(timeline.source_frames) + \(repeated) repeated")
        #expect(after.end + 2 * timeline.window > timeline.frames, "the new variant plays to the end: \(context)")
        // Before the switch the low variant's decode, after it the high one's (mpv and ffmpeg share
        // libavcodec's decoder, so well above the 8-10 dB that separate the variants).
        let runs = timeline.reference_runs
        #expect(runs.map(\.reference) == [0, 1], "low, then high: \(context)")
        #expect(runs.allSatisfy { $0.median_snr >= 40 }, "each stretch is that variant's decode: \(context)")

        // ffmpeg's own ladder of the same track, MP3 at 64 and 192 kbit/s in MPEG-TS: the same step back.
        let site = root.appendingPathComponent("ffmpeg-ladder")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try HLSLadderTests.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", root.appendingPathComponent("music/noise.flac").path,
                                          "-map", "0:a", "-map", "0:a", "-c:a", "libmp3lame", "-ar", "48000", "-b:a:0", "64k", "-b:a:1", "192k",
                                          "-f", "hls", "-hls_time", "6", "-hls_playlist_type", "vod",
                                          "-master_pl_name", "master.m3u8", "-var_stream_map", "a:0 a:1",
                                          "-hls_segment_filename", site.path + "/v%v/seg-%d.ts", site.path + "/v%v/index.m3u8"])
        let nginx = try HLSPackageTests.Nginx(root: site, prefix: root.appendingPathComponent("nginx"), readyPath: "/master.m3u8")
        let theirs = root.appendingPathComponent("mpv-ffmpeg-ladder.wav")
        _ = try Self.mpvSwitch("\(nginx.baseURL)/master.m3u8", theirs, from: 1, to: 2, at: 8)
        let peer = try Self.timeline(root, theirs, [])
        #expect(peer.silent.isEmpty && peer.runs.count == 2, "ffmpeg's ladder: \(peer)")
        if peer.runs.count == 2 {
            // MPEG-TS keeps the encoder's delay, so the peer starts at its own offset; the switch steps back.
            let step = peer.runs[0].shift - peer.runs[1].shift
            #expect((1...Self.rate).contains(step), "ffmpeg's ladder: \(step) frames repeated at the switch: \(peer)")
        }
        #expect(server.process.isRunning)
    }

    /// mpv from the FLAC original (44.1 kHz, output resampled to 48 kHz) into mp3-192 at 8 s: its
    /// refresh seek resumes the MP3 variant at the source sample its target names (the target
    /// less the 1 s origin) or within that MP3 frame, not 1,106 frames early as before the
    /// shared timeline.
    @Test func mpv_switchFromOriginalIntoMP3_resumesAtItsTarget() throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        let folders = try Self.variants(server)
        let fromAid = try #require(folders.firstIndex(of: "index.m3u8")) + 1, toAid = try #require(folders.firstIndex(of: "mp3-192")) + 1
        _ = try Self.warm(server, root, decode: [])
        let output = root.appendingPathComponent("mpv-original-mp3.wav")
        let mpvLog = try Self.mpvSwitch("\(server.baseURL)/hls/noise.flac/master.m3u8", output, from: fromAid, to: toAid, at: 8,
                                        options: ["--audio-samplerate=48000"])
        let target = try #require(Self.refreshTarget(mpvLog), "mpv's refresh seek")
        let timeline = try Self.timeline(root, output, [])
        try #require(timeline.runs.count == 2 && timeline.joins.count == 1, "one switch: \(timeline)")
        #expect(timeline.runs[0].start == 0 && timeline.runs[0].shift == 0, "the original from the start: \(timeline)")
        let wanted = (target - HLSRenditionGrid.origin) * Double(Self.rate)
        let resumed = timeline.joins[0].source
        // Never early (before the shared timeline: 1,106 frames early), and within the MP3 frame
        // the target falls in: 0 and 298 frames after it were measured, not explained yet.
        #expect((-2.0..<1_152.0).contains(Double(resumed) - wanted),
                "resumed at source frame \(resumed), target \(target) s is frame \(wanted): \(timeline)")
        #expect(server.process.isRunning)
    }

    /// mpv switching into an Opus (fMP4) variant ends playback at the switch, and so it does on
    /// ffmpeg's own fMP4 Opus ladder served by nginx: it is the player, not the segments. Its
    /// HLS demuxer never asks for the new variant's segments after the probe.
    @Test func mpv_switchIntoFMP4Variant_endsPlayback_asOnFFmpegsOwnLadder() throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        let folders = try Self.variants(server)
        let low = "opus-64", high = "opus-192"
        let fromAid = try #require(folders.firstIndex(of: low)) + 1, toAid = try #require(folders.firstIndex(of: high)) + 1
        _ = try Self.warm(server, root, decode: [])
        let ours = root.appendingPathComponent("mpv-opus.wav")
        let mark = server.log.utf8.count
        let oursLog = try Self.mpvSwitch("\(server.baseURL)/hls/noise.flac/master.m3u8", ours, from: fromAid, to: toAid, at: 8)

        // ffmpeg's own ladder of the same track: two Opus renditions in fMP4, 6 s segments.
        let site = root.appendingPathComponent("ffmpeg-ladder")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try HLSLadderTests.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", root.appendingPathComponent("music/noise.flac").path,
                                          "-map", "0:a", "-map", "0:a", "-c:a", "libopus", "-ar", "48000", "-b:a:0", "64k", "-b:a:1", "192k",
                                          "-f", "hls", "-hls_segment_type", "fmp4", "-hls_time", "6", "-hls_playlist_type", "vod",
                                          "-master_pl_name", "master.m3u8", "-var_stream_map", "a:0 a:1",
                                          "-hls_segment_filename", site.path + "/v%v/seg-%d.m4s", site.path + "/v%v/index.m3u8"])
        let nginx = try HLSPackageTests.Nginx(root: site, prefix: root.appendingPathComponent("nginx"), readyPath: "/master.m3u8")
        let theirs = root.appendingPathComponent("mpv-ffmpeg-ladder.wav")
        let theirsLog = try Self.mpvSwitch("\(nginx.baseURL)/master.m3u8", theirs, from: 1, to: 2, at: 8)
        let nginxLog = (try? String(contentsOf: root.appendingPathComponent("nginx/access.log"), encoding: .utf8)) ?? ""

        for (label, output, mpvLog, log, prefix, newFolder) in [("streamd", ours, oursLog, Self.logSince(server, mark), "/hls/noise.flac/", high),
                                                                 ("ffmpeg's ladder", theirs, theirsLog, nginxLog, "/", "v1")] {
            let timeline = try Self.timeline(root, output, [])
            let context = "\(label): \(timeline)"
            // What was played is right: the start, at the source's place, up to about the switch.
            #expect(timeline.runs.count == 1 && timeline.runs.first?.shift == 0 && timeline.silent.isEmpty, "\(context)")
            #expect(timeline.frames >= 8 * Self.rate, "\(context)")
            // And then nothing: the output ends within a second of where mpv's refresh seek went
            // (what mpv had decoded past it), far from the end of the 23 s track.
            let target = try #require(Self.refreshTarget(mpvLog), "\(label): mpv logs its refresh seek")
            #expect(timeline.frames <= Int((target + 1) * Double(Self.rate)) && timeline.frames < timeline.source_frames - 5 * Self.rate,
                    "\(label): playback ended at the switch (refresh seek to \(target) s): \(timeline.frames) frames")
            // The new variant's segments past the probe's two were never asked for.
            let newSegments = Self.fetched(log, prefix, newFolder, ext: "m4s")
            #expect(newSegments.allSatisfy { $0 <= 1 }, "\(label): \(newFolder) segments fetched: \(newSegments)")
        }
        #expect(server.process.isRunning)
    }

    /// ffmpeg's decoded frames with their timestamps (ffprobe -show_frames, after the trim of
    /// encoder delay and pre-skip): (pts in seconds, samples) of the first `count`.
    static func presentedFrames(_ url: String, count: Int) throws -> [(pts: Double, samples: Int)] {
        let ffprobe = try #require(which("ffprobe"), "ffprobe comes with ffmpeg (scripts/deps.sh)")
        let run = try runCommand(ffprobe, ["-v", "error", "-select_streams", "a:0", "-show_frames", "-read_intervals", "%+#\(count)",
                                           "-show_entries", "frame=pts_time,nb_samples", "-of", "csv=p=0", url], timeout: 60)
        guard run.status == 0 else { throw TestFailure("ffprobe \(url): \(String(decoding: run.stderr, as: UTF8.self))") }
        return String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let pts = Double(fields[0]), let samples = Int(fields[1]) else { return nil }
            return (pts, samples)
        }
    }

    /// One presentation timeline for the whole ladder: in ffmpeg, which places what it decodes by
    /// the segments' timestamps (fMP4 `tfdt` less the edit list, the MP3 ID3 timestamp less the
    /// delay its Info frame says), every variant's first decoded sample, which is source sample 0
    /// (their decodes are at offset 0 against the source), is presented at the same time, within
    /// a sample: so a switch by timestamp from the original into an MP3 variant, or from MP3 into
    /// Opus, lands on the same source sample. So does segment 1 of each transcoded variant (source
    /// frame 288,000 less the delay its encoder timeline starts with).
    @Test func everyVariant_presentsSourceSampleZero_atTheSameTime() throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        let folders = try Self.variants(server)
        _ = try Self.warm(server, root, decode: [])
        #expect(folders.contains("index.m3u8") && folders.contains("mp3-192") && folders.contains("opus-64"), "\(folders)")
        var starts: [String: Double] = [:]
        for folder in folders {
            let url = folder == "index.m3u8" ? "\(server.baseURL)/hls/noise.flac/index.m3u8"
                                              : "\(server.baseURL)/hls/noise.flac/\(folder)/index.m3u8"
            let frames = try Self.presentedFrames(url, count: 400)
            let first = try #require(frames.first, "\(folder): frames")
            starts[folder] = first.pts
            // One sample at 48 kHz is 20.8 us; ffprobe prints microseconds.
            #expect(abs(first.pts - HLSRenditionGrid.origin) <= 2.0 / Double(Self.rate),
                    "\(folder): source sample 0 presented at \(first.pts) s, the origin is \(HLSRenditionGrid.origin) s")
            // Segment 1 starts at grid frame 288,000 of the encoder's timeline, which is source
            // frame 288,000 - 1,105 in both codecs: a decoded frame starts there. (Not a check of
            // every frame: ffmpeg's MP3 frame times step two frames (48 ms) forward at segment 1's
            // start and back at segment 2's, though its decode is whole; not examined further.)
            if folder != "index.m3u8" {
                let boundary = HLSRenditionGrid.origin + Double(HLSRenditionGrid.segment - HLSRenditionGrid.delay) / Double(Self.rate)
                #expect(frames.contains { abs($0.pts - boundary) <= 2.0 / Double(Self.rate) },
                        "\(folder): a frame at segment 1's start, \(boundary) s: \(frames.suffix(3).map(\.pts))")
            }
        }
        let spread = (starts.values.max() ?? 0) - (starts.values.min() ?? 0)
        #expect(spread * Double(Self.rate) <= 2, "every variant within two samples: \(starts)")
        #expect(server.process.isRunning)
    }

    /// GStreamer (uridecodebin3 -> hlsdemux2) told a new `connection-speed` 8 s into the track
    /// switches variant at the next segment boundary, both ways: the output holds one offset from
    /// start to end (no gap, nothing repeated), the old variant's decode up to a segment boundary on
    /// the 6 s grid, the new one's after it, and the access log shows the old variant's segments,
    /// then the new one's.
    @Test(arguments: [(100, 300), (300, 100)])
    func gstreamer_switchesVariantsAtASegmentBoundary_gapless(fromKbps: Int, toKbps: Int) throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        // With connection-speed set, hlsdemux2 takes the highest BANDWIDTH at or under it (its 0.8
        // bandwidth-target-ratio is for measured rates): mp3-64 at 100 kbit/s, mp3-192 at 300. On
        // this band-limited noise the Opus rungs measure about 53 and 145 kbit/s, so neither is
        // picked; GStreamer 1.22 stalls on a switch between Opus (fMP4) and MP3 (packed audio),
        // as it does on ffmpeg's own ladders (docs/DESIGN.md).
        let variantAt = [100: "mp3-64", 300: "mp3-192"]
        let from = try #require(variantAt[fromKbps]), to = try #require(variantAt[toKbps])
        let references = try Self.warm(server, root, decode: [from, to])
        let python = "/usr/bin/python3"   // Debian's, which has gi (python3-gi, gir1.2-gstreamer-1.0)
        let output = root.appendingPathComponent("gst-\(fromKbps)-\(toKbps).wav")
        let mark = server.log.utf8.count
        let run = try runCommand(python, [Self.script("gst_switch.py"), "\(server.baseURL)/hls/noise.flac/master.m3u8", output.path,
                                          String(fromKbps), String(toKbps), "8"], timeout: 180)
        guard run.status == 0 else {
            throw TestFailure("gst_switch.py: \(run.status) \(String(decoding: run.stdout + run.stderr, as: UTF8.self).suffix(2000))\n\(server.log.suffix(2000))")
        }
        let log = Self.logSince(server, mark)
        let old = Self.fetched(log, "/hls/noise.flac/", from, ext: "mp3"), new = Self.fetched(log, "/hls/noise.flac/", to, ext: "mp3")
        let lastSegment = Self.sourceSeconds * Self.rate / HLSRenditionGrid.segment
        #expect(old.first == 0 && new.last == lastSegment, "\(from) \(old), then \(to) \(new)")
        #expect(Set(old).isDisjoint(with: new) && Set(old).union(new) == Set(0...lastSegment),
                "each segment once, from one variant or the other: \(from) \(old), \(to) \(new)")
        let switchSegment = try #require(new.min())
        #expect(switchSegment >= 1, "the switch is mid-track: \(to) from segment \(switchSegment)")

        let timeline = try Self.timeline(root, output, [try #require(references[from]), try #require(references[to])])
        let context = "\(timeline)"
        #expect(timeline.silent.isEmpty, "no dropout: \(context)")
        // One offset throughout: HLS packed audio carries no encoder delay, so GStreamer keeps the
        // raw decode's 1,105 frames in front (LAME's 576 and the decoder's 529).
        #expect(Set(timeline.runs.map(\.shift)) == [-HLSRenditionGrid.delay], "one offset, no gap, nothing twice: \(context)")
        // Only the first window (mostly the priming), the switch's and the last (past the source's end) may match nothing.
        #expect(timeline.unmatched.filter { $0 > 0 && $0 < timeline.frames - 2 * timeline.window }.count <= 1, "\(context)")
        #expect((timeline.source_frames + HLSRenditionGrid.delay..<(timeline.source_frames + HLSRenditionGrid.delay + 1152)).contains(timeline.frames),
                "length: \(timeline.frames) frames against the source's \(timeline.source_frames) + \(HLSRenditionGrid.delay)")
        // The old variant up to the switch, the new one after it: the switch falls on the grid, at
        // the first segment the access log shows from the new variant.
        let runs = timeline.reference_runs
        #expect(runs.map(\.reference) == [0, 1], "old, then new: \(context)")
        #expect(runs.allSatisfy { $0.median_snr >= 40 }, "each stretch is that variant's decode: \(context)")
        if runs.count == 2 {
            let seam = switchSegment * HLSRenditionGrid.segment
            #expect(runs[0].end <= seam && seam <= runs[1].start, "switch at frame \(seam) (segment \(switchSegment)): \(context)")
            #expect(runs[1].start - runs[0].end <= timeline.window, "\(context)")
        }
        #expect(server.process.isRunning)
    }
}
