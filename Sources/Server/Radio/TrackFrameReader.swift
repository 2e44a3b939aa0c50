#if canImport(Glibc)
import Glibc
#endif
import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// One track of a channel: a library track (the catalog's `Track`) and where its file is.
public struct ChannelTrack: Sendable, Equatable {
    public var track: Track
    /// The file's absolute path (`track.path` is relative to the library folder).
    public var path: String

    public init(track: Track, path: String) {
        self.track = track
        self.path = path
    }

    /// "Artist - Title" (or the title, or the file name without its extension): the stream's title.
    public var title: String {
        if let artist = track.artist, !artist.isEmpty, let name = track.title, !name.isEmpty { return "\(artist) - \(name)" }
        if let name = track.title, !name.isEmpty { return name }
        let stem = Track.fileName(track.path).split(separator: ".").dropLast().joined(separator: ".")
        return stem.isEmpty ? track.path : stem
    }

    /// The probed container; nil for a name this build does not know.
    public var container: Container? { Container(rawValue: track.container) }

    /// The frame format a stream can carry as is (MP3, ADTS); nil for MP4 and WAV, which a
    /// channel can only transcode.
    public var codec: AudioFrameSplitter.Codec? {
        switch container {
        case .mp3?: return .mpeg
        case .adts?: return .adts
        default: return nil
        }
    }

    public var sampleRate: Int { track.sampleRate }
    public var channels: Int { track.channels }
    /// The bitrate in kbit/s (at least 1).
    public var kbps: Int { max(1, track.bitrate / 1000) }
    /// The audio frames lie in `audioStart..<audioEnd`: after the leading tags, at most to the
    /// end of the file (the catalog does not keep where trailing tags start; the frame reader and
    /// the decoder stop at what is not audio).
    public var audioStart: Int { track.firstFrameOffset }
    public var audioEnd: Int { track.stamp.size }

    /// What the decoder of a transcoding channel takes from the analysis.
    var decoderHints: TrackDecoder.Hints {
        TrackDecoder.Hints(audioStart: audioStart, audioEnd: audioEnd, encoderDelay: track.encoderDelay,
                           encoderPadding: track.encoderPadding, totalSamples: track.totalSamples)
    }
}

/// Reads a track's frames in order, block by block (pread), for a channel's producer. The file
/// was analyzed by a worker process first, so this parses bytes a worker survived.
struct TrackFrameReader {
    let track: ChannelTrack
    private let file: OpenFile
    private var splitter: AudioFrameSplitter
    private var buffer: [UInt8] = []
    private var head = 0
    /// File offset of `buffer[0]`.
    private var bufferOffset: Int
    private var fileOffset: Int
    static let blockSize = 64 * 1024

    init(track: ChannelTrack) throws {
        self.track = track
        file = try OpenFile(path: track.path)
        guard let codec = track.codec else {
            throw FormatError.unsupported(component: "radio", reason: "\(track.track.container) frames cannot be sent as they are")
        }
        splitter = AudioFrameSplitter(codec: codec)
        bufferOffset = track.audioStart
        fileOffset = track.audioStart
    }

    private var end: Int { min(track.audioEnd, file.size) }

    /// The next audio frame's bytes and facts, or nil at the end of the track. Throws
    /// `SystemError` on a read error and `FormatError` when the audio cannot be followed.
    package mutating func next() throws -> (bytes: ArraySlice<UInt8>, frame: AudioFrameSplitter.Frame)? {
        while true {
            let isComplete = fileOffset >= end
            let available = buffer[head...]
            if available.isEmpty && isComplete { return nil }
            switch try splitter.next(in: available, isComplete: isComplete) {
            case .frame(let frame):
                guard frame.length <= available.count else {
                    if isComplete { return nil }
                    try refill()
                    continue
                }
                let bytes = buffer[head..<(head + frame.length)]
                head += frame.length
                return (bytes, frame)
            case .skip(let count):
                if count <= available.count {
                    head += count
                } else {
                    // A tag longer than what is buffered: jump over it in the file.
                    let skipTo = bufferOffset + head + count
                    buffer = []
                    head = 0
                    bufferOffset = min(skipTo, end)
                    fileOffset = bufferOffset
                }
            case .needMore:
                if isComplete { return nil }
                try refill()
            }
        }
    }

    /// Drops the consumed bytes and reads the next block.
    private mutating func refill() throws {
        if head > 0 {
            buffer.removeFirst(head)
            bufferOffset += head
            head = 0
        }
        let want = min(Self.blockSize, end - fileOffset)
        guard want > 0 else { return }
        let start = buffer.count
        buffer += [UInt8](repeating: 0, count: want)
        let offset = fileOffset
        let n = try buffer.withUnsafeMutableBytes { raw in
            do throws(PositionalReadError) {
                return try PositionalRead.fill(file.fd, UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + want)]), at: offset)
            } catch {
                throw SystemError(call: "pread", errno: error.errno)
            }
        }
        buffer.removeLast(want - n)
        fileOffset += n
        if n == 0 { fileOffset = end }   // the file shrank: treat as its end
    }
}
