import StreamShared

/// Why a source failed; the message names the component and the cause.
public enum SourceError: Error, CustomStringConvertible, Sendable {
    /// The server answered with an error status.
    case httpStatus(Int, url: String)
    /// The connection could not be made or kept, after retrying for the allowed time.
    case network(String)
    /// The file changed on the server while it was being read (ETag differs).
    case changed(url: String)
    /// A local file could not be read.
    case file(String)
    /// A request that retrying cannot fix: unknown host, bad URL, unsupported scheme, redirect loop.
    case unreachable(String)
    /// A response body (a playlist, a segment) was larger than the limit for it.
    case tooLarge(url: String, limit: Int)
    /// An HLS playlist or segment is malformed, hostile or unsupported (bad input).
    case hls(String)
    /// A live stream's ICY metadata does not match its stream (bad input).
    case icy(ICYStreamError)
    /// The server's answer is not valid HTTP (a malformed head, length or chunked body).
    case badResponse(url: String, why: String)

    public var description: String {
        switch self {
        case let .httpStatus(status, url): return "source: HTTP \(status) for \(url)"
        case let .network(why), let .unreachable(why): return "source: \(why)"
        case let .changed(url): return "source: \(url.isEmpty ? "the file" : url) changed on the server while playing"
        case let .file(why): return "source: \(why)"
        case let .tooLarge(url, limit): return "source: \(url) is larger than \(limit) bytes"
        case let .hls(why): return "hls: \(why)"
        case let .icy(error): return "\(error)"
        case let .badResponse(url, why): return "source: malformed HTTP response from \(url): \(why)"
        }
    }

    /// Exit status per DESIGN.md: 3 for network failures, 1 for bad input.
    public var exitCode: Int32 {
        switch self {
        case .file, .tooLarge, .hls, .icy: return 1
        default: return 3
        }
    }
}

/// Commands from the player to a running source (seek, stop), and counters it keeps.
public final class SourceControl: @unchecked Sendable {
    // @unchecked: all fields guarded by `condition`.
    private let condition = ConditionLock()
    private var seekTarget: Int?
    private var stopped = false
    private var _reconnects = 0
    private var _pauses = 0
    private var _bytesDownloaded = 0
    private var _totalSize: Int?
    /// What the source learns about a live stream (titles, reconnect gaps).
    public let live = LiveStreamState()

    public init() {}

    /// Asks the source to drop its transfer and continue from `offset`.
    public func seek(to offset: Int) {
        condition.withLock {
            seekTarget = offset
            condition.broadcast()
        }
    }

    public func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    public var isStopped: Bool { condition.withLock { stopped } }

    /// Takes a pending seek, if any.
    func takeSeek() -> Int? {
        condition.withLock {
            defer { seekTarget = nil }
            return seekTarget
        }
    }

    var hasSeek: Bool { condition.withLock { seekTarget != nil } }

    /// Waits until a seek or stop arrives, or the timeout passes.
    func waitForCommand(timeout: Double) {
        condition.withLock {
            if seekTarget == nil && !stopped { condition.wait(seconds: timeout) }
        }
    }

    /// Wakes a `waitForCommand` early (the throttle has room again) without a command.
    func poke() { condition.withLock { condition.broadcast() } }

    func countReconnect() { condition.withLock { _reconnects += 1 } }
    func countPause() { condition.withLock { _pauses += 1 } }
    /// Times the throttle was full and the transfer paused.
    public var pauses: Int { condition.withLock { _pauses } }
    func countBytes(_ n: Int) { condition.withLock { _bytesDownloaded += n } }
    func setTotalSize(_ size: Int?) { condition.withLock { if let size { _totalSize = size } } }

    public var reconnects: Int { condition.withLock { _reconnects } }
    public var bytesDownloaded: Int { condition.withLock { _bytesDownloaded } }
    /// The whole resource's size, once a response has told it.
    public var totalSize: Int? { condition.withLock { _totalSize } }

    private var _rangesRefused = false
    /// A response said `Accept-Ranges: none` (a streamd transcode in progress): asking it for a
    /// Range would only start the body over, so the player makes no such request.
    func setRangesRefused() { condition.withLock { _rangesRefused = true } }
    public var rangesRefused: Bool { condition.withLock { _rangesRefused } }
}

/// Where bytes come from: HTTP or a local file, behind one interface.
public protocol ByteSource: AnyObject, Sendable {
    /// Shown in logs and errors.
    var name: String { get }
    /// Runs on the network thread until stopped: fills `throttle` from `offset`, follows
    /// seeks from `control`, and marks the end (or a failure) on the throttle.
    func run(into throttle: Throttle, from offset: Int, control: SourceControl)
    /// Reads a byte range directly (for probing the tail, e.g. ID3v1 or an MP4 moov at the end).
    func readRange(_ range: Range<Int>) throws -> [UInt8]
    /// The resource's size in bytes, asked directly (a chunked answer does not tell it).
    func resourceSize() throws -> Int
    /// False for a stream of segments, which has no byte ranges of its own (`readRange` and
    /// `resourceSize` cannot answer).
    var hasByteRanges: Bool { get }
    /// The bytes of `range` when they are at hand without a request (a disk cache); nil otherwise.
    func cachedBytes(_ range: Range<Int>) -> [UInt8]?
    /// A source that seeks by segment index on a timeline (HLS); nil for one that seeks by byte
    /// offset.
    var segments: (any SegmentedSource)? { get }
}

extension ByteSource {
    /// Sources without random access cannot tell their size ahead.
    public func resourceSize() throws -> Int {
        throw SourceError.network("\(name): the size of the resource is unknown")
    }
    public var hasByteRanges: Bool { true }
    public func cachedBytes(_ range: Range<Int>) -> [UInt8]? { nil }
    public var segments: (any SegmentedSource)? { nil }
}

/// A source whose seek positions are segment indexes, not byte offsets (`run(from:)` and
/// `SourceControl.seek(to:)` take the index of the segment to continue with): HLS.
public protocol SegmentedSource: AnyObject {
    /// The segments' timeline, once the playlist is loaded (waits up to `timeout` seconds).
    func timeline(timeout: Double) -> HLSTimeline?
    /// Where segment `index` starts by the segments' own timestamps, in seconds after the first
    /// one's start; nil when they do not tell.
    func measuredStart(ofSegment index: Int) -> Double?
}
