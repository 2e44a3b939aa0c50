import Foundation
import Testing
import TestSupport

/// GStreamer's HLS demuxer (hlsdemux2, through uridecodebin3) as a strict independent client:
/// it refuses packed audio whose segments do not start with their ID3 timestamp, which is what
/// byte ranges of the original file used to be (issue 12). Both playlist forms must decode to
/// as many samples as the file holds.
@Suite(.ownThreads) struct HLSGStreamerTests {
    /// Decodes `url` to a 16-bit WAV with gst-launch; throws with its output on failure.
    static func gstDecode(_ url: String, to output: URL) throws {
        let gst = try #require(which("gst-launch-1.0"), "gst-launch-1.0 is installed by scripts/deps.sh")
        let run = try runCommand(gst, ["-q", "uridecodebin3", "uri=\(url)", "!", "audioconvert", "!",
                                       "audio/x-raw,format=S16LE", "!", "wavenc", "!", "filesink", "location=\(output.path)"],
                                 timeout: 120)
        guard run.status == 0 else {
            throw TestFailure("gst-launch \(url): exit \(run.status): \(String(decoding: run.stdout + run.stderr, as: UTF8.self).suffix(600))")
        }
    }

    /// Frames in a 16-bit WAV written by wavenc or ffmpeg (the data chunk's size / block size).
    static func wavFrames(_ url: URL) throws -> Int {
        let bytes = [UInt8](try Data(contentsOf: url))
        var at = 12, channels = 1
        while at + 8 <= bytes.count {
            let id = String(decoding: bytes[at..<(at + 4)], as: UTF8.self)
            let size = Int(bytes[at + 4]) | Int(bytes[at + 5]) << 8 | Int(bytes[at + 6]) << 16 | Int(bytes[at + 7]) << 24
            if id == "fmt ", at + 12 <= bytes.count { channels = max(1, Int(bytes[at + 10]) | Int(bytes[at + 11]) << 8) }
            if id == "data" { return min(size, bytes.count - at - 8) / (2 * channels) }
            at += 8 + size + (size & 1)
        }
        throw TestFailure("\(url.lastPathComponent): no data chunk")
    }

    @Test(arguments: [("vbr-v2.mp3", "index.m3u8?byterange=1"), ("vbr-v2.mp3", "index.m3u8"),
                      ("adts.aac", "index.m3u8?byterange=1"), ("adts.aac", "index.m3u8")])
    func gstreamer_decodesOurPackedAudio(path: String, playlist: String) throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let reference = library.appendingPathComponent("ref.wav"), decoded = library.appendingPathComponent("gst.wav")
        try HLSServerTests.ffmpegDecode(library.appendingPathComponent(path).path, to: reference)
        do {
            try Self.gstDecode("\(server.baseURL)/hls/\(path)/\(playlist)", to: decoded)
        } catch {
            // What streamd answered each of gst's requests tells a server fault from a client one.
            server.stop()
            throw TestFailure("\(error)\nstreamd's log:\n\(server.log.suffix(3000))")
        }
        let want = try Self.wavFrames(reference), got = try Self.wavFrames(decoded)
        // HLS carries no gapless info: the decoder's priming and the padding may stay (≤ 2 frames).
        #expect(got > 0 && abs(got - want) <= 2 * 1152 + 2112, "\(path) \(playlist): \(got) frames vs the file's \(want)")
        if playlist.contains("byterange") {
            #expect(server.log.contains("/packed."), "gst fetched ranges of the packed file")
        }
    }
}
