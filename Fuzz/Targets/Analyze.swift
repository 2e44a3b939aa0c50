@testable import StreamShared

/// Probe + TrackAnalyzer on a whole in-memory file, as streamd's catalog and `--info` see it
/// (MP3, ADTS, MP4 with AAC or ALAC, WAV, FLAC, Ogg Opus/Vorbis, AIFF), the cover the catalog
/// serves from it, and the analysis through the analyzer worker's wire.
enum AnalyzeTarget {
    static func run(_ bytes: [UInt8]) {
        let file = MemoryBytes(bytes)
        // Probe on a prefix that is not the whole file: the "need more" path.
        _ = try? Probe.probe(bytes.prefix(bytes.count / 2), isComplete: false)
        for scanFrames in [true, false] {
            guard let analysis = try? TrackAnalyzer.analyze(file, scanFrames: scanFrames) else { continue }
            check(analysis, size: bytes.count)
            let wire = try? TrackAnalysis(encoded: analysis.encoded()[...])
            require(wire == analysis || analysis.durationSeconds.isNaN, "the analysis changed on the wire")
        }
        if let describe = try? TrackAnalyzer.describe(file) { check(describe, size: bytes.count) }
        if let picture = try? EmbeddedPictureReader.picture(in: file) {
            require(picture.data.count <= bytes.count, "a picture of \(picture.data.count) bytes in \(bytes.count)")
        }
    }

    /// What any analysis of a file of `size` bytes must satisfy.
    static func check(_ a: TrackAnalysis, size: Int) {
        require(a.durationSeconds.isFinite && a.durationSeconds >= 0, "duration \(a.durationSeconds)")
        require(a.seekIndex.durationSeconds.isFinite, "seek index duration \(a.seekIndex.durationSeconds)")
        require(a.frames >= 0 && a.totalSamples >= 0, "frames \(a.frames), samples \(a.totalSamples)")
        require(a.encoderDelay >= 0 && a.encoderPadding >= 0, "delay \(a.encoderDelay), padding \(a.encoderPadding)")
        require(a.seekIndex.points.count <= SeekIndexBuilder.maxPoints, "\(a.seekIndex.points.count) seek points")
        require(a.bitsPerSample.map { (1...64).contains($0) } ?? true, "\(a.bitsPerSample ?? 0) bits per sample")
        var previous = -Double.infinity
        for point in a.seekIndex.points {
            require(point.t.isFinite && point.t >= previous, "seek point time \(point.t) after \(previous)")
            // Points of the formats indexed here (FLAC frames, Ogg pages, AIFF frames) lie in the file.
            require(point.sample == nil || (0...size).contains(point.byte), "seek point at byte \(point.byte) of \(size)")
            require((point.sample ?? 0) >= 0 && (point.link ?? 0) >= 0, "seek point sample \(point.sample ?? 0)")
            previous = point.t
        }
        _ = a.seekIndex.point(atOrBefore: a.durationSeconds / 2)
    }
}
