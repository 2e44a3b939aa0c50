import Atomics
import StreamShared

/// The output thread: drains the ring into the output, paced by the device (or by the clock
/// with `--realtime`), counting underruns. Fades 20 ms out on pause and in on resume.
final class OutputLoop: @unchecked Sendable {
    // @unchecked: the counters below are written by the output thread and read by the
    // decode thread only after `finish()` has joined it.
    private let output: AudioOutput
    private let ring: SPSCRing
    private let realtime: Bool
    private let started: Monotonic
    private let isPaused: @Sendable () -> Bool
    private var thread: NativeThread?
    private let lock = ConditionLock()
    private var format: AudioFormat?
    private var producerFinished = false
    /// Ring position before which samples belong to the time before a seek.
    private var flushBoundary: Int?
    private(set) var framesWritten = 0
    private(set) var firstAudioMs: Double?
    private(set) var underruns = 0
    private(set) var error: Error?
    /// Frames played since the last flush, and where that flush put the timeline (in frames).
    private let playedSinceFlush = ManagedAtomic<Int>(0)
    private let timelineBase = ManagedAtomic<Int>(0)
    private let aborted = ManagedAtomic<Bool>(false)

    /// Position of what is being heard, in frames of the track's timeline.
    var playedPosition: Int { timelineBase.load(ordering: .relaxed) + playedSinceFlush.load(ordering: .relaxed) }

    /// Where the last flush put the timeline (source frames), and output frames played since.
    var timelineStart: Int { timelineBase.load(ordering: .relaxed) }
    var playedSinceFlushFrames: Int { playedSinceFlush.load(ordering: .relaxed) }

    /// Stops at once, dropping queued audio (quit while paused, errors).
    func abort() { aborted.store(true, ordering: .relaxed) }

    init(output: AudioOutput, ring: SPSCRing, realtime: Bool, started: Monotonic, isPaused: @escaping @Sendable () -> Bool) {
        self.output = output
        self.ring = ring
        self.realtime = realtime
        self.started = started
        self.isPaused = isPaused
    }

    /// Called by the decode thread when the format is known (first time starts the thread).
    func start(format: AudioFormat) throws {
        try output.open(format)
        lock.withLock { self.format = format }
        guard thread == nil else { return }
        do { thread = try NativeThread(name: "streamplay-output") { [self] in run() } } catch {
            throw OutputError(message: "\(error)")
        }
    }

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
        lock.withLock { flushBoundary = boundary }
        timelineBase.store(frame, ordering: .relaxed)
        playedSinceFlush.store(0, ordering: .relaxed)
    }

    /// Sets where the timeline starts (a `--start` position) before anything plays.
    func setStart(frame: Int) { timelineBase.store(frame, ordering: .relaxed) }

    /// Plays 20 ms more, fading to silence, so a pause does not click.
    private func fadeOut(format: AudioFormat) {
        var tail = [Float](repeating: 0, count: max(1, format.sampleRate / 50) * format.channels)
        let n = tail.withUnsafeMutableBufferPointer { ring.read(into: $0) }
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

    private func run() {
        guard let format = lock.withLock({ format }) else { return }
        // Small chunks keep a sound card responsive; files and null take bigger ones.
        let chunkFrames = output.isRealtime ? 1024 : 8192
        // The samples are used where they sit in the ring; this buffer (allocated once) only
        // takes a frame that the ring's wrap-around splits.
        let chunk = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunkFrames * format.channels)
        let wakeAmount = realtime ? chunk.count : max(chunk.count, ring.capacity * 3 / 4)
        chunk.initialize(repeating: 0)
        defer { chunk.deallocate() }
        var fade = Gain(volume: 1)
        fade.sampleRate = format.sampleRate
        var wasPaused = false
        var clockStart: Monotonic?
        var clockFrames = 0
        var starving = false
        while true {
            if aborted.load(ordering: .relaxed) { return }
            if let boundary = lock.withLock({ () -> Int? in defer { flushBoundary = nil }; return flushBoundary }) {
                ring.discard(upTo: boundary)
                playedSinceFlush.store(0, ordering: .relaxed)
                wasPaused = true          // a seek resumes with the same fade-in as a pause
            }
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
            let span = ring.readable(max: wakeAmount)
            let inPlace = span.count - span.count % format.channels
            let samples = inPlace > 0 ? UnsafeMutableBufferPointer(rebasing: span[..<inPlace])
                                      : UnsafeMutableBufferPointer(rebasing: chunk[..<ring.read(into: chunk)])
            let n = samples.count
            if n == 0 {
                if lock.withLock({ producerFinished }) && ring.availableToRead == 0 { return }
                // One underrun per starvation episode of a real-time output.
                if realtime && framesWritten > 0 && !starving && !lock.withLock({ producerFinished }) {
                    underruns += 1
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
