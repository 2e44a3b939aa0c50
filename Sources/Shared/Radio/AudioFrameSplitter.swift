/// Frame boundaries of an MPEG audio or ADTS stream that arrives in pieces (a radio source, or a
/// track read block by block): where each audio frame starts and ends and how many samples it
/// carries. ID3v2 tags, Xing/Info/VBRI header frames and junk between frames are reported as
/// bytes to skip, so what is kept can be joined with another stream's frames at a frame boundary.
public struct AudioFrameSplitter: Sendable {
    /// The frame formats a radio stream can carry as is.
    public enum Codec: String, Sendable, Equatable {
        case mpeg
        case adts
        /// Ogg Opus or Vorbis pages, passed as they are (a "frame" is one page).
        case ogg
    }

    /// One audio frame at the start of the bytes looked at.
    public struct Frame: Sendable, Equatable {
        public var length: Int
        public var samples: Int
        public var sampleRate: Int
        public var channels: Int
        /// Bits per second of this frame (MPEG: from the header; ADTS: from length and duration).
        public var bitrate: Int
    }

    /// Result of looking at the start of the buffered bytes.
    public enum Step: Sendable, Equatable {
        /// An audio frame of `Frame.length` bytes starts here.
        case frame(Frame)
        /// These bytes are no audio frame (a tag, a VBR header frame, junk before a sync).
        case skip(Int)
        /// More bytes are needed to decide.
        case needMore
    }

    public let codec: Codec
    private var mpeg = MPEGFrameScanner(maxJunk: 64 * 1024)
    private var adtsReference: ADTSHeader?
    /// Ogg: the current link, and what the last page returned was.
    public internal(set) var oggLink: OggLiveLink?
    public internal(set) var lastOggPage = OggLivePage()
    var oggJunk = 0
    /// The longest stretch of junk tolerated between frames before the stream is refused.
    public static let maxJunk = 64 * 1024

    public init(codec: Codec) {
        self.codec = codec
    }

    /// Looks at the start of `bytes` (`isComplete`: nothing follows them). Throws `FormatError`
    /// when no frame of the stream can be found in `maxJunk` bytes.
    public mutating func next(in bytes: ArraySlice<UInt8>, isComplete: Bool = false) throws -> Step {
        guard !bytes.isEmpty else { return .needMore }
        switch try ID3v2.totalSize(atStartOf: bytes) {
        case nil:
            return isComplete ? .skip(bytes.count) : .needMore
        case let size? where size > 0:
            return .skip(size)
        default:
            break
        }
        switch codec {
        case .mpeg: return try nextMPEG(bytes, isComplete: isComplete)
        case .adts: return try nextADTS(bytes, isComplete: isComplete)
        case .ogg: return try nextOgg(bytes, isComplete: isComplete)
        }
    }

    private mutating func nextMPEG(_ bytes: ArraySlice<UInt8>, isComplete: Bool) throws -> Step {
        switch try mpeg.next(in: bytes, isComplete: isComplete) {
        case .needMore:
            return .needMore
        case .end:
            return .skip(bytes.count)
        case .frame(let frame, let skipped):
            if skipped > 0 { return .skip(skipped) }
            let body = bytes.prefix(frame.length)
            // The Xing/Info/VBRI frame is silence that describes the whole file: never audio here.
            if (try? VBRHeader.parse(frame: body, header: frame.header)) != nil {
                return .skip(frame.length)
            }
            let header = frame.header
            return .frame(Frame(length: frame.length, samples: header.samplesPerFrame, sampleRate: header.sampleRate,
                                channels: header.channels, bitrate: header.bitrate))
        }
    }

    private mutating func nextADTS(_ bytes: ArraySlice<UInt8>, isComplete: Bool) throws -> Step {
        let header: ADTSHeader?
        do {
            header = try ADTSHeader.parse(bytes)
        } catch {
            header = nil
        }
        if let header, adtsReference.map({ header.isCompatible(with: $0) }) ?? true {
            if adtsReference == nil {
                // The first frame is confirmed by the ones after it, as a sync in junk can be chance.
                guard let start = try ADTSSync.findFirstFrame(in: bytes, confirmations: 1, limit: Self.maxJunk,
                                                              isComplete: isComplete) else {
                    return isComplete ? .skip(bytes.count) : .needMore
                }
                if start > 0 { return .skip(start) }
                adtsReference = header
            }
            guard header.frameLength <= bytes.count else { return isComplete ? .skip(bytes.count) : .needMore }
            let samples = header.samplesPerFrame
            let (bits, overflow) = (header.frameLength * 8).multipliedReportingOverflow(by: header.sampleRate)
            let bitrate = overflow || samples == 0 ? 0 : bits / samples
            return .frame(Frame(length: header.frameLength, samples: samples, sampleRate: header.sampleRate,
                                channels: max(1, header.channelConfiguration), bitrate: bitrate))
        }
        if header == nil, bytes.count < 9, !isComplete, bytes.first == 0xFF { return .needMore }
        // Lost sync: skip to the next confirmed frame.
        guard let start = try ADTSSync.findFirstFrame(in: bytes.dropFirst(), confirmations: 1, limit: Self.maxJunk,
                                                      isComplete: isComplete) else {
            if bytes.count > Self.maxJunk {
                throw FormatError.invalid(component: "adts", reason: "lost sync for more than \(Self.maxJunk) bytes", offset: 0)
            }
            return isComplete ? .skip(bytes.count) : .needMore
        }
        return .skip(start + 1)
    }
}
