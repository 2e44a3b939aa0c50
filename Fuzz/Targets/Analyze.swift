@testable import StreamShared

/// Probe + TrackAnalyzer on a whole in-memory file, as streamd's catalog and `--info` see it.
enum AnalyzeTarget {
    static func run(_ bytes: [UInt8]) {
        let file = MemoryBytes(bytes)
        // Probe on a prefix that is not the whole file: the "need more" path.
        _ = try? Probe.probe(bytes.prefix(bytes.count / 2), isComplete: false)
        for scanFrames in [true, false] {
            guard let analysis = try? TrackAnalyzer.analyze(file, scanFrames: scanFrames) else { continue }
            check(analysis, size: bytes.count)
        }
    }

    /// What any analysis of a file of `size` bytes must satisfy.
    static func check(_ a: TrackAnalysis, size: Int) {
        require(a.durationSeconds.isFinite && a.durationSeconds >= 0, "duration \(a.durationSeconds)")
        require(a.seekIndex.durationSeconds.isFinite, "seek index duration \(a.seekIndex.durationSeconds)")
        require(a.frames >= 0 && a.totalSamples >= 0, "frames \(a.frames), samples \(a.totalSamples)")
        require(a.encoderDelay >= 0 && a.encoderPadding >= 0, "delay \(a.encoderDelay), padding \(a.encoderPadding)")
        require(a.seekIndex.points.count <= SeekIndexBuilder.maxPoints, "\(a.seekIndex.points.count) seek points")
        var previous = -Double.infinity
        for point in a.seekIndex.points {
            require(point.t.isFinite && point.t >= previous, "seek point time \(point.t) after \(previous)")
            previous = point.t
        }
        _ = a.seekIndex.point(atOrBefore: a.durationSeconds / 2)
    }
}
