import StreamShared
import StreamAudio

/// AAC in fragmented MP4: the stream after the moov is a run of top-level boxes (moof, mdat,
/// styp, sidx, free, mfra...). Each moof lists its samples; they are cut out of the following
/// mdat as the bytes pass and decoded with the track's AudioSpecificConfig. Only one moof is
/// held at a time, so memory does not grow with the length of the stream.
struct FragmentedMP4Converter: PacketConverter {
    private let decoder: FAADDecoder
    private let trackID: Int
    private let defaults: MP4TrackExtends?
    /// Samples listed in the moov's own tables (a file may hold some before its first moof),
    /// played when the stream starts at `audioStart`.
    private let initialSamples: [MP4FragmentSample]
    private let audioStart: Int
    /// Samples waiting to be cut from the stream, and the next one.
    private var queue: [MP4FragmentSample] = []
    private var next = 0
    /// Stream offset of the next top-level box header to read.
    private var nextBox: Int
    private var buffer: [UInt8] = []
    /// Stream offset of `buffer[0]`.
    private var bufferOffset: Int
    /// Fragments read since the last restart (for diagnostics and tests).
    private(set) var fragments = 0

    static let maxMoofBytes = 16 << 20
    static let maxSampleBytes = 1 << 20
    static let maxBufferedBytes = 64 << 20
    static let maxBoxesBetweenSamples = 10_000

    /// Output samples per media tick: a sample's duration in output samples is `duration * outputPerTick`.
    private let outputPerTick: Double

    /// `declaredChannels`: what the AudioSpecificConfig says; `outputSampleRate`: the decoder's rate.
    init(track: MP4AudioTrack, defaults: MP4TrackExtends?, audioStart: Int, outputSampleRate: Int, declaredChannels: Int) throws {
        decoder = try FAADDecoder(audioSpecificConfig: track.decoderSpecificInfo, declaredChannels: declaredChannels)
        outputPerTick = Double(outputSampleRate) / Double(max(1, track.timescale))
        trackID = track.trackID
        self.defaults = defaults
        self.audioStart = audioStart
        var samples: [MP4FragmentSample] = []
        var cursor = MP4SampleCursor(track: track)
        while samples.count < MP4Fragment.maxSamples, let location = cursor.next() {
            samples.append(MP4FragmentSample(offset: location.offset, size: location.size, duration: 0))
        }
        initialSamples = samples
        nextBox = audioStart
        bufferOffset = audioStart
    }

    mutating func restart(at offset: Int) throws {
        buffer.removeAll(keepingCapacity: true)
        bufferOffset = offset
        nextBox = offset
        queue = offset == audioStart ? initialSamples : []
        next = 0
        try decoder.reset()
    }

    var decodedFormat: AudioFormat? { decoder.format }

    mutating func append(_ bytes: [UInt8]) {
        // Bytes before what is still needed (a skipped box, consumed samples) are dropped as they come.
        let needed = next < queue.count ? min(queue[next].offset, nextBox) : nextBox
        let end = bufferOffset + buffer.count
        if needed >= end + bytes.count {
            buffer.removeAll(keepingCapacity: true)
            bufferOffset = end + bytes.count
            return
        }
        if needed > end {
            buffer.removeAll(keepingCapacity: true)
            buffer += bytes[(needed - end)...]
            bufferOffset = needed
            return
        }
        let drop = needed - bufferOffset
        if drop > 64 * 1024 {
            buffer.removeSubrange(0..<drop)
            bufferOffset += drop
        }
        buffer += bytes
    }

    mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        for _ in 0..<Self.maxBoxesBetweenSamples {
            if next < queue.count {
                let sample = queue[next]
                let start = sample.offset - bufferOffset
                guard start >= 0 else {
                    next += 1               // bytes already gone (a sample before the restart point): skip
                    continue
                }
                guard start + sample.size <= buffer.count else {
                    // A sample that lies far beyond the bytes at hand is a lie, not a slow network.
                    guard sample.size <= Self.maxSampleBytes, buffer.count <= Self.maxBufferedBytes else {
                        throw PlaybackError(message: "parser: fragment sample of \(sample.size) bytes at \(sample.offset) is out of reach",
                                            exitCode: 1)
                    }
                    return false
                }
                next += 1
                // A sample shorter than a frame (the last one, where muxers put the padding) keeps
                // only its duration: the fragmented form of a gapless end.
                let keep = sample.duration > 0 ? Int((Double(sample.duration) * outputPerTick).rounded()) : Int.max
                try decoder.decode(frame: buffer[start..<(start + sample.size)]) { pcm, format in
                    let frames = pcm.count / max(1, format.channels)
                    body(keep < frames ? UnsafeBufferPointer(rebasing: pcm[0..<(keep * format.channels)]) : pcm)
                }
                return true
            }
            // Every listed sample is done: read the next top-level box.
            let at = nextBox - bufferOffset
            guard at >= 0, let header = try MP4BoxHeader.parse(buffer[...], at: at) else { return false }
            guard let size = header.size else { return false }     // size 0: the box runs to the end
            switch header.type {
            case "moof":
                guard size <= Self.maxMoofBytes else {
                    throw PlaybackError(message: "parser: moof of \(size) bytes at \(nextBox)", exitCode: 1)
                }
                guard at + size <= buffer.count else {
                    if isComplete { throw PlaybackError(message: "parser: truncated moof at byte \(nextBox)", exitCode: 1) }
                    return false
                }
                let fragment: MP4Fragment
                do {
                    fragment = try MP4Fragment.parse(moof: buffer[at..<(at + size)], at: nextBox, trackID: trackID,
                                                     defaults: defaults)
                } catch {
                    throw PlaybackError(message: "parser: \(error)", exitCode: 1)
                }
                queue = fragment.samples
                next = 0
                fragments += 1
            default:
                break
            }
            nextBox += size
        }
        throw PlaybackError(message: "parser: more than \(Self.maxBoxesBetweenSamples) boxes without audio at byte \(nextBox)",
                            exitCode: 1)
    }
}
