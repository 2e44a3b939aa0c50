import Foundation
import StreamShared

/// Plays a channel's tracks in real time, one after the other for ever (reshuffled at every
/// pass with `shuffle`): frames are published when the channel's clock says they are due, in
/// chunks of one tick, and tracks join at frame boundaries.
final class PlaylistProducer: @unchecked Sendable {
    // @unchecked: the state below is used by the producer thread only; `stopped` is atomic-ish
    // through the lock.
    let channel: RadioChannel
    let tracks: [ChannelTrack]
    let shuffle: Bool
    let tickNanos: UInt64
    let preroll: Int
    let warn: @Sendable (String) -> Void
    private let lock = NSLock()
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init(channel: RadioChannel, tracks: [ChannelTrack], shuffle: Bool, tickNanos: UInt64, preroll: Int,
         warn: @escaping @Sendable (String) -> Void) {
        self.channel = channel
        self.tracks = tracks
        self.shuffle = shuffle
        self.tickNanos = max(1_000_000, tickNanos)
        self.preroll = preroll
        self.warn = warn
    }

    func start() {
        let thread = Thread { [self] in
            run()
            done.signal()
        }
        thread.name = "radio-\(channel.name)"
        thread.start()
    }

    /// Stops the thread and waits for it.
    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
        done.wait()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func run() {
        var order = playOrder()
        var position = 0
        var reader: TrackFrameReader?
        var builder = ChunkBuilder()
        var schedule = ChannelSchedule(origin: monotonicNanos())
        var prerolled = false
        var prerollBytes = 0
        var failures = 0          // tracks in a row that could not be opened or gave no frame
        var framesFromReader = 0
        while !isStopped {
            let now = monotonicNanos()
            // Pre-roll: a burst's worth of stream is due at once, so the first listeners get one.
            while !prerolled || schedule.isDue(now: now) {
                if reader == nil {
                    if position >= order.count {
                        order = playOrder()
                        position = 0
                    }
                    let track = order[position]
                    position += 1
                    do {
                        reader = try TrackFrameReader(track: track)
                        framesFromReader = 0
                        builder.flush(to: channel, now: now)   // the new title starts with a new chunk
                        channel.setTitle(track.title)
                    } catch {
                        warn("radio \(channel.name): \(track.path): \(error)")
                        failures += 1
                        if failures >= order.count { return idleUntilStopped() }
                        continue
                    }
                }
                let frame: (bytes: ArraySlice<UInt8>, frame: AudioFrameSplitter.Frame)?
                do {
                    frame = try reader?.next()
                } catch {
                    warn("radio \(channel.name): \(reader?.track.path ?? "?"): \(error)")
                    frame = nil
                }
                guard let frame else {
                    reader = nil
                    if framesFromReader == 0 {
                        failures += 1
                        if failures >= order.count { return idleUntilStopped() }
                    }
                    continue
                }
                failures = 0
                framesFromReader += 1
                let format = FrameFormat(codec: reader?.track.codec ?? .mpeg, sampleRate: frame.frame.sampleRate,
                                         channels: frame.frame.channels)
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

    private func playOrder() -> [ChannelTrack] {
        shuffle ? tracks.shuffled() : tracks
    }

    private func idleUntilStopped() {
        warn("radio \(channel.name): no track can be played")
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
