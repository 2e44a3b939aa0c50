import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 24 item 4 on the real streamd: the master playlist offers the original and Opus/MP3
/// variants of the ladder (`--hls-ladder`), each a cached transcode cut on one 6 s grid at 48 kHz.
/// Each variant decodes with ffmpeg to the source's length and matches the reference decoder of
/// the same encode (opusdec, mpg123); Vorbis, ALAC and AIFF play through the variants; a switch
/// from one variant to another at a segment boundary (segment N of A, then N+1 of B) leaves no
/// gap and no offset.
@Suite(.timeLimit(.scaledMinutes(6)), .ownThreads) struct HLSLadderTests {
    static let get = HLSServerTests.get
    static let ladder = [64, 192]

    /// A library (`music/`) with 14 s of FLAC (three segments) and the generated Vorbis, ALAC and
    /// AIFF files, and a transcode cache beside it.
    static func makeLibrary() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-hls-ladder-\(getpid())-\(UUID().uuidString.prefix(8))")
        let music = root.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        for name in ["alac16.m4a", "aiff16.aiff"] {
            try FileManager.default.copyItem(at: TestPaths.losslessMedia.appendingPathComponent(name), to: music.appendingPathComponent(name))
        }
        try FileManager.default.copyItem(at: TestPaths.oggMedia.appendingPathComponent("vorbis-stereo-44k.ogg"),
                                         to: music.appendingPathComponent("vorbis-stereo-44k.ogg"))
        let wav = root.appendingPathComponent("source.wav").path
        let sox = try runCommand(try #require(which("sox")), ["-q", "-R", "-n", "-r", "44100", "-c", "2", "-b", "16", wav,
                                                              "synth", "14", "sine", "100-5000", "pinknoise", "gain", "-6"])
        guard sox.status == 0 else { throw TestFailure("sox: \(String(decoding: sox.stderr, as: UTF8.self))") }
        let flac = try runCommand(try #require(which("flac")), ["--silent", "--force", "-5", "-o", music.appendingPathComponent("long.flac").path, wav])
        guard flac.status == 0 else { throw TestFailure("flac: \(String(decoding: flac.stderr, as: UTF8.self))") }
        return root
    }

    static func start(_ root: URL) throws -> StreamdProcess {
        try StreamdProcess(folder: root.appendingPathComponent("music"),
                           extraArguments: ["--quiet", "--transcode-cache", root.appendingPathComponent("cache").path,
                                            "--hls-ladder", ladder.map(String.init).joined(separator: ",")])
    }

    /// GET that waits out 503 + Retry-After, and the EVENT playlist, while the variant's encode
    /// runs (at most 120 s): these tests want the finished encode.
    static func getReady(_ server: StreamdProcess, _ target: String) throws -> RawResponse {
        let deadline = Date().addingTimeInterval(120)
        while true {
            let response = try get(server, target, [:])
            let growing = response.status == 200 && HLSServerTests.text(response).contains("#EXT-X-PLAYLIST-TYPE:EVENT")
            guard response.status == 503 || growing, Date() < deadline else { return response }
            let retry = response.header("Retry-After").flatMap(Int.init) ?? 1
            #expect((1...30).contains(retry), "\(target): Retry-After \(retry)")
            // A short poll, not the whole Retry-After: the test's encodes take well under a second.
            usleep(100_000)
        }
    }

    static func write(_ bytes: [UInt8], _ url: URL) throws { try Data(bytes).write(to: url) }

    static func run(_ tool: String, _ arguments: [String]) throws {
        let run = try runCommand(try #require(which(tool), "\(tool) is installed by scripts/deps.sh"), arguments, timeout: 120)
        guard run.status == 0 else { throw TestFailure("\(tool) \(arguments): \(String(decoding: run.stderr, as: UTF8.self))") }
    }

    /// ffmpeg's decode of `input` (a URL or file) to 16-bit stereo WAV at its own rate.
    static func ffmpeg(_ input: String, _ wav: URL) throws {
        try run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", input, "-c:a", "pcm_s16le", "-f", "wav", wav.path])
    }

    /// The shift (frames) of `test` against `reference` in -`reach`...`reach` that matches best over
    /// the frames `window` of the reference (left channel), and the SNR there.
    static func alignment(_ reference: [Int16], _ test: [Int16], window: Range<Int>, reach: Int = 2_400) -> (shift: Int, snr: Double) {
        var best = (shift: 0, snr: -Double.infinity)
        for shift in -reach...reach {
            var signal = 0.0, noise = 0.0
            for frame in window {
                let t = frame + shift
                guard t >= 0, t * 2 < test.count, frame * 2 < reference.count else { continue }
                let r = Double(reference[frame * 2]), d = r - Double(test[t * 2])
                signal += r * r
                noise += d * d
            }
            let snr = noise == 0 ? Double.infinity : 10 * log10(max(signal, 1) / noise)
            if snr > best.snr { best = (shift, snr) }
        }
        return best
    }

    @Test func master_listsTheLadder_andRefusesWhatItDoesNotOffer() throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        let master = HLSServerTests.text(try Self.get(server, "/hls/long.flac/master.m3u8", [:]))
        let (variants, problems) = M3U8Rules.checkMaster(master)
        #expect(problems.isEmpty, "master: \(problems)\n\(master)")
        var expected: [(uri: String, codec: String)] = [("index.m3u8", "flac")]
        for codec in ["opus", "mp3"] {
            for kbps in Self.ladder { expected.append(("\(codec)-\(kbps)/index.m3u8", codec == "opus" ? "opus" : "mp4a.40.34")) }
        }
        #expect(variants.map { $0.uri } == expected.map { $0.uri }, "\(master)")
        for (variant, want) in zip(variants, expected) {
            let codec = want.codec
            #expect(variant.attributes["CODECS"] == codec, "\(variant.uri): CODECS")
            let bandwidth = Int(variant.attributes["BANDWIDTH"] ?? "") ?? 0
            let average = Int(variant.attributes["AVERAGE-BANDWIDTH"] ?? "") ?? 0
            #expect(bandwidth >= average && average > 0, "\(variant.uri): BANDWIDTH \(bandwidth), AVERAGE \(average)")
            if let kbps = Int(variant.uri.split(separator: "-").last?.split(separator: "/").first ?? "") {
                #expect(average >= kbps * 1000 && average < kbps * 1300, "\(variant.uri): AVERAGE-BANDWIDTH \(average) near \(kbps) kbit/s")
            }
        }
        // A format HLS does not carry: only the variants in the master; its own playlists stay 415.
        for path in ["vorbis-stereo-44k.ogg", "alac16.m4a", "aiff16.aiff"] {
            let text = HLSServerTests.text(try Self.get(server, "/hls/\(path)/master.m3u8", [:]))
            let (listed, problems) = M3U8Rules.checkMaster(text)
            #expect(problems.isEmpty && listed.count == 2 * Self.ladder.count && !listed.contains { $0.uri == "index.m3u8" },
                    "\(path): \(problems) \(text)")
            #expect(try Self.get(server, "/hls/\(path)/index.m3u8", [:]).status == 415)
        }
        // A rung the ladder lacks, and a misspelt one.
        for target in ["/hls/long.flac/opus-96/index.m3u8", "/hls/long.flac/opus-064/index.m3u8", "/hls/long.flac/ogg-64/index.m3u8",
                       "/hls/long.flac/opus-64/seg-9.m4s", "/hls/long.flac/mp3-64/other.txt"] {
            let status = try Self.getReady(server, target).status
            #expect(status == 404, "\(target): \(status)")
        }
        // The media playlists of two variants: the same segments, the same durations (one grid).
        let opus = try Self.getReady(server, "/hls/long.flac/opus-64/index.m3u8")
        let mp3 = try Self.getReady(server, "/hls/long.flac/mp3-192/index.m3u8")
        #expect(opus.status == 200 && mp3.status == 200)
        let (opusMedia, opusProblems) = M3U8Rules.checkMedia(HLSServerTests.text(opus), vod: true)
        let (mp3Media, mp3Problems) = M3U8Rules.checkMedia(HLSServerTests.text(mp3), vod: true)
        #expect(opusProblems.isEmpty && mp3Problems.isEmpty, "\(opusProblems) \(mp3Problems)")
        #expect(opusMedia.segments.count == 3 && mp3Media.segments.count == 3)
        #expect(opusMedia.segments.dropLast().map(\.duration) == [6, 6] && mp3Media.segments.dropLast().map(\.duration) == [6, 6],
                "full segments are 6 s in both: \(opusMedia.segments.map(\.duration)) \(mp3Media.segments.map(\.duration))")
        // Once cached, the master's BANDWIDTH is measured from the segments.
        let again = HLSServerTests.text(try Self.get(server, "/hls/long.flac/master.m3u8", [:]))
        #expect(M3U8Rules.checkMaster(again).1.isEmpty, "\(again)")
        #expect(server.process.isRunning)
    }

    /// Each variant, decoded by ffmpeg from its playlist, is the source's length (ffmpeg trims the
    /// Opus edit list and the MP3's Info frame delay) and equals the reference decoder's output of
    /// the same encode (`rendition.opus` through opusdec, `rendition.mp3` through mpg123).
    @Test func variants_decodeToTheSourceLength_andMatchTheReference() throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        let source48k = root.appendingPathComponent("source48k.wav")
        try Self.run("sox", [root.appendingPathComponent("source.wav").path, "-b", "16", source48k.path, "rate", "-v", "48000"])
        let sourceFrames = try wavSamples(source48k.path).count / 2
        #expect(sourceFrames == 672_000)
        for codec in ["opus", "mp3"] {
            for kbps in Self.ladder {
                let folder = "\(codec)-\(kbps)", label = "long.flac \(folder)"
                #expect(try Self.getReady(server, "/hls/long.flac/\(folder)/index.m3u8").status == 200, "\(label)")
                let decoded = root.appendingPathComponent("\(folder).wav"), reference = root.appendingPathComponent("\(folder)-ref.wav")
                try Self.ffmpeg("\(server.baseURL)/hls/long.flac/\(folder)/index.m3u8", decoded)
                let file = try Self.get(server, "/hls/long.flac/\(folder)/rendition.\(codec)", [:])
                #expect(file.status == 200, "\(label): the whole encode")
                let encoded = root.appendingPathComponent("\(folder).\(codec)")
                try Self.write(file.body, encoded)
                let ours = try wavSamples(decoded.path)
                var lead = 0
                if codec == "opus" {
                    try Self.run("opusdec", ["--quiet", "--rate", "48000", encoded.path, reference.path])
                    lead = 793   // the silence before the track that lines Opus up with MP3 (opusdec trims only 312)
                } else {
                    try Self.run("mpg123", ["-q", "-w", reference.path, encoded.path])
                }
                let ref = Array(try wavSamples(reference.path).dropFirst(lead * 2))
                // The source's length within the codec's stated delay handling: the reference decoders
                // trim the delay and the end exactly; ffmpeg trims the delay (the Opus edit list, the
                // MP3's Info frame) and keeps the last packet or frame whole.
                #expect(ref.count / 2 == sourceFrames, "\(label): \(ref.count / 2) frames from the reference")
                #expect((sourceFrames..<(sourceFrames + 1152)).contains(ours.count / 2),
                        "\(label): \(ours.count / 2) frames from HLS, source \(sourceFrames)")
                let snr = HLSFixtures.snr(ref, ours, frames: 0..<(sourceFrames), channels: 2)
                #expect(snr >= 40, "\(label): SNR \(snr) dB of ffmpeg's HLS decode against the reference decode of the same encode")
                // And it is the source (the codec's loss aside) at no offset.
                let source = try wavSamples(source48k.path)
                // The whole track at once (a short window of the slow sweep leaves a lossy codec a sample of doubt).
                let aligned = Self.alignment(source, ours, window: 48_000..<620_000, reach: 48)
                #expect(aligned.shift == 0 && aligned.snr > 8, "\(label): against the source: \(aligned)")
            }
        }
        #expect(server.process.isRunning)
    }

    /// Vorbis, ALAC and AIFF (no HLS rendition of their own) play through a variant: ffmpeg from
    /// the master playlist's Opus and MP3 variants, at the source's length.
    @Test(arguments: ["vorbis-stereo-44k.ogg", "alac16.m4a", "aiff16.aiff"])
    func formatsHLSDoesNotCarry_playThroughTheVariants(path: String) throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        let source = root.appendingPathComponent("source-\(path).wav")
        try Self.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", root.appendingPathComponent("music/\(path)").path,
                                "-ac", "2", "-ar", "48000", "-c:a", "pcm_s16le", source.path])
        let want = try wavSamples(source.path)
        for folder in ["opus-64", "mp3-192"] {
            #expect(try Self.getReady(server, "/hls/\(path)/\(folder)/index.m3u8").status == 200, "\(path) \(folder)")
            let decoded = root.appendingPathComponent("\(folder).wav")
            try Self.ffmpeg("\(server.baseURL)/hls/\(path)/\(folder)/index.m3u8", decoded)
            let got = try wavSamples(decoded.path)
            #expect((want.count / 2..<(want.count / 2 + 1152)).contains(got.count / 2),
                    "\(path) \(folder): \(got.count / 2) frames vs \(want.count / 2)")
            let window = (want.count / 2 / 4)..<(want.count / 2 * 3 / 4)
            let aligned = Self.alignment(want, got, window: window, reach: 1_200)
            #expect(aligned.shift == 0 && aligned.snr > 8, "\(path) \(folder): \(aligned)")
        }
        #expect(server.process.isRunning)
    }

    /// A player that switches variant between segments 0 and 1 (and back between 1 and 2) hears no
    /// gap and no offset. ffmpeg's HLS demuxer plays a playlist of low seg-0, high seg-1, low seg-2:
    /// the output is the low variant's decode bit for bit up to the switch, the high one's right
    /// after it (once the decoder's 10 ms of overlap from the other variant is past), the same
    /// length as either variant alone, at the source's place throughout, with no dropout.
    @Test func switchingVariants_isGapless() throws {
        let root = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try Self.start(root)
        let source48k = root.appendingPathComponent("source48k.wav")
        try Self.run("sox", [root.appendingPathComponent("source.wav").path, "-b", "16", source48k.path, "rate", "-v", "48000"])
        let source = try wavSamples(source48k.path)
        for (codec, ext) in [("opus", "m4s"), ("mp3", "mp3")] {
            let low = "\(codec)-\(Self.ladder[0])", high = "\(codec)-\(Self.ladder[1])"
            var decodes: [String: [Int16]] = [:]
            var durations: [String] = []
            for folder in [low, high] {
                let index = try Self.getReady(server, "/hls/long.flac/\(folder)/index.m3u8")
                #expect(index.status == 200, "\(folder)")
                durations = HLSServerTests.text(index).split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.map(String.init)
                let wav = root.appendingPathComponent("\(folder).wav")
                try Self.ffmpeg("\(server.baseURL)/hls/long.flac/\(folder)/index.m3u8", wav)
                decodes[folder] = try wavSamples(wav.path)
            }
            #expect(durations.count == 3, "\(codec): three segments")
            let base = "\(server.baseURL)/hls/long.flac/"
            var lines = ["#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-TARGETDURATION:6", "#EXT-X-PLAYLIST-TYPE:VOD"]
            if codec == "opus" { lines.append("#EXT-X-MAP:URI=\"\(base)\(low)/init.mp4\"") }
            for (i, folder) in [low, high, low].enumerated() where i < durations.count {
                lines += [durations[i], "\(base)\(folder)/seg-\(i).\(ext)"]
            }
            lines.append("#EXT-X-ENDLIST")
            let playlist = root.appendingPathComponent("switched-\(codec).m3u8")
            try (lines.joined(separator: "\n") + "\n").write(to: playlist, atomically: true, encoding: .utf8)
            let decoded = root.appendingPathComponent("switched-\(codec).wav")
            try Self.run("ffmpeg", ["-nostdin", "-v", "error", "-protocol_whitelist", "file,http,tcp", "-y", "-i", playlist.path,
                                    "-c:a", "pcm_s16le", "-f", "wav", decoded.path])
            let got = try wavSamples(decoded.path)
            let lowPCM = try #require(decodes[low]), highPCM = try #require(decodes[high])
            // Nothing lost or doubled at the joins.
            #expect(got.count == lowPCM.count && got.count == highPCM.count, "\(codec): \(got.count / 2) frames switched, \(lowPCM.count / 2) unswitched")
            // The switches, in ffmpeg's output: the grid (6 s, 12 s of the encoder's timeline) less the 1,105 trimmed.
            let first = HLSRenditionGrid.segment - HLSRenditionGrid.delay, second = 2 * HLSRenditionGrid.segment - HLSRenditionGrid.delay
            #expect(Array(got[0..<(first * 2)]) == Array(lowPCM[0..<(first * 2)]), "\(codec): the low variant, bit for bit, up to the switch")
            let settled = HLSFixtures.snr(highPCM, got, frames: (first + 480)..<second, channels: 2)
            let back = HLSFixtures.snr(lowPCM, got, frames: (second + 480)..<(got.count / 2), channels: 2)
            #expect(settled >= 35 && back >= 35, "\(codec): after the switches \(settled) dB against the high variant, \(back) dB back on the low one")
            for (label, window) in [("before", (first - 40_000)..<(first - 1_000)), ("after the first switch", first..<(first + 30_000)),
                                    ("after the second", second..<(second + 30_000))] {
                let aligned = Self.alignment(source, got, window: window, reach: 1_200)
                #expect(aligned.shift == 0 && aligned.snr > 8, "\(codec) \(label): \(aligned)")
            }
            // No dropout at a switch: every 10 ms around it carries the signal's level.
            for boundary in [first, second] {
                for start in stride(from: boundary - 1_920, to: boundary + 1_920, by: 480) {
                    var energy = 0.0
                    for frame in start..<(start + 480) { energy += Double(got[frame * 2]) * Double(got[frame * 2]) }
                    #expect((energy / 480).squareRoot() > 3_000, "\(codec): a dropout at frame \(start) (switch at \(boundary))")
                }
            }
        }
        #expect(server.process.isRunning)
    }
}

/// The grid of `HLSRendition` as the tests see it (48 kHz samples).
enum HLSRenditionGrid {
    static let segment = 288_000
    /// LAME's delay and the decoder's (the Opus lead makes Opus the same).
    static let delay = 1_105
}
