import StreamShared
import Atomics
import StreamHTTP
import StreamLibrary
import StreamHLS

/// A title's ICY metadata block (length byte, text, NUL padding), encoded once and shared by
/// every listener that needs it.
public final class ICYBlock: @unchecked Sendable {
    // @unchecked: immutable after init; the bytes are only read.
    public let title: String
    let base: UnsafeMutableRawPointer
    let count: Int

    init(title: String, bytes: [UInt8]) {
        self.title = title
        count = bytes.count
        base = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
        bytes.withUnsafeBytes { raw in
            if let source = raw.baseAddress { base.copyMemory(from: source, byteCount: raw.count) }
        }
    }

    /// The block announcing `title`.
    convenience init(title: String) {
        self.init(title: title, bytes: ICYMetadata.encode(title: title))
    }

    deinit { base.deallocate() }

    /// The one-byte "unchanged" block.
    static let unchanged = ICYBlock(title: "", bytes: ICYMetadata.empty)
}

/// An immutable piece of a channel's stream: whole frames, the stream offset of its first byte,
/// where its frames start, how many samples each holds, and the title playing. Chunks link forward once (`next` is set exactly
/// once, when the following chunk is published), so a listener walks the stream by following
/// references: no lock, and the bytes it is sending cannot change or be freed under it.
public final class RadioChunk: @unchecked Sendable {
    // @unchecked: every stored property is immutable after init, except `next`, a set-once atomic.
    /// Offset of the first byte in the channel's stream.
    let start: Int
    let base: UnsafeMutableRawPointer
    let count: Int
    /// Offsets (within the chunk) where frames start; the first is 0 when the chunk has bytes.
    let frameStarts: [Int32]
    /// Samples of each frame (parallel to `frameStarts`), at `format.sampleRate`: the stream's
    /// time. Empty when the producer did not say (then the chunk has no duration).
    let frameSamples: [UInt16]
    package let format: FrameFormat?
    let title: ICYBlock
    /// When the chunk was published (monotonic ns).
    let publishedAt: UInt64
    package let next = ManagedAtomicLazyReference<RadioChunk>()
    /// Ogg pass-through: where a new listener may start in this chunk (its pages are of one kind).
    let oggJoin: OggJoin

    var end: Int { start + count }

    init(start: Int, bytes: ArraySlice<UInt8>, frameStarts: [Int32], frameSamples: [UInt16] = [], format: FrameFormat? = nil,
         title: ICYBlock, publishedAt: UInt64, oggJoin: OggJoin = .notOgg) {
        self.start = start
        self.oggJoin = oggJoin
        self.count = bytes.count
        self.frameStarts = frameStarts
        self.frameSamples = frameSamples.count == frameStarts.count ? frameSamples : []
        self.format = format
        self.title = title
        self.publishedAt = publishedAt
        base = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 16)
        bytes.withUnsafeBytes { raw in
            if let source = raw.baseAddress { base.copyMemory(from: source, byteCount: raw.count) }
        }
    }

    deinit { base.deallocate() }

    /// The first frame start at or after `offset` within the chunk, or `count` when none.
    func frameBoundary(atOrAfter offset: Int) -> Int {
        for start in frameStarts where Int(start) >= offset { return Int(start) }
        return count
    }

    /// A copy of the bytes (tests, relays).
    func bytes() -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: base, count: count))
    }
}

/// The header pages of one link of a pass-through Ogg channel, shared by its chunks.
final class OggHeaderPages: Sendable {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

/// Where a listener may join an Ogg chunk: a decoder needs the link's header pages before any
/// audio page, and exactly once.
enum OggJoin: Sendable {
    /// Not an Ogg channel: at any frame boundary.
    case notOgg
    /// The chunk starts with a link's BOS page: at its start only, nothing before it.
    case atStart
    /// Audio pages of a link: at any page boundary, after the link's header pages.
    case afterHeaders(OggHeaderPages)
    /// Header pages after the BOS: not here (the next chunk).
    case never
}
