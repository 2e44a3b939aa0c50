import Foundation
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
        do { file = try LocalFile(path: path) } catch { throw SourceError.file("\(error)".replacingOccurrences(of: "source: ", with: "")) }
        let wanted = range ?? 0..<file.size
        guard wanted.count <= limit else { throw SourceError.tooLarge(url: location, limit: limit) }
        guard wanted.upperBound <= file.size else {
            throw SourceError.hls("\(location): bytes \(wanted.lowerBound)-\(wanted.upperBound - 1) are past the end (\(file.size) bytes)")
        }
        let bytes: [UInt8]
        do { bytes = try file.read(at: wanted.lowerBound, count: wanted.count) } catch {
            throw SourceError.file("\(error)".replacingOccurrences(of: "source: ", with: ""))
        }
        bytesRead += bytes.count
        return (bytes, path)
    }

    /// `uri` from a playlist, resolved against the playlist's own location (RFC 3986).
    static func resolve(_ uri: String, against base: String) -> String {
        let lower = uri.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return uri }
        if isRemote(base) {
            let encoded = uri.addingPercentEncoding(withAllowedCharacters: .urlAllowedInReference) ?? uri
            if let baseURL = URL(string: base), let url = URL(string: encoded, relativeTo: baseURL) {
                return url.absoluteString
            }
            return uri
        }
        if uri.hasPrefix("/") { return uri }
        let directory = (base as NSString).deletingLastPathComponent
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        return directory.isEmpty ? path : (directory as NSString).appendingPathComponent(path)
    }
}

extension CharacterSet {
    /// What may stay unescaped in a relative reference: path, query and fragment characters.
    static let urlAllowedInReference: CharacterSet = {
        var set = CharacterSet.urlPathAllowed
        set.formUnion(.urlQueryAllowed)
        set.insert(charactersIn: "%#")
        return set
    }()
}
