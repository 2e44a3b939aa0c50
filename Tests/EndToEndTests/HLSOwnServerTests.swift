import Foundation
import Testing
import TestSupport

/// streamplay on streamd's own HLS: packed MP3/AAC, fMP4, byte ranges, the master playlist and
/// the --live loop, against the file's own decode.
@Suite(.serialized, .ownThreads) struct HLSOwnServerTests {
    static let files = ["cbr-128k-44k.mp3", "vbr-v2.mp3", "adts.aac", "track.m4a"]

    /// A folder with copies of the library tracks the tests use (streamd packages what it serves).
    static func folder() throws -> URL {
        let dir = try PlayerTests.temporaryDirectory()
        for name in files {
            try FileManager.default.copyItem(at: TestPaths.media.appendingPathComponent(name), to: dir.appendingPathComponent(name))
        }
        return dir
    }

    func play(_ url: String, _ extra: [String] = [], into out: String) throws -> (status: Int32, stderr: String, stats: [String: Any]?) {
        let run = try runCommand(PlayerTests.streamplay, [url, "--output", "wav:\(out)", "--stats"] + extra, timeout: 120)
        return (run.status, String(decoding: run.stderr, as: UTF8.self), try? PlayerTests.stats(run.stdout))
    }

    /// HLS carries no LAME tag, so the MP3 reference is the file's decode without gapless trimming.
    @Test(arguments: ["index.m3u8", "index.m3u8?byterange=1", "master.m3u8"])
    func mp3_packedByteRangeAndMaster_areBitExact(playlist: String) throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for name in ["cbr-128k-44k.mp3", "vbr-v2.mp3"] {
            let ours = dir.appendingPathComponent("ours.wav").path, reference = dir.appendingPathComponent("ref.wav").path
            let run = try play("\(server.baseURL)/hls/\(name)/\(playlist)", into: ours)
            #expect(run.status == 0, "\(name) \(playlist): \(run.stderr)")
            #expect(run.stats?["container"] as? String == "hls")
            try runCommand(try #require(which("mpg123")), ["-q", "--no-gapless", "-w", reference, dir.appendingPathComponent(name).path])
            let a = try wavSamples(reference), b = try wavSamples(ours)
            #expect(a.count == b.count, "\(name) \(playlist): \(b.count) samples vs \(a.count)")
            #expect(a == b, "\(name) \(playlist): bit-exact across every segment join")
        }
    }

    /// AAC: packed ADTS segments (also as byte ranges of the .aac file) and fMP4 segments of the
    /// .m4a, each against ffmpeg's decode of the file, whole and around every join.
    @Test func aac_packedByteRangeAndFMP4_matchTheFilesDecode() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for (name, playlist) in [("adts.aac", "index.m3u8"), ("adts.aac", "index.m3u8?byterange=1"), ("track.m4a", "index.m3u8")] {
            let label = "\(name) \(playlist)"
            let ours = dir.appendingPathComponent("ours.wav").path, reference = dir.appendingPathComponent("ref.wav").path
            let url = "\(server.baseURL)/hls/\(name)/\(playlist)"
            let run = try play(url, into: ours)
            #expect(run.status == 0, "\(label): \(run.stderr)")
            try runCommand(HLSFixtures.ffmpeg, ["-v", "error", "-y", "-i", dir.appendingPathComponent(name).path, "-f", "wav", reference])
            let a = try wavSamples(reference), b = try wavSamples(ours)
            let shifted = [0, 1024, 2048].map { Array(a.dropFirst($0 * 2)) }
            let scores = shifted.map { HLSFixtures.snr($0, b, frames: 0..<(b.count / 2), channels: 2) }
            let best = scores.indices.max { scores[$0] < scores[$1] } ?? 0
            #expect(scores[best] >= 60, "\(label): SNR \(scores[best]) dB against ffmpeg's decode of the file")
            #expect(abs(shifted[best].count - b.count) <= 2048 * 2, "\(label): \(b.count / 2) frames vs \(shifted[best].count / 2)")
            // The joins, from the playlist's EXTINF durations.
            let text = try RawHTTPClient.get(server, "/hls/\(name)/index.m3u8")
            var t = 0.0
            let durations = text.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }
                .map { Double($0.dropFirst(8).split(separator: ",").first ?? "") ?? 0 }
            #expect(durations.count >= 3)
            for d in durations.dropLast() {
                t += d
                let join = Int((t * 44_100).rounded())
                let local = HLSFixtures.snr(shifted[best], b, frames: (join - 3072)..<(join + 3072), channels: 2)
                #expect(local >= 60, "\(label): SNR \(local) dB around the join at frame \(join)")
            }
        }
    }

    @Test func seekInOurVOD_isSampleExact() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for name in ["cbr-128k-44k.mp3", "track.m4a"] {
            let url = "\(server.baseURL)/hls/\(name)/index.m3u8"
            let full = dir.appendingPathComponent("full.wav").path, part = dir.appendingPathComponent("part.wav").path
            #expect(try play(url, into: full).status == 0)
            let run = try play(url, ["--start", "17.3", "--duration", "4"], into: part)
            #expect(run.status == 0, "\(run.stderr)")
            let all = try wavSamples(full), span = try wavSamples(part)
            let first = Int((17.3 * 44_100).rounded()) * 2
            #expect(span.count == 4 * 44_100 * 2)
            #expect(Array(all[first..<(first + span.count)]) == span, "\(name): the seek lands on the exact sample")
        }
    }

    /// `streamd --live`: a looping track as a live playlist with a sliding window of five segments.
    @Test(.timeLimit(.scaledMinutes(2))) func live_joinsAndPlays30SecondsAcrossReloads_withoutUnderruns() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let track = dir.appendingPathComponent("cbr-128k-44k.mp3").path
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet", "--live", "radio=\(track)"])
        let out = dir.appendingPathComponent("live.wav").path
        let started = Date()
        let run = try play("\(server.baseURL)/live/radio/index.m3u8", ["--realtime", "--duration", "30", "--verbose"], into: out)
        let elapsed = Date().timeIntervalSince(started)
        #expect(run.status == 0, "\(run.stderr)")
        let stats = try #require(run.stats, "\(run.stderr)")
        #expect(stats["underruns"] as? Int == 0, "no underruns: \(stats)")
        #expect(stats["frames_out"] as? Int == 30 * 44_100, "--duration 30 ends the live stream cleanly")
        #expect(elapsed >= 29 && elapsed < 45, "played in real time: \(elapsed) s")
        let lines = run.stderr.split(separator: "\n")
        let reloads = lines.filter { $0.contains("hls: reload:") }.count
        #expect(reloads >= 4, "\(reloads) playlist reloads")
        #expect(lines.contains { $0.contains("live media playlist") }, "read as a live playlist")
        // Joined three segments from the live edge of the 5-segment window.
        let media = try #require(lines.first { $0.contains("live media playlist") })
        let window = try #require(Int(media.split(separator: " ").last ?? ""))
        let first = try #require(lines.first { $0.contains("hls: segment ") })
        #expect(HLSFixtures.sequence(inSegmentLine: first) == window + 2, "\(first) (window from \(window))")
    }

    /// `streamd package` output served by nginx plays in streamplay like streamd's own HLS.
    @Test func package_servedByNginx_playsInStreamplayLikeStreamd() throws {
        let library = try Self.folder()
        defer { try? FileManager.default.removeItem(at: library) }
        let work = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let out = work.appendingPathComponent("out")
        let run = try runCommand(TestPaths.streamd, ["package", library.path, "--out", out.path, "--quiet"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let nginx = try HLSPackageTests.Nginx(root: out, prefix: work.appendingPathComponent("nginx"))
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"])
        for name in Self.files {
            let fromNginx = work.appendingPathComponent("nginx-\(name).wav").path, fromStreamd = work.appendingPathComponent("streamd-\(name).wav").path
            let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name
            let a = try play("\(nginx.baseURL)/hls/\(encoded)/master.m3u8", into: fromNginx)
            #expect(a.status == 0, "\(name) via nginx: \(a.stderr)")
            let b = try play("\(server.baseURL)/hls/\(encoded)/master.m3u8", into: fromStreamd)
            #expect(b.status == 0, "\(name) via streamd: \(b.stderr)")
            #expect(try wavSamples(fromNginx) == wavSamples(fromStreamd), "\(name): the package plays like streamd's HLS")
            #expect((try wavSamples(fromNginx)).count > 20 * 44_100 * 2, "\(name): the whole track played")
        }
    }
}

/// A tiny blocking GET for playlist text over loopback.
enum RawHTTPClient {
    static func get(_ server: StreamdProcess, _ target: String) throws -> String {
        guard let curl = which("curl") else { throw TestFailure("curl is missing (scripts/deps.sh installs it)") }
        let run = try runCommand(curl, ["-s", "\(server.baseURL)\(target)"])
        return String(decoding: run.stdout, as: UTF8.self)
    }
}
