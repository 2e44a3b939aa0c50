#if canImport(Glibc)
import Glibc
#endif
import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// The decoding half of a transcoding channel: the current track's samples (gapless-trimmed,
/// in the channel's channel count, at the track's rate), decoded in a worker process
/// (`IsolatedTrackPCM`: a file that crashes a decoder costs its track, not the server). A file
/// whose worker crashed or overran is skipped until it changes. Shared by MP3 channels
/// (`ChannelTranscoder`) and Opus channels (`OggTrackFeeder`); used by one thread.
final class ChannelDecoder {
    let channels: Int
    private let isolation: DecodeIsolation
    private var decoder: (any TrackPCM)?
    /// Samples (per channel, at the track's rate) decoded from the current track.
    private(set) var trackSamples = 0
    /// Files whose decoder worker crashed or overran, as they were then: skipped until they
    /// change, so a crafted file costs one worker (and a hang one stall), not one every pass.
    private var quarantine: [String: FileStamp] = [:]
    /// The current track's file as it was when it began.
    private var current: (path: String, stamp: FileStamp?)?

    init(channels: Int, isolation: DecodeIsolation) {
        self.channels = channels
        self.isolation = isolation
    }

    /// Starts `track`. Throws when it cannot be opened or planned, or its decoder worker fails
    /// to start or dies at once (the caller skips it).
    func begin(_ track: ChannelTrack) throws {
        decoder = nil
        trackSamples = 0
        current = nil
        switch isolation {
        case .inProcess:
            decoder = try LocalTrackPCM(path: track.path, hints: track.decoderHints, channels: channels)
        case .worker(let settings):
            let stamp = Self.stamp(track.path)
            if let stamp, quarantine[track.path] == stamp {
                throw DecodeWorkerError(description: "skipped: its decoder crashed or stalled on it before (the file has not changed since)")
            }
            current = (track.path, stamp)
            do {
                decoder = try IsolatedTrackPCM(path: track.path, hints: track.decoderHints, channels: channels,
                                               settings: settings)
            } catch {
                remember(error)
                throw error
            }
        }
    }

    /// Lets the current track go: its decoder worker, if any, is killed and reaped now
    /// (`ChildProcess` does so when its last owner lets it go), not when the channel is freed.
    func end() {
        decoder = nil
        current = nil
    }

    /// Whether a track is being decoded (begun and not at its end).
    var isDecoding: Bool { decoder != nil }

    /// Appends the current track's next samples to `output` and returns their rate; nil at the
    /// end of the track (or with none begun). Throws when the track cannot be decoded further
    /// (the track is over then).
    func next(into output: inout [Float]) throws -> Int? {
        guard let current = decoder else { return nil }
        let before = output.count
        let rate: Int?
        do {
            rate = try current.next(into: &output)
        } catch {
            decoder = nil
            remember(error)
            throw error
        }
        guard let rate else {
            decoder = nil
            return nil
        }
        trackSamples += (output.count - before) / channels
        return rate
    }

    /// Quarantines the current file when `error` says its worker crashed or overran.
    private func remember(_ error: any Error) {
        guard let failure = error as? DecodeWorkerError, failure.quarantines, let file = current, let stamp = file.stamp else { return }
        quarantine[file.path] = stamp
    }

    private static func stamp(_ path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Catalog.stamp(info)
    }
}

/// The transcoding half of a playlist channel whose tracks differ in format (or that asks for a
/// bitrate): each track is decoded (`ChannelDecoder`), resampled to the channel's rate and fed
/// to the channel's one MP3 encoder (`ResamplingEncoder` over `LAMEEncoder`, the code MP3
/// transcodes use), whose frames are handed out one at a time. One encoder for the channel's
/// whole life: the stream is one continuous MP3 stream (no priming or padding at the joins, the
/// bit reservoir runs on), and listeners never cost an encode. Used by the producer thread
/// only; it asks for frames when the channel clock says they are due, so the work is spread at
/// the stream's pace.
final class ChannelTranscoder {
    package let format: ChannelFormat
    private let decoder: ChannelDecoder
    /// Kept across tracks: tracks of one rate run through one filter without a seam.
    private let encoding: ResamplingEncoder
    private var pcm: [Float] = []
    /// Encoded bytes not yet handed out as frames; `head` is the first.
    private var encoded: [UInt8] = []
    private var head = 0
    private var splitter = AudioFrameSplitter(codec: .mpeg)
    /// Samples (per channel, at the track's rate) decoded from the current track.
    var trackSamples: Int { decoder.trackSamples }

    static let quality = 3

    /// A transcoder to `format` (MPEG audio; 1 or 2 channels; one of MP3's rates) whose tracks
    /// are decoded as `isolation` says (streamd: in worker processes).
    init(format: ChannelFormat, isolation: DecodeIsolation) throws(EncoderError) {
        self.format = format
        decoder = ChannelDecoder(channels: format.channels, isolation: isolation)
        // Quality 3, libmp3lame's own default (what `lame` and ffmpeg use unless told otherwise).
        encoding = ResamplingEncoder(try LAMEEncoder(sampleRate: format.sampleRate, channels: format.channels, kbps: format.kbps,
                                                     quality: Self.quality))
    }

    /// Starts `track`: its samples follow the previous track's in the stream. Throws when it
    /// cannot be opened or planned, or its decoder worker fails to start or dies at once (the
    /// caller skips it).
    func begin(_ track: ChannelTrack) throws {
        try decoder.begin(track)
    }

    /// Lets the current track go (its decoder worker is killed and reaped now).
    func end() {
        decoder.end()
    }

    /// The next MP3 frame of the stream, or nil when the current track has given all its
    /// samples (the frames holding its end come out with the next track's start: the encoder
    /// and resampler keep a little back). Throws when the track cannot be decoded further.
    package func next() throws -> (bytes: ArraySlice<UInt8>, frame: AudioFrameSplitter.Frame)? {
        // Bounded: every pass decodes more of a finite track or returns.
        while true {
            if let frame = try takeFrame() { return frame }
            guard decoder.isDecoding else { return nil }
            pcm.removeAll(keepingCapacity: true)
            guard let rate = try decoder.next(into: &pcm) else { return nil }
            try encoding.encode(&pcm, rate: rate, appendingTo: &encoded)
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

/// Where a channel of a track is meant to be heard.
enum Speaker: Equatable {
    case left, right, center, lfe, leftSurround, rightSurround, backCenter, other

    /// WAVE_FORMAT_EXTENSIBLE's order (the bits of its channel mask, lowest first), and what a
    /// plain WAV of that many channels means (the same defaults as Windows and ffmpeg).
    static func wav(channels: Int, mask: UInt32?) -> [Speaker] {
        let bits: [(UInt32, Speaker)] = [(0x1, .left), (0x2, .right), (0x4, .center), (0x8, .lfe), (0x10, .leftSurround),
                                         (0x20, .rightSurround), (0x40, .left), (0x80, .right), (0x100, .backCenter),
                                         (0x200, .leftSurround), (0x400, .rightSurround)]
        let defaults: [Int: UInt32] = [1: 0x4, 2: 0x3, 3: 0x7, 4: 0x33, 5: 0x37, 6: 0x3F, 7: 0x13F, 8: 0x63F]
        guard let mask = mask.flatMap({ $0 == 0 ? nil : $0 }) ?? defaults[channels] else {
            return defaultLayout(channels: channels)
        }
        var layout = bits.filter { mask & $0.0 != 0 }.map(\.1)
        if layout.count > channels { layout.removeLast(layout.count - channels) }
        while layout.count < channels { layout.append(.other) }
        return layout
    }

    /// What each of `channels` decoded channels of `decoder`'s track is (the container's
    /// convention; a count other than declared, like AAC's parametric stereo, is plain mono/stereo).
    /// FLAC, ALAC and Ogg come out of their converters in WAV's order with a speaker mask; AIFF
    /// has none and takes WAV's default for its channel count (as ffmpeg does).
    static func layout(channels: Int, of decoder: TrackDecoder) -> [Speaker] {
        let inWAVOrder = [Container.wav, .aiff, .flac, .ogg].contains(decoder.container)
            || (decoder.container == .mp4 && decoder.wavChannelMask != nil)      // ALAC
        if inWAVOrder, channels == decoder.declaredChannels { return wav(channels: channels, mask: decoder.wavChannelMask) }
        switch decoder.container {
        case .mp4, .adts: return aac(channels: channels)
        default: return defaultLayout(channels: channels)
        }
    }

    /// AAC's channel configurations as libfaad2 puts them out: it moves the front pair before
    /// the centre and the LFE last (5.1 measured: L, R, C, Ls, Rs, LFE).
    static func aac(channels: Int) -> [Speaker] {
        switch channels {
        case 3: return [.left, .right, .center]
        case 4: return [.left, .right, .center, .backCenter]
        case 5: return [.left, .right, .center, .leftSurround, .rightSurround]
        case 6: return [.left, .right, .center, .leftSurround, .rightSurround, .lfe]
        case 8: return [.left, .right, .center, .leftSurround, .rightSurround, .leftSurround, .rightSurround, .lfe]
        default: return defaultLayout(channels: channels)
        }
    }

    /// Mono is the centre, two channels left and right, more: left, right, then unknown.
    static func defaultLayout(channels: Int) -> [Speaker] {
        switch channels {
        case 1: return [.center]
        case 2: return [.left, .right]
        default: return [.left, .right] + Array(repeating: .other, count: max(0, channels - 2))
        }
    }
}

/// A fixed mix of a track's speakers into stereo (or mono): centre and surrounds at -3 dB into
/// their side (ITU-R BS.775), the LFE left out, the rows scaled so a full-scale input cannot clip.
struct Downmix {
    let inputChannels: Int
    let outputChannels: Int
    /// `outputChannels` rows of `inputChannels` gains.
    private(set) var gains: [[Float]]

    init(speakers: [Speaker], outputChannels: Int) {
        inputChannels = speakers.count
        self.outputChannels = outputChannels
        let half: Float = 0.70710677
        var left = [Float](repeating: 0, count: speakers.count), right = left
        for (i, speaker) in speakers.enumerated() {
            switch speaker {
            case .left: left[i] = 1
            case .right: right[i] = 1
            case .center, .backCenter:
                left[i] = speakers.count == 1 ? 1 : half
                right[i] = speakers.count == 1 ? 1 : half
            case .leftSurround: left[i] = half
            case .rightSurround: right[i] = half
            case .lfe, .other: break
            }
        }
        // A layout with only unknown channels: the first two are left and right.
        if left.allSatisfy({ $0 == 0 }) && right.allSatisfy({ $0 == 0 }), speakers.count >= 2 {
            left[0] = 1
            right[1] = 1
        }
        func normalized(_ row: [Float]) -> [Float] {
            let sum = row.reduce(0, +)
            return sum > 1 ? row.map { $0 / sum } : row
        }
        if outputChannels == 1 {
            gains = [normalized(zip(left, right).map { ($0 + $1) / 2 })]
        } else {
            gains = [normalized(left), normalized(right)]
        }
    }

    /// Appends `samples` (interleaved, `inputChannels` a frame) mixed to `output`.
    func apply(_ samples: [Float], into output: inout [Float]) {
        let frames = samples.count / max(1, inputChannels)
        output.reserveCapacity(output.count + frames * outputChannels)
        for i in 0..<frames {
            let base = i * inputChannels
            for row in gains {
                var sum: Float = 0
                for c in 0..<inputChannels { sum += row[c] * samples[base + c] }
                output.append(sum)
            }
        }
    }
}
