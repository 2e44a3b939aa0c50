#if canImport(Glibc)
import Glibc
#endif
import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// One track of a channel: a library file the catalog analyzed, its audio span and its title.
public struct ChannelTrack: Sendable, Equatable {
    public var path: String
    /// "Artist - Title" (or the title, or the file name).
    public var title: String
    public var container: Container
    /// The frame format a stream can carry as is (MP3, ADTS); nil for MP4 and WAV, which a
    /// channel can only transcode.
    public var codec: AudioFrameSplitter.Codec?
    public var sampleRate: Int
    public var channels: Int
    public var kbps: Int
    /// The audio frames lie in `audioStart..<audioEnd` (tags outside).
    public var audioStart: Int
    public var audioEnd: Int
    /// Gapless facts from the analysis: priming and padding samples, and all samples before trimming.
    public var encoderDelay: Int = 0
    public var encoderPadding: Int = 0
    public var totalSamples: Int = 0

    /// What the decoder of a transcoding channel takes from the analysis.
    var decoderHints: TrackDecoder.Hints {
        TrackDecoder.Hints(audioStart: audioStart, audioEnd: audioEnd, encoderDelay: encoderDelay,
                           encoderPadding: encoderPadding, totalSamples: totalSamples)
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
            throw FormatError.unsupported(component: "radio", reason: "\(track.container.rawValue) frames cannot be sent as they are")
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
