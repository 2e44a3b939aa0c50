@testable import StreamShared

/// MP4 boxes, the movie and its sample tables, moof fragments and the mfra table, and the
/// questions a player asks a parsed track.
enum MP4Target {
    static func run(_ bytes: [UInt8]) {
        let slice = bytes[...]
        _ = try? MP4Outline.parse(slice)
        // The cover picture (moov/udta/meta/ilst/covr), from the file and from the bytes as a bare moov.
        _ = try? EmbeddedPictureReader.picture(in: MemoryBytes(bytes))
        _ = try? EmbeddedPictureReader.moovPicture(slice)
        _ = try? MP4TopLevel.scan(prefix: slice.prefix(bytes.count / 2), fileSize: bytes.count)
        _ = try? MP4TopLevel.scan(prefix: slice, fileSize: nil)      // a stream of unknown length
        guard let (layout, _) = try? MP4TopLevel.scan(prefix: slice, fileSize: bytes.count) else {
            // Not a file layout: the bytes as a bare moov box.
            if let movie = try? MP4Movie.parse(moov: slice) { exercise(movie) }
            return
        }
        var movie: MP4Movie?
        if let moov = layout.moovRange, moov.upperBound <= bytes.count {
            movie = try? MP4Movie.parse(moov: bytes[moov])
            if let movie { exercise(movie) }
        }
        let trackID = movie?.audio?.trackID ?? 1
        var offset = 0
        for box in layout.boxes {
            let end = box.size.map { offset + $0 } ?? bytes.count
            guard end <= bytes.count else { break }
            switch box.type {
            case "moof":
                if let fragment = try? MP4Fragment.parse(moof: bytes[offset..<end], at: offset, trackID: trackID,
                                                         defaults: movie?.audioTrackExtends) {
                    require(fragment.samples.count <= MP4Fragment.maxSamples, "\(fragment.samples.count) samples")
                }
            case "mfra":
                if let table = try? MP4RandomAccess.parse(mfra: bytes[offset..<end], trackID: trackID) {
                    _ = table.entry(atOrBefore: 0)
                    _ = table.entry(atOrBefore: Int.max)
                }
            default:
                break
            }
            offset = end
        }
        if bytes.count >= 16 { _ = MP4RandomAccess.mfraSize(fromLast16: slice.suffix(16)) }
        // The analyzer on the same file: the MP4 corpus reaches its arithmetic (ticks, sizes,
        // edit lists) far faster than the mixed corpus of the analyze target.
        if let analysis = try? TrackAnalyzer.analyze(MemoryBytes(bytes)) { AnalyzeTarget.check(analysis, size: bytes.count) }
    }

    /// Every question the analyzer and the player ask a parsed track.
    static func exercise(_ movie: MP4Movie) {
        for rate in [8_000, 44_100, 96_000] { _ = movie.gapless(outputSampleRate: rate) }
        guard let track = movie.audio else { return }
        _ = track.totalTicks
        for n in [0, 1, track.sampleCount / 2, track.sampleCount - 1, track.sampleCount, -1, Int.max] {
            _ = track.sampleLocation(n)
            _ = track.decodeTime(ofSample: n)
        }
        for seconds in [0, 0.5, 10, 1e9, 1e300, -1, .nan, .infinity] { _ = track.sampleIndex(atSeconds: seconds) }
        var cursor = MP4SampleCursor(track: track)
        var walked = 0
        while walked < 100_000, cursor.next() != nil { walked += 1 }
        _ = MP4SampleCursor(track: track, atOrAfter: 1 << 20)
        _ = try? AudioSpecificConfig.parse(track.decoderSpecificInfo[...])
    }
}
