import StreamAudio
import StreamEncoder
@testable import StreamShared

/// What a transcoding channel does in streamd with the samples its decode worker sends: libsoxr
/// from the track's rate to the channel's, then libmp3lame (`LAMEEncoder`), then the frame
/// splitter, on any float values (the input's raw bit patterns: NaN, infinities, subnormals,
/// 1e38). The first three bytes pick the input rate, the channel count and the channel's format.
enum EncodeTarget {
    static let inputRates = [1_000, 8_000, 11_025, 22_050, 44_100, 48_000, 96_000, 192_000, 1_536_000]
    static let formats: [(rate: Int, kbps: Int)] = [(44_100, 128), (48_000, 320), (22_050, 64), (8_000, 8), (32_000, 160)]

    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 3 else { return }
        let inputRate = inputRates[Int(bytes[0]) % inputRates.count]
        let channels = 1 + Int(bytes[1] & 1)
        let format = formats[Int(bytes[2]) % formats.count]
        var floats: [Float] = []
        var at = 3
        while at + 4 <= bytes.count {
            floats.append(Float(bitPattern: UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8
                                | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24))
            at += 4
        }
        floats.removeLast(floats.count % channels)
        let encoder: LAMEEncoder
        do {
            encoder = try LAMEEncoder(sampleRate: format.rate, channels: channels, kbps: format.kbps, quality: 3)
        } catch {
            require(false, "the channel's formats are MP3's: \(error)")
            return
        }
        let resampler = SoxrResampler(outputRate: format.rate)
        guard (try? resampler.configure(input: AudioFormat(sampleRate: inputRate, channels: channels))) != nil else {
            require(false, "the resampler takes \(inputRate) Hz")
            return
        }
        var mp3: [UInt8] = []
        var resampled = 0
        // Three calls, as units arrive: the filter and the encoder keep state between them.
        let cut = [0, floats.count / 3 / channels * channels, floats.count * 2 / 3 / channels * channels, floats.count]
        for i in 0..<3 {
            var piece = Array(floats[cut[i]..<cut[i + 1]])
            resampler.process(&piece)
            require(piece.count % channels == 0, "\(piece.count) resampled samples of \(channels) channels")
            resampled += piece.count / channels
            do { try encoder.encode(piece[...], appendingTo: &mp3) } catch { require(false, "\(error)") }
        }
        var tail: [Float] = []
        resampler.flush(into: &tail)
        resampled += tail.count / channels
        do { try encoder.encode(tail[...], appendingTo: &mp3) } catch { require(false, "\(error)") }
        encoder.flush(appendingTo: &mp3)
        // CBR: the bytes of the frames the samples fill, plus the encoder's delay and last frame.
        let seconds = Double(resampled + 4 * 1152) / Double(format.rate)
        require(Double(mp3.count) <= seconds * Double(format.kbps) * 125 * 1.1 + 2 * 1441,
                "\(mp3.count) bytes of MP3 for \(resampled) samples at \(format.rate) Hz")
        // What the channel hands its listeners: frames of its format, back to back.
        var splitter = AudioFrameSplitter(codec: .mpeg)
        var offset = 0
        while offset < mp3.count {
            guard let step = try? splitter.next(in: mp3[offset...], isComplete: true) else {
                require(false, "the splitter refuses the encoder's bytes at \(offset) of \(mp3.count)")
                return
            }
            switch step {
            case .frame(let frame):
                require(frame.sampleRate == format.rate && frame.channels == channels,
                        "a frame of \(frame.sampleRate) Hz \(frame.channels) ch in a \(format.rate) Hz \(channels) ch stream")
                offset += frame.length
            case .skip(let count):
                require(false, "\(count) bytes that are not a frame at \(offset) of \(mp3.count)")
                return
            case .needMore:
                require(false, "a cut frame at \(offset) of \(mp3.count)")
                return
            }
        }
    }
}
