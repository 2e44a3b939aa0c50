import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary

/// The HLS routes of streamd: VOD playlists and segments under `/hls/<path>/`, live loops under `/live/<name>/`.
public final class HLSService: Sendable {
    public let catalog: Catalog
    /// Generated segments, bounded by `--hls-cache-mb`.
    public let cache: LRUByteCache
    private let plans = PlanCache(limit: 128)
    private let live: [String: HLSLiveSource]
    /// The transcoded variants beside each original (`--hls-ladder`); nil: the original only.
    public let ladder: HLSLadder?

    package static let playlistType = "application/vnd.apple.mpegurl"
    package static let immutable = "public, max-age=31536000, immutable"

    public init(catalog: Catalog, cacheBytes: Int, live: [HLSLiveSource] = [], ladder: HLSLadder? = nil) {
        self.catalog = catalog
        self.ladder = ladder.flatMap { $0.rungs.isEmpty ? nil : $0 }
        self.cache = LRUByteCache(capacityBytes: cacheBytes)
        self.live = Dictionary(live.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: VOD

    /// `GET /hls/<path>/<name>`: `rest` is what follows `/hls/`, still percent-encoded.
    public func vod(_ request: HTTPRequest, rest: Substring) throws(HTTPRefusal) -> HTTPResponse {
        guard let slash = rest.lastIndex(of: "/") else { throw .notFound() }
        var trackPart = rest[..<slash]
        let name = String(rest[rest.index(after: slash)...])
        // `<path>/opus-128/<name>`: a transcoded variant of the ladder.
        var rendition: HLSRendition?
        if let ladder, let folderSlash = trackPart.lastIndex(of: "/"),
           let wanted = HLSRendition(folder: trackPart[trackPart.index(after: folderSlash)...]) {
            guard ladder.rungs.contains(wanted.kbps) else { throw .notFound() }
            rendition = wanted
            trackPart = trackPart[..<folderSlash]
        }
        let absolute: String
        do {
            absolute = try catalog.resolver.resolve(encoded: trackPart)
        } catch {
            throw error.refusal
        }
        let file: OpenFile
        do {
            file = try OpenFile(path: absolute)
        } catch {
            throw .notFound()
        }
        if let rendition, let ladder { return try renditionResponse(request, rendition, ladder: ladder, name: name, absolute: absolute, file: file) }
        let plan: HLSTrackPlan?
        do {
            plan = try self.plan(for: absolute, file: file)
        } catch HLSError.unsupported(let why) {
            // The track is fine, its format has no HLS rendition of its own: with a ladder the
            // master playlist offers the transcoded variants, else 415 with the reason.
            guard name == "master.m3u8", ladder != nil, catalog.track(forAbsolutePath: absolute) != nil else {
                throw HTTPRefusal(415, "\(HLSError.unsupported(why))")
            }
            plan = nil
        } catch {
            throw HTTPRefusal(422, "\(error)")
        }
        if name == "master.m3u8" {
            let text = Self.signed(masterPlaylist(original: plan, absolute: absolute, file: file).render(), for: request)
            let etag = "\"\(HLSTrackPlan.versionToken(file.etag))-\(HLSTrackPlan.versionToken(text))\""
            return Self.respond(request, Array(text.utf8), contentType: Self.playlistType, etag: etag, cacheControl: "no-cache")
        }
        guard let plan else { throw .notFound() }
        return try answer(request, name: name, plan: plan, file: file, segmentKey: "vod|\(absolute)")
    }

    /// The master playlist: the original when HLS carries it, then each variant of the ladder
    /// (BANDWIDTH measured when its encode is cached, else what its bitrate and framing make).
    func masterPlaylist(original: HLSTrackPlan?, absolute: String, file: OpenFile) -> HLSMasterPlaylist {
        var variants = original?.masterPlaylist(query: "").variants ?? []
        // A lossy original is offered only below its own bitrate: a higher rung costs bits for
        // nothing, and the original stays the variant of the highest BANDWIDTH.
        let lossyBitrate = original.flatMap { $0.codec == "flac" ? nil : variants.first?.averageBandwidth ?? variants.first?.bandwidth }
        if let ladder, catalog.track(forAbsolutePath: absolute) != nil {
            for rendition in ladder.renditions where rendition.kbps * 1000 < lossyBitrate ?? Int.max {
                let uri = rendition.folder + "/index.m3u8"
                if let encoded = ladder.encoder.cachedRendition(absolute: absolute, file: file, rendition: rendition),
                   let plan = try? renditionPlan(rendition, absolute: absolute, file: file, encoded: encoded),
                   var measured = plan.masterPlaylist(query: "").variants.first {
                    measured.uri = uri
                    variants.append(measured)
                    continue
                }
                let bits = Double(rendition.kbps * 1000)
                // Opus is VBR: peaks a quarter above the mean are allowed for; MP3 is CBR. Both
                // carry a segment header (moof or ID3) per 6 s.
                let peak = rendition.codec == .opus ? bits * 1.25 : bits
                let header = Double(rendition.codec == .opus ? FMP4Writer.mediaHeaderSize(sampleCount: 300, sampleGroup: true)
                                                              : ID3Writer.transportStreamTimestampTag(ticks90k: 0).count) * 8 / 6
                variants.append(HLSVariant(bandwidth: Int((peak + header).rounded(.up)), averageBandwidth: Int((bits + header).rounded()),
                                           codecs: [rendition.codecs], uri: uri))
            }
        }
        return HLSMasterPlaylist(variants: variants)
    }

    /// A file of a transcoded variant: its encode is found in the transcoder's cache, or started.
    /// While it runs, the playlist is an EVENT one listing its whole segments, and a request for
    /// what is not encoded yet is parked (no thread waits) until the encode publishes more.
    private func renditionResponse(_ request: HTTPRequest, _ rendition: HLSRendition, ladder: HLSLadder, name: String,
                                   absolute: String, file: OpenFile) throws(HTTPRefusal) -> HTTPResponse {
        guard name == "index.m3u8" || name == "init.mp4" || name == "rendition.\(rendition.fileExtension)"
                || name.hasPrefix("seg-") || name.hasPrefix("packed.") else { throw .notFound() }
        let encode = try ladder.encoder.renditionEncode(absolute: absolute, file: file, rendition: rendition)
        return try renditionAnswer(request, rendition, ladder: ladder, name: name, absolute: absolute, file: file, encode: encode,
                                   asked: monotonicNanos())
    }

    private func renditionAnswer(_ request: HTTPRequest, _ rendition: HLSRendition, ladder: HLSLadder, name: String,
                                 absolute: String, file: OpenFile, encode: RenditionEncode,
                                 asked: UInt64) throws(HTTPRefusal) -> HTTPResponse {
        let progress: RenditionProgress
        switch encode {
        case .complete(let encoded):
            let plan: HLSTrackPlan
            do {
                plan = try renditionPlan(rendition, absolute: absolute, file: file, encoded: encoded)
            } catch {
                throw HTTPRefusal(500, "the \(rendition.folder) encode cannot be cut: \(error)")
            }
            if name == "rendition.\(rendition.fileExtension)" {
                // The whole encode, as the segments were cut from it (a download, or a reference decode).
                return Self.respond(request, parts: [.file(encoded, offset: 0, length: encoded.size)], contentType: rendition.fileContentType,
                                    etag: "\"\(plan.version)-file\"", cacheControl: Self.immutable)
            }
            return try answer(request, name: name, plan: plan, file: encoded, segmentKey: "vod|\(absolute)|\(rendition.folder)")
        case .encoding(let running):
            progress = running
        }
        // The whole segments so far (none yet: nil).
        let totalSamples = expectedSamples(absolute)
        let plan = try? HLSTrackPlan.rendition(rendition, file: progress.prefix, etag: "", version: Self.renditionVersion(file, rendition),
                                               expectedSamples: totalSamples, complete: false)
        let ready: Bool
        switch name {
        case "index.m3u8" where request.queryValue("byterange") != "1":
            ready = (plan?.spans.count ?? 0) >= Self.firstEventSegments
                && (progress.growingAnswered
                    || !Self.endsSoon(published: progress.published, kbps: rendition.kbps, totalSamples: totalSamples, asked: asked))
            if ready { progress.markGrowingAnswered() }
        case "init.mp4":
            ready = plan != nil
        case _ where name.hasPrefix("seg-"):
            let ext = rendition.codec == .opus ? "m4s" : "mp3"
            guard let index = Self.segmentIndex(name, extension: ext) else { return .error(404, "no such segment") }
            ready = index < (plan?.spans.count ?? 0)
        default:
            // The whole encode, the packed file and its playlist: at the end.
            ready = false
        }
        if ready, let plan {
            if name == "index.m3u8" {
                return playlist(request, plan.mediaPlaylist(query: "?v=" + plan.version, growing: true).render(), plan: plan)
            }
            return try answer(request, name: name, plan: plan, file: progress.spool, segmentKey: "vod|\(absolute)|\(rendition.folder)")
        }
        // Parked until about a second more of the encode is published (or it ends), then asked again.
        let wake = progress.published + max(4096, rendition.kbps * 125)
        let folder = rendition.folder
        return .parked(ParkedResponse(
            timeout: UInt64(max(0.1, ladder.wait) * 1e9),
            arm: { wake_ in progress.notify(wake, wake_) },
            resume: { [self] () throws(HTTPRefusal) -> HTTPResponse in
                try renditionAnswer(request, rendition, ladder: ladder, name: name, absolute: absolute, file: file,
                                    encode: try progress.current(), asked: asked)
            },
            expired: {
                var busy = HTTPResponse.error(503, "the \(folder) rendition is being encoded: try again shortly")
                busy.headers.append(("Retry-After", "1"))
                return busy
            }))
    }

    /// Whole segments an EVENT playlist lists before it is answered at all. GStreamer's hlsdemux2
    /// (1.22) cannot match a reload to a first playlist of one segment ("Could not synchronize new
    /// variant playlist with previous one"): it resets with a flushing seek and its sink gets data
    /// before a segment event, so it writes nothing. From two segments on it follows the reloads.
    static let firstEventSegments = 2

    /// How long a variant's first playlist may wait for an encode that will finish by then, to be
    /// answered VOD rather than EVENT. GStreamer's playbin (hlsdemux, 1.22) starts on the original,
    /// switches up to a cold variant a moment later and stalls for good if that playlist has no
    /// ENDLIST (a VOD variant followed by an EVENT one). An encode that will take longer is
    /// answered growing at once, so a long track's first playlist is not held.
    static let eventPlaylistHoldNanos: UInt64 = 1_000_000_000

    /// Whether an encode, going at the pace it has kept since the playlist was asked for, ends
    /// within `eventPlaylistHoldNanos` of that (audio so far from the bytes published at the
    /// variant's bitrate; a length the catalog does not know: no).
    static func endsSoon(published: Int, kbps: Int, totalSamples: Int?, asked: UInt64) -> Bool {
        let elapsed = monotonicNanos() &- asked
        guard elapsed < eventPlaylistHoldNanos, let totalSamples, kbps > 0 else { return false }
        let total = Double(totalSamples) / Double(HLSRendition.sampleRate)
        let done = Double(published) / Double(kbps * 125)
        // Too early to tell a pace: wait for more to be published.
        guard done > 0, elapsed >= 20_000_000 else { return true }
        let remaining = max(0, total - done) * Double(elapsed) / done
        return Double(elapsed) + remaining <= Double(eventPlaylistHoldNanos)
    }

    /// The token naming a variant's encode in its URIs: the source file's version and the variant,
    /// so the URIs of an encode under way stay those of the finished one.
    static func renditionVersion(_ source: OpenFile, _ rendition: HLSRendition) -> String {
        HLSTrackPlan.versionToken(source.etag + "|" + rendition.folder)
    }

    /// The track's length at 48 kHz, as the variants' encodes make it (nil when the catalog does not know it).
    func expectedSamples(_ absolute: String) -> Int? {
        guard let track = catalog.track(forAbsolutePath: absolute), track.totalSamples > 0, track.sampleRate > 0 else { return nil }
        let rate = HLSRendition.sampleRate
        return (track.totalSamples * rate + track.sampleRate / 2) / track.sampleRate
    }

    /// The plan of a variant's finished encode, reused while the encode is the same file.
    func renditionPlan(_ rendition: HLSRendition, absolute: String, file: OpenFile, encoded: OpenFile) throws -> HLSTrackPlan {
        let key = absolute + "|" + rendition.folder
        if let plan = plans.get(key), plan.fileETag == encoded.etag { return plan }
        let plan = try HLSTrackPlan.rendition(rendition, file: encoded, etag: encoded.etag, version: Self.renditionVersion(file, rendition),
                                              expectedSamples: expectedSamples(absolute), complete: true)
        plans.put(key, plan)
        return plan
    }

    /// A media playlist, init segment, segment or packed file of `plan`, cut from `file`.
    private func answer(_ request: HTTPRequest, name: String, plan: HLSTrackPlan, file: OpenFile,
                        segmentKey: String) throws(HTTPRefusal) -> HTTPResponse {
        let version = request.queryValue("v")
        switch name {
        case "index.m3u8":
            if request.queryValue("byterange") == "1" {
                guard plan.supportsByteRanges else { return .error(422, "byte-range playlists are for MP3 and ADTS tracks") }
                return playlist(request, plan.byteRangePlaylist(fileURI: plan.packedFileName + "?v=" + plan.version).render(),
                                plan: plan)
            }
            return playlist(request, plan.mediaPlaylist(query: "?v=" + plan.version).render(), plan: plan)
        case plan.packedFileName where plan.supportsByteRanges:
            if let version, version != plan.version { return .error(404, "packed file of an older version of the file") }
            return Self.respond(request, parts: plan.packedParts(of: file), contentType: plan.segmentContentType,
                                etag: "\"\(plan.version)-packed\"", cacheControl: Self.immutable)
        case "init.mp4":
            guard let initSegment = plan.initSegment else { return .error(404, "no init segment: not an fMP4 track") }
            if let version, version != plan.version { return .error(404, "init segment of an older version of the file") }
            return Self.respond(request, initSegment, contentType: "audio/mp4", etag: "\"\(plan.version)-init\"",
                                cacheControl: Self.immutable)
        default:
            guard let index = Self.segmentIndex(name, extension: plan.segmentExtension), index < plan.spans.count else {
                return .error(404, "no such segment")
            }
            if let version, version != plan.version { return .error(404, "segment of an older version of the file") }
            let key = "\(segmentKey)|\(plan.version)|\(index)"
            do {
                let (bytes, hit) = try cache.value(for: key) { try plan.segment(index, from: file) }
                var response = Self.respond(request, bytes, contentType: plan.segmentContentType,
                                            etag: "\"\(plan.version)-\(index)\"", cacheControl: Self.immutable)
                response.headers.append(("X-Cache", hit ? "HIT" : "MISS"))
                return response
            } catch {
                return .error(500, "segment \(index): \(error)")
            }
        }
    }

    /// The plan for a file, reused while its ETag stays the same.
    func plan(for absolute: String, file: OpenFile) throws -> HLSTrackPlan {
        if let plan = plans.get(absolute), plan.fileETag == file.etag { return plan }
        // The catalog's analysis when it describes these very bytes; a file changed in place
        // (same folder mtime) is analyzed again, in a worker process like every analysis.
        let analysis = try catalog.analysis(forAbsolutePath: absolute, file: file)
        let plan = try HLSTrackPlan.make(file: file, etag: file.etag, analysis: analysis)
        plans.put(absolute, plan)
        return plan
    }

    private func playlist(_ request: HTTPRequest, _ text: String, plan: HLSTrackPlan) -> HTTPResponse {
        let text = Self.signed(text, for: request)
        let bytes = Array(text.utf8)
        let etag = "\"\(plan.version)-\(HLSTrackPlan.versionToken(text))\""
        return Self.respond(request, bytes, contentType: Self.playlistType, etag: etag, cacheControl: "no-cache")
    }

    /// A playlist asked for through a signed link names its URIs signed for the same user.
    private static func signed(_ text: String, for request: HTTPRequest) -> String {
        guard let signer = request.linkSigner, let slash = request.path.lastIndex(of: "/") else { return text }
        return HLSSignedPlaylist.sign(text, directory: request.path[...slash], signer: signer)
    }

    /// "seg-12.mp3" → 12; nil for anything else (signs, leading zeros, huge numbers, other extensions).
    package static func segmentIndex(_ name: String, extension ext: String) -> Int? {
        guard name.hasPrefix("seg-"), name.hasSuffix("." + ext) else { return nil }
        let digits = name.dropFirst(4).dropLast(ext.count + 1)
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              digits == "0" || !digits.hasPrefix("0") else { return nil }
        return Int(digits)
    }

    /// A generated body with a strong ETag: see the parts form.
    package static func respond(_ request: HTTPRequest, _ bytes: [UInt8], contentType: String, etag: String,
                        cacheControl: String) -> HTTPResponse {
        respond(request, parts: [.bytes(bytes)], contentType: contentType, etag: etag, cacheControl: cacheControl)
    }

    /// A generated body made of parts (a segment, the packed file) with a strong ETag, after the
    /// preconditions of RFC 9110 section 13.2.2: 412 when If-Match fails, 304 when the client
    /// already has it, 206 for one byte range (the parts sliced, file spans still sent with
    /// sendfile; a CDN or player fetching part of a segment), 416, else 200 with the whole body.
    /// Several ranges get the whole body.
    package static func respond(_ request: HTTPRequest, parts: [BodyPart], contentType: String, etag: String,
                        cacheControl: String) -> HTTPResponse {
        let total = parts.reduce(0) { $0 + $1.length }
        var headers = [("ETag", etag), ("Cache-Control", cacheControl), ("Accept-Ranges", "bytes"),
                       ("Access-Control-Allow-Origin", "*")]
        // Generated bodies have no Last-Modified: the date conditions do not apply.
        let range: String?
        switch Precondition.evaluate(request, etag: etag, lastModified: nil) {
        case .failed:
            return .error(412, "precondition failed")
        case .notModified:
            return HTTPResponse(status: 304, headers: headers)
        case .proceed(let rangeApplies):
            range = rangeApplies ? request.header("Range") : nil
        }
        var status = 200
        var body = parts
        var length = total
        switch RangeRequest.parse(range, size: total) {
        case .ranges(let ranges) where ranges.count == 1:
            let r = ranges[0]
            headers.append(("Content-Range", "bytes \(r.lowerBound)-\(r.upperBound - 1)/\(total)"))
            status = 206
            body = slice(parts, r)
            length = r.count
        case .unsatisfiable:
            var error = HTTPResponse.error(416, "range not satisfiable")
            error.headers.append(("Content-Range", "bytes */\(total)"))
            return error
        case .full, .ranges:
            break
        }
        return HTTPResponse(status: status, headers: [("Content-Type", contentType), ("Content-Length", String(length))] + headers,
                            body: FixedBody(body))
    }

    /// The bytes `range` of the concatenation of `parts`, as parts.
    static func slice(_ parts: [BodyPart], _ range: Range<Int>) -> [BodyPart] {
        var out: [BodyPart] = []
        var at = 0
        for part in parts {
            let length = part.length
            defer { at += length }
            let lower = max(range.lowerBound, at), upper = min(range.upperBound, at + length)
            guard lower < upper else {
                if at >= range.upperBound { break }
                continue
            }
            switch part {
            case .bytes(let bytes): out.append(.bytes(Array(bytes[(lower - at)..<(upper - at)])))
            case .file(let file, let offset, _): out.append(.file(file, offset: offset + lower - at, length: upper - lower))
            }
        }
        return out
    }

    // MARK: Live

    /// Starts every `--live` loop and waits until each has its first window (their analyses run
    /// at once, each bounded by the analyzer's timeout); throws the first that cannot loop.
    public func startLive() throws(HLSLiveStartError) {
        for source in live.values { source.start() }
        for source in live.values { try source.waitUntilPlaying() }
    }

    /// Stops the `--live` loops' threads, waiting until `deadline` (monotonic ns); the names of
    /// those still running then.
    public func stopLive(deadline: UInt64) -> [String] {
        live.values.filter { !$0.stop(deadline: deadline) }.map(\.name)
    }

    /// `GET /live/<name>/<file>`: answered from the segmenter's memory, on the loop.
    public func live(_ request: HTTPRequest, rest: Substring) -> HTTPResponse {
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let source = live[String(parts[0])], let (plan, segmenter) = source.running else {
            return .error(404, "no such live stream")
        }
        let name = String(parts[1])
        switch name {
        case "index.m3u8":
            guard let playlist = segmenter.playlist() else { return .error(404, "no such live stream") }
            let text = playlist.render()
            let etag = "\"live-\(HLSTrackPlan.versionToken(text))\""
            return Self.respond(request, Array(text.utf8), contentType: Self.playlistType, etag: etag, cacheControl: "no-cache")
        case "master.m3u8":
            let text = plan.masterPlaylist(query: "").render()
            return Self.respond(request, Array(text.utf8), contentType: Self.playlistType,
                                etag: "\"live-\(HLSTrackPlan.versionToken(text))\"", cacheControl: "no-cache")
        case "init.mp4":
            guard let initSegment = segmenter.initSegment else { return .error(404, "no init segment") }
            return Self.respond(request, initSegment, contentType: "audio/mp4", etag: "\"\(plan.version)-init\"",
                                cacheControl: Self.immutable)
        default:
            guard let sequence = Self.segmentIndex(name, extension: plan.segmentExtension),
                  let segment = segmenter.segment(sequence) else {
                return .error(404, "no such live segment")
            }
            return Self.respond(request, segment.bytes, contentType: segment.contentType,
                                etag: "\"\(plan.version)-live-\(sequence)\"", cacheControl: Self.immutable)
        }
    }
}

/// A few recent plans by path (count-bounded; the oldest insert goes first).
private final class PlanCache: @unchecked Sendable {
    // @unchecked: all state is behind `lock`.
    private let lock = Lock(())
    private var plans: [String: HLSTrackPlan] = [:]
    private var order: [String] = []
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    func get(_ key: String) -> HLSTrackPlan? { lock.withLock { _ in plans[key] } }

    func put(_ key: String, _ plan: HLSTrackPlan) {
        lock.withLock { _ in
            if plans.updateValue(plan, forKey: key) == nil { order.append(key) }
            while order.count > limit { plans.removeValue(forKey: order.removeFirst()) }
        }
    }
}
