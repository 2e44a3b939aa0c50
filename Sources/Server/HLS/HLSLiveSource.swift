import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import Logging

/// Why a `--live` loop could not start.
public struct HLSLiveStartError: Error, CustomStringConvertible, Sendable {
    public let name: String
    public let path: String
    public let reason: String

    public var description: String { "--live \(name): \(path): \(reason)" }
}

/// A track played in a loop as a live HLS stream (`streamd --live NAME=PATH`). Its thread
/// analyzes the track (in a worker process, with `analyzer`), plans it like the VOD routes, then
/// feeds each planned segment's frames to a `LiveSegmenter` when the segment's end comes due, a
/// discontinuity at every return to the start. A full window is fed at once, so a client has
/// something to start from.
public final class HLSLiveSource: @unchecked Sendable {
    // @unchecked: `state`, `stopping` and `thread` are guarded by `condition`; the rest is
    // immutable, or used by the source's thread only.

    /// Segments listed in each live playlist.
    public static let windowSize = 5
    /// Segments fetchable, the window included: a segment stays for three windows after it left.
    public static let keptCount = windowSize * 4

    /// What the loop is doing.
    enum State {
        case idle, starting, running(HLSTrackPlan, LiveSegmenter), failed(String), stopped
    }

    public let name: String
    public let path: String
    let file: OpenFile
    private let analyzer: IsolatedAnalyzer?
    /// Where a segment that cannot be read is reported ("streamd.hls", warnings).
    private let logger: Logger
    private let condition = ConditionLock()
    private var state = State.idle
    private var stopping = false
    /// The source's thread, started by `start`, joined by `stop`.
    private var thread: NativeThread?

    /// Names are letters, digits, '-' and '_' (they become a URL path component).
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
        }
    }

    /// Opens `path` (throws `HLSError` for a bad name, `SystemError` for a file that cannot be
    /// opened); the analysis waits for `start()`. With `analyzer`, the track is analyzed in a
    /// worker process (what streamd does), else on the source's thread.
    public init(name: String, path: String, analyzer: IsolatedAnalyzer? = nil,
                logger: Logger = .silent("streamd.hls")) throws {
        guard Self.isValidName(name) else { throw HLSError.invalid("live name '\(name)': use letters, digits, '-' and '_'") }
        self.name = name
        self.path = path
        self.file = try OpenFile(path: path)
        self.analyzer = analyzer
        self.logger = logger
    }

    /// The plan and segmenter once the first window is fed; nil before, after a failure or a stop.
    var running: (plan: HLSTrackPlan, segmenter: LiveSegmenter)? {
        condition.withLock {
            if case .running(let plan, let segmenter) = state { return (plan, segmenter) }
            return nil
        }
    }

    /// Starts the source's thread (once); a thread that cannot start fails the source
    /// (`waitUntilPlaying` throws).
    public func start() {
        condition.withLock {
            guard case .idle = state else { return }
            state = .starting
            do {
                thread = try NativeThread(name: "live-\(name)") { [self] in run() }
            } catch {
                state = .failed("\(error)")
                condition.broadcast()
            }
        }
    }

    /// Waits until the first window is there; throws when the track cannot loop (the analysis
    /// refused it, or it has no playing time). The analysis is bounded by the analyzer's timeout.
    public func waitUntilPlaying() throws(HLSLiveStartError) {
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch state {
            case .running: return
            case .failed(let why): throw HLSLiveStartError(name: name, path: path, reason: why)
            case .stopped, .idle: throw HLSLiveStartError(name: name, path: path, reason: "stopped")
            case .starting: condition.wait()
            }
        }
    }

    /// Stops the thread and waits for it until `deadline` (monotonic ns); true once it has ended
    /// (also when it never started). An analysis under way stops with its worker's timeout.
    @discardableResult
    public func stop(deadline: UInt64) -> Bool {
        let started: NativeThread? = condition.withLock {
            stopping = true
            condition.broadcast()
            return thread
        }
        // A thread already joined (a second stop) is found ended at once.
        return started?.join(until: Monotonic(nanoseconds: deadline)) ?? true
    }

    private var isStopping: Bool { condition.withLock { stopping } }

    private func run() {
        let plan: HLSTrackPlan, rate: Int
        do {
            (plan, rate) = try makePlan()
        } catch {
            condition.withLock {
                state = .failed("\(error)")
                condition.broadcast()
            }
            return
        }
        var settings = LiveSegmenter.Settings()
        settings.windowSize = Self.windowSize
        settings.keptCount = Self.keptCount
        settings.cutSeconds = nil        // the plan cuts: live segments are the VOD segments
        settings.targetDuration = plan.targetDuration
        settings.versionedURIs = false
        settings.form = plan.initSegment.map { .fragmentedMP4(initSegment: $0) } ?? .packedAudio
        let segmenter = LiveSegmenter(settings: settings)
        let format = FrameFormat(codec: plan.kind == .packedMP3 ? .mpeg : .adts,
                                 sampleRate: plan.kind == .fmp4 ? plan.timescale : rate, channels: 0)
        // Segment `n` (of the endless sequence) is due when its end has played since `origin`;
        // the origin lies a window of segments back, so that window is fed at once.
        let ends = Self.endNanos(plan)
        let loopNanos = ends.last ?? 1
        func end(of sequence: Int) -> UInt64 {
            UInt64(sequence / ends.count) &* loopNanos &+ ends[sequence % ends.count]
        }
        var origin = monotonicNanos() &- end(of: Self.windowSize - 1)
        var sequence = 0
        var failing = false
        while true {
            let now = monotonicNanos()
            if sequence == Self.windowSize {
                // The first window is there: requests are answered from now on.
                condition.withLock {
                    if case .starting = state { state = .running(plan, segmenter) }
                    condition.broadcast()
                }
            }
            if sequence >= Self.windowSize, origin &+ end(of: sequence) > now {
                // Sleep until the next segment is due (the condition waits on the monotonic
                // clock, as the due time is); a stop wakes the thread at once.
                let due = Monotonic(nanoseconds: origin &+ end(of: sequence))
                let stopped = condition.withLock {
                    if !stopping { condition.wait(until: due) }
                    return stopping
                }
                if stopped { break }
                continue
            }
            if isStopping { break }
            // Far behind (the process was stopped or starved): go on from now, not in a burst.
            if sequence >= Self.windowSize, now &- (origin &+ end(of: sequence)) > loopNanos {
                origin = now &- end(of: sequence)
            }
            let index = sequence % plan.spans.count
            if index == 0 && sequence > 0 { segmenter.markDiscontinuity() }
            do {
                let frames = try plan.frames(ofSegment: index, from: file)
                frames.bytes.withUnsafeBytes { raw in
                    if plan.kind == .fmp4 {
                        var starts: [Int] = []
                        starts.reserveCapacity(frames.sizes.count)
                        var at = 0
                        for size in frames.sizes {
                            starts.append(at)
                            at += size
                        }
                        segmenter.append(raw, frameStarts: starts, frameSamples: frames.durations, format: format, wall: nil)
                    } else {
                        let samples = Int((plan.spans[index].duration * Double(rate)).rounded())
                        segmenter.append(raw, frameStarts: [0], frameSamples: [samples], format: format, wall: nil)
                    }
                }
                segmenter.endSegment()
                failing = false
            } catch {
                if !failing { logger.warning("live \(name): segment \(sequence): \(error); skipped") }
                failing = true
                segmenter.markDiscontinuity()
            }
            sequence += 1
        }
        condition.withLock {
            state = .stopped
            condition.broadcast()
        }
    }

    /// The track's plan and sample rate, from the worker's analysis (or one made here).
    private func makePlan() throws -> (HLSTrackPlan, Int) {
        let analysis: TrackAnalysis
        if let analyzer {
            switch analyzer.analyze([(path, file.size)]).first {
            case .analyzed(let result): analysis = result
            case .rejected(let why), .quarantined(let why), .unavailable(let why): throw HLSError.invalid(why)
            case nil: throw HLSError.invalid("not analyzed")
            }
        } else {
            analysis = try TrackAnalyzer.analyze(file)
        }
        var plan = try HLSTrackPlan.make(file: file, etag: file.etag, analysis: analysis)
        // A loop's clock starts at 0, as the live segmenter's (packed audio) does.
        plan.originSeconds = 0
        guard let total = Self.endNanos(plan).last, total > 0, analysis.sampleRate > 0 || plan.kind == .fmp4 else {
            throw HLSError.invalid("the track has no playing time")
        }
        return (plan, analysis.sampleRate)
    }

    /// End time of each segment within one loop, in nanoseconds from the loop's start.
    static func endNanos(_ plan: HLSTrackPlan) -> [UInt64] {
        var ends: [UInt64] = []
        var elapsed = 0.0
        for span in plan.spans {
            elapsed += span.duration
            ends.append(UInt64((max(0, elapsed) * 1e9).rounded()))
        }
        return ends
    }
}
