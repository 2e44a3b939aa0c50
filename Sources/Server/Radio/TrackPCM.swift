import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// A track's samples as a transcoding channel takes them: interleaved, in the channel's channel
/// count, at the track's own rate (the channel resamples). `IsolatedTrackPCM` runs the decoder
/// in a worker process (streamd); `LocalTrackPCM` runs it here (the worker itself, unit tests).
protocol TrackPCM: AnyObject {
    /// Appends the next samples of the track to `output` and returns their rate; nil at the
    /// end of the track. Throws when the track cannot be decoded further.
    func next(into output: inout [Float]) throws -> Int?
}

/// Where a transcoding channel's tracks are decoded.
enum DecodeIsolation: Sendable {
    /// In a `streamd decode-worker` process per track: a decoder that traps, overruns or hangs
    /// costs that track, never the server.
    case worker(DecodeWorker.Settings)
    /// In this process (the worker itself; unit tests of the transcoder).
    case inProcess
}

/// `TrackDecoder` in this process, its samples made the channel's channel count (`Downmix` by
/// the track's speaker layout).
final class LocalTrackPCM: TrackPCM {
    private var decoder: TrackDecoder
    private let channels: Int
    private var pcm: [Float] = []
    private var matrix: Downmix?
    private var matrixLayout: [Speaker] = []

    /// Opens and plans the file at `path`; throws `SystemError`, `FormatError` or `DecoderError`.
    init(path: String, hints: TrackDecoder.Hints, channels: Int, start: DecodeStart = DecodeStart()) throws {
        decoder = try TrackDecoder(source: try OpenFile(path: path), hints: hints)
        var point: (byte: Int, sample: Int)?
        if start.pointByte >= 0 && start.pointSample >= 0 { point = (start.pointByte, start.pointSample) }
        try decoder.start(atSample: start.sample, from: point)
        self.channels = channels
    }

    package func next(into output: inout [Float]) throws -> Int? {
        pcm.removeAll(keepingCapacity: true)
        guard try decoder.decode(into: &pcm) else { return nil }
        let format = decoder.format
        if format.channels == channels {
            output.append(contentsOf: pcm)
        } else {
            let layout = Speaker.layout(channels: format.channels, of: decoder)
            if matrixLayout != layout {
                matrix = Downmix(speakers: layout, outputChannels: channels)
                matrixLayout = layout
            }
            matrix?.apply(pcm, into: &output)
        }
        return format.sampleRate
    }
}
