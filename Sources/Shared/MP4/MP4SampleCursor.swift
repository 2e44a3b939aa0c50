/// Walks an audio track's samples in order, giving each one's byte offset and size from the
/// stsc/stco/stsz tables in constant time a step and constant memory, so a player need not
/// build a table of every sample (an hour of AAC holds about 170,000).
public struct MP4SampleCursor: Sendable {
    private let track: MP4AudioTrack
    /// Index of the next sample.
    public private(set) var sample = 0
    /// 0-based chunk of the next sample, and the stsc run that chunk belongs to.
    private var chunk = 0
    private var run = 0
    private var sampleInChunk = 0
    private var byteInChunk = 0

    /// A cursor at the first sample whose offset is at or after `offset` (0 = the first sample).
    public init(track: MP4AudioTrack, atOrAfter offset: Int = 0) {
        self.track = track
        skipEmptyChunks()
        guard offset > 0 else { return }
        // Chunks are in increasing offsets in every real file: find the last one starting at or
        // before `offset` by walking the runs (a run's chunks hold equal sample counts).
        while let start = chunkStart(chunk), start < offset, sample < track.sampleCount {
            let (nextChunk, nextRun, samplesBefore) = nextChunkStart()
            guard let nextStart = track.chunkOffsets.indices.contains(nextChunk) ? track.chunkOffsets[nextChunk] : nil,
                  nextStart <= offset, nextStart >= start else { break }
            chunk = nextChunk
            run = nextRun
            sample = samplesBefore
            sampleInChunk = 0
            byteInChunk = 0
        }
        // Then sample by sample inside that chunk.
        while let (at, _) = peek(), at < offset { _ = next() }
    }

    /// The next sample's offset and size without moving.
    public func peek() -> (offset: Int, size: Int)? {
        guard sample < track.sampleCount, let start = chunkStart(chunk), let size = track.size(ofSample: sample) else { return nil }
        let (offset, overflow) = start.addingReportingOverflow(byteInChunk)
        return overflow ? nil : (offset, size)
    }

    /// The next sample's offset and size, or nil after the last one (or where the tables end early).
    public mutating func next() -> (offset: Int, size: Int)? {
        guard let location = peek() else { return nil }
        sample += 1
        sampleInChunk += 1
        byteInChunk = satAdd(byteInChunk, location.size)
        if sampleInChunk >= samplesPerChunk(run) {
            chunk += 1
            sampleInChunk = 0
            byteInChunk = 0
            advanceRun()
            skipEmptyChunks()
        }
        return location
    }

    private func chunkStart(_ chunk: Int) -> Int? {
        track.chunkOffsets.indices.contains(chunk) ? track.chunkOffsets[chunk] : nil
    }

    private func samplesPerChunk(_ run: Int) -> Int {
        track.sampleToChunk.indices.contains(run) ? track.sampleToChunk[run].samplesPerChunk : 0
    }

    /// Moves `run` forward to the run that holds `chunk` (stsc chunk numbers are 1-based).
    private mutating func advanceRun() {
        while run + 1 < track.sampleToChunk.count, track.sampleToChunk[run + 1].firstChunk - 1 <= chunk { run += 1 }
    }

    /// Runs of chunks that hold no samples are passed over (bounded by the chunk count).
    private mutating func skipEmptyChunks() {
        advanceRun()
        while chunk < track.chunkOffsets.count, samplesPerChunk(run) <= 0 {
            chunk += 1
            advanceRun()
        }
    }

    /// Where the chunk after the current one starts: its index, run, and the number of its first sample.
    private func nextChunkStart() -> (chunk: Int, run: Int, firstSample: Int) {
        var copy = self
        let remaining = samplesPerChunk(run) - sampleInChunk
        copy.sample = satAdd(sample, max(0, remaining))
        copy.chunk += 1
        copy.sampleInChunk = 0
        copy.byteInChunk = 0
        copy.skipEmptyChunks()
        return (copy.chunk, copy.run, copy.sample)
    }
}
