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

    /// The file as `/media/` sends it: Range, conditional requests, the catalog's Content-Type.
    /// `stream`'s `format`, `maxBitRate`, `timeOffset` and `estimateContentLength` are not
    /// applied yet (no transcoder on this branch): the original goes out, which every client
    /// plays when the server does not transcode (`format=raw` is the same).
    func stream(_ call: SubsonicCall, download: Bool) throws -> SubsonicAnswer {
        let track = try track(call)
        let opened: (path: String, file: OpenFile)
        do {
            opened = try catalog.resolver.open(encoded: Substring(PathResolver.percentEncode(track.path)))
        } catch {
            throw SubsonicError.notFound("Song file")
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
        let size = try call.parameters.int("size", in: 1...4096)
        let albumID: Int?
        switch SubsonicIDKind(sid) {
        case .album: albumID = try ids.albumID(sid)
        case .song:
            albumID = try library.songs(sids: [sid], user: call.user.id).first?.track.albumID
        default: albumID = nil
        }
        guard let albumID else { throw SubsonicError.notFound("Cover art") }
        switch try CoverArt.find(albumID: albumID, in: catalog) {
        case .failure, .success(nil):
            throw SubsonicError.notFound("Cover art")
        case .success(.embedded(let data, let mimeType, let etag)?):
            return .http(covers.respond(call.request, source: data, mimeType: mimeType, etag: etag, size: size))
        case .success(.file(let path, let mimeType)?):
            guard let file = try? OpenFile(path: path) else { throw SubsonicError.notFound("Cover art") }
            if let size, let bytes = SubsonicCoverCache.readWhole(file) {
                return .http(covers.respond(call.request, source: bytes, mimeType: mimeType, etag: file.etag, size: size))
            }
            return .http(FileResponder.respond(to: call.request, file: file, contentType: mimeType, framing: .contentLength))
        }
    }
}
