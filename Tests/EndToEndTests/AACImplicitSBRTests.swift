import Foundation
import Testing
import TestSupport

/// HE-AAC signalled only inside the frames (implicit SBR: the only way in ADTS, and common in
/// M4A), made without an HE-AAC encoder (Debian has none): every ADTS frame of an AAC-LC file gets
/// an SBR extension element, a fill element of type EXT_SBR_DATA right after the channel
/// element. libfaad2 and ffmpeg both then run the SBR tool and output twice the rate that the
/// headers state; streamplay must play, and `--stats`/`--info` state, that rate.
/// The stub extension has no SBR header, so the high band stays empty and the two decoders,
/// which treat a headerless SBR stream differently, are not compared sample by sample.
enum ImplicitSBR {
    /// `adts` with an SBR extension element added to every frame from `firstFrame` on.
    static func addingSBR(to adts: [UInt8], fromFrame firstFrame: Int = 0) throws -> [UInt8] {
        var out: [UInt8] = []
        var at = 0, index = 0
        while at + 7 <= adts.count {
            guard adts[at] == 0xFF, adts[at + 1] & 0xF0 == 0xF0 else { throw TestFailure("no ADTS sync at \(at)") }
            let headerLength = adts[at + 1] & 1 == 1 ? 7 : 9
            let length = Int(adts[at + 3] & 3) << 11 | Int(adts[at + 4]) << 3 | Int(adts[at + 5]) >> 5
            guard length > headerLength, at + length <= adts.count else { throw TestFailure("bad ADTS frame at \(at)") }
            var header = Array(adts[at..<(at + headerLength)])
            var payload = Array(adts[(at + headerLength)..<(at + length)])
            if index >= firstFrame {
                payload = try withSBRElement(payload)
                let newLength = headerLength + payload.count
                header[3] = header[3] & 0xFC | UInt8(newLength >> 11 & 3)
                header[4] = UInt8(newLength >> 3 & 0xFF)
                header[5] = header[5] & 0x1F | UInt8(newLength & 7) << 5
            }
            out += header + payload
            at += length
            index += 1
        }
        return out
    }

    /// A raw_data_block with `<fill element, 1 byte: EXT_SBR_DATA, bs_header_flag 0>` put before
    /// its END element. The encoder ends the block with END (binary 111) and zero bits up to the
    /// byte boundary, so END is the last three set bits.
    static func withSBRElement(_ block: [UInt8]) throws -> [UInt8] {
        var bits: [Bool] = []
        for byte in block {
            for shift in (0..<8).reversed() { bits.append((byte >> UInt8(shift)) & 1 == 1) }
        }
        guard let last = bits.lastIndex(of: true), last >= 2, bits[(last - 2)...last].allSatisfy({ $0 }) else {
            throw TestFailure("raw data block does not end with END")
        }
        bits.removeSubrange((last - 2)...)
        // ID_FIL (110), count 1, then the byte: extension type EXT_SBR_DATA (1101), bs_header_flag 0, 000.
        let element = "110" + "0001" + "1101" + "0" + "000" + "111"
        for character in element { bits.append(character == "1") }
        while bits.count % 8 != 0 { bits.append(false) }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: bits.count, by: 8) {
            var byte: UInt8 = 0
            for bit in bits[i..<(i + 8)] { byte = byte << 1 | (bit ? 1 : 0) }
            bytes.append(byte)
        }
        return bytes
    }
}

@Suite(.ownThreads) struct AACImplicitSBRTests {
    static var streamplay: String { TestPaths.binDir.appendingPathComponent("streamplay").path }

    /// An AAC-LC file at `rate` with `channels`, 3 s, in ADTS.
    static func lcADTS(rate: Int, channels: Int, in dir: URL) throws -> [UInt8] {
        let source = dir.appendingPathComponent("source-\(rate).wav").path
        let adts = dir.appendingPathComponent("lc-\(rate).aac").path
        try runCommand(try #require(which("sox")), ["-R", "-n", "-r", "\(rate)", "-c", "\(channels)", source, "synth", "3",
                                                    "pluck", "C3", "pluck", "E4", "gain", "-6"])
        try runCommand(try #require(which("ffmpeg")), ["-nostdin", "-v", "error", "-y", "-i", source, "-fflags", "+bitexact",
                                                      "-flags:a", "+bitexact", "-c:a", "aac", "-aac_pns", "0", "-b:a", "48k",
                                                      "-f", "adts", adts])
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: adts)))
    }

    static func json(_ data: Data) throws -> [String: Any] { try AACFormatMatrixTests.json(data) }

    @Test(arguments: [(22050, 1), (24000, 2)])
    func implicitSBR_playsAndStatesTwiceTheHeadersRate(rate: Int, channels: Int) throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let he = try ImplicitSBR.addingSBR(to: try Self.lcADTS(rate: rate, channels: channels, in: dir))
        try Data(he).write(to: dir.appendingPathComponent("he.aac"))
        let ffmpeg = try #require(which("ffmpeg"))
        // The same frames in MP4: ffmpeg writes an AudioSpecificConfig that says plain LC.
        try runCommand(ffmpeg, ["-nostdin", "-v", "error", "-y", "-i", dir.appendingPathComponent("he.aac").path, "-c", "copy",
                                "-movflags", "+faststart", dir.appendingPathComponent("he.m4a").path])
        try runCommand(ffmpeg, ["-nostdin", "-v", "error", "-y", "-i", dir.appendingPathComponent("he.m4a").path, "-c", "copy",
                                "-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-frag_duration", "1000000",
                                dir.appendingPathComponent("he-frag.m4a").path])
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet"])
        let played = 2 * rate
        for path in ["media/he.aac", "media/he.m4a", "media/he-frag.m4a", "hls/he.aac/index.m3u8", "hls/he.m4a/index.m3u8"] {
            let url = "\(server.baseURL)/\(path)"
            let wav = dir.appendingPathComponent("out.wav").path
            let run = try runCommand(Self.streamplay, [url, "--output", "wav:\(wav)", "--stats"])
            #expect(run.status == 0, "\(path): \(String(decoding: run.stderr, as: UTF8.self))")
            guard run.status == 0 else { continue }
            let ours = try PCMFile(path: wav)
            let stats = try Self.json(run.stdout)
            // SBR doubles the rate; mono stays mono (no PS in the frames).
            #expect(ours.sampleRate == played && ours.channels == channels, "\(path): plays \(ours.sampleRate) Hz \(ours.channels) ch")
            #expect(stats["sample_rate"] as? Int == played && stats["channels"] as? Int == channels, "\(path): --stats \(stats)")
            let info = try Self.json(try runCommand(Self.streamplay, ["--info", url]).stdout)
            #expect(info["sample_rate"] as? Int == played && info["channels"] as? Int == channels, "\(path): --info \(info)")
            if path.hasPrefix("media/") {
                let duration = try #require(info["duration_s"] as? Double)
                #expect(Int((duration * Double(played)).rounded()) == ours.frames,
                        "\(path): --info says \(duration) s, \(ours.frames) frames played")
            }
            if path == "media/he.aac" {
                // ffmpeg finds the SBR too; its decode keeps the first frame, which libfaad2 holds back.
                let reference = try PCMFile(path: try { () throws -> String in
                    let ref = dir.appendingPathComponent("ref.wav").path
                    try runCommand(ffmpeg, ["-nostdin", "-v", "error", "-y", "-i", dir.appendingPathComponent("he.aac").path,
                                            "-c:a", "pcm_f32le", ref])
                    return ref
                }())
                #expect(reference.sampleRate == played, "ffmpeg's decode: \(reference.sampleRate) Hz")
                #expect(ours.frames == reference.frames - 2048, "\(ours.frames) frames, ffmpeg \(reference.frames)")
            }
        }
    }

    /// SBR that first appears after the first frame: libfaad2 refuses every frame from there
    /// on. A clear error, never a short or silent "success" (ffmpeg ignores such SBR).
    @Test func sbrAppearingMidStream_isAnError() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let late = try ImplicitSBR.addingSBR(to: try Self.lcADTS(rate: 24000, channels: 2, in: dir), fromFrame: 10)
        let file = dir.appendingPathComponent("late.aac").path
        try Data(late).write(to: URL(fileURLWithPath: file))
        let run = try runCommand(Self.streamplay, [file, "--output", "null"])
        let message = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 1, "\(message)")
        #expect(message.contains("converter: libfaad2: First SBR frame is not the same as first AAC frame"), "\(message)")
    }
}
