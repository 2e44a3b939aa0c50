internal import CCurl
import StreamShared

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
    public init() {}
}

/// An HTTP(S) resource read through libcurl, resuming with `Range` after drops and stalls.
///
/// The only type that imports CCurl: curl handles and callbacks stay inside.
public final class HTTPSource: ByteSource, @unchecked Sendable {
    // @unchecked: `etag` and `log` are touched only by the network thread that runs the source.
    public let name: String
    public let options: HTTPSourceOptions
    var etag: String?
    /// The last response was a live stream (`LiveStreamInfo`): a drop rejoins live, without Range.
    var isLive = false
    /// When the last byte of a live stream arrived, for the gap a reconnect leaves.
    var liveLastByte: Monotonic?
    /// Component-tagged diagnostics (`--verbose`).
    public var log: (@Sendable (String) -> Void)?

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    public init(url: String, options: HTTPSourceOptions = HTTPSourceOptions()) {
        _ = Self.globalInit
        self.name = url
        self.options = options
    }

    /// What one response told us, filled by the header callback.
    final class Transfer {
        let throttle: Throttle
        let control: SourceControl
        let generation: Int
        let requestedOffset: Int
        /// The ETag the earlier responses carried, to tell "Range ignored" from "file changed".
        var expectedETag: String?
        var status = 0
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
        /// The status line and headers of the response (the last one, after redirects).
        var statusLine = ""
        var headers: [(name: String, value: String)] = []
        /// The body of a live stream (ICY metadata taken out), once the head said it is one.
        var live: LiveBody?
        var liveDroppedAt: Monotonic?
        var lastByteAt: Monotonic?
        var log: (@Sendable (String) -> Void)?

        init(throttle: Throttle, control: SourceControl, generation: Int, offset: Int) {
            self.throttle = throttle
            self.control = control
            self.generation = generation
            self.requestedOffset = offset
        }
    }

    private static let writeCallback: ccurl_data_callback = { data, size, count, userdata in
        guard let userdata, let data else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
        let length = size * count
        return transfer.accept(UnsafeRawBufferPointer(start: data, count: length))
    }

    private static let headerCallback: ccurl_data_callback = { data, size, count, userdata in
        guard let userdata, let data else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
        let length = size * count
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        transfer.header(String(trimmingWhitespace(line)))
        return length
    }

    public func readRange(_ range: Range<Int>) throws -> [UInt8] {
        guard let easy = curl_easy_init() else { throw SourceError.network("curl_easy_init failed") }
        defer { curl_easy_cleanup(easy) }
        let collector = RangeCollector(limit: range.count)
        configure(easy, rangeFrom: range.lowerBound, to: range.upperBound - 1, ifRange: nil)
        let box = Unmanaged.passRetained(collector)
        defer { box.release() }
        ccurl_setopt_callback(easy, CURLOPT_WRITEFUNCTION, { data, size, count, userdata in
            guard let userdata, let data else { return 0 }
            let c = Unmanaged<RangeCollector>.fromOpaque(userdata).takeUnretainedValue()
            let room = max(0, c.limit - c.bytes.count)
            c.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: min(room, size * count)))
            return size * count
        })
        ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, box.toOpaque())
        let code = curl_easy_perform(easy)
        var status = 0
        ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        guard code == CURLE_OK || code == CURLE_WRITE_ERROR else {
            throw SourceError.network("\(name): \(String(cString: curl_easy_strerror(code)))")
        }
        guard status == 206 || status == 200 else { throw SourceError.httpStatus(status, url: name) }
        if status == 200 && range.lowerBound > 0 {
            throw SourceError.network("\(name): server ignores Range requests")
        }
        return collector.bytes
    }

    /// A multi handle passed to the throttle's wake-up closure.
    struct MultiHandle: @unchecked Sendable {
        // @unchecked: only curl_multi_wakeup, which libcurl documents as thread-safe, uses it.
        let raw: UnsafeMutableRawPointer
    }

    /// The resource's size, from a one-byte Range request.
    public func resourceSize() throws -> Int {
        guard let easy = curl_easy_init() else { throw SourceError.network("curl_easy_init failed") }
        defer { curl_easy_cleanup(easy) }
        let transfer = Transfer(throttle: Throttle(capacity: 65_536), control: SourceControl(), generation: 0, offset: 0)
        let box = Unmanaged.passRetained(transfer)
        defer { box.release() }
        configure(easy, rangeFrom: 0, to: 0, ifRange: nil)
        ccurl_setopt_callback(easy, CURLOPT_HEADERFUNCTION, Self.headerCallback)
        ccurl_setopt_pointer(easy, CURLOPT_HEADERDATA, box.toOpaque())
        ccurl_setopt_callback(easy, CURLOPT_WRITEFUNCTION, { _, size, count, _ in size * count })
        let code = curl_easy_perform(easy)
        guard code == CURLE_OK else { throw SourceError.network("\(name): \(String(cString: curl_easy_strerror(code)))") }
        guard transfer.status == 206 || transfer.status == 200 else { throw SourceError.httpStatus(transfer.status, url: name) }
        guard let size = transfer.contentRangeTotal ?? (transfer.status == 200 ? transfer.contentLength : nil) else {
            throw SourceError.network("\(name): the server did not tell the size")
        }
        return size
    }

    /// GETs a small resource whole (a seek index); throws on a non-200 answer.
    public func fetch(limit: Int) throws -> [UInt8] {
        guard let easy = curl_easy_init() else { throw SourceError.network("curl_easy_init failed") }
        defer { curl_easy_cleanup(easy) }
        let collector = RangeCollector(limit: limit)
        configure(easy, rangeFrom: 0, to: nil, ifRange: nil)
        let box = Unmanaged.passRetained(collector)
        defer { box.release() }
        ccurl_setopt_callback(easy, CURLOPT_WRITEFUNCTION, { data, size, count, userdata in
            guard let userdata, let data else { return 0 }
            let c = Unmanaged<RangeCollector>.fromOpaque(userdata).takeUnretainedValue()
            guard c.bytes.count + size * count <= c.limit else { return 0 }
            c.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
        })
        ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, box.toOpaque())
        let code = curl_easy_perform(easy)
        var status = 0
        ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        guard code == CURLE_OK else { throw SourceError.network("\(name): \(String(cString: curl_easy_strerror(code)))") }
        guard status == 200 else { throw SourceError.httpStatus(status, url: name) }
        return collector.bytes
    }

    final class RangeCollector {
        let limit: Int
        var bytes: [UInt8] = []
        var overflowed = false
        init(limit: Int) { self.limit = limit }
    }

    /// One whole response body, and the URL it came from after redirects.
    public struct Body: Sendable {
        public var bytes: [UInt8]
        /// Where relative URIs inside the body resolve from.
        public var effectiveURL: String
    }

    /// The keep-alive handle `get` reuses, so a run of small requests (HLS playlists and
    /// segments) shares one connection. Only the thread that runs the HLS source calls `get`.
    private var session: UnsafeMutableRawPointer?

    deinit { if let session { curl_easy_cleanup(session) } }

    /// GETs `url` (or the byte range `range` of it) whole through one keep-alive connection.
    /// Throws `SourceError.httpStatus` for an error status, `.tooLarge` when the body passes
    /// `limit` bytes, `.network` when the transfer fails.
    public func get(_ url: String, range: Range<Int>? = nil, limit: Int) throws -> Body {
        if session == nil { session = curl_easy_init() }
        guard let easy = session else { throw SourceError.network("curl_easy_init failed") }
        curl_easy_reset(easy)
        let collector = RangeCollector(limit: limit)
        setCommonOptions(easy, url: url)
        if let range {
            guard !range.isEmpty else { return Body(bytes: [], effectiveURL: url) }
            ccurl_setopt_string(easy, CURLOPT_RANGE, "\(range.lowerBound)-\(range.upperBound - 1)")
        }
        let box = Unmanaged.passRetained(collector)
        defer { box.release() }
        ccurl_setopt_callback(easy, CURLOPT_WRITEFUNCTION, { data, size, count, userdata in
            guard let userdata, let data else { return 0 }
            let c = Unmanaged<RangeCollector>.fromOpaque(userdata).takeUnretainedValue()
            guard c.bytes.count + size * count <= c.limit else {
                c.overflowed = true
                return 0
            }
            c.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
        })
        ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, box.toOpaque())
        let code = curl_easy_perform(easy)
        var status = 0
        ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var effective: UnsafeMutablePointer<CChar>?
        ccurl_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        let finalURL = effective.map { String(cString: $0) } ?? url
        if collector.overflowed { throw SourceError.tooLarge(url: url, limit: limit) }
        guard code == CURLE_OK else {
            let why = "\(url): \(String(cString: curl_easy_strerror(code)))"
            switch code {
            case CURLE_COULDNT_RESOLVE_HOST, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_TOO_MANY_REDIRECTS:
                throw SourceError.unreachable(why)
            default:
                throw SourceError.network(why)
            }
        }
        guard status == 200 || status == 206 else { throw SourceError.httpStatus(status, url: url) }
        var bytes = collector.bytes
        if let range, status == 200 {
            // The server ignored Range: cut the piece out of the whole body.
            guard range.upperBound <= bytes.count else {
                throw SourceError.network("\(url): bytes \(range.lowerBound)-\(range.upperBound - 1) are past the end (\(bytes.count) bytes)")
            }
            bytes = Array(bytes[range])
        }
        return Body(bytes: bytes, effectiveURL: finalURL)
    }

    /// What every request of this source sets: redirects, user agent, connect and stall timeouts, keep-alive.
    private func setCommonOptions(_ easy: UnsafeMutableRawPointer, url: String) {
        ccurl_setopt_string(easy, CURLOPT_URL, url)
        ccurl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        ccurl_setopt_long(easy, CURLOPT_MAXREDIRS, 10)
        ccurl_setopt_string(easy, CURLOPT_USERAGENT, options.userAgent)
        ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(options.connectTimeout * 1000))
        ccurl_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
        ccurl_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, max(1, Int(options.stallTimeout.rounded(.up))))
        ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        ccurl_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
    }

    private func configure(_ easy: UnsafeMutableRawPointer, rangeFrom offset: Int, to end: Int?, ifRange: String?,
                           forceRange: Bool = false) {
        setCommonOptions(easy, url: name)
        if offset > 0 || end != nil || forceRange {
            ccurl_setopt_string(easy, CURLOPT_RANGE, "\(offset)-\(end.map(String.init) ?? "")")
        }
    }

    public func run(into throttle: Throttle, from start: Int, control: SourceControl) {
        guard let multi = curl_multi_init() else {
            throttle.finish(error: SourceError.network("curl_multi_init failed"), generation: throttle.currentGeneration)
            return
        }
        defer { curl_multi_cleanup(multi) }
        // curl_multi_wakeup is the one multi call that is safe from another thread.
        let wake = MultiHandle(raw: multi)
        throttle.onSpaceAvailable = { curl_multi_wakeup(wake.raw); control.poke() }
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
            let outcome = transfer(multi: multi, throttle: throttle, control: control, offset: isLive ? 0 : offset, to: end,
                                   generation: generation)
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
            case .fatal(let error):
                log?("source: \(error)")
                throttle.finish(error: error, generation: generation)
                while !control.isStopped && !control.hasSeek { control.waitForCommand(timeout: 1) }
            case .retry(let why):
                if lastProgress.elapsed > options.retryFor {
                    let error = SourceError.network("\(name): \(why); gave up after \(Int(options.retryFor)) s without progress")
                    throttle.finish(error: error, generation: generation)
                    while !control.isStopped && !control.hasSeek { control.waitForCommand(timeout: 1) }
                    continue
                }
                log?(isLive ? "source: \(why); rejoining the live stream (no Range) in \(backoff) s"
                            : "source: \(why); reconnecting from byte \(offset) in \(backoff) s")
                control.countReconnect()
                control.waitForCommand(timeout: backoff)
                backoff = min(5, backoff * 2)
            }
        }
    }

    private enum Result {
        case complete
        case interrupted
        case retry(String)
        case fatal(SourceError)
    }

    /// One HTTP request from `offset`, pumped through the multi handle until it ends,
    /// fails, or a seek/stop interrupts it.
    /// `end` (exclusive) bounds the request where the disk cache holds the bytes after it.
    private func transfer(multi: UnsafeMutableRawPointer, throttle: Throttle, control: SourceControl, offset: Int,
                          to end: Int? = nil, generation: Int) -> (received: Int, result: Result) {
        guard let easy = curl_easy_init() else { return (0, .fatal(.network("curl_easy_init failed"))) }
        defer { curl_easy_cleanup(easy) }
        let ifRange = offset > 0 && !isLive ? etag : nil
        let state = Transfer(throttle: throttle, control: control, generation: generation, offset: offset)
        state.expectedETag = isLive ? nil : etag
        state.cache = isLive ? nil : options.cache
        state.url = name
        state.log = log
        state.liveDroppedAt = isLive ? liveLastByte : nil
        let box = Unmanaged.passRetained(state)
        defer { box.release() }
        // With a cache, even the first request asks for a range: the 206 names the size, which
        // a chunked 200 does not, and the cache needs it to keep the last block.
        configure(easy, rangeFrom: offset, to: end.map { $0 - 1 }, ifRange: ifRange, forceRange: options.cache != nil && !isLive)
        var headers: UnsafeMutablePointer<curl_slist>?
        if let ifRange { headers = curl_slist_append(headers, "If-Range: \(ifRange)") }
        // Radio servers put titles in the stream only for clients that ask (LiveBody takes them out).
        headers = curl_slist_append(headers, "Icy-MetaData: 1")
        defer { curl_slist_free_all(headers) }
        ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, headers)
        // SHOUTcast answers `ICY 200 OK`, which libcurl refuses unless it is named a 200 alias.
        let aliases = curl_slist_append(nil, "ICY 200")
        defer { curl_slist_free_all(aliases) }
        ccurl_setopt_slist(easy, CURLOPT_HTTP200ALIASES, aliases)
        ccurl_setopt_callback(easy, CURLOPT_WRITEFUNCTION, Self.writeCallback)
        ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, box.toOpaque())
        ccurl_setopt_callback(easy, CURLOPT_HEADERFUNCTION, Self.headerCallback)
        ccurl_setopt_pointer(easy, CURLOPT_HEADERDATA, box.toOpaque())
        curl_multi_add_handle(multi, easy)
        defer { curl_multi_remove_handle(multi, easy) }

        var code: CURLcode?
        while code == nil {
            if control.isStopped || control.hasSeek { return (state.received, .interrupted) }
            if state.paused && throttle.fill < throttle.lowWatermark {
                state.paused = false
                curl_easy_pause(easy, ccurl_pause_cont())
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                if message.pointee.msg == CURLMSG_DONE { code = message.pointee.data.result }
            }
            if code != nil { break }
            var fds: Int32 = 0
            curl_multi_poll(multi, nil, 0, state.paused ? 20 : 100, &fds)
        }
        if let tag = state.etag { etag = tag }
        if state.live != nil {
            isLive = true
            if let last = state.lastByteAt { liveLastByte = last }
        }
        if let failure = state.failure { return (state.received, state.fatal ? .fatal(failure) : .retry("\(failure)")) }
        guard let code else { return (state.received, .interrupted) }
        if code == CURLE_OK {
            if !state.validated && state.status >= 400 { return (0, .fatal(.httpStatus(state.status, url: name))) }
            return (state.received, .complete)
        }
        let why = String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_TOO_MANY_REDIRECTS:
            return (state.received, .fatal(.network("\(name): \(why)")))
        default:
            return (state.received, .retry("\(name): \(why)"))
        }
    }
}

extension HTTPSource.Transfer {
    func header(_ line: String) {
        if line.hasPrefix("HTTP/") || line.hasPrefix("ICY ") {
            // A new response (after a redirect or a 100): start over. SHOUTcast answers `ICY 200 OK`.
            status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            statusLine = line
            headers = []
            etag = nil
            contentRangeTotal = nil
            contentLength = nil
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = String(trimmingWhitespace(line[line.index(after: colon)...]))
        if headers.count < 100 { headers.append((String(line[..<colon]), value)) }
        switch name {
        case "etag": etag = value
        case "content-length": contentLength = Self.byteCount(value)
        case "content-range":
            if let slash = value.lastIndex(of: "/") { contentRangeTotal = Self.byteCount(value[value.index(after: slash)...]) }
        default: break
        }
    }

    /// A size from a response header: digits only, at most `InputLimits.maxBytes` (a negative or
    /// absurd size would turn every offset computed from it into nonsense); nil otherwise.
    static func byteCount(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 16, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(text), value <= InputLimits.maxBytes else { return nil }
        return value
    }

    /// The write callback's work: validate the response once, skip unwanted bytes, fill the throttle.
    func accept(_ data: UnsafeRawBufferPointer) -> Int {
        if !validated {
            validated = true
            switch status {
            case 206:
                control.setTotalSize(contentRangeTotal)
            case 200:
                do {
                    if let info = try LiveStreamInfo.detect(statusLine: statusLine, headers: headers) {
                        live = try LiveBody(info: info, state: control.live, droppedAt: liveDroppedAt, log: log)
                    }
                } catch {
                    failure = .icy(error)
                    fatal = true
                    return 0
                }
                control.setTotalSize(contentLength)
                if requestedOffset > 0 && live == nil {
                    // A 200 to a Range request: either If-Range did not match (another ETag: the file
                    // changed) or the server ignores Range (same or no ETag): then skip what we have.
                    if let expected = expectedETag, let now = etag, expected != now {
                        cache?.remove(url: url)
                        failure = .changed(url: "")
                        fatal = true
                        return 0
                    }
                    skipRemaining = requestedOffset
                }
            default:
                failure = .httpStatus(status, url: "")
                fatal = true
                return 0
            }
        }
        var bytes = data
        if skipRemaining > 0 {
            let n = min(skipRemaining, bytes.count)
            skipRemaining -= n
            bytes = UnsafeRawBufferPointer(rebasing: bytes[n...])
            if bytes.isEmpty { return data.count }
        }
        if throttle.freeSpace < bytes.count {
            if !paused { control.countPause() }
            paused = true
            if skipRemaining == 0 && bytes.count != data.count {
                // Keep the skip consistent when curl re-delivers this chunk.
                skipRemaining = data.count - bytes.count
            }
            return ccurl_writefunc_pause()
        }
        lastByteAt = Monotonic.now
        if let live {
            do { _ = try live.write(bytes, to: throttle, generation: generation) } catch {
                failure = .icy(error)
                fatal = true
                return 0
            }
            received += bytes.count
            control.countBytes(bytes.count)
            return data.count
        }
        throttle.write(bytes, generation: generation)
        storeInCache(bytes, at: requestedOffset + received)
        received += bytes.count
        control.countBytes(bytes.count)
        return data.count
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
