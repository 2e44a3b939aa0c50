import Foundation
import Testing
import TestSupport

/// streamplay with several sources, folders and playlists: the queue end to end, on real files
/// and the real streamd.
@Suite(.serialized, .ownThreads) struct QueuePlayerTests {
    /// One continuous piece (a sweep over noise) cut into 5 tracks at points that are not frame
    /// boundaries, each encoded alone: LAME MP3 (with its gapless tag) and ffmpeg AAC in M4A.
    final class Album {
        let dir: URL
        let names: [String]

        init(ext: String) throws {
            dir = try PlayerTests.temporaryDirectory()
            let sox = try #require(which("sox")), lame = try #require(which("lame")), ffmpeg = try #require(which("ffmpeg"))
            let piece = dir.appendingPathComponent("piece.wav").path
            try Self.check(runCommand(sox, ["-n", "-r", "44100", "-c", "2", "-b", "16", piece, "synth", "10", "sine", "200-3000",
                                            "synth", "10", "pinknoise", "mix", "gain", "-8"]))
            var names: [String] = []
            let cuts = [0.0, 1.337, 3.01, 5.5, 7.777, 10.0]
            for n in 0..<5 {
                let part = dir.appendingPathComponent("part\(n).wav").path
                try Self.check(runCommand(sox, [piece, part, "trim", "\(cuts[n])", "=\(cuts[n + 1])"]))
                let name = "\(n + 1)-track.\(ext)"
                let out = dir.appendingPathComponent("album/\(name)").path
                try FileManager.default.createDirectory(at: dir.appendingPathComponent("album"), withIntermediateDirectories: true)
                if ext == "mp3" {
                    try Self.check(runCommand(lame, ["--quiet", "-V2", "--tt", "Part \(n + 1)", "--tl", "Piece", "--tn", "\(n + 1)", part, out]))
                } else {
                    try Self.check(runCommand(ffmpeg, ["-v", "error", "-y", "-i", part, "-c:a", "aac", "-b:a", "160k",
                                                       "-metadata", "album=Piece", "-metadata", "track=\(n + 1)", out]))
                }
                names.append(name)
            }
            self.names = names
        }

        deinit { try? FileManager.default.removeItem(at: dir) }

        var folder: URL { dir.appendingPathComponent("album") }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

        static func check(_ run: (status: Int32, stdout: Data, stderr: Data)) throws {
            try #require(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        }

        /// Each track decoded alone by streamplay (its own gapless trim), concatenated.
        func referenceConcatenation() throws -> [Int16] {
            var all: [Int16] = []
            for name in names {
                let out = path("ref-\(name).wav")
                try Self.check(runCommand(PlayerTests.streamplay, [folder.appendingPathComponent(name).path, "--output", "wav:\(out)"]))
                all += try wavSamples(out)
            }
            return all
        }
    }

    static func play(_ arguments: [String], out: String) throws -> (samples: [Int16], stderr: String, stdout: Data) {
        let run = try runCommand(PlayerTests.streamplay, arguments + ["--output", "wav:\(out)"])
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        try #require(run.status == 0, "\(arguments): exit \(run.status): \(stderr)")
        return (try wavSamples(out), stderr, run.stdout)
    }

    @Test(arguments: ["mp3", "m4a"])
    func album_fromAFolder_aPlaylist_andStreamd_isTheConcatenationOfItsTracks(ext: String) throws {
        let album = try Album(ext: ext)
        let reference = try album.referenceConcatenation()
        #expect(reference.count > 2 * 44_100 * 9, "\(reference.count) samples for 10 s of stereo")
        // A folder: its files in path order.
        let folder = try Self.play([album.folder.path], out: album.path("folder.wav"))
        #expect(folder.samples == reference, "folder: \(folder.samples.count) samples, the tracks alone \(reference.count)")
        // An extended M3U beside the tracks, relative entries.
        let m3u = "#EXTM3U\n" + album.names.map { "#EXTINF:2,\($0)\n\($0)" }.joined(separator: "\n") + "\n"
        try Data(m3u.utf8).write(to: album.folder.appendingPathComponent("album.m3u8"))
        let playlist = try Self.play([album.folder.appendingPathComponent("album.m3u8").path], out: album.path("playlist.wav"))
        #expect(playlist.samples == reference, "playlist")
        // The same over HTTP: the tracks as URLs, and the playlist as streamd serves it.
        let server = try StreamdProcess(folder: album.folder, extraArguments: ["--quiet"])
        let urls = album.names.map { "\(server.baseURL)/media/\($0)" }
        let http = try Self.play(urls, out: album.path("http.wav"))
        #expect(http.samples == reference, "URLs")
        let served = try Self.play(["\(server.baseURL)/playlist/file/album.m3u8"], out: album.path("served.wav"))
        #expect(served.samples == reference, "streamd's playlist")
    }

    @Test func badEntries_areSkipped_withOneLineEach_andTheQueueGoesOn() throws {
        let album = try Album(ext: "mp3")
        let server = try StreamdProcess(folder: album.folder, extraArguments: ["--quiet"])
        try Data("not audio at all, only text".utf8).write(to: album.folder.appendingPathComponent("fake.mp3"))
        let entries = ["1-track.mp3", "missing.mp3", "fake.mp3", "\(server.baseURL)/media/nothing-here.mp3", "2-track.mp3",
                       "C:\\Music\\x.mp3"]
        try Data(entries.joined(separator: "\r\n").utf8).write(to: album.folder.appendingPathComponent("mixed.m3u"))
        let run = try Self.play([album.folder.appendingPathComponent("mixed.m3u").path, "--stats"], out: album.path("mixed.wav"))
        let lines = run.stderr.split(separator: "\n").map(String.init)
        let skipped = lines.filter { $0.hasPrefix("streamplay: skipped ") }
        #expect(skipped.count == 3, "\(lines)")
        #expect(skipped.contains { $0.contains("missing.mp3") && $0.contains("No such file") }, "\(skipped)")
        #expect(skipped.contains { $0.contains("fake.mp3") && $0.contains("parser:") }, "\(skipped)")
        #expect(skipped.contains { $0.contains("nothing-here.mp3") && $0.contains("404") }, "\(skipped)")
        #expect(lines.contains { $0.contains("Windows path") }, "the unresolvable entry is named: \(lines)")
        var expected = try Self.play([album.folder.appendingPathComponent("1-track.mp3").path], out: album.path("a.wav")).samples
        expected += try Self.play([album.folder.appendingPathComponent("2-track.mp3").path], out: album.path("b.wav")).samples
        #expect(run.samples == expected, "the two good tracks, back to back")
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(String(decoding: run.stdout, as: UTF8.self)
            .split(separator: "\n").last.map(String.init)?.utf8 ?? "".utf8)) as? [String: Any])
        let totals = try #require(stats["totals"] as? [String: Any])
        #expect(totals["tracks_played"] as? Int == 2)
        #expect(totals["tracks_skipped"] as? Int == 3)
        let tracks = try #require(stats["tracks"] as? [[String: Any]])
        #expect(tracks.map { $0["status"] as? String } == ["played", "skipped", "skipped", "skipped", "played"])
    }

    @Test func shuffleSeed_repeatsItsOrder_startTrackAndStats() throws {
        let album = try Album(ext: "mp3")
        func order(_ arguments: [String]) throws -> [String] {
            let run = try Self.play([album.folder.path, "--stats", "--output-rate", "44100"] + arguments, out: album.path("s.wav"))
            let json = String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
            let stats = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let tracks = try #require(stats["tracks"] as? [[String: Any]])
            return tracks.compactMap { ($0["url"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } }
        }
        let a = try order(["--shuffle", "--seed", "7"])
        let b = try order(["--shuffle", "--seed", "7"])
        #expect(a == b)
        #expect(a.sorted() == album.names)
        #expect(try order(["--start-track", "4"]) == Array(album.names[3...]))
        let shuffledFrom2 = try order(["--shuffle", "--seed", "9", "--start-track", "2"])
        #expect(shuffledFrom2.first == album.names[1])
        #expect(shuffledFrom2.count == 5)
    }

    @Test func badQueueOptions_areUsageErrors() throws {
        for arguments in [["--loop", "sometimes"], ["--start-track", "0"], ["--cache-mb", "0"], ["--info", "a.mp3"]] {
            let run = try runCommand(PlayerTests.streamplay, [TestPaths.media.appendingPathComponent("pcm16.wav").path,
                                                              "--output", "null"] + arguments)
            #expect(run.status == 2, "\(arguments): exit \(run.status)")
        }
    }
}
