import StreamShared
import StreamHTTP
import StreamLibrary

/// Streams, downloads, covers and lyrics.
extension SubsonicService {
    /// The catalog row of song `id`.
    func track(_ call: SubsonicCall) throws -> Track {
        let sid = try call.parameters.required("id")
        guard let song = try library.songs(sids: [sid], user: call.user.id).first else { throw SubsonicError.notFound("Song") }
        return song.track
    }

    /// `stream` and `download`. `download`, and `stream` when `SubsonicStreamChoice` says
    /// original, send the file as `/media/` does (Range, conditional requests, the catalog's
    /// Content-Type); a transcode goes through `/media/`'s transcoder with `format`, `bitrate`,
    /// `offset` and `estimate` taken from `format`, `maxBitRate`, `timeOffset` and `estimateContentLength`.
    func stream(_ call: SubsonicCall, download: Bool) throws -> SubsonicAnswer {
        let track = try track(call)
        let opened: (path: String, file: OpenFile)
        do {
            opened = try catalog.resolver.open(encoded: Substring(PathResolver.percentEncode(track.path)))
        } catch {
            throw SubsonicError.notFound("Song file")
        }
        if !download, transcode != nil {
            let choice = try SubsonicStreamChoice(call.parameters, suffix: SubsonicItems.suffix(track.path), sourceKbps: track.bitrate / 1000)
            if case .transcode(let format, let kbps, let offset, let estimate) = choice {
                return .http(transcodeResponse(call.request, path: track.path, opened: opened, format: format, kbps: kbps,
                                               offset: offset, estimate: estimate))
            }
        }
        var response = FileResponder.respond(to: call.request, file: opened.file,
                                             contentType: catalog.contentType(forAbsolutePath: opened.path), framing: framing)
        if download {
            let name = track.path.split(separator: "/").last.map(String.init) ?? "track"
            response.headers.append(("Content-Disposition", "attachment; filename*=UTF-8''" + PathResolver.percentEncode(name)))
        }
        return .http(response)
    }

    /// An album's cover for an album id, or a song's album's for a song id (artists have none here).
    func getCoverArt(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let sid = try call.parameters.required("id")
        let size = try call.parameters.int("size", in: Self.coverSizes)
        let albumID: Int?
        switch SubsonicIDKind(sid) {
        case .album: albumID = try ids.albumID(sid)
        case .song:
            albumID = try library.songs(sids: [sid], user: call.user.id).first?.track.albumID
        default: albumID = nil
        }
        guard let albumID, let response = try albumCover(call.request, albumID: albumID, size: size) else {
            throw SubsonicError.notFound("Cover art")
        }
        return .http(response)
    }

    /// Album `albumID`'s cover, resized so its longer side is at most `size` pixels when a size
    /// is asked for (the cover worker, then the memory and disk thumbnail cache), else the
    /// original; nil when there is no such album or it has no cover. What `getCoverArt` and the
    /// page's `/api/cover/<id>?size=` answer. Reads files: on the blocking pool.
    public func albumCover(_ request: HTTPRequest, albumID: Int, size: Int?) throws(SQLiteError) -> HTTPResponse? {
        // A thumbnail of the embedded cover already made (memory, then disk) is answered before
        // the picture is read from the track's tag; its key holds the track file's version.
        if let size, let etag = try CoverArt.embeddedETag(albumID: albumID, in: catalog),
           let hit = covers.cached(request, etag: etag, size: size) {
            return hit
        }
        switch try CoverArt.find(albumID: albumID, in: catalog) {
        case .failure, .success(nil):
            return nil
        case .success(.embedded(let data, let mimeType, let etag)?):
            return covers.respond(request, source: data, mimeType: mimeType, etag: etag, size: size)
        case .success(.file(let path, let mimeType)?):
            guard let file = try? OpenFile(path: path) else { return nil }
            // A thumbnail already made is answered without reading the cover file.
            if let size, let hit = covers.cached(request, etag: file.etag, size: size) { return hit }
            if let size, let bytes = SubsonicCoverCache.readWhole(file) {
                return covers.respond(request, source: bytes, mimeType: mimeType, etag: file.etag, size: size)
            }
            return FileResponder.respond(to: request, file: file, contentType: mimeType, framing: .contentLength)
        }
    }

    /// The sizes `getCoverArt` and `/api/cover` resize to (the longer side, in pixels).
    public static let coverSizes = 1...4096
}

/// `/media/`'s transcoder as `stream` calls it: the request (its target a `/media/` one with the
/// transcoder's query), the file's absolute path and the open file. Made on the blocking pool.
public typealias SubsonicTranscode = @Sendable (HTTPRequest, String, OpenFile) throws(HTTPRefusal) -> HTTPResponse

/// What `stream` sends, from the Subsonic parameters (README, "Subsonic", has the table):
/// - `format=raw`: the original, always (`timeOffset` is not applied to it).
/// - `format=mp3|opus`: that format at `maxBitRate` (its default when 0 or absent, clamped to the
///   encoder's range), unless the file already is that format within `maxBitRate` and no
///   `timeOffset` is asked: then the original.
/// - no (or another) format: the original when `maxBitRate` is 0/absent or the file's bitrate is
///   within it, and no `timeOffset`; else MP3 (what most clients expect; Navidrome's default is
///   configurable, gonic's per client).
/// - `estimateContentLength=true`: a Content-Length the transcode fills exactly (the transcoder's
///   `estimate=1`: MP3 padded with silent frames, Opus in hard CBR padded inside its last packets).
enum SubsonicStreamChoice: Equatable {
    case original
    case transcode(format: String, kbps: Int, offset: Double, estimate: Bool)

    /// The transcoder's formats, their default bitrates and ranges (kbit/s).
    static let formats: [String: (defaultKbps: Int, range: ClosedRange<Int>)] = ["mp3": (192, 8...320), "opus": (128, 6...510)]
    /// The format when a transcode is needed and none (or one the transcoder lacks) is named.
    static let defaultFormat = "mp3"

    init(_ parameters: SubsonicParameters, suffix: String, sourceKbps: Int) throws(SubsonicError) {
        let asked = parameters.string("format")?.lowercased()
        let maxKbps = try parameters.int("maxBitRate", default: 0, in: 0...100_000) ?? 0
        var offset = 0.0
        if let text = parameters.string("timeOffset"), !text.isEmpty {
            guard let value = QueryValue.decimal(text, in: 0...604_800) else { throw .invalid("timeOffset", "not seconds in 0...604800") }
            offset = value
        }
        let estimate = try parameters.bool("estimateContentLength") ?? false
        self.init(format: asked, maxKbps: maxKbps, offset: offset, estimate: estimate, suffix: suffix.lowercased(), sourceKbps: sourceKbps)
    }

    init(format asked: String?, maxKbps: Int, offset: Double, estimate: Bool, suffix: String, sourceKbps: Int) {
        if asked == "raw" {
            self = .original
            return
        }
        let withinLimit = maxKbps == 0 || (sourceKbps > 0 && sourceKbps <= maxKbps)
        let format: String
        if let asked, Self.formats[asked] != nil {
            guard asked != suffix || !withinLimit || offset > 0 else {
                self = .original
                return
            }
            format = asked
        } else {
            guard !withinLimit || offset > 0 else {
                self = .original
                return
            }
            format = Self.defaultFormat
        }
        guard let known = Self.formats[format] else {
            self = .original
            return
        }
        let kbps = maxKbps == 0 ? known.defaultKbps : min(max(maxKbps, known.range.lowerBound), known.range.upperBound)
        self = .transcode(format: format, kbps: kbps, offset: offset, estimate: estimate)
    }
}
