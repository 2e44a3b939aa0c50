import Atomics
import StreamShared

/// The output thread: drains the ring into the output, paced by the device (or by the clock
/// with `--realtime`), counting underruns. Fades 20 ms out on pause and in on resume.
///
/// A queue keeps one loop (and its ring) for all its tracks: each track marks where its samples
/// start in the ring (`beginTrack`), so the output runs on from one track into the next with no
/// gap and no drain. A mark in another format reopens the output there, with 10 ms fades on
/// both sides of the change.
final class OutputLoop: @unchecked Sendable {
    // @unchecked: the counters below are written by the output thread and read by the
    // decode thread only after `finish()` has joined it; `marks`, `flushRequest` and
    // `producerFinished` are guarded by `lock`; the rest are atomics.
    private let output: AudioOutput
    let ring: SPSCRing
    private let realtime: Bool
    private let started: Monotonic
    private let isPaused: @Sendable () -> Bool
    private var thread: NativeThread?
    private let lock = ConditionLock()
    private var producerFinished = false
    /// A seek or a skip: the ring position before which samples are dropped, and where the
    /// timeline resumes (nil: it stays).
    private var flushRequest: (boundary: Int, resumeAt: Int?)?
    /// Where tracks start in the ring, oldest first, not yet reached by the output.
    private var marks: [TrackMark] = []
    /// A queue's loop keeps the newest 10 ms of the ring unread until more follows: when they turn
    /// out to be a track's last, with a track in another format next, they fade out (the decoder
    /// cannot tell its last samples before it has pushed them).
    private let holdsTrackEnds: Bool
    /// The format of the last track begun (decode side).
    private(set) var lastFormat: AudioFormat?
    private(set) var framesWritten = 0
    private(set) var firstAudioMs: Double?
    private let underrunCount = ManagedAtomic<Int>(0)
    private(set) var error: Error?
    /// Frames played since the last flush or track start, and where that put the timeline (in frames).
    private let playedSinceFlush = ManagedAtomic<Int>(0)
    private let timelineBase = ManagedAtomic<Int>(0)
    private let heard = ManagedAtomic<Int>(-1)
    private let aborted = ManagedAtomic<Bool>(false)

    /// One track's start in the ring.
    struct TrackMark {
        /// Ring sample index of the track's first sample.
        var position: Int
        /// Which track (a queue's counter; 0 for a single track).
        var serial: Int
        /// Where the track's timeline starts there, in frames (a `--start` position).
        var timelineStart: Int
        var format: AudioFormat
    }

    /// Length of the fades on both sides of a format change.
    static let formatChangeFadeSeconds = 0.01

    /// Position of what is being heard, in frames of the track's timeline.
    var playedPosition: Int { timelineBase.load(ordering: .relaxed) + playedSinceFlush.load(ordering: .relaxed) }

    /// Where the last flush put the timeline (source frames), and output frames played since.
    var timelineStart: Int { timelineBase.load(ordering: .relaxed) }
    var playedSinceFlushFrames: Int { playedSinceFlush.load(ordering: .relaxed) }
    /// The serial of the track being heard (-1 before the first sample).
    var heardSerial: Int { heard.load(ordering: .relaxed) }
    /// Times the output found the ring empty while it should have played (real-time outputs).
    var underruns: Int { underrunCount.load(ordering: .relaxed) }

    /// True once the output thread has returned (the end, an abort, an output error): nothing
    /// drains the ring any more.
    var hasStopped: Bool { stopped.load(ordering: .relaxed) }
    private let stopped = ManagedAtomic<Bool>(false)

    /// Decode side: copies `samples` into the ring, waiting for room (not past the thread's end).
    func push(_ samples: UnsafeBufferPointer<Float>) {
        var offset = 0
        while offset < samples.count && !hasStopped {
            let written = ring.write(UnsafeBufferPointer(rebasing: samples[offset...]))
            offset += written
            if written == 0 { ring.waitForSpace(atLeast: min(samples.count - offset, ring.capacity / 4), timeout: 0.01) }
        }
    }

    /// Stops at once, dropping queued audio (quit while paused, errors).
    func abort() { aborted.store(true, ordering: .relaxed) }

    init(output: AudioOutput, ring: SPSCRing, realtime: Bool, started: Monotonic, holdsTrackEnds: Bool = false,
         isPaused: @escaping @Sendable () -> Bool) {
        self.holdsTrackEnds = holdsTrackEnds
        self.output = output
        self.ring = ring
        self.realtime = realtime
        self.started = started
        self.isPaused = isPaused
    }

    /// Called by the decode thread before a track's first sample goes into the ring: marks where
    /// it starts. The first track opens the output (errors surface here) and starts the thread;
    /// a later one in another format is checked now and reopens the output when it is reached.
    func beginTrack(serial: Int, format: AudioFormat, timelineStart: Int = 0) throws {
        let mark = TrackMark(position: ring.writePosition, serial: serial, timelineStart: timelineStart, format: format)
        if thread == nil {
            try output.open(format)
            timelineBase.store(timelineStart, ordering: .relaxed)
            playedSinceFlush.store(0, ordering: .relaxed)
            heard.store(serial, ordering: .relaxed)
            lastFormat = format
            lock.withLock { currentFormat = format }
            do { thread = try NativeThread(name: "streamplay-output") { [self] in run() } } catch {
                throw OutputError(message: "\(error)")
            }
            return
        }
        if let queueOutput = output as? QueueOutput, let last = lastFormat { try queueOutput.check(format, after: last) }
        lastFormat = format
        lock.withLock { marks.append(mark) }
    }

    /// The format the output thread runs at (set once before it starts; then its own).
    private var currentFormat: AudioFormat?

    /// The decode thread has pushed its last samples: drain, close, and join.
    func finish() {
        lock.withLock { producerFinished = true }
        thread?.join()
        thread = nil
        do { try output.close() } catch { if self.error == nil { self.error = error } }
    }

    /// Drops queued audio (a seek) and restarts the played position at `frame`; the ring's
    /// consumer side belongs to the output thread, so it is asked to do the discarding.
    func flush(resumingAt frame: Int) {
        let boundary = ring.writePosition
        lock.withLock { flushRequest = (boundary, frame) }
        timelineBase.store(frame, ordering: .relaxed)
        playedSinceFlush.store(0, ordering: .relaxed)
    }

    /// Drops everything queued so far (a track left with n/p): the next track's samples play next.
    func discardQueued() {
        let boundary = ring.writePosition
        lock.withLock { flushRequest = (boundary, nil) }
    }

    /// Plays 20 ms more, fading to silence, so a pause does not click.
    private func fadeOut(format: AudioFormat) {
        var tail = [Float](repeating: 0, count: max(1, format.sampleRate / 50) * format.channels)
        let n = tail.withUnsafeMutableBufferPointer { ring.read(into: UnsafeMutableBufferPointer(rebasing: $0[..<readLimit($0.count, format: format)])) }
        guard n > 0 else { return }
        tail.removeSubrange(n...)
        let frames = n / format.channels
        for frame in 0..<frames {
            let g = Float(frames - frame) / Float(frames)
            for c in 0..<format.channels { tail[frame * format.channels + c] *= g }
        }
        try? tail.withUnsafeBufferPointer { try output.write($0) }
        framesWritten += frames
        playedSinceFlush.wrappingIncrement(by: frames, ordering: .relaxed)
    }

    /// At most `wanted` samples, not past the next track's mark (whose format may differ), and
    /// (a queue's loop) not into the newest 10 ms before the producer has finished.
    private func readLimit(_ wanted: Int, format: AudioFormat) -> Int {
        let read = ring.readPosition
        return lock.withLock {
            if let next = marks.first { return max(0, min(wanted, next.position - read)) }
            guard holdsTrackEnds && !producerFinished else { return wanted }
            let hold = max(1, Int(Double(format.sampleRate) * Self.formatChangeFadeSeconds)) * format.channels
            return max(0, min(wanted, ring.writePosition - hold - read))
        }
    }

    /// Output thread: takes the marks the read position has reached (the track heard changes,
    /// the output reopens for another format). Returns the frames left to fade in, when it reopened.
    private func takeMarks(upTo position: Int, format: inout AudioFormat) throws -> Bool {
        var reopened = false
        while let mark = lock.withLock({ () -> TrackMark? in
            guard let first = marks.first, first.position <= position else { return nil }
            marks.removeFirst()
            return first
        }) {
            if mark.format.sampleRate != format.sampleRate || mark.format.channels != format.channels {
                try output.open(mark.format)
                reopened = true
            }
            format = mark.format
            timelineBase.store(mark.timelineStart, ordering: .relaxed)
            playedSinceFlush.store(0, ordering: .relaxed)
            heard.store(mark.serial, ordering: .relaxed)
        }
        return reopened
    }

    /// Output thread: 10 ms fades around a format change, in place: out before the next mark
    /// when it changes the format, in after a reopening (`fadeInLeft` frames still to fade).
    /// `readStart` is the ring position of the first of `samples`.
    private func fadeAroundFormatChange(_ samples: UnsafeMutableBufferPointer<Float>, from readStart: Int, format: AudioFormat,
                                        fadeInLeft: inout Int) {
        let channels = format.channels
        let fadeFrames = max(1, Int(Double(format.sampleRate) * Self.formatChangeFadeSeconds))
        let frames = samples.count / channels
        if fadeInLeft > 0 {
            for frame in 0..<min(frames, fadeInLeft) {
                let g = Float(fadeFrames - fadeInLeft + frame + 1) / Float(fadeFrames)
                for c in 0..<channels { samples[frame * channels + c] *= g }
            }
            fadeInLeft = max(0, fadeInLeft - frames)
        }
        guard let next = lock.withLock({ marks.first }),
              next.format.sampleRate != format.sampleRate || next.format.channels != format.channels else { return }
        // Frames from here to the mark; the last `fadeFrames` before it fade out.
        let toMark = (next.position - readStart) / channels
        for frame in 0..<frames {
            let left = toMark - frame
            if left <= fadeFrames {
                let g = Float(max(0, left - 1)) / Float(fadeFrames)
                for c in 0..<channels { samples[frame * channels + c] *= g }
            }
        }
    }

    private func run() {
        defer { stopped.store(true, ordering: .relaxed) }
        guard var format = lock.withLock({ currentFormat }) else { return }
        // Small chunks keep a sound card responsive; files and null take bigger ones.
        let chunkFrames = output.isRealtime ? 1024 : 8192
        // The samples are used where they sit in the ring; this buffer (allocated once per
        // channel count) only takes a frame that the ring's wrap-around splits.
        var chunk = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunkFrames * format.channels)
        chunk.initialize(repeating: 0)
        defer { chunk.deallocate() }
        var wakeAmount = realtime ? chunk.count : max(chunk.count, ring.capacity * 3 / 4)
        var fade = Gain(volume: 1)
        fade.sampleRate = format.sampleRate
        var fadeInLeft = 0
        var wasPaused = false
        var clockStart: Monotonic?
        var clockFrames = 0
        var starving = false
        /// Takes the marks up to `position`; a reopened output starts with a fade-in.
        func passMarks(upTo position: Int) -> Bool {
            let before = format
            do {
                if try takeMarks(upTo: position, format: &format) {
                    fadeInLeft = max(1, Int(Double(format.sampleRate) * Self.formatChangeFadeSeconds))
                }
            } catch {
                self.error = error
                return false
            }
            if format.channels != before.channels {
                chunk.deallocate()
                chunk = .allocate(capacity: chunkFrames * format.channels)
                chunk.initialize(repeating: 0)
                wakeAmount = realtime ? chunk.count : max(chunk.count, ring.capacity * 3 / 4)
            }
            if format.sampleRate != before.sampleRate {
                fade.sampleRate = format.sampleRate
                clockStart = nil
            }
            return true
        }
        while true {
            if aborted.load(ordering: .relaxed) { return }
            if let request = lock.withLock({ () -> (boundary: Int, resumeAt: Int?)? in defer { flushRequest = nil }; return flushRequest }) {
                ring.discard(upTo: request.boundary)
                guard passMarks(upTo: request.boundary) else { return }
                if let frame = request.resumeAt {
                    timelineBase.store(frame, ordering: .relaxed)
                    playedSinceFlush.store(0, ordering: .relaxed)
                }
                wasPaused = true          // a seek resumes with the same fade-in as a pause
            }
            guard passMarks(upTo: ring.readPosition) else { return }
            let paused = isPaused()
            if paused {
                if !wasPaused {
                    wasPaused = true
                    fadeOut(format: format)
                }
                Monotonic.sleep(seconds: 0.01)
                clockStart = nil
                continue
            }
            let readStart = ring.readPosition
            let span = ring.readable(max: readLimit(wakeAmount, format: format))
            let inPlace = span.count - span.count % format.channels
            let samples = inPlace > 0 ? UnsafeMutableBufferPointer(rebasing: span[..<inPlace])
                                      : UnsafeMutableBufferPointer(rebasing: chunk[..<ring.read(into: UnsafeMutableBufferPointer(rebasing: chunk[..<readLimit(chunk.count, format: format)]))])
            let n = samples.count
            if n == 0 {
                if lock.withLock({ producerFinished }) && ring.availableToRead == 0 { return }
                // One underrun per starvation episode of a real-time output.
                if realtime && framesWritten > 0 && !starving && !lock.withLock({ producerFinished }) {
                    underrunCount.wrappingIncrement(ordering: .relaxed)
                    starving = true
                }
                // The first samples at once (ttfa); then a chunk per wake-up for a sound card,
                // three quarters of the ring for a file or null output (each wake-up is a futex
                // call and a context switch on both threads: a sixth of what chunks would cost).
                ring.waitForData(atLeast: firstAudioMs == nil ? 1 : wakeAmount, timeout: 0.01)
                continue
            }
            starving = false
            if wasPaused {
                // Resume with a 20 ms fade-in so there is no click.
                wasPaused = false
                fade.jump(to: 0)
                fade.set(1)
            }
            fade.process(samples, channels: format.channels)
            fadeAroundFormatChange(samples, from: readStart, format: format, fadeInLeft: &fadeInLeft)
            do {
                try output.write(UnsafeBufferPointer(samples))
            } catch {
                self.error = error
                return
            }
            if inPlace > 0 { ring.consume(n) }
            if firstAudioMs == nil {
                firstAudioMs = Monotonic.now.milliseconds(since: started)
            }
            framesWritten += n / format.channels
            playedSinceFlush.wrappingIncrement(by: n / format.channels, ordering: .relaxed)
            if realtime && !output.isRealtime {
                // --realtime on a file or null output: keep to the sample clock.
                if clockStart == nil { clockStart = .now; clockFrames = 0 }
                clockFrames += n / format.channels
                let due = Double(clockFrames) / Double(format.sampleRate)
                let elapsed = clockStart?.elapsed ?? 0
                if due > elapsed { Monotonic.sleep(seconds: due - elapsed) }
            }
        }
    }
}
