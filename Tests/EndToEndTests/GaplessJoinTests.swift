import Foundation
import Testing
import TestSupport

/// Joins between a queue's tracks, end to end on real files and the real streamd: the next track
/// is opened ahead so the output never waits at a join (also over a link that adds 100 ms to
/// every request), a track at another rate is resampled into a file, `--crossfade` overlaps
/// tracks of different albums by exactly its length and never those of one album, and mpv's
/// gapless playback of the same album is measured beside ours.
@Suite(.ownThreads) struct GaplessJoinTests {
    typealias Album = QueuePlayerTests.Album

    static func stats(_ stdout: Data) throws -> [String: Any] {
        let line = String(decoding: stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// The album playlist streamd makes of the album (its catalog groups the tracks by tag).
    static func albumPlaylistPath(_ server: StreamdProcess) throws -> String {
        let album = try LibraryAPITests.album(server, titled: "Piece")
        return "/playlist/album/\(try #require(album["id"] as? Int)).m3u8"
    }

    /// Item 3 and 7: the album over a link that makes every request wait 100 ms, played at real-time
    /// pace into a file: not one underrun at a join, and the file is still the concatenation of
    /// the tracks' own decodes (no silence inserted, nothing lost), from the track URLs and from
    /// streamd's album playlist. The ring ahead of the output holds 0.7 s, which alone would
    /// cover 100 ms; so the MP3 album also plays through a link that makes every request wait a
    /// whole second (without the next track opened ahead it underruns at every join; the M4A
    /// tracks need two requests before their first sample, more than their 1.3 s allow).
    @Test(.timeLimit(.scaledMinutes(5)), arguments: ["mp3", "m4a"])
    func album_overASlowLink_atRealTime_neverUnderrunsAtAJoin(ext: String) throws {
        let album = try Album(ext: ext)
        let reference = try album.referenceConcatenation()
        let server = try StreamdProcess(folder: album.folder, extraArguments: ["--quiet"])
        let playlist = try Self.albumPlaylistPath(server)
        for (label, delay) in [("URLs", 0.1), ("album playlist", ext == "mp3" ? 1.0 : 0.1)] {
            let proxy = try FaultProxy(upstreamPort: server.port, faults: [], requestDelay: delay)
            defer { proxy.stop() }
            let base = "http://127.0.0.1:\(proxy.port)"
            let sources = label == "URLs" ? album.names.map { "\(base)/media/\($0)" } : ["\(base)\(playlist)"]
            let run = try QueuePlayerTests.play(sources + ["--realtime", "--stats"], out: album.path("slow.wav"))
            #expect(run.samples == reference, "\(label): \(run.samples.count) samples, the tracks alone \(reference.count)")
            let stats = try Self.stats(run.stdout)
            let totals = try #require(stats["totals"] as? [String: Any])
            #expect(totals["tracks_played"] as? Int == 5, "\(label)")
            #expect(totals["underruns"] as? Int == 0, "\(label), \(delay) s a request: \(totals)")
            let tracks = try #require(stats["tracks"] as? [[String: Any]])
            let perTrack = tracks.compactMap { ($0["stats"] as? [String: Any])?["underruns"] as? Int }
            #expect(perTrack == [0, 0, 0, 0, 0], "\(label): \(perTrack)")
            #expect(proxy.accepted >= 5, "every track went through the slow link")
        }
    }

    /// Item 5: tracks of one album join gaplessly even with `--crossfade` asked (from files and
    /// from streamd's album playlist).
    @Test(arguments: ["mp3", "m4a"])
    func crossfade_isNeverApplied_withinAnAlbum(ext: String) throws {
        let album = try Album(ext: ext)
        let reference = try album.referenceConcatenation()
        let files = try QueuePlayerTests.play([album.folder.path, "--crossfade", "3"], out: album.path("xf.wav"))
        #expect(files.samples == reference, "files: \(files.samples.count) samples, the tracks alone \(reference.count)")
        let server = try StreamdProcess(folder: album.folder, extraArguments: ["--quiet"])
        let served = try QueuePlayerTests.play(["\(server.baseURL)\(try Self.albumPlaylistPath(server))", "--crossfade", "3"],
                                               out: album.path("xf-http.wav"))
        #expect(served.samples == reference, "album playlist")
    }

    /// A mono 16-bit WAV of `frames` samples, all `value`.
    static func constantWAV(_ path: String, value: Int16, frames: Int, rate: Int = 44_100) throws {
        let data = frames * 2
        var bytes = Array("RIFF".utf8) + le32(36 + data) + Array("WAVEfmt ".utf8) + le32(16) + [1, 0, 1, 0] + le32(rate)
            + le32(rate * 2) + [2, 0, 16, 0] + Array("data".utf8) + le32(data)
        let v = UInt16(bitPattern: value)
        for _ in 0..<frames { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Item 5: two tracks of no common album with `--crossfade 1`: the output is one second
    /// shorter than the two tracks, and in that second the first fades out and the second in
    /// with equal-power gains (cos and sin of a quarter turn), sample by sample.
    @Test func crossfade_overlapsTracksOfDifferentAlbums_byItsLength_withEqualPowerGains() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let rate = 44_100
        let a = dir.appendingPathComponent("a.wav").path, b = dir.appendingPathComponent("b.wav").path
        try Self.constantWAV(a, value: 16_384, frames: 3 * rate)
        try Self.constantWAV(b, value: 8_192, frames: 3 * rate)
        let out = dir.appendingPathComponent("out.wav").path
        let run = try QueuePlayerTests.play([a, b, "--crossfade", "1"], out: out)
        let overlap = 6 * rate - run.samples.count
        #expect(overlap == rate, "overlap \(overlap) frames, asked 1 s = \(rate)")
        guard run.samples.count == 5 * rate else { return }
        #expect(run.samples[..<(2 * rate)].allSatisfy { $0 == 16_384 }, "the first track alone before the overlap")
        #expect(run.samples[(3 * rate)...].allSatisfy { $0 == 8_192 }, "the second alone after it")
        var worst = 0.0
        for k in 0..<rate {
            let t = (Double(k) + 0.5) / Double(rate) * Double.pi / 2
            let expected = 16_384 * cos(t) + 8_192 * sin(t)
            worst = max(worst, abs(Double(run.samples[2 * rate + k]) - expected))
        }
        #expect(worst <= 1, "equal-power curve within 1 LSB (worst \(worst))")
        // Equal power: at the middle both tracks are at -3 dB.
        #expect(abs(Double(run.samples[2 * rate + rate / 2]) - 24_576 * 0.5.squareRoot()) <= 2)
    }

    /// Item 3: a track at another rate than the file was started at is resampled to it (libsoxr)
    /// instead of being skipped: its length at the running rate, its sound kept.
    @Test func trackOfAnotherRate_isResampledIntoTheRunningFile() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sox = try #require(which("sox"))
        let first = dir.appendingPathComponent("1.wav").path, second = dir.appendingPathComponent("2.wav").path
        try Album.check(runCommand(sox, ["-n", "-r", "44100", "-c", "2", "-b", "16", first, "synth", "2", "sine", "440", "gain", "-6"]))
        try Album.check(runCommand(sox, ["-n", "-r", "48000", "-c", "2", "-b", "16", second, "synth", "2", "sine", "1000", "gain", "-6"]))
        let out = dir.appendingPathComponent("out.wav").path
        let run = try QueuePlayerTests.play([first, second, "--stats", "--verbose"], out: out)
        #expect(!run.stderr.contains("skipped"), "\(run.stderr)")
        #expect(run.stderr.contains("resampling 48000 Hz → 44100 Hz"), "\(run.stderr)")
        let frames = run.samples.count / 2
        #expect(abs(frames - 4 * 44_100) <= 64, "\(frames) frames for 2 s + 2 s at 44.1 kHz")
        // The second track keeps its tone: 1000 Hz is 2000 zero crossings a second.
        let from: Int = 2 * 44_100 + 4_410, to: Int = min(frames, 4 * 44_100) - 4_410
        let tail: [Int16] = (from..<max(from, to)).map { (frame: Int) -> Int16 in run.samples[2 * frame] }
        let crossings = zip(tail, tail.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        let seconds = Double(tail.count) / 44_100
        #expect(abs(Double(crossings) / seconds - 2_000) < 20, "\(crossings) crossings in \(seconds) s")
    }

    /// mpv's own gapless playback of the same album (`--gapless-audio=yes`, PCM into a file), beside
    /// ours: how many samples it inserts (+) or drops (-) at each join, found by matching each
    /// track's start against the per-track decodes. Recorded, not bounded: mpv decodes with
    /// FFmpeg, so only the positions are compared. Ours is exact (the tests above).
    @Test(.timeLimit(.scaledMinutes(3)), arguments: ["mp3", "m4a"])
    func mpvGapless_onTheSameAlbum_measured(ext: String) throws {
        let album = try Album(ext: ext)
        var tracks: [[Int16]] = []
        for name in album.names {
            let out = album.path("ref-\(name).wav")
            try Album.check(runCommand(PlayerTests.streamplay, [album.folder.appendingPathComponent(name).path, "--output", "wav:\(out)"]))
            tracks.append(try wavSamples(out))
        }
        let reference = tracks.flatMap { $0 }
        let mpvOut = album.path("mpv.wav")
        let files = album.names.map { album.folder.appendingPathComponent($0).path }
        let mpv = try runCommand(try #require(which("mpv")),
                                 ["--no-config", "--no-video", "--vo=null", "--gapless-audio=yes", "--audio-format=s16",
                                  "--audio-samplerate=44100", "--ao=pcm", "--ao-pcm-file=\(mpvOut)"] + files, timeout: 120)
        try #require(mpv.status == 0, "\(String(decoding: mpv.stderr, as: UTF8.self))")
        let theirs = try wavSamples(mpvOut)
        // Where each track starts in mpv's output, against where it starts in ours.
        var offsets: [Int] = []
        var start = 0
        for track in tracks {
            offsets.append(try #require(Self.bestOffset(of: Array(track.prefix(2 * 4096).dropFirst(2 * 2048)), near: start + 2048,
                                                         in: theirs)) - 2048 - start)
            start += track.count / 2
        }
        let joins = zip(offsets.dropFirst(), offsets).map { $0 - $1 }
        let line = "mpv --gapless-audio=yes, \(ext): starts \(offsets[0]) frames late, per join \(joins) frames "
            + "(+ inserted, - dropped), total \(theirs.count / 2 - reference.count / 2) frames against \(reference.count / 2)"
        print(line)
        #expect(offsets.count == 5)
        #expect(offsets[0] == 0, "mpv's first track starts where ours does: \(line)")
    }

    /// The frame offset in `haystack` (stereo) where `needle` (stereo) fits best, within ±3000
    /// frames of `near` (least summed absolute difference of the left channel).
    static func bestOffset(of needle: [Int16], near: Int, in haystack: [Int16]) -> Int? {
        let frames = needle.count / 2
        var best: (offset: Int, cost: Int)?
        for offset in max(0, near - 3000)...max(0, near + 3000) where (offset + frames) * 2 <= haystack.count {
            var cost = 0
            for k in stride(from: 0, to: frames, by: 4) {
                cost += abs(Int(needle[2 * k]) - Int(haystack[2 * (offset + k)]))
                if let best, cost >= best.cost { break }
            }
            if best == nil || cost < best!.cost { best = (offset, cost) }
        }
        return best?.offset
    }
}
