import Foundation
import Testing
import TestSupport

/// `streamplay --info` on every file of the generated library, checked against ffprobe and
/// against ffmpeg's own decode length.
@Suite(.ownThreads) struct InfoVsFFprobeTests {
    struct FFprobe {
        var sampleRate: Int
        var channels: Int
        var duration: Double
        var startTime: Double
        var packets: Int
        /// The container's tags as ffprobe names them (title, artist, album, track).
        var tags: [String: String]
    }

    /// The tag fields `--info` prints, by their ffprobe names.
    static let tagKeys = ["title", "artist", "album", "track"]

    static func ffprobe(_ file: URL) throws -> FFprobe {
        let result = try runCommand(try #require(which("ffprobe")), [
            "-v", "error", "-count_packets", "-select_streams", "a:0", "-show_entries",
            "stream=sample_rate,channels,duration,start_time,nb_read_packets:format=duration:format_tags="
                + tagKeys.joined(separator: ","), "-of", "json", file.path,
        ])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first)
        let format = json["format"] as? [String: Any]
        let duration = Double(stream["duration"] as? String ?? "") ?? Double(format?["duration"] as? String ?? "") ?? -1
        return FFprobe(sampleRate: Int(stream["sample_rate"] as? String ?? "") ?? -1,
                       channels: stream["channels"] as? Int ?? -1, duration: duration,
                       startTime: Double(stream["start_time"] as? String ?? "") ?? 0,
                       packets: Int(stream["nb_read_packets"] as? String ?? "") ?? -1,
                       tags: format?["tags"] as? [String: String] ?? [:])
    }

    /// Samples per channel that ffmpeg decodes from the file (its gapless-trimmed length).
    static func ffmpegDecodedSamples(_ file: URL, channels: Int) throws -> Int {
        let result = try runCommand(try #require(which("ffmpeg")), ["-v", "error", "-i", file.path, "-f", "s16le", "-"])
        return result.stdout.count / (2 * channels)
    }

    static func info(_ file: URL) throws -> [String: Any] {
        let streamplay = TestPaths.binDir.appendingPathComponent("streamplay").path
        let result = try runCommand(streamplay, ["--info", file.path])
        #expect(result.status == 0, "streamplay --info \(file.lastPathComponent): \(String(decoding: result.stderr, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
    }

    @Test func libraryIsGenerated() {
        #expect(TestPaths.mediaFiles().count >= 6, "run `make media` first (looked in \(TestPaths.media.path))")
    }

    @Test(arguments: TestPaths.mediaFiles())
    func infoMatchesFFprobe(file: URL) throws {
        let info = try Self.info(file)
        let probe = try Self.ffprobe(file)
        let rate = try #require(info["sample_rate"] as? Int)
        let channels = try #require(info["channels"] as? Int)
        #expect(rate == probe.sampleRate, "\(file.lastPathComponent): sample rate")
        #expect(channels == probe.channels, "\(file.lastPathComponent): channels")
        // Every text the track carries, as ffprobe reads it (ID3v2 in any encoding, ID3v1,
        // RIFF INFO, MP4 ilst), and no text where ffprobe finds none.
        for key in Self.tagKeys {
            #expect(info[key] as? String == probe.tags[key], "\(file.lastPathComponent): \(key)")
        }

        let frameSeconds = Double(Self.samplesPerFrame(info)) / Double(rate)
        let totalSamples = try #require(info["total_samples"] as? Int)
        let duration = try #require(info["duration_s"] as? Double)
        // ffprobe reports the length of all frames for MP3 (the LAME trim shows as start_time),
        // the edit-list length for MP4, and for raw ADTS only an estimate from the bitrate: there
        // its own packet count is the exact figure.
        let untrimmed = Double(totalSamples) / Double(rate)
        let ours: Double
        var reference = probe.duration
        switch info["container"] as? String {
        case "adts":
            ours = untrimmed
            reference = Double(probe.packets * 1024) / Double(rate)
        case "mp4":
            ours = duration
        default:
            ours = untrimmed
        }
        #expect(abs(ours - reference) <= frameSeconds + 1e-6,
                "\(file.lastPathComponent): \(ours) s vs ffprobe \(reference) s")
        // And the trimmed playing time must equal what ffmpeg actually decodes, within a frame.
        // For raw ADTS ffmpeg keeps the priming we assume (encoder_delay), so it is added back.
        let decoded = try Self.ffmpegDecodedSamples(file, channels: channels)
        // So does an MP4 without an edit list or iTunSMPB (fragmented files from ffmpeg).
        let assumedDelay = (info["notes"] as? [String])?.contains { $0.contains("encoder delay assumed") } ?? false
        let keptByFFmpeg = info["container"] as? String == "adts" || assumedDelay ? Double(info["encoder_delay"] as? Int ?? 0) : 0
        #expect(abs(duration * Double(rate) + keptByFFmpeg - Double(decoded)) <= Double(Self.samplesPerFrame(info)),
                "\(file.lastPathComponent): duration_s \(duration) vs ffmpeg decode \(Double(decoded) / Double(rate))")
    }

    static func samplesPerFrame(_ info: [String: Any]) -> Int {
        switch info["codec"] as? String {
        case "mp3": return (info["sample_rate"] as? Int ?? 44100) >= 32000 ? 1152 : 576
        case "mp2": return 1152
        case "mp1": return 384
        case "aac": return 1024
        default: return 1
        }
    }

    /// `bits_per_sample` against ffprobe's bits_per_raw_sample (bits_per_sample where ffprobe
    /// leaves the raw one out, as for PCM in WAV and AIFF): FLAC, AIFF, ALAC and WAV say their
    /// depth (16, 24, 32-bit float), lossy codecs say null.
    @Test func bitsPerSampleMatchesFFprobe() throws {
        let lossless = (try? FileManager.default.contentsOfDirectory(at: TestPaths.losslessMedia, includingPropertiesForKeys: nil)) ?? []
        let files = lossless.filter { !$0.lastPathComponent.hasPrefix(".") }
            + ["pcm16.wav", "pcm24-96k.wav", "float32.wav", "cbr-128k-44k.mp3", "track.m4a"].map { TestPaths.media.appendingPathComponent($0) }
            + ["opus-stereo-48k.opus", "vorbis-stereo-44k.ogg"].map { TestPaths.oggMedia.appendingPathComponent($0) }
        #expect(lossless.count >= 4, "run `make media` first (looked in \(TestPaths.losslessMedia.path))")
        var depths: [String] = []
        for file in files.sorted(by: { $0.path < $1.path }) {
            let run = try runCommand(try #require(which("ffprobe")), ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                                                      "stream=bits_per_raw_sample,bits_per_sample", "-of", "json", file.path])
            let json = try #require(try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any])
            let stream = try #require((json["streams"] as? [[String: Any]])?.first, "\(file.lastPathComponent): no ffprobe stream")
            let raw = Int(stream["bits_per_raw_sample"] as? String ?? "") ?? 0
            let reference = raw > 0 ? raw : stream["bits_per_sample"] as? Int ?? 0
            let info = try Self.info(file)
            let ours = info["bits_per_sample"] as? Int
            #expect(info.keys.contains("bits_per_sample"), "\(file.lastPathComponent): no bits_per_sample field")
            #expect(ours == (reference > 0 ? reference : nil), "\(file.lastPathComponent): \(ours.map(String.init) ?? "null") bits, ffprobe \(reference)")
            depths.append("\(file.lastPathComponent)=\(ours.map(String.init) ?? "null")")
        }
        print("info bits_per_sample: \(depths.joined(separator: " "))")
    }

    @Test func htmlInput_isRejectedWithOneLine() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamplay-info-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let page = dir.appendingPathComponent("page.mp3")
        try Data("<!DOCTYPE html><html><body>Not found</body></html>".utf8).write(to: page)
        let empty = dir.appendingPathComponent("empty.mp3")
        try Data().write(to: empty)
        let streamplay = TestPaths.binDir.appendingPathComponent("streamplay").path
        for (file, expected) in [(page, "starts with '<!DOCTYPE html"), (empty, "empty")] {
            let result = try runCommand(streamplay, ["--info", file.path])
            let message = String(decoding: result.stderr, as: UTF8.self)
            #expect(result.status == 1)
            #expect(message.contains(expected), "\(message)")
            #expect(message.split(separator: "\n").count == 1, "one line: \(message)")
            #expect(message.hasPrefix("streamplay: parser: "), "\(message)")
        }
    }
}
