#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP
import StreamLibrary

/// OpenSubsonic's `transcoding` extension (version 1): getTranscodeDecision (POST, the client's
/// ClientInfo as a JSON body) and getTranscodeStream (GET/HEAD, the decision's transcodeParams).
extension SubsonicService {
    /// The song a transcoding call names: `mediaId` with `mediaType=song` (streamd has no podcasts).
    func transcodingTrack(_ call: SubsonicCall) throws(SubsonicError) -> (sid: String, track: Track) {
        let sid = try call.parameters.required("mediaId")
        let type = try call.parameters.required("mediaType")
        guard type == "song" else {
            if type == "podcast" { throw SubsonicError.notFound("Podcast episode") }
            throw SubsonicError.invalid("mediaType", "song or podcast")
        }
        let songs: [SubsonicSong]
        do {
            songs = try library.songs(sids: [sid], user: call.user.id)
        } catch {
            throw SubsonicError.generic("library database: \(error)")
        }
        guard let song = songs.first else { throw SubsonicError.notFound("Song") }
        return (sid, song.track)
    }

    /// The decision for the song and the client: the original when a direct play profile takes it,
    /// else the first transcoding profile streamd makes; with a transcodeParams token for
    /// getTranscodeStream, bound to this user and this song.
    func getTranscodeDecision(_ call: SubsonicCall) throws -> SubsonicAnswer {
        guard call.request.method == "POST" else {
            throw SubsonicError.invalid("method", "getTranscodeDecision is a POST with the ClientInfo as a JSON body")
        }
        guard let body = call.request.formBody, call.request.formBodyIsJSON else {
            throw SubsonicError.missing("ClientInfo (a JSON body, Content-Type: application/json)")
        }
        let client = try SubsonicClientInfo(json: body)
        let (sid, track) = try transcodingTrack(call)
        let decision = SubsonicTranscodeDecision(source: SubsonicStreamDetails(track: track), client: client)
        // Without a transcoder (a service built alone) nothing can be transcoded.
        let transcodeMade = transcode == nil ? nil : decision.transcode
        var element = SubsonicElement([("canDirectPlay", .bool(decision.canDirectPlay)),
                                       ("canTranscode", .bool(!decision.canDirectPlay && transcodeMade != nil))])
        if !decision.reasons.isEmpty { element.add("transcodeReason", values: decision.reasons.map { .string($0) }) }
        if !decision.canDirectPlay && transcodeMade == nil {
            element.set("errorReason", .string(transcode == nil ? "this server has no transcoder" : decision.errorReason))
        }
        if decision.canDirectPlay || transcodeMade != nil {
            let grant = TranscodeGrant(userID: call.user.id, userName: call.user.name, sid: sid, original: decision.canDirectPlay,
                                       transcode: transcodeMade, expires: Int(time(nil)) + TranscodeGrants.lifetime)
            element.set("transcodeParams", .string(transcodeGrants.withLock { $0.add(grant) }))
        }
        element.add("sourceStream", decision.source.element)
        if !decision.canDirectPlay, let transcodeMade { element.add("transcodeStream", transcodeMade.stream.element) }
        let outcome = decision.canDirectPlay ? "direct play" : transcodeMade.map { "\($0.format) \($0.kbps)k" } ?? "none"
        logger.info("subsonic: transcode decision for \(sid) (\(client.name)/\(client.platform)): \(outcome)")
        var answer = SubsonicElement()
        answer.add("transcodeDecision", element)
        return .element(answer)
    }

    /// The stream a transcodeParams token allows: the original (direct play, no offset) or the
    /// transcode through `/media/`'s transcoder from `offset` seconds (exact: it decodes from the
    /// seek index's point before and drops the samples ahead of the offset). Refusals are HTTP
    /// statuses, as the spec lists them: 400 for a token that is not valid for this user and
    /// song (forged, expired, another user's), 404 for a song that is gone.
    func getTranscodeStream(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let token = try call.parameters.required("transcodeParams")
        var offset = 0.0
        if let text = call.parameters.string("offset"), !text.isEmpty {
            guard let value = QueryValue.decimal(text, in: 0...604_800) else { throw SubsonicError.invalid("offset", "not seconds in 0...604800") }
            offset = value
        }
        let sid = try call.parameters.required("mediaId")
        guard let grant = transcodeGrants.withLock({ $0.grant(token, now: Int(time(nil))) }),
              grant.userID == call.user.id, grant.userName == call.user.name, grant.sid == sid else {
            throw SubsonicError.invalid("transcodeParams", "not valid for this user and media (expired, or not from this server's getTranscodeDecision)")
        }
        let (_, track) = try transcodingTrack(call)
        let opened: (path: String, file: OpenFile)
        do {
            opened = try catalog.resolver.open(encoded: Substring(PathResolver.percentEncode(track.path)))
        } catch {
            throw SubsonicError.notFound("Song file")
        }
        if grant.original && offset == 0 {
            return .http(FileResponder.respond(to: call.request, file: opened.file,
                                               contentType: catalog.contentType(forAbsolutePath: opened.path), framing: framing))
        }
        // Direct play with an offset: the original cannot start part way in, the decision's
        // transcode can (the client listed it as one it takes).
        guard let made = grant.transcode else {
            throw SubsonicError.invalid("offset", "the decision was direct play and the client listed no transcode streamd makes; seek the original with Range")
        }
        return .http(transcodeResponse(call.request, path: track.path, opened: opened, format: made.format, kbps: made.kbps,
                                       offset: offset, estimate: false))
    }

    /// `/media/`'s transcode of the file as the response to `request`: the request's target
    /// becomes the `/media/` one with `format`, `bitrate`, `offset` and `estimate`, so the
    /// transcode joins, caches, queues and refuses (503) exactly as `/media/`'s.
    func transcodeResponse(_ request: HTTPRequest, path: String, opened: (path: String, file: OpenFile),
                           format: String, kbps: Int, offset: Double, estimate: Bool) -> HTTPResponse {
        guard let transcode else { return .error(500, "this server has no transcoder") }
        var request = request
        var query = "format=\(format)&bitrate=\(kbps)"
        if offset > 0 { query += "&offset=\(offset)" }
        if estimate { query += "&estimate=1" }
        request.target = "/media/" + PathResolver.percentEncode(path) + "?" + query
        request.formBody = nil
        do {
            return try transcode(request, opened.path, opened.file)
        } catch {
            // Capacity (503 + Retry-After) and the like stay HTTP answers: a player retries them.
            return error.response
        }
    }

    /// A refusal as a plain HTTP status (getTranscodeStream's): 401 wrong credentials, 404 not
    /// found, 403 not allowed, 400 anything else the caller got wrong, 500 the server's failures;
    /// `status` when the caller knows better (401 for any failed credential check).
    static func httpRefusal(_ error: SubsonicError, status known: Int? = nil) -> HTTPResponse {
        var status = known ?? 500
        if known == nil {
            switch error.code {
            case 40...44: status = 401
            case 50: status = 403
            case 70: status = 404
            case 10: status = 400
            default: status = 500
            }
        }
        var response = HTTPResponse.error(status, error.message)
        if status == 401 { response.headers.append(("WWW-Authenticate", "Basic realm=\"streamd\", charset=\"UTF-8\"")) }
        return response
    }
}
