import Foundation
import Testing
import TestSupport

/// The WAV variants of real-world test collections, played by streamplay from streamd and
/// compared with the samples the file holds: big-endian RIFX, 12-bit and 20-bit samples in wider
/// containers, 64-bit integers, mu-law and A-law, and tags written after the samples.
@Suite(.serialized, .ownThreads) struct WAVVariantPlayerTests {
    /// Samples of a WAV file as Doubles in -1...1: 8/16/24/32-bit integers or 32/64-bit floats,
    /// either byte order (RIFX). Only what the tests write and read.
    static func values(_ path: String) throws -> [Double] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let bigEndian = bytes.starts(with: Array("RIFX".utf8))
        func field(_ at: Int, _ width: Int) -> Int {
            let slice = bytes[at..<(at + width)]
            return (bigEndian ? Array(slice) : slice.reversed()).reduce(0) { $0 << 8 | Int($1) }
        }
        var i = 12, tag = 0, container = 0
        while i + 8 <= bytes.count {
            let id = String(decoding: bytes[i..<(i + 4)], as: UTF8.self), size = field(i + 4, 4)
            if id == "fmt " {
                tag = field(i + 8, 2)
                if tag == 0xFFFE { tag = field(i + 8 + 24, 2) }
                container = field(i + 8 + 12, 2) / field(i + 8 + 2, 2)
            } else if id == "data" {
                let end = min(bytes.count, i + 8 + size)
                return stride(from: i + 8, to: end - container + 1, by: container).map { at in
                    let raw = UInt64(field(at, container))
                    if tag == 3 {
                        return container == 4 ? Double(Float(bitPattern: UInt32(raw))) : Double(bitPattern: raw)
                    }
                    if container == 1 { return (Double(raw) - 128) / 128 }
                    let shift = UInt64(64 - 8 * container)
                    return Double(Int64(bitPattern: raw << shift)) / 9_223_372_036_854_775_808.0
                }
            }
            i += 8 + size + (size & 1)
        }
        throw TestFailure("\(path): no data chunk")
    }

    /// The largest difference between two sample lists, or a message when their lengths differ.
    static func mismatch(_ a: [Double], _ b: [Double], tolerance: Double) -> String? {
        guard a.count == b.count else { return "lengths \(a.count) vs \(b.count)" }
        if let i = a.indices.first(where: { abs(a[$0] - b[$0]) > tolerance }) {
            return "first difference at sample \(i): \(a[i]) vs \(b[i])"
        }
        return nil
    }

    /// Rewrites a little-endian WAV's bits-per-sample field and clears the sample bits below
    /// `bits` (what a 12- or 20-bit recorder writes into its 2- or 3-byte container).
    static func narrow(_ path: String, to bits: Int, output: String) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let format = try #require(bytes.firstRange(of: Array("fmt ".utf8))?.lowerBound)
        let data = try #require(bytes.firstRange(of: Array("data".utf8))?.lowerBound)
        let container = Int(bytes[format + 20]) / Int(bytes[format + 10])
        bytes[format + 8] = 1; bytes[format + 9] = 0            // plain PCM tag, not extensible
        bytes[format + 22] = UInt8(bits); bytes[format + 23] = 0
        let dropped = container * 8 - bits
        for at in stride(from: data + 8, to: bytes.count - container + 1, by: container) {
            // The lowest byte holds the bits to clear (dropped < 8 here).
            bytes[at] &= UInt8(0xFF << dropped & 0xFF)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: output))
    }

    @Test func variants_playAsTheSamplesTheFileHolds() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        let sox = try #require(which("sox")), ffmpeg = try #require(which("ffmpeg"))
        let synth = ["synth", "2", "pluck", "C3", "sine", "660", "gain", "-3"]
        try runCommand(sox, ["-n", "-R", "-r", "22050", "-c", "2", "-b", "16", path("src16.wav")] + synth)
        try runCommand(sox, ["-n", "-R", "-r", "48000", "-c", "1", "-b", "24", path("src24.wav")] + synth)
        // Each case: the file played, the file whose samples it must equal, and how close (G.711
        // and 64-bit go through float in our output, integers stay integers).
        try runCommand(sox, [path("src16.wav"), "-B", path("rifx.wav")])
        try runCommand(sox, [path("src16.wav"), "-e", "u-law", path("mulaw.wav")])
        try runCommand(sox, [path("src16.wav"), "-e", "a-law", path("alaw.wav")])
        try runCommand(ffmpeg, ["-v", "error", "-y", "-i", path("src16.wav"), "-c:a", "pcm_s64le", path("s64.wav")])
        try Self.narrow(path("src16.wav"), to: 12, output: path("pcm12.wav"))
        try Self.narrow(path("src24.wav"), to: 20, output: path("pcm20.wav"))
        // G.711 references: sox's own decode of what it encoded, as 16-bit.
        try runCommand(sox, [path("mulaw.wav"), "-e", "signed", "-b", "16", path("mulaw-ref.wav")])
        try runCommand(sox, [path("alaw.wav"), "-e", "signed", "-b", "16", path("alaw-ref.wav")])
        let cases: [(file: String, reference: String, codec: String)] = [
            ("rifx.wav", "src16.wav", "pcm_s16be"), ("mulaw.wav", "mulaw-ref.wav", "pcm_mulaw"),
            ("alaw.wav", "alaw-ref.wav", "pcm_alaw"), ("s64.wav", "src16.wav", "pcm_s64le"),
            ("pcm12.wav", "pcm12.wav", "pcm_s16le"), ("pcm20.wav", "pcm20.wav", "pcm_s24le"),
        ]
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        for (file, reference, codec) in cases {
            let out = path("out-\(file)")
            let run = try runCommand(PlayerTests.streamplay, ["\(server.baseURL)/media/\(file)", "--output", "wav:\(out)", "--stats"])
            #expect(run.status == 0, "\(file): \(String(decoding: run.stderr, as: UTF8.self))")
            guard run.status == 0 else { continue }
            #expect(try PlayerTests.stats(run.stdout)["codec"] as? String == codec, "\(file)")
            let expected = try Self.values(path(reference)), played = try Self.values(out)
            #expect(expected.count > 40_000, "\(reference) holds audio")
            #expect(Self.mismatch(played, expected, tolerance: 0) == nil,
                    "\(file) plays the samples of \(reference): \(Self.mismatch(played, expected, tolerance: 0) ?? "")")
        }
        // ffmpeg agrees on the little-endian ones (its 5.1 reads RIFX samples as little-endian,
        // so sox is the reference there).
        for file in ["mulaw.wav", "alaw.wav", "pcm12.wav", "pcm20.wav", "s64.wav"] {
            try runCommand(ffmpeg, ["-v", "error", "-y", "-i", path(file), "-c:a", "pcm_f32le", path("ff-\(file)")])
            let ours = try Self.values(path("out-\(file)")), theirs = try Self.values(path("ff-\(file)"))
            #expect(Self.mismatch(ours, theirs, tolerance: 1e-7) == nil,
                    "\(file) vs ffmpeg: \(Self.mismatch(ours, theirs, tolerance: 1e-7) ?? "")")
        }
    }

    @Test func tagsAfterTheSamples_reachInfoAndTheCatalog() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("tagged.wav")
        let sox = try #require(which("sox"))
        try runCommand(sox, ["-n", "-R", "-r", "8000", "-c", "1", "-b", "16", file.path, "synth", "1", "sine", "440"])
        // A LIST/INFO chunk after data, as taggers append it; the RIFF size grows with it.
        func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
            Array(id.utf8) + withUnsafeBytes(of: UInt32(body.count).littleEndian, Array.init) + body + (body.count % 2 == 1 ? [0] : [])
        }
        let info = chunk("LIST", Array("INFO".utf8) + chunk("INAM", Array("Tail Title\0".utf8)) + chunk("IART", Array("Tail Artist\0".utf8)))
        var bytes = [UInt8](try Data(contentsOf: file)) + info
        withUnsafeBytes(of: UInt32(bytes.count - 8).littleEndian) { bytes.replaceSubrange(4..<8, with: $0) }
        try Data(bytes).write(to: file)

        let run = try runCommand(PlayerTests.streamplay, ["--info", file.path])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let json = try #require(try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any])
        #expect(json["title"] as? String == "Tail Title")
        #expect(json["artist"] as? String == "Tail Artist")
        #expect(json["duration_s"] as? Double == 1.0)

        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let tracks = HLSServerTests.text(try HLSServerTests.get(server, "/api/tracks"))
        #expect(tracks.contains("\"title\":\"Tail Title\""), "catalog: \(tracks)")
    }

    /// A big-endian file is played (not probed as MPEG Layer I, as its samples look like syncs)
    /// and `--info` names its codec.
    @Test func rifx_info() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sox = try #require(which("sox"))
        let file = dir.appendingPathComponent("be.wav").path
        try runCommand(sox, ["-n", "-R", "-r", "44100", "-c", "2", "-b", "16", "-B", file, "synth", "1.5", "whitenoise"])
        let run = try runCommand(PlayerTests.streamplay, ["--info", file])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let json = try #require(try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any])
        #expect(json["container"] as? String == "wav")
        #expect(json["codec"] as? String == "pcm_s16be")
        #expect(json["duration_s"] as? Double == 1.5)
    }
}
