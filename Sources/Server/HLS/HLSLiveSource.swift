import StreamShared
import StreamHTTP
import StreamLibrary

/// A track played in a loop as a live HLS stream (`streamd --live NAME=PATH`): the playlist is a
/// sliding window over an endless sequence of segments that become available in real time.
public final class HLSLiveSource: Sendable {
    /// Segments listed in each live playlist.
    public static let windowSize = 5

    public let name: String
    public let file: OpenFile
    public let plan: HLSTrackPlan
    /// When segment 0 started, on the monotonic clock; set so that a full window exists at once.
    let originNanos: UInt64
    /// End time of each segment within one loop, in nanoseconds from the loop's start.
    private let ends: [UInt64]
    private var loopNanos: UInt64 { ends.last ?? 1 }

    /// Names are letters, digits, '-' and '_' (they become a URL path component).
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
        }
    }

    /// Opens and plans `path`; throws `HLSError`, `FormatError` or `SystemError` for a file that cannot loop.
    /// With `analyzer`, the track is analyzed in a worker process (what streamd does), else here.
    public init(name: String, path: String, nowNanos: UInt64? = nil, analyzer: IsolatedAnalyzer? = nil) throws {
        let nowNanos = nowNanos ?? monotonicNanos()
        guard Self.isValidName(name) else { throw HLSError.invalid("live name '\(name)': use letters, digits, '-' and '_'") }
        let file = try OpenFile(path: path)
        let analysis: TrackAnalysis
        if let analyzer {
            switch analyzer.analyze([(path, file.size)]).first {
            case .analyzed(let result): analysis = result
            case .rejected(let why), .quarantined(let why), .unavailable(let why): throw HLSError.invalid(why)
            case nil: throw HLSError.invalid("not analyzed")
            }
        } else {
            analysis = try TrackAnalyzer.analyze(file)
        }
        let plan = try HLSTrackPlan.make(file: file, etag: file.etag, analysis: analysis)
        var ends: [UInt64] = []
        var elapsed = 0.0
        for span in plan.spans {
            elapsed += span.duration
            ends.append(UInt64((elapsed * 1e9).rounded()))
        }
        guard let total = ends.last, total > 0 else { throw HLSError.invalid("live track '\(path)' has no playing time") }
        self.name = name
        self.file = file
        self.plan = plan
        self.ends = ends
        // Pretend the stream started a window's worth of segments ago, so a client has something to start from.
        let prefill = Self.endNanos(of: Self.windowSize - 1, ends: ends)
        self.originNanos = nowNanos &- min(prefill, nowNanos)
    }

    private static func endNanos(of sequence: Int, ends: [UInt64]) -> UInt64 {
        let loops = UInt64(sequence / ends.count)
        return loops &* (ends.last ?? 0) &+ ends[sequence % ends.count]
    }

    /// How many segments have been completed by `nanos` (the live edge).
    func availableCount(atNanos nanos: UInt64) -> Int {
        let elapsed = nanos > originNanos ? nanos - originNanos : 0
        let loops = Int(elapsed / loopNanos)
        let within = elapsed % loopNanos
        var done = 0
        while done < ends.count, ends[done] <= within { done += 1 }
        return loops * ends.count + done
    }

    /// Whether segment `sequence` may be fetched: it exists already and left the window not long ago.
    func isServable(_ sequence: Int, atNanos nanos: UInt64) -> Bool {
        let edge = availableCount(atNanos: nanos)
        return sequence < edge && sequence >= edge - Self.windowSize * 4
    }

    /// The live playlist at `nanos`: the last `windowSize` segments, no EXT-X-ENDLIST.
    /// Each return to the start of the track is marked with EXT-X-DISCONTINUITY (the encoding restarts).
    public func playlist(atNanos nanos: UInt64) -> HLSMediaPlaylist {
        let edge = availableCount(atNanos: nanos)
        let first = max(0, edge - Self.windowSize)
        var playlist = HLSMediaPlaylist(targetDuration: plan.targetDuration, endList: false)
        playlist.mediaSequence = first
        playlist.discontinuitySequence = first > 0 ? (first - 1) / plan.spans.count : 0
        if plan.kind == .fmp4 { playlist.mapURI = "init.mp4" }
        for sequence in first..<edge {
            let index = sequence % plan.spans.count
            playlist.segments.append(HLSSegmentEntry(duration: plan.spans[index].duration,
                                                     uri: "seg-\(sequence).\(plan.segmentExtension)",
                                                     discontinuity: index == 0 && sequence > 0))
        }
        return playlist
    }

    /// Segment `sequence` of the endless stream: the track's segment at that place in the loop,
    /// with timestamps that keep growing across loops.
    func segment(_ sequence: Int) throws -> [UInt8] {
        try plan.segment(sequence % plan.spans.count, from: file, loop: sequence / plan.spans.count, sequence: sequence + 1)
    }
}
