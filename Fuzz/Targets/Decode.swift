import StreamAudio
@testable import StreamShared

/// A transcoding radio channel's decode path on a whole in-memory file: `TrackDecoder` (probe,
/// MP4 moov, the frame readers, libmpg123/libfaad2/WAV conversion, Ogg, FLAC through libFLAC,
/// AIFF conversion, ALAC in MP4, the gapless window) from
/// start to end, with the hints the catalog's analysis gives when the bytes pass it and none
/// when they do not (the file may change after the catalog read it); then again from a seek-index
/// point, as a transcode's `offset` starts it (`TrackDecoder.start`: MP3/AAC restarts, Ogg header
/// pages read again).
enum DecodeTarget {
    /// Samples (all channels) one input byte can decode to: a FLAC frame of constant subframes
    /// (a few bytes) holds up to 65535 samples a channel, 8 channels (the `flacdecode` bound);
    /// AAC's SBR frames and ALAC packets give fewer.
    static let samplesPerByte = 65_536
    /// Constant room: one unit of the largest format (4096 WAV frames) plus decoder look-ahead.
    static let slack = 1 << 22

    static func run(_ bytes: [UInt8]) {
        let source = MemoryBytes(bytes)
        var hints = TrackDecoder.Hints()
        let analysis = try? TrackAnalyzer.describe(source)
        if let analysis {
            hints = TrackDecoder.Hints(audioStart: analysis.seekIndex.firstFrameOffset,
                                       audioEnd: analysis.seekIndex.audioEndOffset,
                                       encoderDelay: analysis.encoderDelay, encoderPadding: analysis.encoderPadding,
                                       totalSamples: analysis.totalSamples)
        }
        guard let decoder = try? TrackDecoder(source: source, hints: hints) else { return }
        drain(decoder, bytes: bytes.count)
        // From the index's last point (its sample as the container counts it), a little after it.
        guard let analysis, let point = analysis.seekIndex.points.last,
              var started = try? TrackDecoder(source: source, hints: hints) else { return }
        let sample = min(1 << 40, point.sample ?? Int(min(1e12, max(0, point.t * Double(analysis.sampleRate))).rounded()))
        do { try started.start(atSample: sample + 20_000, from: (point.byte, sample)) } catch { return }
        drain(started, bytes: bytes.count)
    }

    /// Decodes to the end, checking every call's output is bounded and whole.
    static func drain(_ decoder: TrackDecoder, bytes count: Int) {
        var decoder = decoder
        let bound = count * samplesPerByte + slack
        var output: [Float] = []
        var total = 0
        var calls = 0
        while true {
            output.removeAll(keepingCapacity: true)
            let more: Bool
            do { more = try decoder.decode(into: &output) } catch { return }
            calls += 1
            let format = decoder.format
            require(format.sampleRate > 0 && format.channels > 0, "decoded format \(format)")
            require(output.count % format.channels == 0, "\(output.count) samples of \(format.channels) channels")
            total += output.count
            require(total <= bound, "\(total) samples from \(count) bytes")
            // Every call that says "more" appends samples, so the calls are bounded by the samples.
            require(calls <= bound, "\(calls) decode calls from \(count) bytes")
            if !more { return }
        }
    }
}
