import Foundation
import Testing
import TestSupport
import StreamShared

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

    /// The level of a WAV file (RMS of every sample, full scale 1) in dB.
    static func levelDB(_ path: String) throws -> Double {
        let samples = try PCMFile(path: path).samples()
        let power = samples.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))
        return 10 * log10(power)
    }

    /// A copy of an opusenc file with its OpusHead output gain set (the page's CRC recomputed).
    static func withOutputGain(_ source: String, dB: Double, to target: String) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
        // opusenc's first page holds OpusHead alone: 27 header bytes, 1 lacing value, then the packet.
        try #require(bytes.count > 64 && bytes[28..<36].elementsEqual("OpusHead".utf8) && bytes[26] == 1)
        let gain = Int16(dB * 256)
        bytes[44] = UInt8(truncatingIfNeeded: gain)
        bytes[45] = UInt8(truncatingIfNeeded: gain >> 8)
        bytes.replaceSubrange(22..<26, with: [0, 0, 0, 0])
        let crc = OggCRC.crc32(bytes[0..<(28 + Int(bytes[27]))])
        bytes.replaceSubrange(22..<26, with: (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * UInt32($0))) })
        try Data(bytes).write(to: URL(fileURLWithPath: target))
    }

    /// Vorbis comments: REPLAYGAIN_* in FLAC (metaflac) and Vorbis (vorbiscomment), R128_* in Opus
    /// (Q7.8 dB against -23 LUFS, played +5 dB to ReplayGain's reference) applied on top of the
    /// OpusHead output gain, which plays with or without `--replaygain` and is never counted
    /// twice (mpv #10836, MPD #976). Each level is measured against the same file played with
    /// `--replaygain off`, from the file and from streamd.
    @Test func vorbisCommentGains_inFLACVorbisAndOpus_onTopOfTheOpusHeaderGain() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        func run(_ tool: String, _ arguments: [String]) throws {
            let result = try runCommand(try #require(which(tool), "\(tool) is installed by make deps"), arguments)
            try #require(result.status == 0, "\(tool): \(String(decoding: result.stderr, as: UTF8.self))")
        }
        try run("sox", ["-R", "-n", "-r", "48000", "-c", "2", "-b", "16", path("noise.wav"), "synth", "3", "pinknoise", "gain", "-24"])
        try run("flac", ["--silent", "-o", path("tagged.flac"), path("noise.wav")])
        try run("metaflac", ["--set-tag=REPLAYGAIN_TRACK_GAIN=-4.50 dB", "--set-tag=REPLAYGAIN_TRACK_PEAK=0.20",
                             "--set-tag=REPLAYGAIN_ALBUM_GAIN=+3.00 dB", "--set-tag=REPLAYGAIN_ALBUM_PEAK=0.30", path("tagged.flac")])
        try run("oggenc", ["-Q", "-q", "5", "-o", path("tagged.ogg"), path("noise.wav")])
        try run("vorbiscomment", ["-a", "-t", "REPLAYGAIN_TRACK_GAIN=-4.50 dB", "-t", "REPLAYGAIN_TRACK_PEAK=0.20",
                                  "-t", "REPLAYGAIN_ALBUM_GAIN=+3.00 dB", "-t", "REPLAYGAIN_ALBUM_PEAK=0.30", path("tagged.ogg")])
        // -2560/256 = -10 dB against -23 LUFS: -5 dB to play; 768/256 = +3 dB: +8 dB.
        try run("opusenc", ["--quiet", "--comment", "R128_TRACK_GAIN=-2560", "--comment", "R128_ALBUM_GAIN=768",
                            path("noise.wav"), path("tagged.opus")])
        try Self.withOutputGain(path("tagged.opus"), dB: -6, to: path("head-gain.opus"))
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        defer { _ = server.stop() }

        func play(_ name: String, _ mode: String, overHTTP: Bool) throws -> (level: Double, applied: Double?) {
            let out = path("out-\(mode)-\(overHTTP)-\(name).wav")
            let source = overHTTP ? "\(server.baseURL)/media/\(name)" : path(name)
            let result = try runCommand(PlayerTests.streamplay, [source, "--output", "wav:\(out)", "--stats", "--replaygain", mode])
            try #require(result.status == 0, "\(source) \(mode): \(String(decoding: result.stderr, as: UTF8.self))")
            return (try Self.levelDB(out), try PlayerTests.stats(result.stdout)["replaygain_db"] as? Double)
        }
        // (file, the track and album gains it should play with, in dB)
        let cases: [(String, Double, Double)] = [("tagged.flac", -4.5, 3), ("tagged.ogg", -4.5, 3), ("tagged.opus", -5, 8),
                                                 ("head-gain.opus", -5, 8)]
        let plainOpus = try play("tagged.opus", "off", overHTTP: false).level
        for (name, trackGain, albumGain) in cases {
            for overHTTP in [false, true] {
                let off = try play(name, "off", overHTTP: overHTTP)
                #expect(off.applied == nil, "\(name): no ReplayGain unless asked")
                for (mode, gain) in [("track", trackGain), ("album", albumGain)] {
                    let played = try play(name, mode, overHTTP: overHTTP)
                    print("replaygain \(mode) \(name)\(overHTTP ? " over HTTP" : ""): \(String(format: "%+.3f", played.level - off.level)) dB "
                          + "(expected \(gain)), replaygain_db \(played.applied.map { String($0) } ?? "null")")
                    #expect(abs(played.level - off.level - gain) < 0.05, "\(name) \(mode): level \(played.level - off.level) dB, \(gain) expected")
                    #expect(abs((played.applied ?? .nan) - gain) < 0.01, "\(name) \(mode): replaygain_db \(String(describing: played.applied))")
                }
                if name == "head-gain.opus" {
                    // The header's -6 dB plays in every mode, and the R128 gain adds to it.
                    #expect(abs(off.level - plainOpus - -6) < 0.05, "OpusHead gain: \(off.level - plainOpus) dB, -6 expected")
                    let track = try play(name, "track", overHTTP: overHTTP)
                    #expect(abs(track.level - plainOpus - -11) < 0.05, "header -6 dB + R128 -5 dB: \(track.level - plainOpus) dB")
                    print("opus header gain: off \(String(format: "%+.3f", off.level - plainOpus)) dB, track \(String(format: "%+.3f", track.level - plainOpus)) dB"
                          + " against the file without it (expected -6 and -11)")
                }
            }
        }
    }

    @Test func badReplayGainOptions_areUsageErrors() throws {
        for arguments in [["--replaygain", "loud"], ["--preamp", "40"], ["--preamp", "x"]] {
            let run = try runCommand(PlayerTests.streamplay, [TestPaths.media.appendingPathComponent("pcm16.wav").path,
                                                              "--output", "null"] + arguments)
            #expect(run.status == 2, "\(arguments): exit \(run.status)")
        }
    }
}
