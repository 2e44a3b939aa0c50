import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// HLS written by ffmpeg (and packed audio cut by ffmpeg's segment muxer) from the media
/// library, served by the real streamd and played by streamplay.
enum HLSFixtures {
    static var ffmpeg: String { which("ffmpeg") ?? "/usr/bin/ffmpeg" }

    /// `ffmpeg -f hls` of `file` into `dir/name/index.m3u8` (TS segments, or fMP4 ones).
    static func hls(_ file: URL, into dir: URL, name: String, fmp4: Bool = false, segmentSeconds: Int = 6,
                    extra: [String] = []) throws -> URL {
        let out = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        var args = ["-nostdin", "-v", "error", "-y", "-i", file.path, "-map", "0:a", "-c", "copy", "-f", "hls",
                    "-hls_time", "\(segmentSeconds)", "-hls_playlist_type", "vod"]
        if fmp4 { args += ["-hls_segment_type", "fmp4"] }
        args += extra + [out.appendingPathComponent("index.m3u8").path]
        let run = try runCommand(ffmpeg, args)
        guard run.status == 0 else { throw TestFailure("ffmpeg hls: \(String(decoding: run.stderr, as: UTF8.self))") }
        return out.appendingPathComponent("index.m3u8")
    }

    /// Packed-audio segments (RFC 8216 3.4): ffmpeg's segment muxer cuts the stream at frame
    /// boundaries without tags, and each segment gets an ID3v2.4 PRIV timestamp tag built here.
    static func packed(_ file: URL, into dir: URL, name: String, format: String, ext: String) throws -> URL {
        let out = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let list = out.appendingPathComponent("index.m3u8")
        var args = ["-nostdin", "-v", "error", "-y", "-i", file.path, "-map", "0:a", "-c", "copy", "-f", "segment",
                    "-segment_time", "6", "-segment_format", format, "-segment_list", list.path,
                    "-segment_list_type", "m3u8"]
        if format == "mp3" { args += ["-segment_format_options", "write_xing=0:id3v2_version=0"] }
        args.append(out.appendingPathComponent("seg%d.\(ext)").path)
        let run = try runCommand(ffmpeg, args)
        guard run.status == 0 else { throw TestFailure("ffmpeg segment: \(String(decoding: run.stderr, as: UTF8.self))") }
        // Stamp each segment with its start time (the EXTINF sum, in 90 kHz units).
        var start = 0.0
        var pendingDuration = 0.0
        for line in try String(contentsOf: list, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("#EXTINF:") {
                pendingDuration = Double(line.dropFirst(8).split(separator: ",").first ?? "") ?? 0
            } else if !line.hasPrefix("#") {
                let segment = out.appendingPathComponent(String(line))
                let body = try Data(contentsOf: segment)
                let tag = id3Timestamp(UInt64((start * 90_000).rounded()) + 126_000)
                try (Data(tag) + body).write(to: segment)
                start += pendingDuration
            }
        }
        return list
    }

    /// An ID3v2.4 tag holding only the PRIV transportStreamTimestamp frame.
    static func id3Timestamp(_ pts: UInt64) -> [UInt8] {
        let data = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
            + (0..<8).map { UInt8(pts >> (56 - 8 * UInt64($0)) & 0xFF) }
        let frame = Array("PRIV".utf8) + synchsafe(data.count) + [0, 0] + data
        return Array("ID3".utf8) + [4, 0, 0] + synchsafe(frame.count) + frame
    }

    /// EXTINF durations of a media playlist, in order.
    static func durations(_ playlist: URL) throws -> [Double] {
        try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("#EXTINF:") }
            .map { Double($0.dropFirst(8).split(separator: ",").first ?? "") ?? 0 }
    }

    /// Sample frames where each segment after the first starts (the joins).
    static func joins(_ playlist: URL, rate: Int) throws -> [Int] {
        var t = 0.0
        return try durations(playlist).dropLast().map { d in
            t += d
            return Int((t * Double(rate)).rounded())
        }
    }

    /// The media sequence number in a `--verbose` line "… hls: segment N (URL): …".
    static func sequence(inSegmentLine line: Substring) -> Int? {
        guard let range = line.range(of: "hls: segment ") else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    static func url(_ server: StreamdProcess, _ dir: URL, _ file: URL) -> String {
        let relative = String(file.path.dropFirst(dir.path.count + 1))
        return "\(server.baseURL)/media/" + (relative.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? relative)
    }

    /// SNR (dB) of `test` against `reference` over the frames `range` (interleaved `channels`).
    static func snr(_ reference: [Int16], _ test: [Int16], frames range: Range<Int>, channels: Int) -> Double {
        let lower = max(0, range.lowerBound) * channels
        let upper = min(min(reference.count, test.count), range.upperBound * channels)
        guard lower < upper else { return -.infinity }
        var signal = 0.0, noise = 0.0
        for i in lower..<upper {
            let r = Double(reference[i]), d = r - Double(test[i])
            signal += r * r
            noise += d * d
        }
        if noise == 0 { return .infinity }
        return 10 * log10(max(signal, 1) / noise)
    }

    /// The largest step between neighbouring samples of one channel over `range` (a click shows as a jump).
    static func largestStep(_ samples: [Int16], frames range: Range<Int>, channels: Int) -> Int {
        var largest = 0
        for frame in max(1, range.lowerBound)..<min(samples.count / channels, range.upperBound) {
            for c in 0..<channels {
                largest = max(largest, abs(Int(samples[frame * channels + c]) - Int(samples[(frame - 1) * channels + c])))
            }
        }
        return largest
    }
}

@Suite(.serialized, .ownThreads) struct HLSPlayerTests {
    static var streamplay: String { PlayerTests.streamplay }

    func play(_ url: String, _ extra: [String] = [], into out: String) throws -> (status: Int32, stderr: String, stats: [String: Any]?) {
        let run = try runCommand(Self.streamplay, [url, "--output", "wav:\(out)", "--stats"] + extra)
        let stats = try? PlayerTests.stats(run.stdout)
        return (run.status, String(decoding: run.stderr, as: UTF8.self), stats)
    }

    static let mp3Files = ["cbr-128k-44k.mp3", "vbr-v2.mp3", "mono-48k.mp3"].map { TestPaths.media.appendingPathComponent($0) }

    /// MPEG-TS and fMP4 carry no Xing/LAME frame, so the file's own decode without gapless
    /// trimming (mpg123 --no-gapless) is what the HLS stream must reproduce, bit for bit, across
    /// every join. MP3 in fMP4 (object type 0x6B) is unwrapped to a plain MP3 stream by the HLS layer.
    @Test(arguments: mp3Files)
    func tsAndFMP4SegmentsOfMP3_areBitExact(file: URL) throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let playlists = [try HLSFixtures.hls(file, into: dir, name: "ts"), try HLSFixtures.hls(file, into: dir, name: "fmp4", fmp4: true)]
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let reference = dir.appendingPathComponent("ref.wav").path
        try runCommand(try #require(which("mpg123")), ["-q", "--no-gapless", "-w", reference, file.path])
        let a = try wavSamples(reference)
        for playlist in playlists {
            let kind = playlist.deletingLastPathComponent().lastPathComponent
            let ours = dir.appendingPathComponent("ours-\(kind).wav").path
            let run = try play(HLSFixtures.url(server, dir, playlist), into: ours)
            #expect(run.status == 0, "\(kind): \(run.stderr)")
            let b = try wavSamples(ours)
            #expect(a.count == b.count, "\(file.lastPathComponent) \(kind): \(b.count) samples, the file decodes to \(a.count)")
            #expect(a == b, "\(file.lastPathComponent): HLS (\(kind)) output is bit-exact with the file's decode")
            let joins = try HLSFixtures.joins(playlist, rate: run.stats?["sample_rate"] as? Int ?? 44_100)
            #expect(joins.count >= 3, "several segment joins were crossed")
            #expect(run.stats?["container"] as? String == "hls")
            #expect(abs((run.stats?["duration_s"] as? Double ?? 0) - (try HLSFixtures.durations(playlist).reduce(0, +))) < 0.001)
        }
    }

    @Test func packedMP3Segments_areBitExact_andTheirID3TagsSkipped() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        let playlist = try HLSFixtures.packed(file, into: dir, name: "packed", format: "mp3", ext: "mp3")
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let ours = dir.appendingPathComponent("ours.wav").path
        let run = try play(HLSFixtures.url(server, dir, playlist), ["--verbose"], into: ours)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("packed audio"), "segments were read as packed audio")
        #expect(run.stderr.contains("starts at 1.4 s"), "the first PRIV timestamp was read")
        let reference = dir.appendingPathComponent("ref.wav").path
        try runCommand(try #require(which("mpg123")), ["-q", "--no-gapless", "-w", reference, file.path])
        #expect(try wavSamples(reference) == wavSamples(ours), "packed MP3 output is bit-exact with the file's decode")
    }

    /// The HLS layer strips each packed segment's ID3 tag; without it (segments simply joined into
    /// one file) the MP3 frame reader and the ADTS converter must resync over the tags cleanly.
    @Test func packedSegmentsJoinedWithTheirTags_playCleanlyAsOneFile() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (name, format, ext) in [("cbr-128k-44k.mp3", "mp3", "mp3"), ("adts.aac", "adts", "aac")] {
            let file = TestPaths.media.appendingPathComponent(name)
            let playlist = try HLSFixtures.packed(file, into: dir, name: ext, format: format, ext: ext)
            var joined = Data()
            for line in try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
                joined += try Data(contentsOf: playlist.deletingLastPathComponent().appendingPathComponent(String(line)))
            }
            let single = dir.appendingPathComponent("joined.\(ext)")
            try joined.write(to: single)
            let viaHLS = dir.appendingPathComponent("hls-\(ext).wav").path, viaFile = dir.appendingPathComponent("file-\(ext).wav").path
            #expect(try runCommand(Self.streamplay, [playlist.path, "--output", "wav:\(viaHLS)"]).status == 0)
            let run = try runCommand(Self.streamplay, [single.path, "--output", "wav:\(viaFile)"])
            #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
            #expect(try wavSamples(viaHLS) == wavSamples(viaFile), "\(name): tags mid-stream leave no glitch")
        }
    }

    /// AAC: SNR against ffmpeg's decode of the original file, over the whole track and in a
    /// window around every segment join (no gap, no click).
    func checkAAC(_ playlist: URL, original: URL, dir: URL, server: StreamdProcess, label: String) throws {
        let ours = dir.appendingPathComponent("\(label).wav").path
        let run = try play(HLSFixtures.url(server, dir, playlist), into: ours)
        #expect(run.status == 0, "\(label): \(run.stderr)")
        let reference = dir.appendingPathComponent("ref-\(label).wav").path
        try runCommand(HLSFixtures.ffmpeg, ["-v", "error", "-y", "-i", original.path, "-f", "wav", reference])
        let a = try wavSamples(reference), b = try wavSamples(ours)
        // libfaad2 does not output the first (priming) frame; ffmpeg may: try both alignments.
        let offsets = [0, 1024, 2048]
        let shifted = offsets.map { Array(a.dropFirst($0 * 2)) }
        let scores = shifted.map { HLSFixtures.snr($0, b, frames: 0..<(b.count / 2), channels: 2) }
        let best = scores.indices.max { scores[$0] < scores[$1] } ?? 0
        #expect(scores[best] >= 60, "\(label): SNR \(scores[best]) dB against ffmpeg's decode of the file")
        #expect(abs(shifted[best].count - b.count) <= 2048 * 2, "\(label): \(b.count / 2) frames vs \(shifted[best].count / 2)")
        let joins = try HLSFixtures.joins(playlist, rate: 44_100)
        #expect(joins.count >= 3)
        for join in joins {
            let window = (join - 3072)..<(join + 3072)
            let local = HLSFixtures.snr(shifted[best], b, frames: window, channels: 2)
            #expect(local >= 60, "\(label): SNR \(local) dB around the join at frame \(join)")
            let step = HLSFixtures.largestStep(b, frames: window, channels: 2)
            let referenceStep = HLSFixtures.largestStep(shifted[best], frames: window, channels: 2)
            #expect(step <= referenceStep + 64, "\(label): a jump of \(step) at the join at frame \(join) (reference \(referenceStep))")
        }
        if let tool = TestPaths.pcmCompare {
            let compare = try runCommand("/usr/bin/env", ["python3", tool, reference, ours, "--min-snr", "60",
                                                          "--max-offset", "2048", "--max-len-diff", "2048"])
            #expect(compare.status == 0, "\(label): pcm-compare: \(String(decoding: compare.stdout, as: UTF8.self))")
        }
    }

    @Test func aacInTSPackedAndFMP4Segments_matchTheFilesDecode() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let m4a = TestPaths.media.appendingPathComponent("track.m4a")
        let adts = TestPaths.media.appendingPathComponent("adts.aac")
        let fromM4A = try HLSFixtures.hls(m4a, into: dir, name: "m4a-ts")
        let fromADTS = try HLSFixtures.hls(adts, into: dir, name: "adts-ts")
        let packed = try HLSFixtures.packed(m4a, into: dir, name: "packed-aac", format: "adts", ext: "aac")
        let fmp4 = try HLSFixtures.hls(m4a, into: dir, name: "m4a-fmp4", fmp4: true)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        try checkAAC(fromM4A, original: m4a, dir: dir, server: server, label: "m4a-ts")
        try checkAAC(fromADTS, original: adts, dir: dir, server: server, label: "adts-ts")
        try checkAAC(packed, original: m4a, dir: dir, server: server, label: "packed-aac")
        try checkAAC(fmp4, original: m4a, dir: dir, server: server, label: "m4a-fmp4")
    }

    /// ffmpeg's `-hls_flags single_file`: every segment a byte range of one file, and for fMP4
    /// the init section too (EXT-X-MAP BYTERANGE); the same samples as the one-file-per-segment form.
    @Test func singleFileHLS_byteRangesAndMapByteRange_playLikeSeparateSegments() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let mp3 = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        let m4a = TestPaths.media.appendingPathComponent("track.m4a")
        let pairs = [
            (try HLSFixtures.hls(mp3, into: dir, name: "ts"), try HLSFixtures.hls(mp3, into: dir, name: "ts1", extra: ["-hls_flags", "single_file"])),
            (try HLSFixtures.hls(m4a, into: dir, name: "fm", fmp4: true),
             try HLSFixtures.hls(m4a, into: dir, name: "fm1", fmp4: true, extra: ["-hls_flags", "single_file"])),
        ]
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for (separate, single) in pairs {
            let text = try String(contentsOf: single, encoding: .utf8)
            #expect(text.contains("#EXT-X-BYTERANGE:"), "ffmpeg wrote byte ranges")
            let a = dir.appendingPathComponent("a.wav").path, b = dir.appendingPathComponent("b.wav").path
            #expect(try play(HLSFixtures.url(server, dir, separate), into: a).status == 0)
            let run = try play(HLSFixtures.url(server, dir, single), into: b)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try wavSamples(a) == wavSamples(b), "\(single.deletingLastPathComponent().lastPathComponent): same samples")
        }
    }

    @Test func seekInVOD_landsOnTheSampleOfTheFullDecode() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let mp3 = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), into: dir, name: "mp3")
        let aac = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("track.m4a"), into: dir, name: "aac")
        let fmp4 = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("track.m4a"), into: dir, name: "fmp4", fmp4: true)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        // 20 s is inside the fourth segment; 12.03 s is just after the third segment's start (12.016 s),
        // within the decoder warm-up, so the player must start from the segment before.
        for (playlist, start) in [(mp3, 20.0), (mp3, 12.03), (aac, 20.0), (aac, 12.03), (fmp4, 20.0), (fmp4, 12.03), (fmp4, 47.5)] {
            let full = dir.appendingPathComponent("full.wav").path
            let part = dir.appendingPathComponent("part.wav").path
            let url = HLSFixtures.url(server, dir, playlist)
            #expect(try play(url, into: full).status == 0)
            let run = try play(url, ["--start", "\(start)", "--duration", "3"], into: part)
            #expect(run.status == 0, "\(run.stderr)")
            let all = try wavSamples(full), span = try wavSamples(part)
            let first = Int((start * 44_100).rounded()) * 2
            #expect(span.count == 3 * 44_100 * 2)
            #expect(Array(all[first..<(first + span.count)]) == span, "\(playlist.deletingLastPathComponent().lastPathComponent) --start \(start): exact samples")
            #expect(run.stats?["seek_ms"] is Double)
        }
    }

    /// `-hls_flags round_durations` writes whole-second EXTINF (version 2): the segments' own
    /// timestamps (TS PTS, fMP4 tfdt) place the seek, still on the exact sample.
    @Test func seekWithWholeSecondEXTINF_usesTheSegmentsTimestamps() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let mp3 = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), m4a = TestPaths.media.appendingPathComponent("track.m4a")
        let rounded = ["-hls_flags", "round_durations"]
        let playlists = [try HLSFixtures.hls(mp3, into: dir, name: "mp3-ts", extra: rounded),
                         try HLSFixtures.hls(m4a, into: dir, name: "aac-ts", extra: rounded),
                         try HLSFixtures.hls(m4a, into: dir, name: "aac-fmp4", fmp4: true, extra: rounded)]
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for playlist in playlists {
            let label = playlist.deletingLastPathComponent().lastPathComponent
            #expect(try String(contentsOf: playlist, encoding: .utf8).contains("#EXTINF:6,"), "\(label): whole-second EXTINF")
            let url = HLSFixtures.url(server, dir, playlist)
            let full = dir.appendingPathComponent("full.wav").path, part = dir.appendingPathComponent("part.wav").path
            #expect(try play(url, into: full).status == 0)
            let all = try wavSamples(full)
            for start in [20.0, 41.0] where start < Double(all.count / 2) / 44_100 - 4 {
                let run = try play(url, ["--start", "\(start)", "--duration", "3", "--verbose"], into: part)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stderr.contains("by its timestamps"), "\(label): the segment start was measured")
                let span = try wavSamples(part)
                let first = Int((start * 44_100).rounded()) * 2
                #expect(span.count == 3 * 44_100 * 2)
                #expect(Array(all[first..<(first + span.count)]) == span, "\(label) --start \(start): exact samples")
            }
        }
    }

    @Test func masterPlaylist_choosesTheVariantThatFits() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), into: dir, name: "hi")
        _ = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("mono-48k.mp3"), into: dir, name: "lo")
        try """
        #EXTM3U
        #EXT-X-STREAM-INF:BANDWIDTH=5000000,CODECS="avc1.42e01e"
        video/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=140000,CODECS="mp4a.40.34"
        hi/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=110000,CODECS="mp4a.40.34"
        lo/index.m3u8
        """.write(to: dir.appendingPathComponent("master.m3u8"), atomically: true, encoding: .utf8)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let url = "\(server.baseURL)/media/master.m3u8"
        let out = dir.appendingPathComponent("out.wav").path
        for (limit, rate, channels) in [(nil, 44_100, 2), (120_000, 48_000, 1), (1_000, 48_000, 1), (140_000, 44_100, 2)] as [(Int?, Int, Int)] {
            let run = try play(url, (limit.map { ["--max-bitrate", "\($0)"] } ?? []) + ["--duration", "1"], into: out)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stats?["sample_rate"] as? Int == rate, "--max-bitrate \(limit.map(String.init) ?? "none")")
            #expect(run.stats?["channels"] as? Int == channels)
        }
        // --info describes the media playlist the same choice leads to, from its first segment.
        for (limit, rate, channels) in [(nil, 44_100, 2), (120_000, 48_000, 1)] as [(Int?, Int, Int)] {
            let info = try runCommand(Self.streamplay, ["--info", url] + (limit.map { ["--max-bitrate", "\($0)"] } ?? []))
            #expect(info.status == 0, "\(String(decoding: info.stderr, as: UTF8.self))")
            let object = try #require(try JSONSerialization.jsonObject(with: info.stdout) as? [String: Any])
            #expect(object["container"] as? String == "hls")
            #expect(object["codec"] as? String == "mp3")
            #expect(object["sample_rate"] as? Int == rate)
            #expect(object["channels"] as? Int == channels)
            #expect(object["segment_format"] as? String == "MPEG-TS")
            #expect(object["live"] as? Bool == false)
            #expect((object["media_playlist"] as? String ?? "").hasSuffix(rate == 48_000 ? "/lo/index.m3u8" : "/hi/index.m3u8"))
            #expect((object["segments"] as? Int ?? 0) >= 5)
        }
    }

    /// A video master playlist whose audio is an EXT-X-MEDIA rendition: the rendition plays.
    @Test func audioRenditionOfAVideoVariant_isWhatPlays() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("mono-48k.mp3"), into: dir, name: "commentary")
        _ = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), into: dir, name: "main")
        try """
        #EXTM3U
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="Commentary",DEFAULT=NO,URI="commentary/index.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="Main",DEFAULT=YES,URI="main/index.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS="avc1.42e01e,mp4a.40.34",AUDIO="aud"
        video/index.m3u8
        """.write(to: dir.appendingPathComponent("master.m3u8"), atomically: true, encoding: .utf8)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let run = try play("\(server.baseURL)/media/master.m3u8", ["--duration", "1", "--verbose"],
                           into: dir.appendingPathComponent("out.wav").path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("audio rendition 'Main' of group aud"), "\(run.stderr)")
        #expect(run.stats?["sample_rate"] as? Int == 44_100, "the DEFAULT=YES rendition (main, 44.1 kHz) played")
    }

    @Test func byteRangePlaylist_ofOneTransportStream_isBitExact() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        let playlist = try HLSFixtures.hls(file, into: dir, name: "ts")
        // All segments in one file, addressed by EXT-X-BYTERANGE (offsets implicit after the first).
        var all = Data()
        var text = "#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for (i, duration) in try HLSFixtures.durations(playlist).enumerated() {
            let segment = try Data(contentsOf: playlist.deletingLastPathComponent().appendingPathComponent("index\(i).ts"))
            text += "#EXTINF:\(duration),\n#EXT-X-BYTERANGE:\(segment.count)\(i == 0 ? "@0" : "")\nall.ts\n"
            all += segment
        }
        text += "#EXT-X-ENDLIST\n"
        try all.write(to: dir.appendingPathComponent("all.ts"))
        try text.write(to: dir.appendingPathComponent("ranges.m3u8"), atomically: true, encoding: .utf8)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let ours = dir.appendingPathComponent("ours.wav").path
        let run = try play("\(server.baseURL)/media/ranges.m3u8", into: ours)
        #expect(run.status == 0, "\(run.stderr)")
        let reference = dir.appendingPathComponent("ref.wav").path
        try runCommand(try #require(which("mpg123")), ["-q", "--no-gapless", "-w", reference, file.path])
        #expect(try wavSamples(reference) == wavSamples(ours), "byte-range segments are bit-exact")
        #expect(run.stats?["bytes_downloaded"] as? Int ?? 0 < all.count + 4096, "only the ranges were fetched")
    }

    @Test func discontinuity_sameFormatPlaysOn_otherFormatIsAClearError() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), into: dir, name: "a")
        _ = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-no-tag.mp3"), into: dir, name: "b")
        _ = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("mono-48k.mp3"), into: dir, name: "c")
        let durationsA = try HLSFixtures.durations(a)
        func playlist(_ second: String) -> String {
            "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n"
                + "#EXTINF:\(durationsA[0]),\na/index0.ts\n#EXTINF:\(durationsA[1]),\na/index1.ts\n"
                + "#EXT-X-DISCONTINUITY\n#EXTINF:6.0,\n\(second)/index0.ts\n#EXT-X-ENDLIST\n"
        }
        try playlist("b").write(to: dir.appendingPathComponent("same.m3u8"), atomically: true, encoding: .utf8)
        try playlist("c").write(to: dir.appendingPathComponent("other.m3u8"), atomically: true, encoding: .utf8)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let out = dir.appendingPathComponent("out.wav").path
        let same = try play("\(server.baseURL)/media/same.m3u8", into: out)
        #expect(same.status == 0, "\(same.stderr)")
        let frames = (same.stats?["frames_out"] as? Int) ?? 0
        #expect(abs(Double(frames) / 44_100 - (durationsA[0] + durationsA[1] + 6.0)) < 0.1, "all three segments played: \(frames) frames")
        let other = try play("\(server.baseURL)/media/other.m3u8", into: out)
        #expect(other.status == 1)
        #expect(other.stderr.contains("changes the audio format (mp3 44100 Hz 2 ch → mp3 48000 Hz 1 ch)"), "\(other.stderr)")
    }
}

/// Hostile playlists: a clear one-line error and exit status, bounded time and memory.
@Suite(.serialized, .ownThreads) struct HLSHostileTests {
    /// streamplay under /usr/bin/time: exit status, stderr and peak RSS in KiB.
    func measured(_ arguments: [String], dir: URL) throws -> (status: Int32, stderr: String, rssKiB: Int) {
        let report = dir.appendingPathComponent("time-\(UUID().uuidString.prefix(6)).txt").path
        let time = try #require(which("time") ?? (FileManager.default.fileExists(atPath: "/usr/bin/time") ? "/usr/bin/time" : nil),
                                "/usr/bin/time (Debian package 'time', installed by scripts/deps.sh)")
        let run = try runCommand(time, ["-f", "%M", "-o", report, PlayerTests.streamplay] + arguments, timeout: 60)
        let rss = Int((try? String(contentsOfFile: report, encoding: .utf8))?.split(separator: "\n").last ?? "") ?? -1
        return (run.status, String(decoding: run.stderr, as: UTF8.self), rss)
    }

    @Test func hostilePlaylists_failWithClearErrors() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), into: dir, name: "ts")
        try "<!DOCTYPE html><html><body>not found</body></html>".write(to: dir.appendingPathComponent("page.html"),
                                                                       atomically: true, encoding: .utf8)
        let head = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n"
        let cases: [(name: String, text: String, status: Int32, message: String)] = [
            ("huge.m3u8", head + "#EXTINF:99999999,\nts/index0.ts\n#EXT-X-ENDLIST\n", 1, "EXTINF duration 99999999 exceeds the limit of 3600 s"),
            ("over.m3u8", head + "#EXTINF:600,\nts/index0.ts\n#EXT-X-ENDLIST\n", 1, "EXTINF 600.0 exceeds EXT-X-TARGETDURATION 6"),
            ("negative.m3u8", head + "#EXTINF:-6,\nts/index0.ts\n#EXT-X-ENDLIST\n", 1, "EXTINF duration -6 is negative"),
            ("missing.m3u8", head + "#EXTINF:6,\nts/index0.ts\nts/index1.ts\n#EXT-X-ENDLIST\n", 1, "segment 'ts/index1.ts' without an EXTINF duration"),
            ("empty-duration.m3u8", head + "#EXTINF:,\nts/index0.ts\n#EXT-X-ENDLIST\n", 1, "EXTINF without a duration"),
            ("self.m3u8", head + "#EXTINF:6,\nself.m3u8\n#EXT-X-ENDLIST\n", 1, "is a playlist, not a media segment"),
            ("master-self.m3u8", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=128000\nmaster-self.m3u8\n", 1, "is another master playlist"),
            ("html.m3u8", head + "#EXTINF:6,\npage.html\n#EXT-X-ENDLIST\n", 1, "is not audio (starts with '<!DOCTYPE html><')"),
            ("gone.m3u8", head + "#EXTINF:6,\nts/missing.ts\n#EXT-X-ENDLIST\n", 3, "HTTP 404"),
            ("key.m3u8", head + "#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\"\n#EXTINF:6,\nts/index0.ts\n", 1, "encrypted segments"),
            ("page.m3u8", "<!DOCTYPE html><html>", 1, "not an M3U8 playlist (starts with '<!DOCTYPE html><html>')"),
        ]
        for c in cases { try c.text.write(to: dir.appendingPathComponent(c.name), atomically: true, encoding: .utf8) }
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for c in cases {
            let started = Date()
            let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/\(c.name)", "--output", "null"], timeout: 30)
            let stderr = String(decoding: run.stderr, as: UTF8.self)
            #expect(run.status == c.status, "\(c.name): exit \(run.status): \(stderr)")
            #expect(stderr.contains(c.message), "\(c.name): \(stderr)")
            #expect(stderr.split(separator: "\n").count == 1, "\(c.name): one line on stderr: \(stderr)")
            #expect(Date().timeIntervalSince(started) < 10, "\(c.name) failed promptly")
        }
    }

    @Test func staleLivePlaylist_givesUpClearly() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let segments = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), into: dir, name: "s",
                                           segmentSeconds: 1)
        let durations = try HLSFixtures.durations(segments)
        // A live playlist (no ENDLIST) that never grows.
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:40\n"
        for i in 0..<3 { text += "#EXTINF:\(durations[i]),\ns/index\(i).ts\n" }
        try text.write(to: dir.appendingPathComponent("stale.m3u8"), atomically: true, encoding: .utf8)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let started = Date()
        let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/stale.m3u8", "--output", "null", "--stall-timeout", "1"],
                                 timeout: 30)
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 3, "\(stderr)")
        #expect(stderr.contains("the live playlist has not grown for 3 s"), "\(stderr)")
        #expect(Date().timeIntervalSince(started) < 10)
    }

    /// The throttle bounds what is prefetched: playing 3 s of a 10,000-segment playlist in real
    /// time downloads the throttle's worth and a segment, not the stream.
    @Test func prefetch_isBoundedByTheThrottle() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let playlist = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), into: dir, name: "ts")
        let segmentBytes = try Data(contentsOf: playlist.deletingLastPathComponent().appendingPathComponent("index0.ts")).count
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for _ in 0..<10_000 { text += "#EXTINF:6.008167,\nts/index0.ts\n" }
        try (text + "#EXT-X-ENDLIST\n").write(to: dir.appendingPathComponent("long.m3u8"), atomically: true, encoding: .utf8)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/long.m3u8", "--output", "null", "--realtime",
                                                          "--duration", "3", "--buffer-bytes", "262144", "--stats"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let stats = try PlayerTests.stats(run.stdout)
        let peak = try #require(stats["peak_buffer_bytes"] as? Int)
        let downloaded = try #require(stats["bytes_downloaded"] as? Int)
        #expect(peak <= 262_144, "throttle peak \(peak)")
        #expect(peak > 131_072, "the throttle did fill (peak \(peak))")
        #expect(downloaded <= 262_144 + 3 * segmentBytes + text.utf8.count, "downloaded \(downloaded) bytes")
        #expect(stats["duration_s"] as? Double ?? 0 > 60_000, "a 16-hour playlist")
    }

    @Test func hugePlaylists_boundedMemory() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try HLSFixtures.hls(TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"), into: dir, name: "ts")
        func playlist(_ count: Int) -> String {
            var text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n"
            text.reserveCapacity(count * 30)
            for _ in 0..<count { text += "#EXTINF:6.008167,\nts/index0.ts\n" }
            return text + "#EXT-X-ENDLIST\n"
        }
        try playlist(6).write(to: dir.appendingPathComponent("small.m3u8"), atomically: true, encoding: .utf8)
        try playlist(10_000).write(to: dir.appendingPathComponent("ten-thousand.m3u8"), atomically: true, encoding: .utf8)
        try playlist(200_000).write(to: dir.appendingPathComponent("too-many.m3u8"), atomically: true, encoding: .utf8)
        // 17 MiB of comment lines: over the 16 MiB playlist limit before any parsing.
        var huge = Data("#EXTM3U\n#EXT-X-TARGETDURATION:6\n".utf8)
        huge.append(Data(repeating: UInt8(ascii: "#"), count: 17 << 20))
        try huge.write(to: dir.appendingPathComponent("huge.m3u8"))
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let small = try measured(["\(server.baseURL)/media/small.m3u8", "--output", "null", "--duration", "3"], dir: dir)
        #expect(small.status == 0, "\(small.stderr)")
        let big = try measured(["\(server.baseURL)/media/ten-thousand.m3u8", "--output", "null", "--duration", "3", "--stats"], dir: dir)
        #expect(big.status == 0, "10,000 segments play: \(big.stderr)")
        #expect(!TestTiming.memoryBoundsApply || big.rssKiB - small.rssKiB < 20 * 1024, "10,000 segments cost \(big.rssKiB - small.rssKiB) KiB more than 6")
        let tooMany = try measured(["\(server.baseURL)/media/too-many.m3u8", "--output", "null"], dir: dir)
        #expect(tooMany.status == 1)
        #expect(tooMany.stderr.contains("more than 100000 segments"), "\(tooMany.stderr)")
        #expect(!TestTiming.memoryBoundsApply || tooMany.rssKiB - small.rssKiB < 64 * 1024, "a 200,000-segment playlist is refused in bounded memory (\(tooMany.rssKiB) KiB)")
        let huge17 = try measured(["\(server.baseURL)/media/huge.m3u8", "--output", "null"], dir: dir)
        #expect(huge17.status == 1)
        #expect(huge17.stderr.contains("is larger than 16777216 bytes"), "\(huge17.stderr)")
        #expect(!TestTiming.memoryBoundsApply || huge17.rssKiB - small.rssKiB < 40 * 1024, "a 17 MiB playlist is refused in bounded memory (\(huge17.rssKiB) KiB)")
    }
}

/// A live HLS stream for tests: a sliding window of 5 of ffmpeg's TS segments, advanced by one
/// segment every segment duration by rewriting the playlist in the folder streamd serves
/// (looping over the track with EXT-X-DISCONTINUITY at the wrap).
final class LivePlaylistPublisher: @unchecked Sendable {
    // @unchecked: `stopped` is guarded by `lock`; the rest is immutable after init.
    let playlist: URL
    let durations: [Double]
    let segmentDirectory: String
    let window = 5
    private let lock = NSLock()
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init(folder: URL, segments: URL) throws {
        playlist = folder.appendingPathComponent("live.m3u8")
        durations = try HLSFixtures.durations(segments)
        segmentDirectory = segments.deletingLastPathComponent().lastPathComponent
        try publish(first: 0)
        let thread = Thread { [self] in
            defer { done.signal() }
            var first = 0
            let started = Date()
            while !lock.withLock({ stopped }) {
                // Advance once a segment's worth of time has passed since the previous step.
                let due = started.addingTimeInterval(Double(first + 1) * durations[0])
                let wait = due.timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: min(wait, 0.05)); continue }
                first += 1
                try? publish(first: first)
            }
        }
        thread.start()
    }

    /// Writes the window starting at media sequence `first` (atomically: a reader never sees half).
    func publish(first: Int) throws {
        let target = Int(durations.max()?.rounded() ?? 2)
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(target)\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
        text += "#EXT-X-DISCONTINUITY-SEQUENCE:\(first / durations.count)\n"
        for sequence in first..<(first + window) {
            let index = sequence % durations.count
            if index == 0 && sequence > first { text += "#EXT-X-DISCONTINUITY\n" }
            text += "#EXTINF:\(durations[index]),\n\(segmentDirectory)/index\(index).ts\n"
        }
        try text.write(to: playlist, atomically: true, encoding: .utf8)
    }

    func stop() {
        lock.withLock { stopped = true }
        done.wait()
    }
}

@Suite(.serialized, .ownThreads) struct HLSLiveTests {
    @Test func livePlaylist_joinsThreeSegmentsFromTheEdge_followsReloads_noUnderruns() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        let segments = try HLSFixtures.hls(file, into: dir, name: "seg", segmentSeconds: 2)
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let publisher = try LivePlaylistPublisher(folder: dir, segments: segments)
        defer { publisher.stop() }
        let out = dir.appendingPathComponent("live.wav").path
        let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/live.m3u8", "--output", "wav:\(out)", "--realtime",
                                                          "--duration", "12", "--stats", "--verbose"], timeout: 60)
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 0, "\(stderr)")
        let stats = try PlayerTests.stats(run.stdout)
        #expect(stats["underruns"] as? Int == 0, "no underruns: \(stats)")
        #expect(stats["frames_out"] as? Int == 12 * 44_100, "--duration 12 ends the live stream cleanly")
        #expect(stats["duration_s"] is NSNull || stats["duration_s"] == nil, "a live stream has no duration")
        let reloads = stderr.split(separator: "\n").filter { $0.contains("hls: reload:") }.count
        #expect(reloads >= 4, "\(reloads) playlist reloads")
        // It joined three segments from the live edge of a 5-segment window: sequence first + 2.
        let firstLine = try #require(stderr.split(separator: "\n").first { $0.contains("hls: segment ") }, "\(stderr)")
        let joined = try #require(HLSFixtures.sequence(inSegmentLine: firstLine), "\(firstLine)")
        let mediaLine = try #require(stderr.split(separator: "\n").first { $0.contains("live media playlist") })
        let sequence = try #require(Int(mediaLine.split(separator: " ").last ?? ""))
        #expect(joined == sequence + 2, "joined at \(joined), window starts at \(sequence)")
        // What played is the file's decode from that segment on (after a few frames of bit-reservoir warm-up).
        let reference = dir.appendingPathComponent("ref.wav").path
        try runCommand(try #require(which("mpg123")), ["-q", "--no-gapless", "-w", reference, file.path])
        let all = try wavSamples(reference), ours = try wavSamples(out)
        let start = Int((publisher.durations.prefix(joined % publisher.durations.count).reduce(0, +) * 44_100).rounded())
        let skip = 10 * 1152
        let length = min(ours.count / 2 - skip, all.count / 2 - start - skip)
        #expect(length > 5 * 44_100)
        #expect(Array(ours[(skip * 2)..<((skip + length) * 2)]) == Array(all[((start + skip) * 2)..<((start + skip + length) * 2)]),
                "live output is the file's decode from segment \(joined) on")
    }
}

/// HLS through a proxy that drops connections: the playlist and segment fetches are
/// retried on a new connection and the output stays bit-exact.
@Suite(.serialized, .ownThreads) struct HLSFaultTests {
    @Test func droppedConnections_areRetried_bitExact() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        let playlist = try HLSFixtures.hls(file, into: dir, name: "ts")
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        // The first connection dies in the middle of the second segment, the second one in the third,
        // right after a response header; later connections pass.
        let proxy = try FaultProxy(upstreamPort: server.port, faults: [.init(cutAfter: 150_000), .init(cutAfter: 105_800)])
        let relative = String(playlist.path.dropFirst(dir.path.count + 1))
        let ours = dir.appendingPathComponent("ours.wav").path
        let run = try runCommand(PlayerTests.streamplay, ["http://127.0.0.1:\(proxy.port)/media/\(relative)", "--output", "wav:\(ours)",
                                                          "--stats"], timeout: 60)
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let stats = try PlayerTests.stats(run.stdout)
        // The first drop is a failed transfer (counted, retried after a backoff); the second cuts a
        // response head on a kept-alive connection, which the fetcher re-asks at once on a new one.
        #expect((stats["reconnects"] as? Int ?? 0) >= 1, "\(stats)")
        #expect(proxy.accepted >= 3, "three connections: \(proxy.accepted)")
        let reference = dir.appendingPathComponent("ref.wav").path
        try runCommand(try #require(which("mpg123")), ["-q", "--no-gapless", "-w", reference, file.path])
        #expect(try wavSamples(reference) == wavSamples(ours), "the retried segments join without a glitch")
    }

    @Test func unreachableServer_isRetriedForRetryFor_thenGivesUpClearly() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Nothing listens on the proxy's upstream: every request fails to connect.
        let port = try freeLoopbackPort()
        let started = Date()
        let run = try runCommand(PlayerTests.streamplay, ["http://127.0.0.1:\(port)/live/index.m3u8", "--output", "null", "--retry-for", "2"],
                                 timeout: 30)
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 3, "\(stderr)")
        #expect(stderr.contains("source:"), "\(stderr)")
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed >= 1.5 && elapsed < 10, "retried for --retry-for seconds, then gave up (\(elapsed) s)")
    }
}
