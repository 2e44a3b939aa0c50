#if canImport(Glibc)
import Glibc
#endif

/// Turns streamplay's positional sources into the tracks of a queue: a local directory becomes
/// its audio files in path order (recursively, hidden entries left out); a track playlist (M3U,
/// extended M3U, PLS; file or URL) becomes its entries, resolved against its location; anything
/// else is one track as it is (a file, a URL, an HLS playlist). A streamd server's root URL
/// (`http://host:port/`) becomes its library (`StreamdLibrary`).
public enum QueueSources {
    /// File name endings played from a directory (what the pipeline plays, by name).
    public static let audioExtensions: Set<String> = ["mp3", "mp2", "mp1", "m4a", "m4b", "mp4", "aac", "adts", "wav",
                                                      "flac", "aif", "aiff", "aifc", "ogg", "oga", "opus"]
    /// At most this many tracks from one directory, and this deep.
    static let maxFiles = 100_000
    static let maxDepth = 32

    /// The expanded sources: the tracks, and one line per source or entry left out.
    public struct Expansion: Sendable, Equatable {
        public var tracks: [String]
        /// One line per problem ("queue: /music/x: no audio files"), the queue goes on without it.
        public var warnings: [String]

        public init(tracks: [String], warnings: [String]) {
            self.tracks = tracks
            self.warnings = warnings
        }
    }

    public static func expand(_ sources: [String], http: HTTPSourceOptions = HTTPSourceOptions()) -> Expansion {
        var result = Expansion(tracks: [], warnings: [])
        for source in sources { add(source, depth: 0, http: http, to: &result) }
        return result
    }

    private static func add(_ source: String, depth: Int, http: HTTPSourceOptions, to result: inout Expansion) {
        if StreamdLibrary.isServerRoot(source), depth == 0 {
            // A streamd server's root: its whole library, in path order.
            let all = StreamdLibrary.allTracksPlaylist(of: source)
            do {
                guard case .tracks(let entries, let warnings) = try QueuePlaylists.read(all, http: http) else {
                    result.warnings.append("queue: \(source): \(all) is not a track playlist (not a streamd server?)")
                    return
                }
                result.warnings += warnings
                if entries.isEmpty { result.warnings.append("queue: \(source): the library is empty") }
                result.tracks += entries
            } catch {
                result.warnings.append("queue: \(source): not a streamd server (\(all): \(error))")
            }
            return
        }
        if !source.contains("://"), isDirectory(source) {
            var files: [String] = []
            var problems: [String] = []
            walk(trimmedDirectory(source), depth: 0, into: &files, problems: &problems)
            files.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            result.warnings += problems
            if files.isEmpty { result.warnings.append("queue: \(source): no audio files") }
            result.tracks += files
            return
        }
        guard QueuePlaylists.mayBePlaylist(source) else {
            result.tracks.append(source)
            return
        }
        guard depth < QueuePlaylists.maxDepth else {
            result.warnings.append("queue: \(source): playlists nested deeper than \(QueuePlaylists.maxDepth), left out")
            return
        }
        do {
            switch try QueuePlaylists.read(source, http: http) {
            case .hls:
                result.tracks.append(source)
            case .tracks(let entries, let warnings):
                result.warnings += warnings
                if entries.isEmpty { result.warnings.append("queue: \(source): an empty playlist") }
                for entry in entries { add(entry, depth: depth + 1, http: http, to: &result) }
            }
        } catch let error as QueueError {
            result.warnings.append("\(error)")
        } catch {
            // Unreadable (unreachable, too large, not there): the player opens it as it would any
            // single source, with its retries and its own clear error.
            result.tracks.append(source)
        }
    }

    static func trimmedDirectory(_ path: String) -> String {
        var p = path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return p
    }

    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Collects audio files under `directory`; symbolic links to directories are not followed
    /// (a loop of links cannot trap the walk), links to files are.
    static func walk(_ directory: String, depth: Int, into files: inout [String], problems: inout [String]) {
        guard depth <= maxDepth else {
            problems.append("queue: \(directory): deeper than \(maxDepth) folders, not read")
            return
        }
        guard let dir = opendir(directory) else {
            problems.append("queue: \(directory): \(String(cString: strerror(errno)))")
            return
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
            if !name.hasPrefix(".") { names.append(name) }
        }
        for name in names {
            guard files.count < maxFiles else { return }
            let path = directory == "/" ? "/\(name)" : "\(directory)/\(name)"
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                walk(path, depth: depth + 1, into: &files, problems: &problems)
            case S_IFREG, S_IFLNK:
                let ext = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
                if name.contains("."), audioExtensions.contains(ext), !isDirectory(path) { files.append(path) }
            default:
                break
            }
        }
    }
}
