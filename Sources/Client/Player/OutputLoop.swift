import Atomics
import StreamShared
import Synchronization

/// The output stage: drains the ring into the output, paced by the device (or by the clock
/// with `--realtime`), counting underruns. Fades 20 ms out on pause and in on resume.
///
/// A sound card (or `--realtime`) gets an output thread. An output that nothing paces (null, a
/// file) is drained inline by the decode thread, whenever the ring is full and at the end of
/// each batch of input: a thread there would only take the samples over, and every hand-over
/// costs a futex wake-up and a context switch on both sides (28,750 of them in four hours of
/// MP3, a fifth of the CPU time mpg123 needs for the same decode).
///
/// A queue keeps one loop (and its ring) for all its tracks: each track marks where its samples
/// start in the ring (`beginTrack`), so the output runs on from one track into the next with no
/// gap and no drain. A mark in another format reopens the output there, with 10 ms fades on
/// both sides of the change.
final class OutputLoop: @unchecked Sendable {
    // @unchecked: `framesWritten` is written by the consuming thread (the output thread, or the
    // decode thread when inline) and read by the decode thread only after `finish()` has joined
    // it; `marks`, `flushRequest`, `producerFinished` and `failure` are guarded by `lock`; the
    // rest are atomics (a queue's players read the first-audio time and the error while its
    // output thread runs on into the next track).
    private let output: AudioOutput
    let ring: SPSCRing
    private let realtime: Bool
    private let started: Monotonic
    private let isPaused: @Sendable () -> Bool
    private var thread: NativeThread?
    /// No output thread: the decode thread drains the ring itself (`drain`).
    let drainsInline: Bool
    /// The first track has opened the output (and started the thread, unless inline).
    private var outputStarted = false
    private let lock = Lock(())
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
    /// Milliseconds from `started` to the first sample written, as the Double's bit pattern
    /// (`noAudioYet` before it): set once by the consuming thread, read by the decode side.
    private let firstAudioBits = ManagedAtomic<UInt64>(OutputLoop.noAudioYet)
    /// A NaN payload no arithmetic produces, so it never collides with a real time.
    private static let noAudioYet = UInt64.max
    /// Milliseconds from `started` to the first sample the output took (nil before it).
    var firstAudioMs: Double? {
        let bits = firstAudioBits.load(ordering: .acquiring)
        return bits == Self.noAudioYet ? nil : Double(bitPattern: bits)
    }
    private let underrunCount = ManagedAtomic<Int>(0)
    private var failure: Error?
    /// The output's error, set by the consuming thread (or `finish`); nil while it plays.
    var error: Error? { lock.withLock { _ in failure } }
    /// Keeps the first error only.
    private func fail(_ error: Error) { lock.withLock { _ in if failure == nil { failure = error } } }
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
            if written == 0 { waitForRoom(samples.count - offset) }
        }
    }

    /// Stops at once, dropping queued audio (quit while paused, errors).
    func abort() { aborted.store(true, ordering: .relaxed) }

    /// - Parameter drainsInline: no output thread; the decode thread plays what it queued
    ///   (`batchEnded`, `waitForRoom`, `finish`). Only for outputs no clock paces.
    init(output: AudioOutput, ring: SPSCRing, realtime: Bool, started: Monotonic, holdsTrackEnds: Bool = false,
         drainsInline: Bool = false, isPaused: @escaping @Sendable () -> Bool) {
        self.holdsTrackEnds = holdsTrackEnds
        self.drainsInline = drainsInline && !realtime
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
        if !outputStarted {
            try output.open(format)
            outputStarted = true
            timelineBase.store(timelineStart, ordering: .relaxed)
            playedSinceFlush.store(0, ordering: .relaxed)
            heard.store(serial, ordering: .relaxed)
            lastFormat = format
            // Set before the thread starts (its start orders it), then the consumer's own.
            consumer = makeConsumer(format: format)
            guard !drainsInline else { return }
            do { thread = try NativeThread(name: "streamplay-output") { [self] in run() } } catch {
                endConsumer()
                throw OutputError(message: "\(error)")
            }
            return
        }
        if let last = lastFormat { try output.check(format, after: last) }
        lastFormat = format
        lock.withLock { _ in marks.append(mark) }
    }

    /// The decode thread has pushed its last samples: drain, close, and join.
    func finish() {
        lock.withLock { _ in producerFinished = true }
        if drainsInline {
            while consumer != nil { drain() }
        }
        thread?.join()
        thread = nil
        do { try output.close() } catch { fail(error) }
    }

    /// Drops queued audio (a seek) and restarts the played position at `frame`; the ring's
    /// consumer side belongs to the output thread, so it is asked to do the discarding.
    func flush(resumingAt frame: Int) {
        let boundary = ring.writePosition
        lock.withLock { _ in flushRequest = (boundary, frame) }
        timelineBase.store(frame, ordering: .relaxed)
        playedSinceFlush.store(0, ordering: .relaxed)
    }

    /// Drops everything queued so far (a track left with n/p): the next track's samples play next.
    func discardQueued() {
        let boundary = ring.writePosition
        lock.withLock { _ in flushRequest = (boundary, nil) }
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
        return lock.withLock { _ in
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
        while let mark = lock.withLock({ (_) -> TrackMark? in
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
        guard let next = lock.withLock({ _ in marks.first }),
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

    /// What one turn of the consuming side did.
    private enum Turn {
        /// Samples went to the output.
        case played
        /// The ring holds nothing to play now (more is coming).
        case empty
        /// Paused: nothing plays until the pause ends.
        case paused
        /// The end: the producer finished and the ring is empty, an abort, or an output error.
        case done
    }

    /// The consuming side's state, set before it first runs: touched only by the thread that
    /// consumes (the output thread, or the decode thread when the loop drains inline).
    private struct Consumer {
        var format: AudioFormat
        var chunkFrames: Int
        /// The samples are used where they sit in the ring; this buffer (allocated once per
        /// channel count) only takes a frame that the ring's wrap-around splits.
        var chunk: UnsafeMutableBufferPointer<Float>
        /// Samples a threaded consumer waits for before it wakes.
        var wakeAmount = 0
        var fade = Gain(volume: 1)
        var fadeInLeft = 0
        var wasPaused = false
        var clockStart: Monotonic?
        var clockFrames = 0
        var starving = false
    }

    private var consumer: Consumer?

    /// Sets up the consuming side for the first track's format.
    private func makeConsumer(format: AudioFormat) -> Consumer {
        // Small chunks keep a sound card responsive; files and null take bigger ones.
        let chunkFrames = output.isRealtime ? 1024 : 8192
        let chunk = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunkFrames * format.channels)
        chunk.initialize(repeating: 0)
        var state = Consumer(format: format, chunkFrames: chunkFrames, chunk: chunk)
        state.wakeAmount = wakeAmount(chunk: chunk.count)
        state.fade.sampleRate = format.sampleRate
        return state
    }

    /// The first samples at once (ttfa); then a chunk per wake-up for a sound card, three
    /// quarters of the ring for a file or null output (each wake-up is a futex call and a
    /// context switch on both threads).
    private func wakeAmount(chunk: Int) -> Int { realtime ? chunk : max(chunk, ring.capacity * 3 / 4) }

    /// Consumer: the end of the consuming side (its buffer goes; nothing drains the ring any more).
    private func endConsumer() {
        consumer?.chunk.deallocate()
        consumer = nil
        stopped.store(true, ordering: .relaxed)
    }

    /// The output thread: turns until the end, sleeping while paused or while the ring is empty.
    private func run() {
        defer { endConsumer() }
        while true {
            switch turn() {
            case .played: continue
            case .paused: Monotonic.sleep(seconds: 0.01)
            case .empty:
                guard let state = consumer else { return }
                ring.waitForData(atLeast: firstAudioMs == nil ? 1 : state.wakeAmount, timeout: 0.01)
            case .done: return
            }
        }
    }

    /// Decode side, inline loop only: plays what the ring holds now, and returns when it is
    /// empty (after one 10 ms nap while paused, so the caller can look at its commands).
    func drain() {
        guard drainsInline, consumer != nil else { return }
        while true {
            switch turn() {
            case .played: continue
            case .empty: return
            case .paused:
                Monotonic.sleep(seconds: 0.01)
                return
            case .done:
                endConsumer()
                return
            }
        }
    }

    /// Decode side: the end of a batch of input (no more samples come at once): an inline loop
    /// plays them, a threaded one is woken for them.
    func batchEnded() {
        if drainsInline { drain() } else { ring.wakeConsumer() }
    }

    /// Decode side: the ring has no room for `wanted` more samples: an inline loop plays what
    /// it holds, a threaded one is waited for (a quarter of the ring at a time: one wake-up per
    /// batch, not per read; at most 10 ms, so the caller can look at its commands).
    func waitForRoom(_ wanted: Int) {
        if drainsInline { drain() } else { ring.waitForSpace(atLeast: min(wanted, ring.capacity / 4), timeout: 0.01) }
    }

    /// Consumer: takes the marks up to `position`; a reopened output starts with a fade-in.
    private func passMarks(upTo position: Int, _ state: inout Consumer) -> Bool {
        let before = state.format
        do {
            if try takeMarks(upTo: position, format: &state.format) {
                state.fadeInLeft = max(1, Int(Double(state.format.sampleRate) * Self.formatChangeFadeSeconds))
            }
        } catch {
            fail(error)
            return false
        }
        if state.format.channels != before.channels {
            state.chunk.deallocate()
            state.chunk = .allocate(capacity: state.chunkFrames * state.format.channels)
            state.chunk.initialize(repeating: 0)
            state.wakeAmount = wakeAmount(chunk: state.chunk.count)
        }
        if state.format.sampleRate != before.sampleRate {
            state.fade.sampleRate = state.format.sampleRate
            state.clockStart = nil
        }
        return true
    }

    /// Consumer: one turn: a flush asked for, the marks reached, then what the ring holds (up to
    /// a wake-up's worth) to the output.
    private func turn() -> Turn {
        guard var state = consumer else { return .done }
        defer { consumer = state }
        if aborted.load(ordering: .relaxed) { return .done }
        if let request = lock.withLock({ (_) -> (boundary: Int, resumeAt: Int?)? in defer { flushRequest = nil }; return flushRequest }) {
            ring.discard(upTo: request.boundary)
            guard passMarks(upTo: request.boundary, &state) else { return .done }
            if let frame = request.resumeAt {
                timelineBase.store(frame, ordering: .relaxed)
                playedSinceFlush.store(0, ordering: .relaxed)
            }
            state.wasPaused = true          // a seek resumes with the same fade-in as a pause
        }
        guard passMarks(upTo: ring.readPosition, &state) else { return .done }
        let format = state.format
        if isPaused() {
            if !state.wasPaused {
                state.wasPaused = true
                fadeOut(format: format)
            }
            state.clockStart = nil
            return .paused
        }
        let readStart = ring.readPosition
        let span = ring.readable(max: readLimit(state.wakeAmount, format: format))
        let inPlace = span.count - span.count % format.channels
        let chunk = state.chunk
        let samples = inPlace > 0 ? UnsafeMutableBufferPointer(rebasing: span[..<inPlace])
                                  : UnsafeMutableBufferPointer(rebasing: chunk[..<ring.read(into: UnsafeMutableBufferPointer(rebasing: chunk[..<readLimit(chunk.count, format: format)]))])
        let n = samples.count
        if n == 0 {
            if lock.withLock({ _ in producerFinished }) && ring.availableToRead == 0 { return .done }
            // One underrun per starvation episode of a real-time output.
            if realtime && framesWritten > 0 && !state.starving && !lock.withLock({ _ in producerFinished }) {
                underrunCount.wrappingIncrement(ordering: .relaxed)
                state.starving = true
            }
            return .empty
        }
        state.starving = false
        if state.wasPaused {
            // Resume with a 20 ms fade-in so there is no click.
            state.wasPaused = false
            state.fade.jump(to: 0)
            state.fade.set(1)
        }
        state.fade.process(samples, channels: format.channels)
        fadeAroundFormatChange(samples, from: readStart, format: format, fadeInLeft: &state.fadeInLeft)
        do {
            try output.write(UnsafeBufferPointer(samples))
        } catch {
            fail(error)
            return .done
        }
        if inPlace > 0 { ring.consume(n) }
        if firstAudioBits.load(ordering: .relaxed) == Self.noAudioYet {
            firstAudioBits.store(Monotonic.now.milliseconds(since: started).bitPattern, ordering: .releasing)
        }
        framesWritten += n / format.channels
        playedSinceFlush.wrappingIncrement(by: n / format.channels, ordering: .relaxed)
        if realtime && !output.isRealtime {
            // --realtime on a file or null output: keep to the sample clock.
            if state.clockStart == nil { state.clockStart = .now; state.clockFrames = 0 }
            state.clockFrames += n / format.channels
            let due = Double(state.clockFrames) / Double(format.sampleRate)
            let elapsed = state.clockStart?.elapsed ?? 0
            if due > elapsed { Monotonic.sleep(seconds: due - elapsed) }
        }
        return .played
    }
}
