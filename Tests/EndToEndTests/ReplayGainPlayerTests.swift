import Foundation
import Testing
import TestSupport

/// `--replaygain` end to end: files tagged by a real tagger (Debian's loudgain: ID3v2.4 TXXX in
/// MP3, iTunes freeform atoms in M4A), played from disk and from the real streamd, and the played
/// loudness measured with ffmpeg's EBU R128 meter against loudgain's reference level (-18 LUFS).
@Suite(.serialized, .ownThreads) struct ReplayGainPlayerTests {
    /// Two pink-noise tracks 26 dB apart, MP3 and M4A, tagged as one album by loudgain.
    final class Album {
        let dir: URL
        /// loudgain's numbers per file name: track gain, album gain (dB), track true peak (linear).
        var gains: [String: (track: Double, album: Double, peak: Double)] = [:]

        init() throws {
            dir = try PlayerTests.temporaryDirectory()
            let sox = try #require(which("sox")), lame = try #require(which("lame")), ffmpeg = try #require(which("ffmpeg"))
            let loudgain = try #require(which("loudgain"), "loudgain is installed by make deps")
            for (name, gain) in [("quiet", "-28"), ("loud", "-2")] {
                let wav = path("\(name).wav")
                try check(runCommand(sox, ["-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "8", "pinknoise", "gain", gain]))
                try check(runCommand(lame, ["--quiet", "-V2", wav, path("\(name).mp3")]))
                try check(runCommand(ffmpeg, ["-v", "error", "-y", "-i", wav, "-c:a", "aac", "-b:a", "160k", path("\(name).m4a")]))
            }
            for ext in ["mp3", "m4a"] {
                // -a: album gain too; -s e: ReplayGain 2.0 tags plus reference and range; -O: a table on stdout.
                let run = try runCommand(loudgain, ["-q", "-a", "-s", "e", "-O", path("quiet.\(ext)"), path("loud.\(ext)")])
                try check(run)
                // "File  Loudness  Range  True_Peak  True_Peak_dBTP  Reference  Will_clip  Clip_prevent  Gain  New_Peak ..."
                var album: Double?
                var tracks: [(String, Double, Double)] = []
                for line in String(decoding: run.stdout, as: UTF8.self).split(separator: "\n") {
                    let fields = line.split(separator: "\t").map(String.init)
                    guard fields.count >= 9, let gain = Double(fields[8].replacingOccurrences(of: " dB", with: "")),
                          let peak = Double(fields[3]) else { continue }
                    if fields[0] == "Album" { album = gain } else { tracks.append((URL(fileURLWithPath: fields[0]).lastPathComponent, gain, peak)) }
                }
                let albumGain = try #require(album, "loudgain -O printed no album line: \(String(decoding: run.stdout, as: UTF8.self))")
                for (name, gain, peak) in tracks { gains[name] = (gain, albumGain, peak) }
            }
            #expect(gains.count == 4, "loudgain measured \(gains)")
        }

        deinit { try? FileManager.default.removeItem(at: dir) }

        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

        private func check(_ run: (status: Int32, stdout: Data, stderr: Data)) throws {
            try #require(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        }
    }

    /// Integrated loudness (LUFS) of a WAV file, from ffmpeg's ebur128 summary.
    static func integratedLoudness(_ path: String) throws -> Double {
        let ffmpeg = try #require(which("ffmpeg"))
        let run = try runCommand(ffmpeg, ["-nostats", "-hide_banner", "-i", path, "-af", "ebur128", "-f", "null", "-"])
        let text = String(decoding: run.stderr, as: UTF8.self)
        let line = try #require(text.split(separator: "\n").last { $0.trimmingCharacters(in: .whitespaces).hasPrefix("I:") },
                                "no integrated loudness in \(text)")
        let number = line.split(separator: " ").compactMap { Double($0) }.first
        return try #require(number, "\(line)")
    }

    /// Plays `source` into a WAV with `arguments` and returns its loudness and the stderr lines.
    static func play(_ source: String, _ arguments: [String], in album: Album, as name: String) throws -> (lufs: Double, stats: [String: Any]) {
        let out = album.path("out-\(name).wav")
        let run = try runCommand(PlayerTests.streamplay, [source, "--output", "wav:\(out)", "--stats"] + arguments)
        try #require(run.status == 0, "\(source) \(arguments): \(String(decoding: run.stderr, as: UTF8.self))")
        return (try integratedLoudness(out), try PlayerTests.stats(run.stdout))
    }

    @Test func trackGain_playsEveryTrackAtTheReferenceLevel_fromFilesAndFromStreamd() throws {
        let album = try Album()
        let server = try StreamdProcess(folder: album.dir, extraArguments: ["--quiet"])
        for file in ["quiet.mp3", "loud.mp3", "quiet.m4a", "loud.m4a"] {
            let plain = try Self.integratedLoudness(album.path(file.replacingOccurrences(of: ".mp3", with: ".wav")
                .replacingOccurrences(of: ".m4a", with: ".wav")))
            for source in [album.path(file), "\(server.baseURL)/media/\(file)"] {
                let played = try Self.play(source, ["--replaygain", "track"], in: album, as: file)
                print("replaygain track \(source): \(played.lufs) LUFS (source \(plain) LUFS, tag \(album.gains[file]?.track ?? .nan) dB)")
                #expect(abs(played.lufs - -18) <= 0.5, "\(source): \(played.lufs) LUFS, the reference is -18")
                let applied = try #require(played.stats["replaygain_db"] as? Double)
                #expect(abs(applied - (album.gains[file]?.track ?? .nan)) < 0.01, "\(source): applied \(applied) dB")
            }
        }
    }

    @Test func albumGain_keepsTheStepBetweenTracks_andOffChangesNothing() throws {
        let album = try Album()
        for file in ["quiet.mp3", "loud.m4a"] {
            let off = try Self.play(album.path(file), [], in: album, as: "off-\(file)")
            #expect(off.stats["replaygain_db"] is NSNull, "no ReplayGain unless asked")
            let albumGain = try #require(album.gains[file]?.album)
            let played = try Self.play(album.path(file), ["--replaygain", "album"], in: album, as: "album-\(file)")
            print("replaygain album \(file): \(played.lufs) LUFS (unprocessed \(off.lufs), album gain \(albumGain) dB)")
            #expect(abs(played.lufs - (off.lufs + albumGain)) <= 0.5, "\(file): \(played.lufs) LUFS")
            // One track alone counts as its own album: auto takes the album gain too.
            let auto = try Self.play(album.path(file), ["--replaygain", "auto"], in: album, as: "auto-\(file)")
            #expect(abs(auto.lufs - played.lufs) <= 0.05, "\(file): auto \(auto.lufs), album \(played.lufs)")
        }
    }

    @Test func preamp_isAdded_andThePeakStopsClipping() throws {
        let album = try Album()
        // quiet.mp3: +20.7 dB, peak 0.04: 4 dB more still fits under full scale.
        let quiet = try Self.play(album.path("quiet.mp3"), ["--replaygain", "track", "--preamp", "-4"], in: album, as: "pre-quiet")
        #expect(abs(quiet.lufs - -22) <= 0.5, "\(quiet.lufs) LUFS, -18 - 4 expected")
        // loud.mp3 with +15 dB preamp: about +9.7 dB asked, the peak (about 0.8) allows about +2 dB.
        let tag = try #require(album.gains["loud.mp3"])
        let off = try Self.play(album.path("loud.mp3"), [], in: album, as: "pre-loud-off")
        let loud = try Self.play(album.path("loud.mp3"), ["--replaygain", "track", "--preamp", "15"], in: album, as: "pre-loud")
        let applied = try #require(loud.stats["replaygain_db"] as? Double)
        let allowed = -20 * log10(tag.peak)
        #expect(tag.track + 15 > allowed + 3, "the test needs a gain the peak must cut")
        #expect(abs(applied - allowed) < 0.01, "applied \(applied) dB, the peak \(tag.peak) allows \(allowed) dB")
        #expect(abs(loud.lufs - (off.lufs + allowed)) <= 0.5, "\(loud.lufs) LUFS")
        // The peak is loudgain's (ffmpeg's decoder, oversampled); mpg123's samples may reach it
        // exactly, never beyond: at most a few samples sit at full scale.
        let samples = try wavSamples(album.path("out-pre-loud.wav"))
        let atFullScale = samples.filter { $0 == Int16.max || $0 == Int16.min }.count
        print("preamp 15 on loud.mp3: applied \(applied) dB (peak \(tag.peak)), \(loud.lufs) LUFS, \(atFullScale) samples at full scale")
        #expect(atFullScale <= 10, "\(atFullScale) samples at full scale")
    }

    @Test func badReplayGainOptions_areUsageErrors() throws {
        for arguments in [["--replaygain", "loud"], ["--preamp", "40"], ["--preamp", "x"]] {
            let run = try runCommand(PlayerTests.streamplay, [TestPaths.media.appendingPathComponent("pcm16.wav").path,
                                                              "--output", "null"] + arguments)
            #expect(run.status == 2, "\(arguments): exit \(run.status)")
        }
    }
}
