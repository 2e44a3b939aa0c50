#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP

/// Where an album's cover comes from, for every route that serves one (`/api/cover/<id>`,
/// Subsonic's `getCoverArt`): the picture embedded in its cover track, else an image file beside
/// its tracks.
public enum CoverArt {
    /// A cover found: bytes read from a track's tags, or an image file to send as it is.
    public enum Found: Sendable {
        case embedded(data: [UInt8], mimeType: String, etag: String)
        case file(path: String, mimeType: String)
    }

    /// Names looked for in an album's folder when no track embeds a picture, best first
    /// (compared without case): cover, folder, then front, each as JPEG, PNG, WebP or GIF.
    public static let names = ["cover", "folder", "front"]
    public static let extensions = ["jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "gif": "image/gif"]

    /// The cover of album `albumID`; nil when the album has none, and `.notFound` when there is no such album.
    public static func find(albumID: Int, in catalog: Catalog) throws(SQLiteError) -> Result<Found?, CoverArtMissing> {
        guard let source = try catalog.store.covers.source(albumID: albumID) else { return .failure(.noAlbum) }
        if let track = source.embeddedTrackPath, let picture = try embeddedPicture(track, in: catalog) {
            return .success(.embedded(data: picture.data, mimeType: picture.mimeType, etag: picture.etag))
        }
        if let image = folderImage(source.folder, resolver: catalog.resolver) {
            return .success(.file(path: image.path, mimeType: image.type))
        }
        return .success(nil)
    }

    /// The picture embedded in a track, read only from the version of the file the catalog
    /// analyzed (so the tag walked here is one a worker already read without harm), with an
    /// ETag derived from the file's.
    public static func embeddedPicture(_ relative: String, in catalog: Catalog) throws(SQLiteError)
        -> (data: [UInt8], mimeType: String, etag: String)? {
        guard let (file, etag) = try analyzedVersion(relative, in: catalog),
              let picture = try? EmbeddedPictureReader.picture(in: file) else { return nil }
        return (picture.data, picture.mimeType, etag)
    }

    /// The ETag album `albumID`'s embedded cover has when its cover track is the version the
    /// catalog analyzed (the file opened and its stamp compared, its tag not read): what a
    /// thumbnail of it is cached under, so a cached thumbnail is found before the picture is
    /// read, and a changed file (a new stamp) misses. nil: no cover track, or not that version.
    public static func embeddedETag(albumID: Int, in catalog: Catalog) throws(SQLiteError) -> String? {
        guard let track = try catalog.store.covers.source(albumID: albumID)?.embeddedTrackPath else { return nil }
        return try analyzedVersion(track, in: catalog)?.etag
    }

    /// The track at `relative`, opened, when it is the version the catalog analyzed, and the
    /// ETag of the picture it embeds (derived from the file's).
    private static func analyzedVersion(_ relative: String, in catalog: Catalog) throws(SQLiteError) -> (file: OpenFile, etag: String)? {
        guard let absolute = try? catalog.resolver.resolve(encoded: Substring(PathResolver.percentEncode(relative))),
              let file = try? OpenFile(path: absolute), let row = try catalog.store.tracks.track(path: relative),
              row.stamp == file.stamp else { return nil }
        return (file, "\"cover-" + file.etag.filter { $0 != "\"" } + "\"")
    }

    /// The largest cover a transcode carries (an OpusTags packet or ID3v2 tag of that size is
    /// still one a phone's player reads); a larger one is left out.
    public static let maxCarriedBytes = 4 << 20

    /// The cover a transcode of `track` (at `relative`) carries: the picture the track embeds,
    /// else its album's cover (the cover track's picture or the image beside the tracks); nil when
    /// there is none or it is larger than `maxCarriedBytes`. Reads files: off the event loop.
    public static func picture(forTrack track: Track, relative: String, in catalog: Catalog) -> EmbeddedPicture? {
        var found: EmbeddedPicture?
        if (track.coverArtBytes ?? 0) > 0, let own = try? embeddedPicture(relative, in: catalog) {
            found = EmbeddedPicture(mimeType: own.mimeType, data: own.data)
        } else if let album = track.albumID, case .success(let cover?)? = try? find(albumID: album, in: catalog) {
            switch cover {
            case .embedded(let data, let mimeType, _):
                found = EmbeddedPicture(mimeType: mimeType, data: data)
            case .file(let path, let mimeType):
                guard let file = try? OpenFile(path: path), file.size <= maxCarriedBytes,
                      let data = try? PositionalRead.bytes(file.fd, at: 0, count: file.size) else { return nil }
                found = EmbeddedPicture(mimeType: mimeType, data: data)
            }
        }
        guard let found, !found.data.isEmpty, found.data.count <= maxCarriedBytes else { return nil }
        return found
    }

    /// cover.jpg, folder.png, Front.jpeg ... in the album's folder: a regular, non-hidden file inside the library.
    public static func folderImage(_ folder: String, resolver: PathResolver) -> (path: String, type: String)? {
        let absolute = folder.isEmpty ? resolver.root : resolver.root + "/" + folder
        guard folder.isEmpty || (PathResolver.isSafeRelativePath(folder) && !PathResolver.isHidden(folder)),
              let dir = opendir(absolute) else { return nil }
        defer { closedir(dir) }
        var best: (rank: Int, name: String, type: String)?
        var seen = 0
        while let entry = readdir(dir), seen < 10_000 {
            seen += 1
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix("."), let dot = name.lastIndex(of: ".") else { continue }
            let stem = name[..<dot].lowercased()
            guard let rank = names.firstIndex(of: stem),
                  let type = extensions[name[name.index(after: dot)...].lowercased()] else { continue }
            if let current = best, (current.rank, current.name) <= (rank, name) { continue }
            best = (rank, name, type)
        }
        guard let best, let real = PathResolver.realPath(absolute + "/" + best.name),
              let inside = resolver.relative(real), !PathResolver.isHidden(inside) else { return nil }
        return (real, best.type)
    }
}

/// Why no cover could be looked for.
public enum CoverArtMissing: Error, Sendable {
    /// No album has that id.
    case noAlbum
}
