import StreamShared

/// The http:// path of `HTTPSource`, through the own client (`HTTPClient`) on POSIX sockets.
extension HTTPSource {
    private func makeClient() -> HTTPClient {
        HTTPClient(userAgent: options.userAgent, connectTimeout: options.connectTimeout,
                   readTimeout: max(0.001, options.stallTimeout))
    }

    /// The source error for a failed request.
    func sourceError(_ error: HTTPClientError, url: String) -> SourceError {
        switch error {
        case .badURL, .tooManyRedirects, .redirectedToTLS: return .unreachable("\(url): \(error)")
        case .transport(let failure) where failure.kind == .resolve: return .unreachable("\(url): \(error)")
        case .malformed(let why): return .badResponse(url: url, why: "\(why)")
        case .transport, .truncated, .interrupted: return .network("\(url): \(error)")
        }
    }

    /// Runs `body`, turning its failure into a `SourceError`; a redirect to https:// is passed
    /// on as it is, for the caller to take the request again through libcurl.
    private func requesting<T>(_ url: String, _ body: () throws(HTTPClientError) -> T) throws -> T {
        let result = Result(catching: body)
        switch result {
        case .success(let value): return value
        case .failure(.redirectedToTLS(let target)): throw HTTPClientError.redirectedToTLS(target)
        case .failure(let error): throw sourceError(error, url: url)
        }
    }

    /// One request whole: the response head and up to `limit` body bytes (`overflow` when more came).
    private func wholeResponse(_ client: HTTPClient, _ request: HTTPClient.Request, limit: Int,
                               overflow: inout Bool) throws -> (HTTPResponse, [UInt8]) {
        var over = false
        let answer = try requesting(request.url) { () throws(HTTPClientError) in
            let response = try client.open(request)
            let bytes = try response.readAll(limit: limit, timeout: client.readTimeout, overflow: &over)
            if !over { client.finish(response) }
            return (response, bytes)
        }
        overflow = over
        return answer
    }

    func socketReadRange(_ range: Range<Int>) throws -> [UInt8] {
        var overflow = false
        let request = HTTPClient.Request(url: name, range: (range.lowerBound, range.upperBound - 1))
        let (response, bytes) = try wholeResponse(makeClient(), request, limit: range.count, overflow: &overflow)
        let status = response.head.status
        guard status == 206 || status == 200 else { throw SourceError.httpStatus(status, url: name) }
        if status == 200 && range.lowerBound > 0 { throw SourceError.network("\(name): server ignores Range requests") }
        return bytes
    }

    func socketResourceSize() throws -> Int { try socketVersion(timeout: nil).size }

    /// Size and ETag from a one-byte Range request; `timeout` bounds the connect and the head
    /// (else the source's own timeouts).
    func socketVersion(timeout: Double?) throws -> HTTPSource.Version {
        let request = HTTPClient.Request(url: name, range: (0, 0))
        let client = timeout.map { HTTPClient(userAgent: options.userAgent, connectTimeout: $0, readTimeout: $0) } ?? makeClient()
        let head = try requesting(name) { () throws(HTTPClientError) in try client.open(request).head }
        guard head.status == 206 || head.status == 200 else { throw SourceError.httpStatus(head.status, url: name) }
        let size: Int?
        do {
            size = try head.contentRange()?.total ?? (head.status == 200 ? head.contentLength() : nil)
        } catch { throw SourceError.badResponse(url: name, why: "\(error)") }
        guard let size else { throw SourceError.network("\(name): the server did not tell the size") }
        return HTTPSource.Version(size: size, etag: head["ETag"])
    }

    func socketFetch(limit: Int) throws -> [UInt8] {
        var overflow = false
        let (response, bytes) = try wholeResponse(makeClient(), HTTPClient.Request(url: name), limit: limit, overflow: &overflow)
        guard response.head.status == 200 else { throw SourceError.httpStatus(response.head.status, url: name) }
        if overflow { throw SourceError.tooLarge(url: name, limit: limit) }
        return bytes
    }

    func socketGet(_ url: String, range: Range<Int>?, limit: Int) throws -> Body {
        if session == nil { session = makeClient() }
        guard let client = session else { throw SourceError.network("\(url): no client") }
        var overflow = false
        let request = HTTPClient.Request(url: url, range: range.map { ($0.lowerBound, $0.upperBound - 1) })
        let (response, whole) = try wholeResponse(client, request, limit: limit, overflow: &overflow)
        let status = response.head.status
        if overflow && (status == 200 || status == 206) { throw SourceError.tooLarge(url: url, limit: limit) }
        guard status == 200 || status == 206 else { throw SourceError.httpStatus(status, url: url) }
        var bytes = whole
        if let range, status == 200 {
            // The server ignored Range: cut the piece out of the whole body.
            guard range.upperBound <= bytes.count else {
                throw SourceError.network("\(url): bytes \(range.lowerBound)-\(range.upperBound - 1) are past the end (\(bytes.count) bytes)")
            }
            bytes = Array(bytes[range])
        }
        return Body(bytes: bytes, effectiveURL: response.url)
    }

    /// One request from `offset` on a fresh connection, its body written into the throttle as
    /// it has room, until the body ends, the connection fails or stalls, or a seek or stop
    /// interrupts it. `end` (exclusive) bounds the request where the disk cache holds the bytes
    /// after it. While the throttle is full the socket is not read (TCP flow control stops the
    /// sender), until the reader has taken it below the low watermark.
    func socketTransfer(throttle: Throttle, control: SourceControl, offset: Int, to end: Int?,
                        generation: Int) -> (received: Int, result: TransferResult) {
        let state = makeTransfer(throttle: throttle, control: control, offset: offset, generation: generation)
        defer { learn(from: state) }
        // With a cache, even the first request asks for a range: the 206 names the size, which
        // a chunked 200 does not, and the cache needs it to keep the last block.
        let wantsRange = offset > 0 || end != nil || (options.cache != nil && !isLive)
        let request = HTTPClient.Request(url: name, range: wantsRange ? (offset, end.map { $0 - 1 }) : nil,
                                         ifRange: offset > 0 && !isLive ? etag : nil, headers: Self.streamingHeaders)
        let interrupted = { control.isStopped || control.hasSeek }
        let response: HTTPResponse
        do { response = try makeClient().open(request, shouldStop: interrupted) } catch {
            return (0, outcome(of: error))
        }
        do { try state.take(response.head) } catch {
            return (0, .fatal(.badResponse(url: name, why: "\(error)")))
        }
        guard state.validate() else {
            let failure = state.failure ?? .httpStatus(state.status, url: name)
            if case .httpStatus(let status, _) = failure { return (0, .fatal(.httpStatus(status, url: name))) }
            return (0, .fatal(failure))
        }
        var lastByte = Monotonic.now
        while true {
            if interrupted() { return (state.received, .interrupted) }
            if state.paused {
                // Room in the throttle and in the budget it shares with a queue's other track.
                if throttle.fill < throttle.lowWatermark && throttle.freeSpace >= min(4096, throttle.capacity) {
                    state.paused = false
                } else {
                    // onSpaceAvailable pokes the control when the reader takes the fill below the mark.
                    control.waitForCommand(timeout: 0.1)
                    lastByte = Monotonic.now
                    continue
                }
            }
            let room = throttle.freeSpace
            if room < min(4096, throttle.capacity) && state.skipRemaining == 0 {
                state.paused = true
                control.countPause()
                continue
            }
            let step: HTTPResponse.Step
            var delivered = true
            do {
                step = try response.read(max: room + state.skipRemaining, timeout: 0.1) { piece in
                    if delivered { delivered = piece.withUnsafeBytes { state.deliver($0) } }
                }
            } catch {
                return (state.received, outcome(of: error))
            }
            if !delivered, let failure = state.failure { return (state.received, .fatal(failure)) }
            switch step {
            case .data(let n):
                if n > 0 { lastByte = Monotonic.now }
            case .end:
                return (state.received, .complete)
            case .timedOut:
                if lastByte.elapsed > options.stallTimeout {
                    return (state.received, .retry("\(name): no data for \(Int(options.stallTimeout)) s"))
                }
            }
        }
    }

    /// What a failed request means for the transfer loop.
    private func outcome(of error: HTTPClientError) -> TransferResult {
        switch error {
        case .interrupted: return .interrupted
        case .redirectedToTLS: return .switchToCurl
        case .badURL, .tooManyRedirects, .malformed: return .fatal(sourceError(error, url: name))
        case .transport(let failure) where failure.kind == .resolve: return .fatal(.network("\(name): \(error)"))
        case .transport, .truncated: return .retry("\(name): \(error)")
        }
    }
}
