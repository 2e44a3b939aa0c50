import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import Logging

/// Plays a channel's tracks in real time, one after the other for ever (reshuffled at every
/// pass with `shuffle`): frames are published when the channel's clock says they are due, in
/// chunks of one tick, and tracks join at frame boundaries. Tracks of the channel's format pass
/// as they are; a channel of mixed formats runs every track through its `ChannelTranscoder`
/// (decided at start, or when a track's frames turn out to be of another format than the
/// channel's), so the stream never changes format.
final class PlaylistProducer: @unchecked Sendable {
    // @unchecked: the state below is used by the producer thread only; `stopped` is behind
    // `lock`; `thread` is set by `start` and joined by `stop`.
    let channel: RadioChannel
    let tracks: [ChannelTrack]
    let shuffle: Bool
    /// The stream's format (what listeners were told).
    package let format: ChannelFormat
    /// Set when the channel transcodes (from the start, or from the first track whose frames
    /// are not in `format`).
    private var transcoder: ChannelTranscoder?
    let tickNanos: UInt64
    let preroll: Int
    let logger: Logger
    private let lock = Lock(())
    private var stopped = false
    /// Set by `start`, joined by `stop` (RadioService's lock orders the two).
    private var thread: NativeThread?

    /// Where the transcoder's tracks are decoded (streamd: worker processes).
    let isolation: DecodeIsolation

    init(channel: RadioChannel, tracks: [ChannelTrack], shuffle: Bool, format: ChannelFormat, transcodes: Bool,
         isolation: DecodeIsolation, tickNanos: UInt64, preroll: Int,
         logger: Logger) throws(EncoderError) {
        self.channel = channel
        self.tracks = tracks
        self.shuffle = shuffle
        self.format = format
        self.isolation = isolation
        transcoder = transcodes ? try ChannelTranscoder(format: format, isolation: isolation) : nil
        self.tickNanos = max(1_000_000, tickNanos)
        self.preroll = preroll
        self.logger = logger
    }

    func start() {
        do {
            thread = try NativeThread(name: "radio-\(channel.name)") { [self] in
                run()
                // The track being decoded lets its worker go (killed and reaped) before the thread ends.
                transcoder?.end()
            }
        } catch {
            logger.warning("radio \(channel.name): \(error)")
        }
    }

    /// Stops the thread and waits for it, until `deadline` (monotonic ns) when given; true once
    /// it has ended. A decode under way gives up within a quarter of a second (`isCancelled`).
    @discardableResult
    package func stop(deadline: UInt64? = nil) -> Bool {
        lock.withLock { _ in
            stopped = true
        }
        return thread?.join(deadline: deadline) ?? true
    }

    /// How late the channel may fall (the thread starved, the process stopped) and still catch
    /// up by publishing the missed frames at once; later than this, it goes on from now. Listeners'
    /// players hold a few seconds: past that they have run dry anyway.
    static let stallLimit: UInt64 = 5_000_000_000

    private var isStopped: Bool {
        return lock.withLock { _ in stopped }
    }

    private func run() {
        var order = playOrder()
        var position = 0
        var reader: TrackFrameReader?
        var current: ChannelTrack?
        var builder = ChunkBuilder()
        var schedule = ChannelSchedule(origin: monotonicNanos())
        var prerolled = false
        var prerollBytes = 0
        var failures = 0          // tracks in a row that could not be opened or gave no frame
        var framesFromReader = 0
        while !isStopped {
            let now = monotonicNanos()
            if prerolled, let skipped = schedule.resume(now: now, ifBehindBy: Self.stallLimit) {
                logger.warning("radio \(channel.name): the channel stalled for \(skipped / 1_000_000) ms; it goes on from now")
            }
            // Pre-roll: a burst's worth of stream is due at once, so the first listeners get one.
            while !prerolled || schedule.isDue(now: now) {
                if current == nil {
                    if position >= order.count {
                        order = playOrder()
                        position = 0
                    }
                    let track = order[position]
                    position += 1
                    do {
                        if let transcoder {
                            try transcoder.begin(track)
                            channel.tracksEncoded.wrappingIncrement(ordering: .relaxed)
                            reader = nil
                        } else {
                            reader = try TrackFrameReader(track: track)
                        }
                        current = track
                        framesFromReader = 0
                        builder.flush(to: channel, now: now)   // the new title starts with a new chunk
                        channel.setTitle(track.title)
                    } catch {
                        logger.warning("radio \(channel.name): \(track.path): \(error)")
                        failures += 1
                        if failures >= order.count { return idleUntilStopped() }
                        continue
                    }
                }
                var frame: (bytes: ArraySlice<UInt8>, frame: AudioFrameSplitter.Frame)?
                do {
                    if let transcoder {
                        frame = try transcoder.next()
                        // A track ends when its samples are in the encoder; its frames may follow later.
                        if frame != nil || transcoder.trackSamples > 0 { framesFromReader += 1 }
                    } else {
                        frame = try reader?.next()
                        if let passed = frame, let track = current, !matches(passed.frame) {
                            // Frames of another format than the stream's: from here on, the channel transcodes.
                            frame = nil
                            if try switchToTranscoding(track) { continue }
                        }
                        if frame != nil { framesFromReader += 1 }
                    }
                } catch {
                    logger.warning("radio \(channel.name): \(current?.path ?? "?"): \(error)")
                    frame = nil
                }
                guard let frame else {
                    reader = nil
                    current = nil
                    if framesFromReader == 0 {
                        failures += 1
                        if failures >= order.count { return idleUntilStopped() }
                    }
                    continue
                }
                failures = 0
                let format = FrameFormat(codec: transcoder != nil ? .mpeg : reader?.track.codec ?? .mpeg,
                                         sampleRate: frame.frame.sampleRate, channels: frame.frame.channels)
                builder.append(frame: frame.bytes, samples: frame.frame.samples, format: format, flushingTo: channel, now: now)
                schedule.clock.advance(samples: frame.frame.samples, rate: frame.frame.sampleRate)
                prerollBytes += frame.bytes.count
                if !prerolled && prerollBytes >= preroll {
                    schedule.lead(by: schedule.clock.nanos)
                    prerolled = true
                }
            }
            builder.flush(to: channel, now: now)
            sleepNanos(tickNanos)
        }
    }

    /// Whether a passed-through frame is in the stream's format.
    private func matches(_ frame: AudioFrameSplitter.Frame) -> Bool {
        frame.sampleRate == format.sampleRate && frame.channels == format.channels
    }

    /// A track whose frames are not in the stream's format: an MP3 stream goes on transcoded
    /// (at its own rate, channels and bitrate), and the track starts again through the encoder;
    /// false (the track is skipped) when the stream is AAC, which the channel cannot encode.
    private func switchToTranscoding(_ track: ChannelTrack) throws -> Bool {
        guard format.codec == .mpeg, transcoder == nil else {
            logger.warning("radio \(channel.name): \(track.path) skipped: its frames are not \(ChannelTracks.describe(format))")
            return false
        }
        let kbps = min(320, max(8, format.kbps))
        transcoder = try ChannelTranscoder(format: ChannelFormat(codec: .mpeg, sampleRate: format.sampleRate,
                                                                 channels: format.channels, kbps: kbps),
                                       isolation: isolation)
        logger.warning("radio \(channel.name): \(track.path) is not \(ChannelTracks.describe(format)): the channel transcodes from now on")
        try transcoder?.begin(track)
        channel.tracksEncoded.wrappingIncrement(ordering: .relaxed)
        return true
    }

    private func playOrder() -> [ChannelTrack] {
        shuffle ? tracks.shuffled() : tracks
    }

    private func idleUntilStopped() {
        logger.warning("radio \(channel.name): no track can be played")
        channel.end()
        while !isStopped { sleepNanos(tickNanos) }
    }
}

/// Sleeps for `nanos` (interrupted sleeps go on).
func sleepNanos(_ nanos: UInt64) {
    var request = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR {
        request = remaining
    }
}
