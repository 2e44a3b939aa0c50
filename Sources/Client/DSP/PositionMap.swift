/// Maps output frames played since the last seek to source frames, so the reported position
/// stays in source time whatever the rate and resampling: the decode thread records one anchor
/// per block (output frames written, source frames behind them) and interpolates between them.
struct PositionMap {
    private var anchors: [(output: Int, source: Double)] = [(0, 0)]
    private var head = 0
    /// Source frames per output frame beyond the last anchor.
    private var slope = 1.0

    mutating func reset() {
        anchors = [(0, 0)]
        head = 0
    }

    /// After a block: `output` frames written in all, whose last one is source frame `source`.
    mutating func record(output: Int, source: Double, slope: Double) {
        self.slope = slope
        // Indexed rather than `anchors.last`: the generic accessor allocates a box per call in a
        // debug build, and this runs once per decoded batch (the allocation test counts it).
        let last = anchors[anchors.count - 1]
        guard output > last.output else { return }
        anchors.append((output, max(last.source, source)))
    }

    /// The source frame being heard when `output` frames have been played.
    mutating func source(atOutput output: Int) -> Double {
        while head + 1 < anchors.count, anchors[head + 1].output <= output { head += 1 }
        if head > 256 {
            anchors.removeFirst(head)
            head = 0
        }
        let a = anchors[head]
        guard head + 1 < anchors.count else { return a.source + Double(output - a.output) * slope }
        let b = anchors[head + 1]
        return a.source + (b.source - a.source) * Double(output - a.output) / Double(b.output - a.output)
    }
}
