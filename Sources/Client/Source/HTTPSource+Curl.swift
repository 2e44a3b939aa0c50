internal import CCurl
import StreamShared

/// The https:// path of `HTTPSource`, through libcurl. The only file that imports CCurl: curl
/// handles and callbacks stay inside.
extension HTTPSource {
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

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

    func curlReadRange(_ range: Range<Int>) throws -> [UInt8] {
        _ = Self.globalInit
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

    func curlResourceSize() throws -> Int {
        _ = Self.globalInit
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

    func curlFetch(limit: Int) throws -> [UInt8] {
        _ = Self.globalInit
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

    func curlGet(_ url: String, range: Range<Int>?, limit: Int) throws -> Body {
        _ = Self.globalInit
        if curlSession == nil { curlSession = CurlEasyHandle() }
        guard let easy = curlSession?.raw else { throw SourceError.network("curl_easy_init failed") }
        curl_easy_reset(easy)
        let collector = RangeCollector(limit: limit)
        setCommonOptions(easy, url: url)
        if let range {
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

    /// One HTTP request from `offset`, pumped through the multi handle until it ends,
    /// fails, or a seek/stop interrupts it.
    /// `end` (exclusive) bounds the request where the disk cache holds the bytes after it.
    func curlTransfer(throttle: Throttle, control: SourceControl, offset: Int, to end: Int?,
                      generation: Int) -> (received: Int, result: TransferResult) {
        _ = Self.globalInit
        guard let multi = curl_multi_init() else { return (0, .fatal(.network("curl_multi_init failed"))) }
        defer { curl_multi_cleanup(multi) }
        // curl_multi_wakeup is the one multi call that is safe from another thread; the closure
        // is put back before the multi handle is freed (the throttle calls it under its lock).
        let wake = MultiHandle(raw: multi)
        throttle.onSpaceAvailable = { curl_multi_wakeup(wake.raw); control.poke() }
        defer { throttle.onSpaceAvailable = { control.poke() } }
        guard let easy = curl_easy_init() else { return (0, .fatal(.network("curl_easy_init failed"))) }
        defer { curl_easy_cleanup(easy) }
        let ifRange = offset > 0 && !isLive ? etag : nil
        let state = makeTransfer(throttle: throttle, control: control, offset: offset, generation: generation)
        defer { learn(from: state) }
        let box = Unmanaged.passRetained(state)
        defer { box.release() }
        // With a cache, even the first request asks for a range: the 206 names the size, which
        // a chunked 200 does not, and the cache needs it to keep the last block.
        configure(easy, rangeFrom: offset, to: end.map { $0 - 1 }, ifRange: ifRange, forceRange: options.cache != nil && !isLive)
        var headers: UnsafeMutablePointer<curl_slist>?
        if let ifRange { headers = curl_slist_append(headers, "If-Range: \(ifRange)") }
        for line in Self.streamingHeaders { headers = curl_slist_append(headers, line) }
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
            if state.paused && throttle.fill < throttle.lowWatermark && throttle.freeSpace >= min(4096, throttle.capacity) {
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

/// The easy handle `curlGet` reuses, so a run of small https requests (HLS playlists and
/// segments) shares one connection.
final class CurlEasyHandle {
    let raw: UnsafeMutableRawPointer?
    init() { raw = curl_easy_init() }
    deinit { if let raw { curl_easy_cleanup(raw) } }
}

extension HTTPSource.Transfer {
    /// The write callback's work: validate the response once, skip unwanted bytes, fill the
    /// throttle, or pause the transfer while the throttle is full.
    func accept(_ data: UnsafeRawBufferPointer) -> Int {
        if !validated && !validate() { return 0 }
        let wanted = data.count - min(skipRemaining, data.count)
        if wanted > 0 && throttle.freeSpace < wanted {
            if !paused { control.countPause() }
            paused = true
            return ccurl_writefunc_pause()    // curl hands the same bytes again on resume
        }
        return deliver(data) ? data.count : 0
    }
}
