/// The first audio ('soun') track of an MP4 movie, with the sample tables a player needs to
/// decode and seek.
///
/// Times are in the track's media timescale (`timescale`, from mdhd) unless a field says otherwise;
/// sample numbers are 0-based, chunk numbers in `sampleToChunk` are 1-based as in the file.
public struct MP4AudioTrack: Sendable, Equatable {
    /// tkhd track_ID.
    public var trackID: Int
    /// mdhd timescale (ticks per second) and duration in those ticks.
    public var timescale: Int
    public var duration: Int
    /// mvhd timescale: the unit of `editList` segment durations.
    public var movieTimescale: Int
    /// The sample entry type: "mp4a", "alac", "Opus", "fLaC", ".mp3", ...
    public var codec: String
    /// From the esds DecoderConfigDescriptor (0x40 MPEG-4 audio, 0x66–0x68 MPEG-2 AAC, 0x69/0x6B MP3).
    public var objectTypeIndication: Int?
    /// From the esds DecoderConfigDescriptor (5 = audio stream).
    public var streamType: Int?
    /// Decoder buffer size in bytes, from the esds DecoderConfigDescriptor.
    public var bufferSize: Int?
    /// Channel count and sample rate from the sample entry (QuickTime v1/v2 entries handled).
    /// For AAC with SBR/PS the AudioSpecificConfig is the better source; the caller combines them.
    public var channels: Int
    public var sampleRate: Int
    /// Bits per sample from the sample entry (16 for compressed formats by convention).
    public var bitsPerSample: Int
    /// The AudioSpecificConfig bytes from esds; for 'alac', 'Opus' and 'fLaC' the payload of their
    /// configuration box (alac, dOps, dfLa). Empty when absent.
    public var decoderSpecificInfo: [UInt8]
    /// Bit rates from the esds DecoderConfigDescriptor (0 in the file means unknown).
    public var avgBitrate: Int?
    public var maxBitrate: Int?
    /// Number of samples (codec frames: 1024 PCM frames each for AAC-LC) from stsz/stz2.
    public var sampleCount: Int
    /// stsz/stz2: one size for all samples, or one per sample.
    public var sampleSizes: SampleSizes
    /// stts runs: `count` samples of `delta` ticks each.
    public var timeToSample: [TimeToSample]
    /// stsc runs: from `firstChunk` on, each chunk holds `samplesPerChunk` samples.
    public var sampleToChunk: [SampleToChunk]
    /// stco/co64: file offset of each chunk.
    public var chunkOffsets: [Int]
    /// elst entries, in order.
    public var editList: [Edit]

    public init(trackID: Int = 0, timescale: Int = 0, duration: Int = 0, movieTimescale: Int = 0, codec: String = "",
                objectTypeIndication: Int? = nil, streamType: Int? = nil, bufferSize: Int? = nil, channels: Int = 0,
                sampleRate: Int = 0, bitsPerSample: Int = 0, decoderSpecificInfo: [UInt8] = [], avgBitrate: Int? = nil,
                maxBitrate: Int? = nil, sampleCount: Int = 0, sampleSizes: SampleSizes = .table([]),
                timeToSample: [TimeToSample] = [], sampleToChunk: [SampleToChunk] = [], chunkOffsets: [Int] = [],
                editList: [Edit] = []) {
        self.trackID = trackID
        self.timescale = timescale
        self.duration = duration
        self.movieTimescale = movieTimescale
        self.codec = codec
        self.objectTypeIndication = objectTypeIndication
        self.streamType = streamType
        self.bufferSize = bufferSize
        self.channels = channels
        self.sampleRate = sampleRate
        self.bitsPerSample = bitsPerSample
        self.decoderSpecificInfo = decoderSpecificInfo
        self.avgBitrate = avgBitrate
        self.maxBitrate = maxBitrate
        self.sampleCount = sampleCount
        self.sampleSizes = sampleSizes
        self.timeToSample = timeToSample
        self.sampleToChunk = sampleToChunk
        self.chunkOffsets = chunkOffsets
        self.editList = editList
    }

    /// Sample sizes as stsz/stz2 give them.
    public enum SampleSizes: Sendable, Equatable {
        /// Every sample has this many bytes (stsz sample_size ≠ 0).
        case constant(Int)
        /// One size per sample.
        case table([UInt32])
    }

    /// A run of samples with the same duration (one stts entry).
    public struct TimeToSample: Sendable, Equatable {
        public var count: Int
        public var delta: Int
        public init(count: Int, delta: Int) {
            self.count = count
            self.delta = delta
        }
    }

    /// A run of chunks with the same number of samples (one stsc entry).
    public struct SampleToChunk: Sendable, Equatable {
        /// 1-based number of the first chunk of the run.
        public var firstChunk: Int
        public var samplesPerChunk: Int
        /// 1-based index into stsd.
        public var sampleDescriptionIndex: Int
        public init(firstChunk: Int, samplesPerChunk: Int, sampleDescriptionIndex: Int = 1) {
            self.firstChunk = firstChunk
            self.samplesPerChunk = samplesPerChunk
            self.sampleDescriptionIndex = sampleDescriptionIndex
        }
    }

    /// One elst entry: which part of the media plays, for how long.
    public struct Edit: Sendable, Equatable {
        /// Length of this edit in movie-timescale ticks.
        public var segmentDuration: Int
        /// Start of this edit in media-timescale ticks; -1 for an empty edit (silence).
        public var mediaTime: Int
        /// Playback rate (16.16 fixed point in the file); 1 for normal play.
        public var rate: Double
        public init(segmentDuration: Int, mediaTime: Int, rate: Double = 1) {
            self.segmentDuration = segmentDuration
            self.mediaTime = mediaTime
            self.rate = rate
        }
        public var isEmpty: Bool { mediaTime < 0 }
    }

    // MARK: Derived values

    /// The first non-empty edit: where presentation starts in the media and how long it plays.
    public var firstMediaEdit: Edit? { editList.first { !$0.isEmpty } }
    /// Media time (ticks) of the first non-empty edit: the priming samples to skip.
    public var editMediaTime: Int? { firstMediaEdit?.mediaTime }
    /// Duration of the first non-empty edit, in movie-timescale ticks.
    public var editDuration: Int? { firstMediaEdit?.segmentDuration }

    /// Total of all stts sample durations, in ticks (saturating: a hostile table cannot trap).
    public var totalTicks: Int {
        timeToSample.reduce(0) { satAdd($0, satMul($1.count, $1.delta)) }
    }

    /// Size in bytes of sample `n` (0-based).
    public func size(ofSample n: Int) -> Int? {
        guard n >= 0, n < sampleCount else { return nil }
        switch sampleSizes {
        case .constant(let size): return size
        case .table(let table): return n < table.count ? Int(table[n]) : nil
        }
    }

    /// Byte offset and size of sample `n` (0-based), from stsc, stco/co64 and stsz.
    /// Nil when `n` is out of range or the tables do not cover it.
    public func sampleLocation(_ n: Int) -> (offset: Int, size: Int)? {
        guard let size = size(ofSample: n) else { return nil }
        var runFirstSample = 0
        for (i, run) in sampleToChunk.enumerated() {
            let nextFirstChunk = i + 1 < sampleToChunk.count ? sampleToChunk[i + 1].firstChunk : chunkOffsets.count + 1
            let chunks = nextFirstChunk - run.firstChunk
            // A run of empty chunks, or entries out of order, hold no samples.
            guard run.samplesPerChunk > 0, run.firstChunk >= 1, chunks > 0 else { continue }
            let samplesInRun = satMul(chunks, run.samplesPerChunk)
            if n - runFirstSample < samplesInRun {
                let chunkInRun = (n - runFirstSample) / run.samplesPerChunk
                let chunk = run.firstChunk - 1 + chunkInRun
                guard chunk < chunkOffsets.count else { return nil }
                let firstInChunk = runFirstSample + chunkInRun * run.samplesPerChunk
                // Samples sit back to back inside a chunk: skip the bytes of those before `n`.
                var before = 0
                switch sampleSizes {
                case .constant(let size):
                    before = satMul(n - firstInChunk, size)
                case .table(let table):
                    guard n <= table.count else { return nil }
                    for s in firstInChunk..<n { before = satAdd(before, Int(table[s])) }
                }
                let (offset, overflow) = chunkOffsets[chunk].addingReportingOverflow(before)
                guard !overflow, before < Int.max else { return nil }
                return (offset, size)
            }
            let (next, overflow) = runFirstSample.addingReportingOverflow(samplesInRun)
            guard !overflow else { return nil }
            runFirstSample = next
        }
        return nil
    }

    /// Decode time of sample `n` in timescale ticks; `n == ` the number of samples stts covers
    /// gives the end time of the last sample.
    public func decodeTime(ofSample n: Int) -> Int? {
        guard n >= 0 else { return nil }
        var time = 0, seen = 0
        for run in timeToSample where run.count > 0 {
            if n - seen < run.count { return satAdd(time, satMul(n - seen, run.delta)) }
            time = satAdd(time, satMul(run.count, run.delta))
            seen = satAdd(seen, run.count)
        }
        return n == seen ? time : nil
    }

    /// The sample whose decode time span contains `seconds` (media time, before the edit list:
    /// add `editMediaTime` / `timescale` for a presentation time). Nil for a negative or
    /// non-finite time, or one at or after the end of the last sample.
    public func sampleIndex(atSeconds seconds: Double) -> Int? {
        guard seconds.isFinite, seconds >= 0, timescale > 0, sampleCount > 0 else { return nil }
        let ticks = seconds * Double(timescale)
        // Past 2^62 ticks no real file reaches; refusing it keeps the Int conversion safe.
        guard ticks < 0x1p62 else { return nil }
        let target = Int(ticks)
        var time = 0, seen = 0
        for run in timeToSample where run.count > 0 {
            let runTicks = satMul(run.count, run.delta)
            if run.delta > 0, target - time < runTicks {
                let index = satAdd(seen, (target - time) / run.delta)
                return index < sampleCount ? index : nil
            }
            time = satAdd(time, runTicks)
            seen = satAdd(seen, run.count)
        }
        return nil
    }
}

/// Saturating arithmetic for values read from a file: a hostile table must give a wrong
/// answer at worst, never an overflow trap.
func satMul(_ a: Int, _ b: Int) -> Int {
    let (r, overflow) = a.multipliedReportingOverflow(by: b)
    return overflow ? ((a < 0) != (b < 0) ? Int.min : Int.max) : r
}

func satAdd(_ a: Int, _ b: Int) -> Int {
    let (r, overflow) = a.addingReportingOverflow(b)
    return overflow ? (b < 0 ? Int.min : Int.max) : r
}
