import StreamShared

/// Where a player is in its life.
public enum PlayerState: String, Sendable {
    case idle, buffering, playing, paused, seeking, ended, failed
}

/// What a player reports while it runs (consume `Player.events`).
public enum PlayerEvent: Sendable {
    case state(PlayerState)
    /// Position and duration in seconds (duration nil when unknown).
    case progress(position: Double, duration: Double?)
    /// Throttle fill in bytes and its capacity.
    case buffer(fill: Int, capacity: Int)
    case format(AudioFormat, codec: String)
    case metadata(TrackTags)
    /// A live stream's title changed (ICY `StreamTitle`), as it reaches the decoder.
    case title(String)
    /// The DSP settings now heard: playback rate, pitch shift in semitones, EQ (as `--eq` takes it).
    case dsp(rate: Double, semitones: Double, eq: String)
    case error(String)
}

/// How to play.
public struct PlayerOptions: Sendable {
    /// Start position in seconds.
    public var start: Double = 0
    /// Play at most this many seconds.
    public var duration: Double?
    /// 0...2.
    public var volume: Float = 1
    /// Playback rate 0.1...16 (pitch kept).
    public var rate: Double = 1
    /// Pitch shift in semitones, -12...12 (tempo kept).
    public var semitones: Double = 0
    public var eq: EQSettings = .flat
    /// `--replaygain`, `--preamp` and clip prevention.
    public var replayGain = ReplayGainSettings()
    /// For `--replaygain auto`: the album of the track played before this one in a queue
    /// (`.some(nil)`: it had none); `.none` for the first track or a single one, which count as
    /// their own album. Auto takes the album gain when this track's album is the same.
    public var replayGainPreviousAlbum: String?? = .none
    /// Resample to this rate when it differs from the source's (the output device's rate).
    public var outputSampleRate: Int?
    /// The time stretcher (WSOLA by default; see docs/DSP.md).
    public var stretchEngine: TimePitch.Engine = .wsola
    public var bufferBytes = 1 << 20
    /// Bytes the throttles of a queue's tracks share (the playing one and the next, opened
    /// ahead); nil: this player's throttle has its own `bufferBytes`.
    public var throttleBudget: ThrottleBudget?
    /// `--crossfade`: seconds of equal-power overlap between a queue's tracks (never between
    /// tracks of one album that join gaplessly); 0 off.
    public var crossfadeSeconds = 0.0
    /// Longest `--crossfade` (bounds what a track holds back: 12 s of 8 channels at 192 kHz is 70 MB).
    public static let maxCrossfadeSeconds = 12.0
    /// Pace file and null outputs to real time.
    public var realtime = false
    public var http = HTTPSourceOptions()
    /// Variant choice and limits for HLS playlists.
    public var hls = HLSOptions()
    public init() {}
}

/// Counters for `--stats`.
public struct PlayerStats: Sendable {
    public var ttfaMs: Double?
    public var framesOut = 0
    public var sampleRate = 0
    public var channels = 0
    public var durationSeconds: Double?
    public var underruns = 0
    public var reconnects = 0
    public var bytesDownloaded = 0
    public var peakBufferBytes = 0
    public var seekMs: Double?
    /// The ReplayGain applied in dB (after clip prevention); nil when none was.
    public var replayGainDB: Double?
    public var codec = ""
    public var container = ""
    /// `--format`: the transcode streamd was asked for (its encoding and kbit/s); nil otherwise.
    public var transcodeFormat: String?
    public var transcodeBitrateKbps: Int?
    /// Problems that did not stop playback (a stream shorter than its header said), one line each.
    public var warnings: [String] = []
    /// A live stream's titles as they changed (at most the last 1000).
    public var titles: [StreamTitleChange] = []
    /// A live stream's reconnects: milliseconds without audio each time.
    public var liveGapsMs: [Double] = []

    /// The one-line JSON object `--stats` prints (fields in DESIGN.md order).
    public var json: String {
        var w = JSONObjectWriter()
        w.add("ttfa_ms", ttfaMs, decimals: 3)
        w.add("frames_out", framesOut)
        w.add("sample_rate", sampleRate)
        w.add("channels", channels)
        w.add("duration_s", durationSeconds)
        w.add("underruns", underruns)
        w.add("reconnects", reconnects)
        w.add("bytes_downloaded", bytesDownloaded)
        w.add("peak_buffer_bytes", peakBufferBytes)
        w.add("seek_ms", seekMs, decimals: 3)
        w.add("codec", codec)
        w.add("container", container)
        w.add("replaygain_db", replayGainDB, decimals: 2)
        if let transcodeFormat {
            w.add("transcode_format", transcodeFormat)
            w.add("transcode_kbps", transcodeBitrateKbps)
        }
        w.addRaw("titles", "[" + titles.map { change in
            var item = JSONObjectWriter()
            item.add("at_s", change.atSeconds, decimals: 3)
            item.add("title", change.title)
            return item.text
        }.joined(separator: ",") + "]")
        w.addRaw("live_gaps_ms", "[" + liveGapsMs.map { JSONObjectWriter.number($0, decimals: 1) }.joined(separator: ",") + "]")
        return w.text
    }
}

/// Why playback failed, with the exit status DESIGN.md gives it.
public struct PlaybackError: Error, CustomStringConvertible, Sendable {
    public var message: String
    /// 1 bad input or unsupported format, 3 network.
    public var exitCode: Int32
    public var description: String { message }
}

extension PlaybackError {
    /// A source's failure as it reached the decoder: a `SourceError` keeps its exit status,
    /// anything else counts as a network failure (3).
    init(sourceFailure error: any Error) {
        self.init(message: "\(error)", exitCode: (error as? SourceError)?.exitCode ?? 3)
    }
}

/// What a queue gives each of its tracks' players: the output stage they share, the track's
/// place in it, the crossfade between tracks, and what to do when the track's end is near.
struct QueueHooks {
    /// The queue's output stage (and ring), shared by its tracks.
    let sharedLoop: OutputLoop
    /// Which of the shared stage's tracks this is (its mark in the ring).
    let serial: Int
    /// Crossfade with the tracks around this one (nil: none).
    let crossfade: CrossfadeLink?
    /// Called once from the decode thread when the track's end is near: its source has
    /// delivered its last byte, or less than `Player.nearEndSeconds` are left to decode. The
    /// queue opens the next track then.
    let onNearEnd: () -> Void
}
