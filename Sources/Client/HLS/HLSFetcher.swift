import StreamShared

/// Reads playlists and segments whole, over HTTP (one keep-alive connection) or from local
/// files, and resolves the URIs inside a playlist against where it came from.
final class HLSFetcher {
    private let http: HTTPSource
    /// Every body byte read, for `bytes_downloaded`.
    private(set) var bytesRead = 0

    init(options: HTTPSourceOptions, origin: String) {
        http = HTTPSource(url: origin, options: options)
    }

    static func isRemote(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// The body of `location` (or the byte range of it), at most `limit` bytes, and the
    /// location relative URIs inside it resolve against.
    func get(_ location: String, range: Range<Int>? = nil, limit: Int) throws -> (bytes: [UInt8], base: String) {
        if let range, range.count > limit { throw SourceError.tooLarge(url: location, limit: limit) }
        if Self.isRemote(location) {
            var body = try http.get(location, range: range, limit: limit)
            if body.bytes.isEmpty {
                // A keep-alive connection that died inside the response head can end in an empty
                // "complete" body (no length was seen): ask once more on a fresh connection.
                body = try http.get(location, range: range, limit: limit)
            }
            bytesRead += body.bytes.count
            return (body.bytes, body.effectiveURL)
        }
        let path = location.hasPrefix("file://") ? String(location.dropFirst("file://".count)) : location
        let file: LocalFile
        do { file = try LocalFile(path: path) } catch { throw SourceError.file(error.detail) }
        let wanted = range ?? 0..<file.size
        guard wanted.count <= limit else { throw SourceError.tooLarge(url: location, limit: limit) }
        guard wanted.upperBound <= file.size else {
            throw SourceError.hls("\(location): bytes \(wanted.lowerBound)-\(wanted.upperBound - 1) are past the end (\(file.size) bytes)")
        }
        let bytes: [UInt8]
        do { bytes = try file.read(at: wanted.lowerBound, count: wanted.count) } catch {
            throw SourceError.file((error as? FileError)?.detail ?? "\(error)")
        }
        bytesRead += bytes.count
        return (bytes, path)
    }

    /// `uri` from a playlist, resolved against the playlist's own location (RFC 3986).
    static func resolve(_ uri: String, against base: String) -> String {
        let lower = uri.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return uri }
        if isRemote(base) {
            return URIReference(Substring(base)).resolving(URIReference(Substring(URIReference.percentEncoded(uri)))).text
        }
        if uri.hasPrefix("/") { return uri }
        let directory = directory(of: base)
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        if directory.isEmpty { return path }
        return directory.hasSuffix("/") ? directory + path : directory + "/" + path
    }

    /// A local path's folder: "/a/b" for "/a/b/list.m3u8", "/" for "/list.m3u8", "" for "list.m3u8".
    static func directory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}
