import Atomics
import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import Synchronization

/// What a channel's stream is: the frame format and what its listeners are told about it.
public struct ChannelFormat: Sendable, Equatable {
    public var codec: AudioFrameSplitter.Codec
    public var sampleRate: Int
    public var channels: Int
    /// Nominal bitrate in kbit/s (the first frames' for VBR).
    public var kbps: Int
    /// The codec inside an Ogg stream ("opus" or "vorbis"; nil until a link's headers are seen).
    public var oggCodec: String? = nil

    /// The codec listeners get: "mp3", "aac", "opus", "vorbis" (or "ogg" before a link is seen).
    public var codecName: String {
        switch codec {
        case .mpeg: return "mp3"
        case .adts: return "aac"
        case .ogg: return oggCodec ?? "ogg"
        }
    }

    public var contentType: String {
        switch codec {
        case .mpeg: return "audio/mpeg"
        case .adts: return "audio/aac"
        case .ogg: return "audio/ogg"
        }
    }
}

/// The station facts a listener sees in icy-* headers (a source's ice-* headers set them).
public struct StationInfo: Sendable, Equatable {
    public var name: String
    public var genre: String?
    public var url: String?
    public var description: String?
}

/// One radio channel: the shared ring of its recent stream, the facts about it, its counters.
/// One producer publishes (a playlist or a live source); listeners on every event loop follow
/// the published chunks by reference. The lock guards the ring and the facts, never a write to
/// a socket.
public final class RadioChannel: @unchecked Sendable {
    // @unchecked: mutable state is behind `lock` or atomic.
    public let name: String
    /// Bytes of recent stream kept: the burst comes from here, and a listener further behind
    /// than this is moved forward.
    public let ringCapacity: Int
    private let lock = Lock(())
    private var ring: [RadioChunk] = []
    private var ringBytes = 0
    private var newest: RadioChunk
    private var wakers: Set<LoopWaker> = []
    private var titleBlock: ICYBlock
    private var _format: ChannelFormat?
    private var _station: StationInfo
    private var _sourceConnected = false
    /// Stream offset of the oldest byte still in the ring: a listener before it has fallen behind.
    let oldestOffset = ManagedAtomic<Int>(0)
    let ended = ManagedAtomic<Bool>(false)
    let listeners = ManagedAtomic<Int>(0)
    let listenerPeak = ManagedAtomic<Int>(0)
    let bytesOut = ManagedAtomic<Int>(0)
    let skips = ManagedAtomic<Int>(0)
    let connectionsServed = ManagedAtomic<Int>(0)
    /// Tracks the channel's encoder has begun (0 for a channel that passes its tracks through):
    /// one encode per track however many listen.
    let tracksEncoded = ManagedAtomic<Int>(0)
    /// The same stream cut into HLS segments (`/radio/NAME/index.m3u8`).
    let segments = LiveSegmenter()
    /// When the stream started (monotonic ns), for uptime in the status pages.
    public let createdAt: UInt64
    /// Wall-clock seconds since the epoch at creation (Icecast's stream_start).
    public let createdWall: Int

    public init(name: String, ringCapacity: Int = 512 * 1024, format: ChannelFormat? = nil,
                station: StationInfo? = nil, now: UInt64? = nil) {
        let now = now ?? monotonicNanos()
        self.name = name
        self.ringCapacity = max(16 * 1024, ringCapacity)
        titleBlock = ICYBlock(title: "")
        newest = RadioChunk(start: 0, bytes: [], frameStarts: [], title: titleBlock, publishedAt: now)
        _format = format
        _station = station ?? StationInfo(name: name)
        createdAt = now
        createdWall = Int(Date().timeIntervalSince1970)
    }

    // MARK: Producer side

    /// Publishes whole frames (`frameStarts` are their offsets in `bytes`, `frameSamples` their
    /// sample counts in `format`) with the current title, wakes the loops that have listeners
    /// here and hands the chunk to the HLS segmenter.
    func publish(_ bytes: ArraySlice<UInt8>, frameStarts: [Int32], frameSamples: [UInt16] = [], format: FrameFormat? = nil,
                 now: UInt64 = monotonicNanos(), oggJoin: OggJoin = .notOgg) {
        guard !bytes.isEmpty else { return }
        let (chunk, toWake) = lock.withLock { _ in
            let chunk = RadioChunk(start: newest.end, bytes: bytes, frameStarts: frameStarts, frameSamples: frameSamples,
                                   format: format, title: titleBlock, publishedAt: now, oggJoin: oggJoin)
            _ = newest.next.storeIfNilThenLoad(chunk)
            newest = chunk
            ring.append(chunk)
            ringBytes += chunk.count
            // Keep at least the newest chunk; drop from the front while the rest still fills the ring.
            var drop = 0
            while ring.count - drop > 1, ringBytes - ring[drop].count >= ringCapacity {
                ringBytes -= ring[drop].count
                drop += 1
            }
            if drop > 0 { ring.removeFirst(drop) }
            oldestOffset.store(ring.first?.start ?? chunk.start, ordering: .releasing)
            return (chunk, wakers)
        }
        for waker in toWake { waker.wake() }
        // HLS packed audio carries MP3 and ADTS only: an Ogg channel has no live HLS.
        if format?.codec != .ogg { segments.append(chunk) }
    }

    /// Sets the title announced from the next published chunk on.
    public func setTitle(_ title: String) {
        let block = ICYBlock(title: title)
        lock.withLock { _ in
            titleBlock = block
        }
    }

    func setFormat(_ format: ChannelFormat?) {
        lock.withLock { _ in
            _format = format
        }
    }

    func setStation(_ station: StationInfo) {
        lock.withLock { _ in
            _station = station
        }
    }

    func setSourceConnected(_ connected: Bool) {
        lock.withLock { _ in
            _sourceConnected = connected
        }
    }

    /// Ends the stream: listeners get what is left, then their connection closes.
    func end() {
        ended.store(true, ordering: .releasing)
        segments.finish()
        wakeListeners()
    }

    func wakeListeners() {
        let toWake = lock.withLock { _ in wakers }
        for waker in toWake { waker.wake() }
    }

    // MARK: Listener side

    /// Where a new listener starts: the first frame boundary at or after `burst` bytes before
    /// the live edge (the oldest frame in the ring when it holds less).
    /// An Ogg channel joins where a decoder can start (`OggJoin`): `preamble` is the link's
    /// header pages to send first when the join is inside a link.
    func joinPoint(burst: Int) -> (chunk: RadioChunk, offset: Int, preamble: [UInt8]?) {
        return lock.withLock { _ in
            let target = max(ring.first?.start ?? newest.start, newest.end - max(0, burst))
            guard let found = ring.last(where: { $0.start <= target }) else { return (newest, newest.count, nil) }
            var chunk = found
            var offset = chunk.frameBoundary(atOrAfter: target - chunk.start)
            while true {
                switch chunk.oggJoin {
                case .notOgg: return (chunk, offset, nil)
                case .atStart where offset == 0 || chunk !== found: return (chunk, 0, nil)
                case .afterHeaders(let headers) where offset < chunk.count: return (chunk, offset, headers.bytes)
                default: break
                }
                guard let next = chunk.next.load() else { return (chunk, chunk.count, oggHeaders?.bytes) }
                chunk = next
                offset = 0
            }
        }
    }

    /// The current link's header pages of an Ogg channel (a listener joining at the live edge).
    private var oggHeaders: OggHeaderPages?

    func setOggHeaders(_ headers: OggHeaderPages?) {
        lock.withLock { _ in
            oggHeaders = headers
        }
    }

    /// The newest chunk, whose start is the current frame boundary.
    func liveEdge() -> RadioChunk {
        return lock.withLock { _ in newest }
    }

    /// Loops with listeners here are woken at every publish.
    func register(_ waker: LoopWaker) {
        lock.withLock { _ in
            _ = wakers.insert(waker)
        }
    }

    func listenerJoined() {
        connectionsServed.wrappingIncrement(ordering: .relaxed)
        let count = listeners.wrappingIncrementThenLoad(ordering: .relaxed)
        var peak = listenerPeak.load(ordering: .relaxed)
        while count > peak {
            let (exchanged, original) = listenerPeak.compareExchange(expected: peak, desired: count, ordering: .relaxed)
            if exchanged { break }
            peak = original
        }
    }

    func listenerLeft() {
        listeners.wrappingDecrement(ordering: .relaxed)
    }

    // MARK: Facts

    /// A consistent snapshot of what the status pages show.
    public struct Snapshot: Sendable {
        public var name: String
        public var format: ChannelFormat?
        public var station: StationInfo
        public var title: String
        public var sourceConnected: Bool
        public var listeners: Int
        public var listenerPeak: Int
        public var bytesOut: Int
        public var skips: Int
        /// Tracks encoded for the channel (its one encoder; 0 when it passes tracks through).
        public var tracksEncoded: Int
        public var streamBytes: Int
        public var ended: Bool
        public var createdWall: Int
    }

    public func snapshot() -> Snapshot {
        return lock.withLock { _ in
            return Snapshot(name: name, format: _format, station: _station, title: titleBlock.title,
                            sourceConnected: _sourceConnected, listeners: listeners.load(ordering: .relaxed),
                            listenerPeak: listenerPeak.load(ordering: .relaxed), bytesOut: bytesOut.load(ordering: .relaxed),
                            skips: skips.load(ordering: .relaxed), tracksEncoded: tracksEncoded.load(ordering: .relaxed),
                            streamBytes: newest.end,
                            ended: ended.load(ordering: .relaxed), createdWall: createdWall)
        }
    }

    public var format: ChannelFormat? {
        return lock.withLock { _ in _format }
    }

    /// Names are letters, digits, '-', '_' and '.', at most 64 (they are a URL path component).
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.first != "." && name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E
        }
    }
}
