/// A track's waveform at every zoom: min/max pairs at a base resolution (`WaveformReducer`'s
/// 256 frames a pair) and each coarser level by halving (pair i of level k+1 is the min and max
/// of pairs 2i and 2i+1 of level k). It is built as the decoder goes (`append`, then `finish`)
/// and can be asked at any time (`slice`): while incomplete, the part decoded so far, the
/// levels' unfinished last pairs made from the finer levels' leftovers.
///
/// Memory: about 8 bytes per base pair over all levels. A track so long that its base level
/// would pass `maxBasePairs` folds: the finest level is dropped and the next one becomes the
/// base (512 frames a pair, then 1024, ...), so a week of audio cannot grow it without bound.
public struct WaveformPyramid: Sendable, Equatable {
    /// Frames of the pairs `append` takes.
    public static let rawPairFrames = WaveformReducer.pairFrames
    /// The base level's most pairs before it folds: 2^21 pairs, 6.6 hours at 44.1 kHz.
    public static let defaultMaxBasePairs = 1 << 21

    /// The samples' rate (frames per second).
    public var sampleRate: Int
    public let maxBasePairs: Int
    /// Levels folded away: the base pair spans `rawPairFrames << folds` frames.
    public private(set) var folds = 0
    /// Level k: min, max interleaved, each pair `basePairFrames << k` frames.
    public private(set) var levels: [[Int16]] = [[]]
    /// Raw pairs taken in (each `rawPairFrames` frames, the last one maybe fewer).
    public private(set) var rawPairs = 0
    /// The track's length in frames, once finished.
    public private(set) var totalFrames: Int?
    /// Raw pairs not yet making a whole base pair (only after a fold): their extremes and count.
    private var pendingLow = Int16.max
    private var pendingHigh = Int16.min
    private var pendingCount = 0

    public init(sampleRate: Int, maxBasePairs: Int = WaveformPyramid.defaultMaxBasePairs) {
        self.sampleRate = sampleRate
        self.maxBasePairs = max(2, maxBasePairs)
    }

    /// Frames of one pair of the base level.
    public var basePairFrames: Int { Self.rawPairFrames << folds }
    /// Frames of one pair of `level`.
    public func pairFrames(level: Int) -> Int { basePairFrames << level }
    /// Whole pairs at `level`.
    public func pairCount(level: Int) -> Int { levels[level].count / 2 }
    public var isComplete: Bool { totalFrames != nil }
    /// Frames the pairs cover so far (the track's length once finished).
    public var coveredFrames: Int { totalFrames ?? rawPairs * Self.rawPairFrames }
    /// Bytes the levels hold.
    public var byteCount: Int { levels.reduce(0) { $0 + $1.count * 2 } }

    // MARK: Building

    /// Takes raw pairs (min, max interleaved, each `rawPairFrames` frames), in order.
    public mutating func append(_ pairs: some Collection<Int16>) {
        var iterator = pairs.makeIterator()
        while let low = iterator.next(), let high = iterator.next() {
            append(low: low, high: high)
        }
    }

    /// Takes one raw pair.
    public mutating func append(low: Int16, high: Int16) {
        guard totalFrames == nil else { return }
        rawPairs += 1
        guard folds > 0 else {
            push(low, high, level: 0)
            return
        }
        pendingLow = min(pendingLow, low)
        pendingHigh = max(pendingHigh, high)
        pendingCount += 1
        if pendingCount == 1 << folds { flushPending() }
    }

    /// Ends the track at `frames` frames: the unfinished pair of every level becomes its last.
    public mutating func finish(totalFrames frames: Int) {
        guard totalFrames == nil else { return }
        if pendingCount > 0 { flushPending() }
        var level = 0
        while level + 1 < levels.count {
            if pairCount(level: level) % 2 == 1 {
                let last = levels[level].count - 2
                push(levels[level][last], levels[level][last + 1], level: level + 1)
            }
            level += 1
        }
        totalFrames = max(0, frames)
    }

    /// Makes the base pairs span `rawPairFrames << count` frames (a pyramid read from a file).
    mutating func setFolds(_ count: Int) { folds = count }

    /// Adds one pair to the base level as it is (a pyramid read from a file).
    mutating func appendBase(low: Int16, high: Int16) {
        rawPairs += 1 << folds
        push(low, high, level: 0)
    }

    private mutating func flushPending() {
        let low = pendingLow, high = pendingHigh
        pendingLow = .max
        pendingHigh = .min
        pendingCount = 0
        push(low, high, level: 0)
    }

    /// Adds a pair to `level` and, when it completes a pair of pairs, their sum to the next.
    private mutating func push(_ low: Int16, _ high: Int16, level: Int) {
        var level = level, low = low, high = high
        while true {
            if level == levels.count { levels.append([]) }
            levels[level].append(low)
            levels[level].append(high)
            let count = levels[level].count
            guard count % 4 == 0 else { break }
            low = min(levels[level][count - 4], low)
            high = max(levels[level][count - 3], high)
            level += 1
        }
        if pairCount(level: 0) > maxBasePairs { fold() }
    }

    /// Drops the base level; its leftover pair (when its count is odd) and the pending raw
    /// pairs become the pending part of the new base.
    private mutating func fold() {
        let old = levels.removeFirst()
        if levels.isEmpty { levels = [[]] }
        let oldPending = (pendingLow, pendingHigh, pendingCount)
        pendingLow = .max
        pendingHigh = .min
        pendingCount = 0
        if (old.count / 2) % 2 == 1 {
            pendingLow = old[old.count - 2]
            pendingHigh = old[old.count - 1]
            pendingCount = 1 << folds
        }
        if oldPending.2 > 0 {
            pendingLow = min(pendingLow, oldPending.0)
            pendingHigh = max(pendingHigh, oldPending.1)
            pendingCount += oldPending.2
        }
        folds += 1
    }

    // MARK: Reading

    /// What `slice` answers: the level read, and the pairs.
    public struct Slice: Sendable, Equatable {
        /// The level the pairs were read from, and the frames of one of its pairs.
        public var level: Int
        public var levelPairFrames: Int
        /// The pairs given: `count` spans of `(toFrame - fromFrame) / span count` frames from
        /// `fromFrame`, each the min and max of the level's pairs that overlap it.
        public var pairs: [Int16]
        /// How many spans the whole asked range has (`pairs` holds fewer while incomplete).
        public var spans: Int
    }

    /// At most `width` pairs over frames `from..<to`, from the coarsest level with at least
    /// `width` pairs over that range (the base when zoomed in further). The range is cut into
    /// spans of equal length, as many as the level has pairs over it but at most `width`; span
    /// j is the min and max of the level's pairs overlapping it. While incomplete, only the
    /// whole spans before `coveredFrames` are given (so each keeps the place and length it will
    /// have when complete). Costs O(width), whatever the track's length.
    public func slice(from: Int, to: Int, width: Int) -> Slice {
        let from = max(0, from)
        let to = max(from, to)
        let width = max(1, width)
        let length = to - from
        // The coarsest level with at least `width` pairs over the range (among those built so far).
        var level = 0
        while level + 1 < levels.count, length / pairFrames(level: level + 1) >= width { level += 1 }
        let frames = pairFrames(level: level)
        guard length > 0 else { return Slice(level: level, levelPairFrames: frames, pairs: [], spans: 0) }
        let spans = min(width, (length + frames - 1) / frames)
        let available = pairCount(level: level)
        let tail = isComplete ? nil : tailPair(level: level)
        let covered = coveredFrames
        // Pair frames are powers of two: a shift finds a frame's pair.
        let shift = frames.trailingZeroBitCount
        // `from + span · length / spans`, in plain integers unless the product could overflow.
        let small = length <= Int.max / spans
        var pairs = [Int16]()
        pairs.reserveCapacity(2 * spans)
        levels[level].withUnsafeBufferPointer { values in
            var start = from
            for span in 0..<spans {
                let offset = small ? (length * (span + 1)) / spans : Self.scale(length, span + 1, spans)
                let end = from + offset
                if !isComplete && end > covered { break }
                var low = Int16.max, high = Int16.min
                var index = start >> shift
                let last = min((end - 1) >> shift, available)
                while index <= last {
                    if index < available {
                        low = min(low, values[2 * index])
                        high = max(high, values[2 * index + 1])
                    } else if let tail {
                        low = min(low, tail.low)
                        high = max(high, tail.high)
                    }
                    index += 1
                }
                if low > high { break }
                pairs.append(low)
                pairs.append(high)
                start = end
            }
        }
        return Slice(level: level, levelPairFrames: frames, pairs: pairs, spans: spans)
    }

    /// `a · b / c` without overflow for the sizes used here (a up to 2^50, b ≤ c ≤ 8192).
    static func scale(_ a: Int, _ b: Int, _ c: Int) -> Int {
        let (high, low) = a.multipliedFullWidth(by: b)
        return c.dividingFullWidth((high, low)).quotient
    }

    /// The unfinished pair after `level`'s whole pairs while building: the leftover pair of each
    /// finer level and the pending raw pairs; nil when there is none.
    func tailPair(level: Int) -> (low: Int16, high: Int16)? {
        var low = Int16.max, high = Int16.min
        var any = false
        if pendingCount > 0 {
            low = pendingLow
            high = pendingHigh
            any = true
        }
        for finer in 0..<min(level, levels.count) where pairCount(level: finer) % 2 == 1 {
            let at = levels[finer].count - 2
            low = min(low, levels[finer][at])
            high = max(high, levels[finer][at + 1])
            any = true
        }
        return any ? (low, high) : nil
    }
}
