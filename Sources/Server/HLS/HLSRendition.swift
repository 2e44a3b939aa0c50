import StreamShared
import StreamHTTP
import StreamLibrary

/// One transcoded variant of a track's HLS master playlist (`--hls-ladder`): Opus in fMP4 or MP3
/// packed audio at `kbps`, served under the track's folder as `opus-128/`, `mp3-128/`.
///
/// Every transcoded variant is cut on one grid, so a player switches between them at a segment
/// boundary without a gap or an offset: both codecs run at 48 kHz and a segment is 6 s of the
/// encoder's timeline, 300 Opus packets of 20 ms or 250 MP3 frames of 1,152 samples. Their
/// content sits at the same place on that timeline too: a decoded MP3 starts with LAME's 576
/// samples of delay and the decoder's 529, and the Opus encode is given 793 samples of silence
/// before the track so that, with libopus's 312 of look-ahead, its first source sample also
/// lands at 1,105 (the fMP4 edit list and the `dOps` pre-skip say 1,105, so whole-track decoders
/// still trim it to the exact source).
public struct HLSRendition: Sendable, Hashable {
    /// The codecs of the ladder.
    public enum Codec: String, Sendable, CaseIterable {
        case opus, mp3
    }

    public let codec: Codec
    public let kbps: Int

    public init(codec: Codec, kbps: Int) {
        self.codec = codec
        self.kbps = kbps
    }

    /// "opus-128" → Opus at 128 kbit/s; nil for anything else (no signs, no leading zeros).
    public init?(folder: Substring) {
        guard let dash = folder.firstIndex(of: "-"), let codec = Codec(rawValue: String(folder[..<dash])) else { return nil }
        let digits = folder[folder.index(after: dash)...]
        guard (1...3).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), !digits.hasPrefix("0"),
              let kbps = Int(digits) else { return nil }
        self.init(codec: codec, kbps: kbps)
    }

    /// Its folder under the track's ("opus-128").
    public var folder: String { "\(codec.rawValue)-\(kbps)" }

    /// The rate both codecs are encoded at.
    public static let sampleRate = RenditionGrid.sampleRate
    /// The grid every transcoded variant is cut on: 6 s at 48 kHz.
    public static let gridSamples = RenditionGrid.segmentSamples
    /// Samples before the first source sample in a decoded MP3 at 48 kHz (LAME's delay and the decoder's).
    public static let mp3Delay = 576 + 529
    /// libopus's look-ahead at 48 kHz: the pre-skip libopusenc writes.
    public static let opusLookahead = 312
    /// Silence encoded before the track in an Opus variant, so its content lines up with the MP3's.
    public static let opusLead = mp3Delay - opusLookahead

    /// RFC 6381 codec string for the master playlist.
    public var codecs: String { codec == .opus ? "opus" : "mp4a.40.34" }
    /// File extension of the whole encode (`rendition.opus`, `rendition.mp3`).
    public var fileExtension: String { codec == .opus ? "opus" : "mp3" }
    public var fileContentType: String { codec == .opus ? "audio/ogg; codecs=opus" : "audio/mpeg" }
}

/// The transcoder as renditions need it (StreamRadio's `TranscodeService`): whole-track encodes
/// kept in its disk cache. MP3 renditions are encoded at 48 kHz without the bit reservoir (a frame
/// never borrows bytes from the frame before, which after a switch belongs to another variant);
/// Opus renditions after `HLSRendition.opusLead` samples of silence.
public protocol HLSRenditionEncoder: Sendable {
    /// The completed encode of the track at `absolute` for `rendition`, started when none is under
    /// way; the calling thread (a blocking-pool one, never the loop) waits at most `wait` seconds for
    /// it, then gets 503 with Retry-After.
    func renditionFile(absolute: String, file: OpenFile, rendition: HLSRendition, wait: Double) throws(HTTPRefusal) -> OpenFile
    /// The completed encode when the cache has it; nothing is started.
    func cachedRendition(absolute: String, file: OpenFile, rendition: HLSRendition) -> OpenFile?
}

/// The transcoded variants offered beside each track's original (`--hls-ladder 64,128,192`).
public struct HLSLadder: Sendable {
    /// Bitrates in kbit/s; each is offered as Opus and as MP3.
    public var rungs: [Int]
    public var encoder: any HLSRenditionEncoder
    /// How long a variant's request waits for its encode before 503 (seconds).
    public var wait: Double

    /// The bitrates `--hls-ladder` takes (MPEG-1 layer III at 48 kHz: 32...320).
    public static let kbpsRange = 32...320
    public static let defaultRungs = [64, 128, 192]

    public init(rungs: [Int], encoder: any HLSRenditionEncoder, wait: Double = 3) {
        self.rungs = rungs
        self.encoder = encoder
        self.wait = wait
    }

    /// The variants in playlist order: Opus then MP3, each from the lowest bitrate up.
    public var renditions: [HLSRendition] {
        HLSRendition.Codec.allCases.flatMap { codec in rungs.sorted().map { HLSRendition(codec: codec, kbps: $0) } }
    }

    /// "64,128,192" → [64, 128, 192]; "none" or "" → []; nil when a value is not a bitrate here.
    public static func parse(_ text: String) -> [Int]? {
        if text.isEmpty || text == "none" { return [] }
        var rungs: [Int] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let kbps = QueryValue.integer(String(part), in: kbpsRange) else { return nil }
            if !rungs.contains(kbps) { rungs.append(kbps) }
        }
        return rungs
    }
}

extension HLSTrackPlan {
    /// The plan of a rendition's whole encode, cut on `HLSRendition`'s grid.
    static func rendition(_ rendition: HLSRendition, file: some RandomAccessBytes, etag: String) throws -> HLSTrackPlan {
        switch rendition.codec {
        case .mp3: return try mp3Rendition(file: file, etag: etag)
        case .opus: return try opusRendition(file: file, etag: etag, kbps: rendition.kbps)
        }
    }

    /// MP3 at 48 kHz as packed audio, cut by `RenditionGrid.mp3Cuts`.
    static func mp3Rendition(file: some RandomAccessBytes, etag: String) throws -> HLSTrackPlan {
        let cuts = try RenditionGrid.mp3Cuts(file)
        let spans = cuts.spans
        return HLSTrackPlan(kind: .packedMP3, fileETag: etag, version: versionToken(etag), spans: spans,
                            targetDuration: HLSSegmenter.targetDuration(for: spans, target: targetSeconds),
                            codec: "mp4a.40.34", audioRange: spans[0].start..<cuts.audioEnd, initSegment: nil, framing: nil,
                            timescale: 90_000)
    }

    /// Opus in fMP4, cut by `RenditionGrid.opusCuts` wherever the pages fall: each span starts at
    /// the page its first packet starts on and keeps a window of the packets.
    static func opusRendition(file: some RandomAccessBytes, etag: String, kbps: Int) throws -> HLSTrackPlan {
        let cuts = try RenditionGrid.opusCuts(file)
        var head = cuts.head
        // The pre-skip covers the look-ahead and the lead of silence: whole-track players trim both.
        let ownPreSkip = head.preSkip
        head.preSkip += HLSRendition.opusLead
        var track = FMP4AudioTrackInfo(timescale: 48_000, channels: head.channels, sampleRate: 48_000, audioSpecificConfig: [],
                                       avgBitrate: kbps * 1000)
        track.codec = .opus(head)
        track.edit = (mediaTime: head.preSkip, duration: max(0, cuts.lastGranule - ownPreSkip - HLSRendition.opusLead))
        track.rollDistance = -((3840 + 959) / 960)
        let spans = cuts.spans
        return HLSTrackPlan(kind: .fmp4, fileETag: etag, version: versionToken(etag), spans: spans,
                            targetDuration: HLSSegmenter.targetDuration(for: spans, target: targetSeconds),
                            codec: "opus", audioRange: spans[0].start..<(spans.last?.end ?? file.size),
                            initSegment: FMP4Writer.initSegment(track),
                            framing: .oggOpusWindows(serial: cuts.serial, startSamples: cuts.startSamples, windows: cuts.windows),
                            timescale: 48_000)
    }
}
