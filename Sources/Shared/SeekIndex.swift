/// One entry of a seek index: the byte where the frame starting at time `t` begins.
public struct SeekPoint: Sendable, Equatable, Codable {
    /// Start time of the frame, in seconds from the first audio frame (before gapless trimming).
    public var t: Double
    /// Byte offset of that frame in the file.
    public var byte: Int

    public init(t: Double, byte: Int) {
        self.t = t
        self.byte = byte
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
public struct SeekIndexBuilder: Sendable {
    /// The largest gap between points, in seconds.
    public let interval: Double
    public private(set) var points: [SeekPoint] = []
    private var nextTime: Double = 0

    public init(interval: Double = 0.5) {
        self.interval = interval
    }

    /// Called for every frame in stream order.
    public mutating func add(frameStart seconds: Double, byte: Int) {
        if seconds + 1e-9 >= nextTime || points.isEmpty {
            points.append(SeekPoint(t: seconds, byte: byte))
            nextTime = (seconds / interval).rounded(.down) * interval + interval
        }
    }
}
