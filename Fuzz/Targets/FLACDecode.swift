import StreamAudio
@testable import StreamShared

/// streamplay's FLAC decode path on an in-memory file: Probe's metadata walk, then
/// `FLACConverter` (libFLAC's stream decoder behind `FLACDecoder`) fed in two pieces cut where
/// the first byte says, to the end; then a restart in the middle (a seek) decoded to the end.
/// Samples stay within -1...1 and a bound per input byte, calls within a bound, no trap.
enum FLACDecodeTarget {
    /// A frame of constant subframes takes about 2 bytes a channel plus 8 of header and CRC, and
    /// holds up to 65535 samples a channel: 65536 samples (all channels) a byte bounds any stream.
    static let samplesPerByte = 65_536

    static func run(_ bytes: [UInt8]) {
        guard bytes.count > 1 else { return }
        let file = Array(bytes.dropFirst())
        guard case .audio(let stream)? = try? Probe.probe(file[...], isComplete: true), let flac = stream.flac else { return }
        let split = file.count * Int(bytes[0]) / 256
        decode(file, flac: flac, audioStart: stream.firstFrameOffset, from: 0, split: split)
        decode(file, flac: flac, audioStart: stream.firstFrameOffset, from: file.count / 2, split: file.count / 2)
    }

    /// Decodes `file` from `start` (a restart there) to its end, the bytes appended in two pieces at `split`.
    static func decode(_ file: [UInt8], flac: FLACMetadataPrefix, audioStart: Int, from start: Int, split: Int) {
        guard var converter = try? FLACConverter(streamInfo: flac.streamInfo, audioStart: audioStart) else { return }
        let bound = (file.count - start + 1) * samplesPerByte
        let channels = flac.streamInfo.channels
        var total = 0, calls = 0
        func drain(isComplete: Bool) -> Bool {
            while true {
                let converted: Bool
                do {
                    converted = try converter.convertNext(isComplete: isComplete) { samples in
                        require(samples.count % channels == 0, "\(samples.count) samples of \(channels) channels")
                        require(samples.allSatisfy { $0 >= -1 && $0 <= 1 }, "a sample outside -1...1")
                        total += samples.count
                    }
                } catch {
                    return false
                }
                calls += 1
                require(total <= bound, "\(total) samples from \(file.count - start) bytes")
                require(calls <= 2 * (file.count - start) + 64, "\(calls) conversions from \(file.count - start) bytes")
                if !converted { return true }
            }
        }
        do { try converter.restart(at: start) } catch { return }
        converter.append(Array(file[start..<max(start, split)]))
        guard drain(isComplete: false) else { return }
        converter.append(Array(file[max(start, split)...]))
        guard drain(isComplete: false) else { return }
        _ = drain(isComplete: true)
        _ = converter.damageReport
    }
}
