/// One entry of a seek index: the byte where the frame starting at time `t` begins.
public struct SeekPoint: Sendable, Equatable, Codable {
    /// Start time of the frame, in seconds from the first audio frame (before gapless trimming).
    public var t: Double
    /// Byte offset of that frame in the file.
    public var byte: Int
    /// The exact sample (per channel) the frame starts at, where the format numbers them: a
    /// FLAC frame's first sample, an Ogg page's start (the granule of the stream's previous
    /// completed page, counted within its link), an AIFF sample frame. nil for MP3, AAC and WAV.
    public var sample: Int?
    /// The Ogg link (chained streams) the point lies in, from 0; nil for other formats.
    public var link: Int?

    public init(t: Double, byte: Int, sample: Int? = nil, link: Int? = nil) {
        self.t = t
        self.byte = byte
        self.sample = sample
        self.link = link
    }
}

/// A time ↔ byte table for a track, built once from its frames (exact for VBR MP3).
public struct SeekIndex: Sendable, Equatable, Codable {
    /// Points in increasing time, at most `interval` seconds apart; the first is the first frame.
    public var points: [SeekPoint]
    /// Offset of the first audio frame.
    public var firstFrameOffset: Int
    /// Offset just past the last audio byte (trailing tags excluded).
    public var audioEndOffset: Int
    public var encoderDelay: Int
    public var encoderPadding: Int
    /// Duration of all frames, in seconds, before gapless trimming.
    public var durationSeconds: Double

    public init(points: [SeekPoint], firstFrameOffset: Int, audioEndOffset: Int, encoderDelay: Int,
                encoderPadding: Int, durationSeconds: Double) {
        self.points = points
        self.firstFrameOffset = firstFrameOffset
        self.audioEndOffset = audioEndOffset
        self.encoderDelay = encoderDelay
        self.encoderPadding = encoderPadding
        self.durationSeconds = durationSeconds
    }

    /// The last point at or before `seconds` (the place to start reading to reach that time).
    public func point(atOrBefore seconds: Double) -> SeekPoint? {
        guard var low = points.indices.first, points[low].t <= seconds else { return points.first }
        var high = points.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if points[mid].t <= seconds { low = mid } else { high = mid - 1 }
        }
        return points[low]
    }
}

/// Accumulates seek points while frames are walked in order.
///
/// An index holds at most `maxPoints` points, whatever the file claims: when it fills up, the
/// spacing doubles and the points in between are dropped (a WAV at 1 Hz or a week-long track
/// gets a coarser index, not millions of points).
public struct SeekIndexBuilder: Sendable {
    /// Most points one index holds (1 MiB of points; 0.5 s spacing covers 9 hours).
    public static let maxPoints = 1 << 16
    /// The largest gap between points, in seconds (0: keep every point given); grows when
    /// the index fills up.
    public private(set) var interval: Double
    public private(set) var points: [SeekPoint] = []
    private var nextTime: Double = 0

    public init(interval: Double = 0.5) {
        self.interval = interval
    }

    /// Called for every frame in stream order.
    public mutating func add(frameStart seconds: Double, byte: Int, sample: Int? = nil, link: Int? = nil) {
        guard seconds.isFinite, seconds + 1e-9 >= nextTime || points.isEmpty else { return }
        if points.count >= Self.maxPoints {
            thin()
            // Still full (times that do not spread out): the cap holds, the point is dropped.
            guard points.count < Self.maxPoints, seconds + 1e-9 >= nextTime else { return }
        }
        points.append(SeekPoint(t: seconds, byte: byte, sample: sample, link: link))
        nextTime = next(after: seconds)
    }

    /// The time from which the point after one at `seconds` is taken.
    private func next(after seconds: Double) -> Double {
        interval > 0 ? (seconds / interval).rounded(.down) * interval + interval : seconds
    }

    /// Widens the spacing (at least doubling it) and keeps the points the wider spacing keeps.
    private mutating func thin() {
        let span = (points.last?.t ?? 0) - (points.first?.t ?? 0)
        interval = max(interval * 2, span / Double(Self.maxPoints / 2))
        var kept: [SeekPoint] = []
        kept.reserveCapacity(Self.maxPoints / 2 + 1)
        var from = -Double.infinity
        for point in points where point.t + 1e-9 >= from {
            kept.append(point)
            from = next(after: point.t)
        }
        points = kept
        nextTime = points.last.map { next(after: $0.t) } ?? 0
    }
}
