import Foundation
import Testing
import TestSupport

/// An MP4 whose mdat runs past the end of the file (a cut download, a lying box size) fails the
/// same way from a path and over HTTP: exit 1 and one line naming the box and the file size.
@Suite(.serialized, .ownThreads) struct MP4TruncationTests {
    @Test func mdatPastTheEnd_failsAlikeFromAPathAndOverHTTP() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // moov first, then an mdat cut short (a partial download of a faststart file).
        let faststart = [UInt8](try Data(contentsOf: TestPaths.media.appendingPathComponent("track.m4a")))
        try Data(faststart.prefix(faststart.count / 2)).write(to: dir.appendingPathComponent("cut.m4a"))
        // mdat first with a size 1 MB larger than the bytes that follow, the moov behind it unreachable.
        let moovAtEnd = [UInt8](try Data(contentsOf: TestPaths.media.appendingPathComponent("moov-at-end.m4a")))
        let mdat = try #require(moovAtEnd.firstRange(of: Array("mdat".utf8))).lowerBound - 4
        var size = 0
        for byte in moovAtEnd[mdat..<(mdat + 4)] { size = size << 8 | Int(byte) }
        var lying = Array(moovAtEnd.prefix(mdat + size))
        let claimed = size + 1_000_000
        lying.replaceSubrange(mdat..<(mdat + 4), with: [UInt8(claimed >> 24 & 0xFF), UInt8(claimed >> 16 & 0xFF),
                                                        UInt8(claimed >> 8 & 0xFF), UInt8(claimed & 0xFF)])
        try Data(lying).write(to: dir.appendingPathComponent("lying.m4a"))

        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for name in ["cut.m4a", "lying.m4a"] {
            var lines: [String] = []
            for source in [dir.appendingPathComponent(name).path, "\(server.baseURL)/media/\(name)"] {
                let run = try runCommand(PlayerTests.streamplay, [source, "--output", "null"])
                let line = String(decoding: run.stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(run.status == 1, "\(source): \(line)")
                #expect(line.contains("overruns the \(name == "cut.m4a" ? faststart.count / 2 : lying.count)-byte file"), "\(source): \(line)")
                lines.append(line)
            }
            #expect(lines.count == 2 && lines[0] == lines[1], "\(name): the same error both ways: \(lines)")
        }
    }
}

/// A fragmented MP4 whose edit list covers only the samples in its moov (some muxers write it
/// before the fragments exist): its length comes from moov + moof, in --info, the catalog and playback.
@Suite(.serialized, .ownThreads) struct FragmentedPartialEditTests {
    @Test func partialEditList_lengthFromTheFragments() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        let sox = try #require(which("sox")), ffmpeg = try #require(which("ffmpeg"))
        try runCommand(sox, ["-n", "-R", "-r", "44100", "-c", "2", "-b", "16", path("src.wav"), "synth", "10", "pluck", "C3", "sine", "500"])
        // Samples in the moov, then fragments; ffmpeg writes an edit list with the priming.
        try runCommand(ffmpeg, ["-v", "error", "-y", "-i", path("src.wav"), "-c:a", "aac", "-aac_pns", "0", "-b:a", "128k",
                                "-use_editlist", "1", "-movflags", "frag_keyframe", "-frag_duration", "2000000", path("whole.m4a")])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path("whole.m4a"))))
        // The edit's segment_duration (version 0, movie timescale) cut to 2 s: what a muxer that
        // saw only the moov's samples writes.
        let mvhd = try #require(bytes.firstRange(of: Array("mvhd".utf8))).lowerBound
        let elst = try #require(bytes.firstRange(of: Array("elst".utf8))).lowerBound
        #expect(bytes[mvhd + 4] == 0 && bytes[elst + 4] == 0, "version 0 boxes")
        var timescale = 0
        for byte in bytes[(mvhd + 16)..<(mvhd + 20)] { timescale = timescale << 8 | Int(byte) }
        let cut = 2 * timescale
        bytes.replaceSubrange((elst + 12)..<(elst + 16), with: [UInt8(cut >> 24 & 0xFF), UInt8(cut >> 16 & 0xFF),
                                                               UInt8(cut >> 8 & 0xFF), UInt8(cut & 0xFF)])
        try Data(bytes).write(to: URL(fileURLWithPath: path("partial.m4a")))

        for name in ["whole.m4a", "partial.m4a"] {
            let info = try runCommand(PlayerTests.streamplay, ["--info", path(name)])
            let json = try #require(try JSONSerialization.jsonObject(with: info.stdout) as? [String: Any], "\(name)")
            #expect(json["duration_s"] as? Double == 10, "\(name): \(json["duration_s"] ?? "nil")")
            let run = try runCommand(PlayerTests.streamplay, [path(name), "--output", "null", "--stats"])
            #expect(run.status == 0)
            #expect(try PlayerTests.stats(run.stdout)["frames_out"] as? Int == 441_000, "\(name) plays 10 s")
        }
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let tracks = HLSServerTests.text(try HLSServerTests.get(server, "/api/tracks"))
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(tracks.utf8)) as? [[String: Any]])
        let m4a = entries.filter { ($0["path"] as? String)?.hasSuffix(".m4a") == true }
        #expect(m4a.count == 2 && m4a.allSatisfy { $0["duration_s"] as? Double == 10 }, "the catalog: \(m4a)")
    }
}
