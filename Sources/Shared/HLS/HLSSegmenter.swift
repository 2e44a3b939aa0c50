/// A place a segment may start: a frame boundary, with its time and where it is in the source.
public struct HLSCutPoint: Sendable, Equatable {
    /// Start time of the frame in seconds (before gapless trimming).
    public var time: Double
    /// Where the frame starts: a byte offset (MP3, ADTS) or a sample number (MP4).
    public var position: Int

    public init(time: Double, position: Int) {
        self.time = time
        self.position = position
    }
}

/// One planned segment: a run of whole frames.
public struct HLSSegmentSpan: Sendable, Equatable {
    public var startTime: Double
    public var duration: Double
    /// Source positions: the first frame's, and the one just past the last frame.
    public var start: Int
    public var end: Int

    public init(startTime: Double, duration: Double, start: Int, end: Int) {
        self.startTime = startTime
        self.duration = duration
        self.start = start
        self.end = end
    }
}

/// Cuts a track into segments at frame boundaries, each as long as possible without passing
/// the target duration (RFC 8216 section 4.3.3.1: EXTINF rounded must not exceed it).
public enum HLSSegmenter {
    /// - Parameters:
    ///   - points: candidate cut points in increasing time and position; the first starts the first segment.
    ///   - end: the time and position just past the last frame.
    ///   - target: the longest segment wanted, in seconds.
    /// Where two candidates are further apart than `target`, the segment between them is longer;
    /// `targetDuration(for:)` then reports the larger value the playlist must declare.
    public static func plan(points: [HLSCutPoint], end: HLSCutPoint, target: Double) -> [HLSSegmentSpan] {
        // Keep only points that move forward in both time and position (a hostile index cannot loop us).
        var cuts: [HLSCutPoint] = []
        cuts.reserveCapacity(points.count + 1)
        for point in points where point.time.isFinite && point.time < end.time && point.position < end.position {
            if let last = cuts.last, point.time <= last.time || point.position <= last.position { continue }
            cuts.append(point)
        }
        guard !cuts.isEmpty else { return [] }
        cuts.append(end)
        var spans: [HLSSegmentSpan] = []
        var startIndex = 0
        let epsilon = 1e-9
        while startIndex < cuts.count - 1 {
            let start = cuts[startIndex]
            var next = startIndex + 1
            while next + 1 < cuts.count, cuts[next + 1].time - start.time <= target + epsilon { next += 1 }
            let stop = cuts[next]
            spans.append(HLSSegmentSpan(startTime: start.time, duration: stop.time - start.time,
                                        start: start.position, end: stop.position))
            startIndex = next
        }
        return spans
    }

    /// EXT-X-TARGETDURATION for these spans: at least `target`, and no span's rounded duration above it.
    public static func targetDuration(for spans: [HLSSegmentSpan], target: Int) -> Int {
        let longest = spans.map { Int($0.duration.rounded()) }.max() ?? 0
        return max(target, longest)
    }
}
