import StreamAudio
@testable import StreamShared

/// A transcoding radio channel's decode path on a whole in-memory file: `TrackDecoder` (probe,
/// MP4 moov, the frame readers, libmpg123/libfaad2/WAV conversion, the gapless window) from
/// start to end, with the hints the catalog's analysis gives when the bytes pass it and none
/// when they do not (the file may change after the catalog read it).
enum DecodeTarget {
    /// Samples (all channels) one input byte can decode to: AAC's 2048 SBR samples of up to
    /// 8 channels from a 7-byte ADTS frame is the most, with room to spare.
    static let samplesPerByte = 4096
    /// Constant room: one unit of the largest format (4096 WAV frames) plus decoder look-ahead.
    static let slack = 1 << 22

    static func run(_ bytes: [UInt8]) {
        let source = MemoryBytes(bytes)
        var hints = TrackDecoder.Hints()
        if let analysis = try? TrackAnalyzer.describe(source) {
            hints = TrackDecoder.Hints(audioStart: analysis.seekIndex.firstFrameOffset,
                                       audioEnd: analysis.seekIndex.audioEndOffset,
                                       encoderDelay: analysis.encoderDelay, encoderPadding: analysis.encoderPadding,
                                       totalSamples: analysis.totalSamples)
        }
        guard var decoder = try? TrackDecoder(source: source, hints: hints) else { return }
        let bound = bytes.count * samplesPerByte + slack
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
            require(total <= bound, "\(total) samples from \(bytes.count) bytes")
            // Every call that says "more" appends samples, so the calls are bounded by the samples.
            require(calls <= bound, "\(calls) decode calls from \(bytes.count) bytes")
            if !more { return }
        }
    }
}
