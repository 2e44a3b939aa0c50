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
    /// LAME's own delay (the decoder adds 529).
    public static let lameDelay = 576
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
    /// The encode of the track at `absolute` for `rendition`: complete from the cache, or under
    /// way (started when none was). Never waits: a failed or stopped encode is 503 with Retry-After.
    func renditionEncode(absolute: String, file: OpenFile, rendition: HLSRendition) throws(HTTPRefusal) -> RenditionEncode
    /// The completed encode when the cache has it; nothing is started.
    func cachedRendition(absolute: String, file: OpenFile, rendition: HLSRendition) -> OpenFile?
}

/// A variant's encode as far as it has gone.
public enum RenditionEncode: Sendable {
    /// The whole encode, a file of the transcoder's cache.
    case complete(OpenFile)
    /// The encode under way.
    case encoding(RenditionProgress)
}

/// An encode under way: its spool, whose first `published` bytes are written for good (an MP3's
/// Info frame aside, rewritten at the end: segment 0 never carries it, see `HLSTrackPlan.headFrame`).
public struct RenditionProgress: Sendable {
    public var spool: OpenFile
    public var published: Int
    /// Calls the closure once, from any thread, when this many bytes are published or the encode is over.
    public var notify: @Sendable (_ bytes: Int, _ wake: @escaping @Sendable () -> Void) -> Void
    /// The same encode as it stands now (never another one: a failed encode stays a 503).
    public var current: @Sendable () throws(HTTPRefusal) -> RenditionEncode
    /// Whether an EVENT playlist of this encode has been answered (its reloads are not held).
    public var growingAnswered: Bool
    /// Records that an EVENT playlist of this encode was answered.
    public var markGrowingAnswered: @Sendable () -> Void

    public init(spool: OpenFile, published: Int, notify: @escaping @Sendable (_ bytes: Int, _ wake: @escaping @Sendable () -> Void) -> Void,
                current: @escaping @Sendable () throws(HTTPRefusal) -> RenditionEncode,
                growingAnswered: Bool, markGrowingAnswered: @escaping @Sendable () -> Void) {
        self.spool = spool
        self.published = published
        self.notify = notify
        self.current = current
        self.growingAnswered = growingAnswered
        self.markGrowingAnswered = markGrowingAnswered
    }

    /// The spool's published bytes, as a file of that size.
    public var prefix: SpoolPrefix { SpoolPrefix(file: spool, size: published) }
}

/// The first `size` bytes of a file that is still being written.
public struct SpoolPrefix: RandomAccessBytes, Sendable {
    public let file: OpenFile
    public let size: Int

    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, offset < size, count > 0 else { return [] }
        do {
            return try PositionalRead.bytes(file.fd, at: offset, count: min(count, size - offset))
        } catch {
            throw SystemError(call: "pread", errno: error.errno)
        }
    }
}

/// The transcoded variants offered beside each track's original (`--hls-ladder 64,128,192`).
public struct HLSLadder: Sendable {
    /// Bitrates in kbit/s; each is offered as Opus and as MP3.
    public var rungs: [Int]
    public var encoder: any HLSRenditionEncoder
    /// How long a variant's request is parked for its encode's next segment before 503 (seconds).
    public var wait: Double

    /// The bitrates `--hls-ladder` takes (MPEG-1 layer III at 48 kHz: 32...320).
    public static let kbpsRange = 32...320
    public static let defaultRungs = [64, 128, 192]

    public init(rungs: [Int], encoder: any HLSRenditionEncoder, wait: Double = 10) {
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
    /// The plan of a rendition's encode, cut on `HLSRendition`'s grid. `complete`: false for an
    /// encode under way, whose plan keeps only the segments that are whole (their bytes final),
    /// so its playlist is a prefix of the finished one. `version` names the encode in URIs (the
    /// same while it grows and once it is done). `expectedSamples`: the source's length at 48 kHz,
    /// the Opus edit list's duration (known from the start, so the init segment never changes).
    static func rendition(_ rendition: HLSRendition, file: some RandomAccessBytes, etag: String, version: String,
                          expectedSamples: Int?, complete: Bool) throws -> HLSTrackPlan {
        switch rendition.codec {
        case .mp3:
            return try mp3Rendition(file: file, etag: etag, version: version, kbps: rendition.kbps, expectedSamples: expectedSamples,
                                    complete: complete)
        case .opus:
            return try opusRendition(file: file, etag: etag, version: version, kbps: rendition.kbps, expectedSamples: expectedSamples,
                                     complete: complete)
        }
    }

    /// MP3 at 48 kHz as packed audio, cut by `RenditionGrid.mp3Cuts`. Segment 0 carries
    /// `MP3InfoFrame.startOnly` in place of the file's Info frame (see `headFrame`).
    static func mp3Rendition(file: some RandomAccessBytes, etag: String, version: String, kbps: Int, expectedSamples: Int?,
                             complete: Bool) throws -> HLSTrackPlan {
        let cuts = try RenditionGrid.mp3Cuts(file, inProgress: !complete)
        var spans = cuts.spans
        if !complete { spans.removeLast() }
        guard let first = spans.first else { throw HLSError.invalid("no whole segment yet") }
        var plan = HLSTrackPlan(kind: .packedMP3, fileETag: etag, version: version, spans: spans,
                                targetDuration: targetSeconds, codec: "mp4a.40.34",
                                audioRange: first.start..<(complete ? cuts.audioEnd : first.end), initSegment: nil, framing: nil,
                                timescale: 90_000)
        // The Info frame's own header and length (a frame splitter would skip an Info frame).
        let header = try file.read(at: first.start, count: 4)
        guard let length = MP3InfoFrame.frameLength(header),
              let head = MP3InfoFrame.startOnly(header: header, length: length, encoderDelay: HLSRendition.lameDelay, kbps: kbps,
                                                expectedSamples: expectedSamples ?? 0) else {
            throw HLSError.invalid("the MP3 rendition does not start with a frame")
        }
        plan.headFrame = head
        // ffmpeg trims the delay from segment 0 and moves its clock on: starting the timestamps
        // that much early puts source sample 0 on the origin, as in the Opus variants and the original.
        plan.trimmedLead = HLSRendition.mp3Delay
        plan.trimmedLeadRate = HLSRendition.sampleRate
        return plan
    }

    /// Opus in fMP4, cut by `RenditionGrid.opusCuts` wherever the pages fall: each span starts at
    /// the page its first packet starts on and keeps a window of the packets.
    static func opusRendition(file: some RandomAccessBytes, etag: String, version: String, kbps: Int, expectedSamples: Int?,
                              complete: Bool) throws -> HLSTrackPlan {
        var cuts = try RenditionGrid.opusCuts(file)
        if !complete {
            // Only segments followed by another are whole; the last one waits for the end.
            cuts.spans.removeLast()
            cuts.windows.removeLast()
            cuts.startSamples.removeLast()
        }
        guard !cuts.spans.isEmpty else { throw HLSError.invalid("no whole segment yet") }
        var head = cuts.head
        // The pre-skip covers the look-ahead and the lead of silence: whole-track players trim both.
        let ownPreSkip = head.preSkip
        head.preSkip += HLSRendition.opusLead
        var track = FMP4AudioTrackInfo(timescale: 48_000, channels: head.channels, sampleRate: 48_000, audioSpecificConfig: [],
                                       avgBitrate: kbps * 1000)
        track.codec = .opus(head)
        let length: Int
        if let expectedSamples {
            length = expectedSamples
        } else if complete {
            length = max(0, cuts.lastGranule - ownPreSkip - HLSRendition.opusLead)
        } else {
            throw HLSError.invalid("the track's length is not known before its encode ends")
        }
        track.edit = (mediaTime: head.preSkip, duration: length)
        track.rollDistance = -((3840 + 959) / 960)
        let spans = cuts.spans
        return HLSTrackPlan(kind: .fmp4, fileETag: etag, version: version, spans: spans,
                            targetDuration: targetSeconds,
                            codec: "opus", audioRange: spans[0].start..<(spans.last?.end ?? file.size),
                            initSegment: FMP4Writer.initSegment(track),
                            framing: .oggOpusWindows(serial: cuts.serial, startSamples: cuts.startSamples, windows: cuts.windows),
                            timescale: 48_000)
    }
}

/// The Info frame that starts segment 0 of an MP3 rendition, the same before and after its
/// encode ends: LAME writes a placeholder frame first and its real Info + LAME tag (frame count,
/// byte count, end padding) only at the end, so a segment 0 served while the encode runs would
/// differ from the one served after. This frame says only what is known at the start: "Info"
/// (CBR), the byte count the track's length predicts (without a count, ffmpeg takes the frame
/// for audio: a frame of silence in front), no frame count, and a LAME tag with the encoder's
/// delay and no end padding. Players trim the delay (1,105 samples with the decoder's) exactly as
/// before and keep the last frame whole.
enum MP3InfoFrame {
    /// A frame of `length` bytes with `header` (MPEG-1 layer III, no CRC); nil for another header.
    static func startOnly(header: [UInt8], length: Int, encoderDelay: Int, kbps: Int, expectedSamples: Int) -> [UInt8]? {
        guard header.count == 4, header[0] == 0xFF, header[1] & 0xFE == 0xFA, header[1] & 0x01 == 1 else { return nil }
        let mono = header[3] >> 6 == 3
        var frame = header
        frame += [UInt8](repeating: 0, count: mono ? 17 : 32)       // side information: nothing to decode
        // The frames the encode will have (the delay and the encoder's flush frame included), in bytes.
        let frames = (max(0, expectedSamples) + encoderDelay + 1151) / 1152 + 2
        let bytes = UInt32(clamping: max(1, frames * length))
        frame += Array("Info".utf8) + [0, 0, 0, 2]                  // CBR; the byte count only (no frames, TOC or quality)
        frame += [UInt8(bytes >> 24), UInt8((bytes >> 16) & 0xFF), UInt8((bytes >> 8) & 0xFF), UInt8(bytes & 0xFF)]
        frame += Array("LAME3.100".utf8)
        frame += [0x01, 0]                                          // tag revision 0, CBR; no lowpass given
        frame += [0, 0, 0, 0, 0, 0, 0, 0, 0]                        // peak, radio and audiophile gain, flags and ATH
        frame.append(UInt8(min(255, max(0, kbps))))
        let delay = min(4095, max(0, encoderDelay))
        frame += [UInt8(delay >> 4), UInt8((delay & 0xF) << 4), 0]  // 12 bits delay, 12 bits padding (unknown: 0)
        frame += [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]                     // misc, MP3Gain, preset, music length and CRC
        let crc = crc16(frame)
        frame += [UInt8(crc >> 8), UInt8(crc & 0xFF)]
        guard frame.count <= length else { return nil }
        return frame + [UInt8](repeating: 0, count: length - frame.count)
    }

    /// The length of the MPEG-1 layer III frame `header` starts (nil for anything else).
    static func frameLength(_ header: [UInt8]) -> Int? {
        guard header.count == 4, header[0] == 0xFF, header[1] & 0xFE == 0xFA else { return nil }
        let kbpsTable = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0]
        let rates = [44_100, 48_000, 32_000, 0]
        let kbps = kbpsTable[Int(header[2] >> 4)], rate = rates[Int((header[2] >> 2) & 3)]
        guard kbps > 0, rate > 0 else { return nil }
        return 144_000 * kbps / rate + Int((header[2] >> 1) & 1)
    }

    /// CRC-16 of the LAME tag (polynomial 0x8005, bits reflected, from 0): over the frame before it.
    static func crc16(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        return crc
    }
}
