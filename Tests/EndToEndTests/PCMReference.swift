import Foundation
import Testing
import TestSupport

/// A PCM WAV file as written by streamplay, ffmpeg, mpg123 or sox: its format and its data chunk.
struct PCMFile {
    var sampleRate: Int
    var channels: Int
    var bitsPerSample: Int
    var isFloat: Bool
    /// The data chunk's bytes.
    var data: [UInt8]

    var bytesPerFrame: Int { max(1, channels * bitsPerSample / 8) }
    var frames: Int { data.count / bytesPerFrame }

    init(path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func le(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        guard bytes.count >= 12, bytes[0..<4] == [0x52, 0x49, 0x46, 0x46], bytes[8..<12] == [0x57, 0x41, 0x56, 0x45] else {
            throw TestFailure("\(path): not a RIFF/WAVE file")
        }
        var format: (tag: Int, channels: Int, rate: Int, bits: Int)?
        var i = 12
        while i + 8 <= bytes.count {
            let id = String(decoding: bytes[i..<(i + 4)], as: UTF8.self)
            let size = le(i + 4, 4)
            if id == "fmt ", i + 24 <= bytes.count {
                var tag = le(i + 8, 2)
                if tag == 0xFFFE, i + 8 + 26 <= bytes.count { tag = le(i + 8 + 24, 2) }   // WAVE_FORMAT_EXTENSIBLE
                format = (tag, le(i + 10, 2), le(i + 12, 4), le(i + 22, 2))
            } else if id == "data" {
                guard let format else { throw TestFailure("\(path): data before fmt") }
                // ffmpeg writing to a pipe, or a writer cut short, leaves the size open.
                let end = (size == 0 || size == 0xFFFF_FFFF) ? bytes.count : min(bytes.count, i + 8 + size)
                sampleRate = format.rate
                channels = format.channels
                bitsPerSample = format.bits
                isFloat = format.tag == 3
                data = Array(bytes[(i + 8)..<end])
                return
            }
            i += 8 + size + (size & 1)
        }
        throw TestFailure("\(path): no data chunk")
    }

    /// The samples, interleaved, as Float in -1...1.
    func samples() -> [Float] {
        let width = bitsPerSample / 8
        let count = data.count / max(1, width)
        var out = [Float](repeating: 0, count: count)
        data.withUnsafeBytes { raw in
            for n in 0..<count {
                let at = n * width
                switch (width, isFloat) {
                case (2, false): out[n] = Float(Int16(bitPattern: raw.loadUnaligned(fromByteOffset: at, as: UInt16.self))) / 32768
                case (3, false):
                    let v = Int32(bitPattern: UInt32(raw[at]) << 8 | UInt32(raw[at + 1]) << 16 | UInt32(raw[at + 2]) << 24) >> 8
                    out[n] = Float(v) / 8_388_608
                case (4, false): out[n] = Float(Double(raw.loadUnaligned(fromByteOffset: at, as: Int32.self)) / 2_147_483_648)
                case (4, true): out[n] = raw.loadUnaligned(fromByteOffset: at, as: Float.self)
                case (8, true): out[n] = Float(raw.loadUnaligned(fromByteOffset: at, as: Double.self))
                default: out[n] = (Float(raw[at]) - 128) / 128
                }
            }
        }
        return out
    }
}

/// Signal-to-noise ratio in dB of `test` against `reference` from frame `offset` on, over the
/// frames both have (interleaved samples of `channels` channels); +inf when they are identical.
func snrDecibels(reference: [Float], test: [Float], offset: Int, channels: Int) -> Double {
    let start = offset * channels
    let n = min(max(0, reference.count - start), test.count)
    guard n > 0 else { return -.infinity }
    var signal = 0.0, noise = 0.0
    for i in 0..<n {
        let r = Double(reference[start + i]), d = r - Double(test[i])
        signal += r * r
        noise += d * d
    }
    return noise == 0 ? .infinity : 10 * log10(signal / noise)
}

/// ffmpeg's decode of an AAC file and how it lines up with streamplay's (which plays libfaad2's
/// decode with the file's gapless trim):
/// - ADTS carries no gapless facts: ffmpeg keeps all the encoder's priming, libfaad2 (and so
///   streamplay) drops the first frame, 1024 samples. Ours = ffmpeg's from frame 1024 on, to its end.
/// - MP4 with an edit list: ffmpeg 5.1 applies its start (the priming) but keeps the last
///   frame's padding. Ours = ffmpeg's from frame 0, for the edit's duration (ffprobe's duration_ts).
/// - MP4 without one (ffmpeg's fragmented output): ffmpeg keeps everything; streamplay drops
///   the usual 1024 samples and the padding after the last sample's duration. Ours = ffmpeg's
///   from frame 1024, for the sample durations' sum (duration_ts) less 1024.
struct FFmpegAACReference {
    var pcm: PCMFile
    var samples: [Float]
    /// Where streamplay's first frame sits in ffmpeg's decode.
    var offset: Int
    /// The frames streamplay must produce.
    var expectedFrames: Int

    init(file: String, wav: String) throws {
        let ffmpeg = try #require(which("ffmpeg")), ffprobe = try #require(which("ffprobe"))
        let run = try runCommand(ffmpeg, ["-nostdin", "-v", "error", "-y", "-i", file, "-c:a", "pcm_f32le", "-f", "wav", wav])
        guard run.status == 0 else { throw TestFailure("ffmpeg \(file): \(String(decoding: run.stderr, as: UTF8.self))") }
        pcm = try PCMFile(path: wav)
        samples = pcm.samples()
        if file.hasSuffix(".aac") {
            offset = 1024
            expectedFrames = pcm.frames - 1024
            return
        }
        let probe = try runCommand(ffprobe, ["-v", "error", "-select_streams", "a:0", "-read_intervals", "%+#1",
                                             "-show_entries", "stream=duration_ts,time_base:packet=pts", "-of", "json", file])
        let json = try #require(try JSONSerialization.jsonObject(with: probe.stdout) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first, "\(file): no stream")
        let ticks = try #require(stream["duration_ts"] as? Int, "\(file): duration_ts")
        let base = (stream["time_base"] as? String ?? "").split(separator: "/").compactMap { Int($0) }
        guard base.count == 2, base[1] > 0 else { throw TestFailure("\(file): time base \(stream)") }
        let firstPTS = try #require((json["packets"] as? [[String: Any]])?.first?["pts"] as? Int, "\(file): first pts")
        // A negative first timestamp is the edit list's priming, which ffmpeg then skips itself.
        offset = firstPTS < 0 ? 0 : 1024
        expectedFrames = Int((Double(ticks * base[0]) * Double(pcm.sampleRate) / Double(base[1])).rounded()) - offset
    }

    /// The frames ffmpeg decoded beyond what the file says to play (the last frame's padding).
    var untrimmedTail: Int { pcm.frames - offset - expectedFrames }
}
