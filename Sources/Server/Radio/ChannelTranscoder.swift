import StreamAudio
import StreamShared

/// The transcoding half of a playlist channel whose tracks differ in format: each track is
/// decoded (gapless-trimmed), made stereo, resampled to the channel's rate (libsoxr) and fed to
/// the channel's one MP3 encoder (libmp3lame), whose frames are handed out one at a time. One
/// encoder for the channel's whole life: the stream is one continuous MP3 stream (no priming
/// or padding at the joins, the bit reservoir runs on), and listeners never cost an encode.
/// Used by the producer thread only; it asks for frames when the channel clock says they are
/// due, so the work is spread at the stream's pace.
final class ChannelTranscoder {
    let format: ChannelFormat
    private let encoder: LAMEEncoder
    private var decoder: TrackDecoder?
    /// Converts the current track's rate to the channel's (bypassed when they are equal). Kept
    /// across tracks of one rate, so their samples run through one filter without a seam.
    private var resampler: SoxrResampler
    private var resamplerInputRate = 0
    private var pcm: [Float] = []
    private var stereo: [Float] = []
    /// Encoded bytes not yet handed out as frames; `head` is the first.
    private var encoded: [UInt8] = []
    private var head = 0
    private var splitter = AudioFrameSplitter(codec: .mpeg)
    /// Samples (per channel, at the track's rate) decoded from the current track.
    private(set) var trackSamples = 0

    static let quality = 3

    /// A transcoder to `format` (MPEG audio; 1 or 2 channels; one of MP3's rates).
    init(format: ChannelFormat) throws(EncoderError) {
        self.format = format
        // Quality 3, libmp3lame's own default (what `lame` and ffmpeg use unless told otherwise).
        encoder = try LAMEEncoder(sampleRate: format.sampleRate, channels: format.channels, kbps: format.kbps,
                                  quality: Self.quality)
        resampler = SoxrResampler(outputRate: format.sampleRate)
    }

    /// Starts `track`: its samples follow the previous track's in the stream. Throws when it
    /// cannot be opened or planned (the caller skips it).
    func begin(_ track: ChannelTrack) throws {
        decoder = nil
        trackSamples = 0
        decoder = try TrackDecoder(track: track)
    }

    /// The next MP3 frame of the stream, or nil when the current track has given all its
    /// samples (the frames holding its end come out with the next track's start: the encoder
    /// and resampler keep a little back). Throws when the track cannot be decoded further.
    func next() throws -> (bytes: ArraySlice<UInt8>, frame: AudioFrameSplitter.Frame)? {
        // Bounded: every pass decodes more of a finite track or returns.
        while true {
            if let frame = try takeFrame() { return frame }
            guard var current = decoder else { return nil }
            pcm.removeAll(keepingCapacity: true)
            let more: Bool
            do {
                more = try current.decode(into: &pcm)
            } catch {
                decoder = nil
                throw error
            }
            decoder = more ? current : nil
            guard more else { return nil }
            let trackFormat = current.format
            trackSamples += pcm.count / max(1, trackFormat.channels)
            try feed(pcm, format: trackFormat)
        }
    }

    /// Stereo (or mono) at the channel's rate, then into the encoder.
    private func feed(_ samples: [Float], format input: AudioFormat) throws {
        remix(samples, channels: input.channels, into: &stereo)
        if input.sampleRate != resamplerInputRate {
            // Another rate: what the filter holds of the previous track comes out first.
            var tail: [Float] = []
            resampler.flush(into: &tail)
            if !tail.isEmpty { try encoder.encode(tail[...], appendingTo: &encoded) }
            _ = try resampler.configure(input: AudioFormat(sampleRate: input.sampleRate, channels: format.channels))
            resamplerInputRate = input.sampleRate
        }
        resampler.process(&stereo)
        try encoder.encode(stereo[...], appendingTo: &encoded)
    }

    /// `samples` of `channels` as the channel's channel count: mono is copied to both sides,
    /// more than two channels keep the first two (front left and right in WAV's order).
    private func remix(_ samples: [Float], channels: Int, into output: inout [Float]) {
        output.removeAll(keepingCapacity: true)
        let target = format.channels
        if channels == target {
            output.append(contentsOf: samples)
            return
        }
        let frames = samples.count / max(1, channels)
        output.reserveCapacity(frames * target)
        for i in 0..<frames {
            let base = i * channels
            if target == 1 {
                output.append(channels >= 2 ? (samples[base] + samples[base + 1]) * 0.5 : samples[base])
            } else {
                output.append(samples[base])
                output.append(channels >= 2 ? samples[base + 1] : samples[base])
            }
        }
    }

    /// The next whole frame of the encoded bytes, if one is there.
    private func takeFrame() throws -> (bytes: ArraySlice<UInt8>, frame: AudioFrameSplitter.Frame)? {
        if head > 64 * 1024 {
            encoded.removeFirst(head)
            head = 0
        }
        while head < encoded.count {
            switch try splitter.next(in: encoded[head...], isComplete: false) {
            case .frame(let frame):
                guard head + frame.length <= encoded.count else { return nil }
                let bytes = encoded[head..<(head + frame.length)]
                head += frame.length
                return (bytes, frame)
            case .skip(let count):
                head += count
            case .needMore:
                return nil
            }
        }
        return nil
    }
}
