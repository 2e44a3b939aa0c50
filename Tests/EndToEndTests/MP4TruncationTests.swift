import Foundation
import Testing

/// An MP4 whose mdat runs past the end of the file (a cut download, a lying box size) fails the
/// same way from a path and over HTTP: exit 1 and one line naming the box and the file size.
@Suite(.serialized) struct MP4TruncationTests {
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
