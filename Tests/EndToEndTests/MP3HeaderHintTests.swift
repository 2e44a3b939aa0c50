import Foundation
import Testing
import TestSupport

/// A Xing/Info frame count is a hint, not the truth (files cut from songs, taggers that rewrite
/// the header, a count of 0): streamplay plays the frames that are there, trims the padding from
/// the real end, and a stream shorter than promised plays whole with a warning and exit 0.
@Suite(.serialized, .ownThreads) struct MP3HeaderHintTests {
    /// Writes `source` with the Xing/Info frame count replaced by `frames`.
    static func withFrameCount(_ source: [UInt8], _ frames: Int) throws -> [UInt8] {
        let at = try #require(source.firstRange(of: Array("Info".utf8)) ?? source.firstRange(of: Array("Xing".utf8))).lowerBound
        var bytes = source
        bytes.replaceSubrange((at + 8)..<(at + 12), with: [UInt8(frames >> 24 & 0xFF), UInt8(frames >> 16 & 0xFF),
                                                          UInt8(frames >> 8 & 0xFF), UInt8(frames & 0xFF)])
        return bytes
    }

    @Test func lyingOrMissingCounts_andCutFiles_playWhatIsThere() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        let sox = try #require(which("sox")), lame = try #require(which("lame")), mpg123 = try #require(which("mpg123"))
        try runCommand(sox, ["-n", "-R", "-r", "44100", "-c", "2", "-b", "16", path("src.wav"),
                             "synth", "6", "pluck", "C3", "sine", "500", "gain", "-3"])
        try runCommand(lame, ["--quiet", path("src.wav"), path("whole.mp3")])
        try runCommand(lame, ["--quiet", "-p", path("src.wav"), path("crc.mp3")])     // -p: every frame has a CRC
        let whole = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path("whole.mp3"))))
        let infoAt = try #require(whole.firstRange(of: Array("Info".utf8))).lowerBound
        var frames = 0
        for byte in whole[(infoAt + 8)..<(infoAt + 12)] { frames = frames << 8 | Int(byte) }
        try Data(try Self.withFrameCount(whole, 0)).write(to: URL(fileURLWithPath: path("zero.mp3")))
        try Data(try Self.withFrameCount(whole, frames / 2)).write(to: URL(fileURLWithPath: path("half.mp3")))
        try Data(whole.prefix(whole.count / 2)).write(to: URL(fileURLWithPath: path("cut.mp3")))

        // (file, the mpg123 decode it must equal, whether a warning is due). mpg123 splices at the
        // header's count in half.mp3 (its "Frankenstein stream" handling), so there the reference is
        // the intact file: the same audio, played whole, the padding cut at the real end.
        let cases: [(String, String, Bool)] = [("whole.mp3", "whole.mp3", false), ("zero.mp3", "zero.mp3", false),
                                               ("half.mp3", "whole.mp3", false), ("cut.mp3", "cut.mp3", true),
                                               ("crc.mp3", "crc.mp3", false)]
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for (file, reference, warns) in cases {
            try runCommand(mpg123, ["-q", "-w", path("ref-\(file).wav"), path(reference)])
            for source in [path(file), "\(server.baseURL)/media/\(file)"] {
                let out = path("out-\(file).wav")
                let run = try runCommand(PlayerTests.streamplay, [source, "--output", "wav:\(out)"])
                let stderr = String(decoding: run.stderr, as: UTF8.self)
                #expect(run.status == 0, "\(source): \(stderr)")
                #expect(stderr.contains("warning: parser: stream ended after") == warns, "\(source): \(stderr)")
                #expect(sampleDifference(try wavSamples(out), try wavSamples(path("ref-\(file).wav"))) == nil,
                        "\(source) equals mpg123's decode of \(reference)")
            }
        }
        // The Info tag of the CRC file gives the same gapless trim as the plain one.
        let info = try runCommand(PlayerTests.streamplay, ["--info", path("crc.mp3")])
        let json = try #require(try JSONSerialization.jsonObject(with: info.stdout) as? [String: Any])
        #expect(json["encoder_delay"] as? Int == 576)
        #expect(json["duration_s"] as? Double == 6)

        // Nothing decodable at all (the Info frame and part of a frame) is an error.
        try Data(whole.prefix(600)).write(to: URL(fileURLWithPath: path("tiny.mp3")))
        let tiny = try runCommand(PlayerTests.streamplay, [path("tiny.mp3"), "--output", "null"])
        #expect(tiny.status == 1, "\(String(decoding: tiny.stderr, as: UTF8.self))")
    }
}
