import StreamShared
import Logging

/// Settings of the HTTP source.
public struct HTTPSourceOptions: Sendable {
    /// Give up after this long without receiving a byte (across reconnects).
    public var retryFor: Double = 30
    /// A transfer that moves no byte for this long is treated as dropped.
    public var stallTimeout: Double = 10
    public var connectTimeout: Double = 10
    public var userAgent = "streamplay/0.1"
    /// `--cache-dir`: streamed bytes are kept here and played from here (`HTTPSource+Cache`).
    public var cache: DiskCache?
    /// `--ca-file`: certificates (PEM) trusted for https:// besides the system's (a private server).
    public var caFile: String?
    public init() {}
}

/// An HTTP(S) resource, resuming with `Range` after drops and stalls. `http://` goes through
/// the own client on POSIX sockets (`HTTPSource+Socket`), `https://` through libcurl
/// (`HTTPSource+Curl`); a plain-HTTP resource that redirects to https:// switches to libcurl.
public final class HTTPSource: ByteSource, @unchecked Sendable {
    // @unchecked: `etag`, `isLive`, `log` and `session` are touched only by the thread that runs the
    // source (or, for `get`, the HLS source); `tls` is guarded by `lock`.
    public let name: String
    public let options: HTTPSourceOptions
    var etag: String?
    /// The last response was a live stream (`LiveStreamInfo`): a drop rejoins live, without Range.
    var isLive = false
    /// When the last byte of a live stream arrived, for the gap a reconnect leaves.
    var liveLastByte: Monotonic?
    /// Where "source: …" diagnostics go (debug level); nil: nowhere.
    public var logger: Logger?
    private let lock = Lock(())
    private var tls: Bool
    /// The own client's keep-alive connection that `get` reuses (HLS playlists and segments).
    var session: HTTPClient?
    /// The libcurl handle `get` reuses for https:// (HLS over TLS).
    var curlSession: CurlEasy?

    public init(url: String, options: HTTPSourceOptions = HTTPSourceOptions()) {
        self.name = url
        self.options = options
        tls = !url.lowercased().hasPrefix("http://")
    }

    /// Whether requests go through libcurl: https:// (or anything not http://), or a plain
    /// URL that redirected to https://.
    var usesCurl: Bool {
        get { lock.withLock { _ in tls } }
        set { lock.withLock { _ in tls = newValue } }
    }

    public func readRange(_ range: Range<Int>) throws -> [UInt8] {
        if !usesCurl {
            do { return try socketReadRange(range) } catch HTTPClientError.redirectedToTLS { usesCurl = true }
        }
        return try curlReadRange(range)
    }

    /// The resource's size, from a one-byte Range request.
    public func resourceSize() throws -> Int {
        if !usesCurl {
            do { return try socketResourceSize() } catch HTTPClientError.redirectedToTLS { usesCurl = true }
        }
        return try curlResourceSize()
    }

    /// What the server holds at the URL now: its size and ETag.
    public struct Version: Sendable, Equatable {
        public var size: Int
        public var etag: String?
    }

    /// The current version, from a one-byte Range request; `timeout` (seconds) bounds it, else
    /// the source's own timeouts apply.
    public func currentVersion(timeout: Double? = nil) throws -> Version {
        if !usesCurl {
            do { return try socketVersion(timeout: timeout) } catch HTTPClientError.redirectedToTLS { usesCurl = true }
        }
        return try curlVersion(timeout: timeout)
    }

    /// GETs a small resource whole (a seek index); throws on a non-200 answer.
    public func fetch(limit: Int) throws -> [UInt8] {
        if !usesCurl {
            do { return try socketFetch(limit: limit) } catch HTTPClientError.redirectedToTLS { usesCurl = true }
        }
        return try curlFetch(limit: limit)
    }

    /// One whole response body, and the URL it came from after redirects.
    public struct Body: Sendable {
        public var bytes: [UInt8]
        /// Where relative URIs inside the body resolve from.
        public var effectiveURL: String
    }

    /// GETs `url` (or the byte range `range` of it) whole through one keep-alive connection.
    /// Throws `SourceError.httpStatus` for an error status, `.tooLarge` when the body passes
    /// `limit` bytes, `.network` when the transfer fails.
    public func get(_ url: String, range: Range<Int>? = nil, limit: Int) throws -> Body {
        if let range, range.isEmpty { return Body(bytes: [], effectiveURL: url) }
        if url.lowercased().hasPrefix("http://") {
            do { return try socketGet(url, range: range, limit: limit) } catch HTTPClientError.redirectedToTLS {}
        }
        return try curlGet(url, range: range, limit: limit)
    }

    /// What one response told us, and what its body bytes go through on their way to the throttle.
    final class Transfer {
        let throttle: Throttle
        let control: SourceControl
        let generation: Int
        let requestedOffset: Int
        /// The ETag the earlier responses carried, to tell "Range ignored" from "file changed".
        var expectedETag: String?
        var status = 0
        /// Every header of the response, by name in any case.
        var headers = HTTPHeaderFields()
        var etag: String?
        var contentRangeTotal: Int?
        var contentLength: Int?
        var validated = false
        var skipRemaining = 0
        var received = 0
        var paused = false
        var failure: SourceError?
        var fatal = false
        /// The disk cache, and the entry this response's bytes go into once its ETag is known.
        var cache: DiskCache?
        var cacheEntry: CacheEntry?
        var url = ""
        /// The status line of the response (the last one, after redirects).
        var statusLine = ""
        /// The body of a live stream (ICY metadata taken out), once the head said it is one.
        var live: LiveBody?
        var liveDroppedAt: Monotonic?
        var lastByteAt: Monotonic?
        var logger: Logger?

        init(throttle: Throttle, control: SourceControl, generation: Int, offset: Int) {
            self.throttle = throttle
            self.control = control
            self.generation = generation
            self.requestedOffset = offset
        }
    }

    public func run(into throttle: Throttle, from start: Int, control: SourceControl) {
        throttle.onSpaceAvailable = { control.poke() }
        defer { throttle.onSpaceAvailable = nil }
        var offset = start
        // The player resets the throttle before starting (and before each seek): take its generation.
        var generation = throttle.currentGeneration
        var lastProgress = Monotonic.now
        var backoff = 0.1
        while !control.isStopped {
            if let target = control.takeSeek() {
                offset = target
                generation = throttle.currentGeneration
                lastProgress = Monotonic.now
                backoff = 0.1
            }
            // Bytes the disk cache holds are played from it; the network fills only the gaps.
            if let cached = serveFromCache(into: throttle, from: offset, control: control, generation: generation) {
                offset = cached.offset
                if cached.reachedEnd {
                    throttle.finish(generation: generation)
                    while !control.isStopped && !control.hasSeek { control.waitForCommand(timeout: 1) }
                    continue
                }
                if control.isStopped || control.hasSeek { continue }
            }
            let end = options.cache == nil || isLive ? nil : cachedStart(after: offset)
            // A live stream has no offsets to resume from: it is joined again where it is now.
            let from = isLive ? 0 : offset
            var outcome: (received: Int, result: TransferResult)
            if usesCurl {
                outcome = curlTransfer(throttle: throttle, control: control, offset: from, to: end, generation: generation)
            } else {
                outcome = socketTransfer(throttle: throttle, control: control, offset: from, to: end, generation: generation)
            }
            offset += outcome.received
            if outcome.received > 0 {
                lastProgress = Monotonic.now
                backoff = 0.1
            }
            var result = outcome.result
            if isLive {
                switch result {
                case .complete: result = .retry("\(name): the live stream ended")
                case .fatal(.httpStatus(let status, _)): result = .retry("\(name): HTTP \(status)")
                default: break
                }
            }
            switch result {
            case .complete where end != nil && outcome.received > 0:
                continue                  // the gap is filled: the cache takes over again
            case .complete:
                throttle.finish(generation: generation)
                while !control.isStopped && !control.hasSeek { control.waitForCommand(timeout: 1) }
            case .interrupted:
                continue
            case .switchToCurl:
                usesCurl = true
            case .fatal(let error):
                logger?.debug("source: \(error)")
                throttle.finish(error: error, generation: generation)
                while !control.isStopped && !control.hasSeek { control.waitForCommand(timeout: 1) }
            case .retry(let why):
                if lastProgress.elapsed > options.retryFor {
                    let error = SourceError.network("\(name): \(why); gave up after \(Int(options.retryFor)) s without progress")
                    throttle.finish(error: error, generation: generation)
                    while !control.isStopped && !control.hasSeek { control.waitForCommand(timeout: 1) }
                    continue
                }
                logger?.debug(isLive ? "source: \(why); rejoining the live stream (no Range) in \(backoff) s"
                                     : "source: \(why); reconnecting from byte \(offset) in \(backoff) s")
                control.countReconnect()
                control.waitForCommand(timeout: backoff)
                backoff = min(5, backoff * 2)
            }
        }
    }

    /// The bookkeeping of one streaming request from `offset` (a live stream's: no If-Range, no
    /// cache, the gap since its last byte).
    func makeTransfer(throttle: Throttle, control: SourceControl, offset: Int, generation: Int) -> Transfer {
        let state = Transfer(throttle: throttle, control: control, generation: generation, offset: offset)
        state.expectedETag = isLive ? nil : etag
        state.cache = isLive ? nil : options.cache
        state.url = name
        state.logger = logger
        state.liveDroppedAt = isLive ? liveLastByte : nil
        return state
    }

    /// What a finished transfer taught the source: the ETag, and whether the stream is live.
    func learn(from state: Transfer) {
        if let tag = state.etag { etag = tag }
        if state.live != nil {
            isLive = true
            if let last = state.lastByteAt { liveLastByte = last }
        }
    }

    /// Extra request headers of a streaming request: radio servers put titles in the stream only
    /// for clients that ask (LiveBody takes them out).
    static let streamingHeaders = ["Icy-MetaData: 1"]

    /// How one transfer ended.
    enum TransferResult {
        case complete
        case interrupted
        case retry(String)
        case fatal(SourceError)
        /// A plain-HTTP request was redirected to https://: take it again through libcurl.
        case switchToCurl
    }
}

extension HTTPSource.Transfer {
    /// A header line as libcurl hands it over (status lines included).
    func header(_ line: String) {
        if line.hasPrefix("HTTP/") || line.hasPrefix("ICY ") {
            // A new response (after a redirect or a 100): start over.
            status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            statusLine = line
            headers = HTTPHeaderFields()
            etag = nil
            contentRangeTotal = nil
            contentLength = nil
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = String(line[..<colon])
        let value = String(trimmingWhitespace(line[line.index(after: colon)...]))
        if headers.fields.count < HTTPResponseHead.maxFields { headers.append(name: name, value: value) }
        switch name.lowercased() {
        case "etag": etag = value
        case "content-length": contentLength = Self.byteCount(value)
        case "content-range":
            if let slash = value.lastIndex(of: "/") { contentRangeTotal = Self.byteCount(value[value.index(after: slash)...]) }
        default: break
        }
    }

    /// The head the own client parsed: status, headers, and the sizes they tell.
    func take(_ head: HTTPResponseHead) throws(HTTPResponseError) {
        status = head.status
        statusLine = head.version == .icy ? "ICY \(head.status) \(head.reason)" : "HTTP/1.x \(head.status) \(head.reason)"
        headers = head.fields
        etag = head["ETag"]
        contentLength = try head.contentLength()
        contentRangeTotal = try head.contentRange()?.total
    }

    /// A size from a response header: digits only, at most `InputLimits.maxBytes` (a negative or
    /// absurd size would turn every offset computed from it into nonsense); nil otherwise.
    static func byteCount(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 16, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(text), value <= InputLimits.maxBytes else { return nil }
        return value
    }

    /// Checks the status once, before the first body byte: false (with `failure` set) when the
    /// body must not be played.
    func validate() -> Bool {
        validated = true
        switch status {
        case 206:
            control.setTotalSize(contentRangeTotal)
        case 200:
            do {
                if let info = try LiveStreamInfo.detect(statusLine: statusLine, headers: headers.fields) {
                    live = try LiveBody(info: info, state: control.live, droppedAt: liveDroppedAt, logger: logger)
                }
            } catch {
                failure = .icy(error)
                fatal = true
                return false
            }
            control.setTotalSize(contentLength)
            if headers["Accept-Ranges"]?.lowercased() == "none" { control.setRangesRefused() }
            if requestedOffset > 0 && live == nil {
                // A 200 to a Range request: either If-Range did not match (another ETag: the file
                // changed) or the server ignores Range (same or no ETag): then skip what we have.
                if let expected = expectedETag, let now = etag, expected != now {
                    cache?.remove(url: url)
                    failure = .changed(url: "")
                    fatal = true
                    return false
                }
                skipRemaining = requestedOffset
            }
        default:
            failure = .httpStatus(status, url: "")
            fatal = true
            return false
        }
        return true
    }

    /// Body bytes that fit in the throttle: the part before `requestedOffset` of a 200 is
    /// skipped, the rest written, stored in the cache and counted; a live stream's go through
    /// its `LiveBody`. False (with `failure` set) when a live stream's metadata is malformed.
    func deliver(_ data: UnsafeRawBufferPointer) -> Bool {
        lastByteAt = Monotonic.now
        if let live {
            do { _ = try live.write(data, to: throttle, generation: generation) } catch {
                failure = .icy(error)
                fatal = true
                return false
            }
            received += data.count
            control.countBytes(data.count)
            return true
        }
        var bytes = data
        if skipRemaining > 0 {
            let n = min(skipRemaining, bytes.count)
            skipRemaining -= n
            bytes = UnsafeRawBufferPointer(rebasing: bytes[n...])
            if bytes.isEmpty { return true }
        }
        throttle.write(bytes, generation: generation)
        storeInCache(bytes, at: requestedOffset + received)
        received += bytes.count
        control.countBytes(bytes.count)
        return true
    }
}

/// `text` without leading and trailing spaces, tabs, CR and LF (header lines and values).
func trimmingWhitespace<S: StringProtocol>(_ text: S) -> S.SubSequence {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
    guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }) else {
        return text[text.endIndex...]
    }
    return text[first...last]
}
