internal import CCurl
import StreamShared

/// The https:// path of `HTTPSource`, through libcurl (`CurlLibrary`, loaded at the first use).
extension HTTPSource {
    /// A fresh easy handle with this source's common options for `url`.
    private func easyHandle(for url: String) throws(SourceError) -> CurlEasy {
        let easy = try CurlEasy(CurlLibrary.shared())
        setCommonOptions(easy, url: url)
        return easy
    }

    /// The source error for a failed transfer.
    private func failure(_ code: CURLcode, _ easy: CurlEasy, url: String) -> SourceError {
        let why = "\(url): \(easy.library.text(code))"
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_TOO_MANY_REDIRECTS:
            return .unreachable(why)
        default:
            return .network(why)
        }
    }

    func curlReadRange(_ range: Range<Int>) throws -> [UInt8] {
        let easy = try easyHandle(for: name)
        setRange(easy, from: range.lowerBound, to: range.upperBound - 1)
        var bytes: [UInt8] = []
        easy.onData = { data in
            bytes += data.prefix(max(0, range.count - bytes.count))
            return data.count
        }
        let code = easy.perform()
        guard code == CURLE_OK || code == CURLE_WRITE_ERROR else { throw failure(code, easy, url: name) }
        let status = easy.responseCode
        guard status == 206 || status == 200 else { throw SourceError.httpStatus(status, url: name) }
        if status == 200 && range.lowerBound > 0 {
            throw SourceError.network("\(name): server ignores Range requests")
        }
        return bytes
    }

    func curlResourceSize() throws -> Int { try curlVersion(timeout: nil).size }

    /// Size and ETag from a one-byte Range request; `timeout` bounds the whole request.
    func curlVersion(timeout: Double?) throws -> HTTPSource.Version {
        let easy = try easyHandle(for: name)
        setRange(easy, from: 0, to: 0)
        if let timeout {
            easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(timeout * 1000))
            easy.set(CURLOPT_TIMEOUT_MS, Int(timeout * 1000))
        }
        let transfer = Transfer(throttle: Throttle(capacity: 65_536), control: SourceControl(), generation: 0, offset: 0)
        easy.onHeader = { transfer.header($0) }
        let code = easy.perform()
        guard code == CURLE_OK else { throw failure(code, easy, url: name) }
        guard transfer.status == 206 || transfer.status == 200 else { throw SourceError.httpStatus(transfer.status, url: name) }
        guard let size = transfer.contentRangeTotal ?? (transfer.status == 200 ? transfer.contentLength : nil) else {
            throw SourceError.network("\(name): the server did not tell the size")
        }
        return HTTPSource.Version(size: size, etag: transfer.etag)
    }

    func curlFetch(limit: Int) throws -> [UInt8] {
        let easy = try easyHandle(for: name)
        let body = CappedBody(easy, limit: limit)
        let code = easy.perform()
        let status = easy.responseCode
        if body.overflowed && status == 200 { throw SourceError.tooLarge(url: name, limit: limit) }
        guard code == CURLE_OK else { throw failure(code, easy, url: name) }
        guard status == 200 else { throw SourceError.httpStatus(status, url: name) }
        return body.bytes
    }

    /// `get` for https://, on the kept easy handle (one connection for a run of HLS requests).
    func curlGet(_ url: String, range: Range<Int>?, limit: Int) throws -> Body {
        if curlSession == nil { curlSession = try CurlEasy(CurlLibrary.shared()) }
        guard let easy = curlSession else { throw SourceError.network("\(url): no curl handle") }
        easy.reset()
        setCommonOptions(easy, url: url)
        if let range { setRange(easy, from: range.lowerBound, to: range.upperBound - 1) }
        let body = CappedBody(easy, limit: limit)
        let code = easy.perform()
        let status = easy.responseCode
        let finalURL = easy.effectiveURL ?? url
        if body.overflowed { throw SourceError.tooLarge(url: url, limit: limit) }
        guard code == CURLE_OK else { throw failure(code, easy, url: url) }
        guard status == 200 || status == 206 else { throw SourceError.httpStatus(status, url: url) }
        var bytes = body.bytes
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
    private func setCommonOptions(_ easy: CurlEasy, url: String) {
        easy.set(CURLOPT_URL, url)
        // libcurl sends these to this host only, not after a redirect to another one.
        if let target = try? HTTPURL(url), let credential = ServerCredentials.credential(host: target.host, port: target.port) {
            switch credential {
            case .basic(let user, let password):
                easy.set(CURLOPT_USERNAME, user)
                easy.set(CURLOPT_PASSWORD, password)
            case .bearer(let token):
                easy.set(CURLOPT_HTTPAUTH, 1 << 6)   // CURLAUTH_BEARER
                easy.set(CURLOPT_XOAUTH2_BEARER, token)
            }
        }
        easy.set(CURLOPT_FOLLOWLOCATION, 1)
        easy.set(CURLOPT_MAXREDIRS, 10)
        easy.set(CURLOPT_USERAGENT, options.userAgent)
        easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(options.connectTimeout * 1000))
        easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
        easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(options.stallTimeout.rounded(.up))))
        easy.set(CURLOPT_NOSIGNAL, 1)
        easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        if let caFile = options.caFile { easy.set(CURLOPT_CAINFO, caFile) }
    }

    private func setRange(_ easy: CurlEasy, from offset: Int, to end: Int?) {
        easy.set(CURLOPT_RANGE, "\(offset)-\(end.map(String.init) ?? "")")
    }

    /// One HTTP request from `offset`, pumped through a multi handle until it ends, fails, or a
    /// seek/stop interrupts it. `end` (exclusive) bounds the request where the disk cache holds
    /// the bytes after it.
    func curlTransfer(throttle: Throttle, control: SourceControl, offset: Int, to end: Int?,
                      generation: Int) -> (received: Int, result: TransferResult) {
        let easy: CurlEasy, multi: CurlMulti
        do {
            easy = try easyHandle(for: name)
            multi = try CurlMulti(easy.library)
        } catch {
            return (0, .fatal(error))
        }
        // The closure is put back before the multi handle is freed (the throttle calls it under its lock).
        let waker = multi.waker
        throttle.onSpaceAvailable = { waker.wake(); control.poke() }
        defer { throttle.onSpaceAvailable = { control.poke() } }
        let ifRange = offset > 0 && !isLive ? etag : nil
        let state = makeTransfer(throttle: throttle, control: control, offset: offset, generation: generation)
        defer { learn(from: state) }
        // With a cache, even the first request asks for a range: the 206 names the size, which
        // a chunked 200 does not, and the cache needs it to keep the last block.
        if offset > 0 || end != nil || (options.cache != nil && !isLive) { setRange(easy, from: offset, to: end.map { $0 - 1 }) }
        easy.setList(CURLOPT_HTTPHEADER, (ifRange.map { ["If-Range: \($0)"] } ?? []) + Self.streamingHeaders)
        // SHOUTcast answers `ICY 200 OK`, which libcurl refuses unless it is named a 200 alias.
        easy.setList(CURLOPT_HTTP200ALIASES, ["ICY 200"])
        easy.onData = { state.accept($0) }
        easy.onHeader = { state.header($0) }
        multi.add(easy)

        var code: CURLcode?
        while code == nil {
            if control.isStopped || control.hasSeek { return (state.received, .interrupted) }
            if state.paused && throttle.fill < throttle.lowWatermark && throttle.freeSpace >= min(4096, throttle.capacity) {
                state.paused = false
                easy.resume()
            }
            code = multi.perform()
            if code != nil { break }
            multi.poll(milliseconds: state.paused ? 20 : 100)
        }
        if let failure = state.failure { return (state.received, state.fatal ? .fatal(failure) : .retry("\(failure)")) }
        guard let code else { return (state.received, .interrupted) }
        if code == CURLE_OK {
            if !state.validated && state.status >= 400 { return (0, .fatal(.httpStatus(state.status, url: name))) }
            return (state.received, .complete)
        }
        let why = "\(name): \(easy.library.text(code))"
        if case .unreachable = failure(code, easy, url: name) { return (state.received, .fatal(.network(why))) }
        return (state.received, .retry(why))
    }
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
            return CurlEasy.pause    // curl hands the same bytes again on resume
        }
        return deliver(data) ? data.count : 0
    }
}

/// A transfer's body gathered in memory up to `limit` bytes: past it the data callback refuses the
/// chunk, which makes curl stop the transfer (CURLE_WRITE_ERROR), and `overflowed` says so.
private final class CappedBody {
    private(set) var bytes: [UInt8] = []
    private(set) var overflowed = false

    /// Sets `easy`'s data callback to gather into this body.
    init(_ easy: CurlEasy, limit: Int) {
        easy.onData = { data in
            guard self.bytes.count + data.count <= limit else {
                self.overflowed = true
                return 0
            }
            self.bytes += data
            return data.count
        }
    }
}
