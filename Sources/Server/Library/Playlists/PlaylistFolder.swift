#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StreamShared
import StreamHTTP
import Logging

/// A playlist file found in the music folder, as `/api/playlists` lists it.
public struct FolderPlaylist: Sendable, Equatable {
    /// Path relative to the music folder.
    public var path: String
    public var format: PlaylistFormat
    public var title: String?
    /// Entries that name a file of the library (what the served playlist holds).
    public var entries: Int
    /// Entries dropped: outside the folder, missing, not a local file, or hidden.
    public var dropped: Int
    public var size: Int
    public var mtime: Int

    /// Where streamd serves it, rewritten to library URLs, always as extended M3U (UTF-8): the
    /// path itself for a `.m3u8`, the path with `.m3u8` appended for `.m3u` and `.pls`, so that
    /// players which go by the name read it as M3U.
    public var url: String {
        "/playlist/file/" + PathResolver.percentEncode(path) + (path.lowercased().hasSuffix(".m3u8") ? "" : ".m3u8")
    }
}

/// One entry of a playlist file that names a file of the library: the path it resolves to, and
/// the entry as the file wrote it (its title and duration, which come before the catalog's).
public struct LibraryPlaylistEntry: Sendable, Equatable {
    /// Path of the file relative to the music folder.
    public var path: String
    /// The entry as written: its location (before it was resolved), title and duration.
    public var written: PlaylistEntry
}

/// Why a playlist file cannot be served.
public enum FolderPlaylistError: Error, Equatable, CustomStringConvertible {
    /// No playlist file at that path (or it is hidden, or outside the folder).
    case notFound
    /// The file is there but does not read as a track playlist.
    case unreadable(PlaylistError)

    public var description: String {
        switch self {
        case .notFound: return "no such playlist"
        case .unreadable(let error): return "\(error)"
        }
    }
}

/// The `.m3u`, `.m3u8` and `.pls` files under the music folder. The list is found by a walk of
/// the tree, kept until a folder's mtime changes (checked at most once a second); each file is
/// parsed again only when its size or mtime changes. Entries are resolved against the
/// playlist's folder and kept only when they name a regular, non-hidden file inside the music
/// folder; each dropped entry is logged once per version of the file.
public final class PlaylistFolder: @unchecked Sendable {
    // @unchecked: all mutable state is behind `lock` (`logger` is set before the server starts).
    public let resolver: PathResolver
    /// Where a dropped entry or an unreadable playlist is logged (a warning each).
    public var logger = Logger.silent("streamd.library")
    /// Bounds on the walk: folders deeper than this, and playlists beyond this count, are not looked at.
    static let maxDepth = 32
    static let maxPlaylists = 10_000
    static let extensions: Set<String> = ["m3u", "m3u8", "pls"]

    private let lock = Lock(())
    private var folderStamps: [String: Int] = [:]
    private var lastCheck: UInt64 = 0
    private var walked = false
    private var found: [String] = []                                   // absolute paths, sorted
    private var parsed: [String: (size: Int, mtime: Int, listing: FolderPlaylist?)] = [:]

    public init(resolver: PathResolver) {
        self.resolver = resolver
    }

    /// Whether a file name is a playlist's.
    public static func isPlaylist(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: "."), !name.hasPrefix(".") else { return false }
        return extensions.contains(name[name.index(after: dot)...].lowercased())
    }

    /// Every readable playlist, by path. Unreadable ones are left out (and logged once).
    public func list() -> [FolderPlaylist] {
        let paths = currentPaths()
        return paths.compactMap { absolute -> FolderPlaylist? in
            guard let file = try? OpenFile(path: absolute) else { return nil }
            if let cached = lock.withLock({ _ in parsed[absolute] }), cached.size == file.size, cached.mtime == file.mtime {
                return cached.listing
            }
            let listing = describe(absolute, file: file)
            lock.withLock { _ in parsed[absolute] = (file.size, file.mtime, listing) }
            return listing
        }
    }

    /// The entries of the playlist at `relative` (a decoded path under the music folder), read
    /// now, rewritten to library paths.
    public func entries(relative: String) throws(FolderPlaylistError) -> (playlist: PlaylistFile, entries: [LibraryPlaylistEntry]) {
        guard PathResolver.isSafeRelativePath(relative), !PathResolver.isHidden(relative),
              let name = relative.split(separator: "/").last, Self.isPlaylist(String(name)),
              let real = PathResolver.realPath(resolver.root + "/" + relative), let inside = resolver.relative(real),
              !PathResolver.isHidden(inside), let file = try? OpenFile(path: real) else { throw .notFound }
        let playlist: PlaylistFile
        do {
            playlist = try read(file, name: String(name))
        } catch {
            throw .unreadable(error)
        }
        let folder = String(real[..<(real.lastIndex(of: "/") ?? real.endIndex)])
        return (playlist, rewrite(playlist, folder: folder, name: inside, logger: nil))
    }

    // MARK: Reading

    private func read(_ file: OpenFile, name: String) throws(PlaylistError) -> PlaylistFile {
        let limit = PlaylistLimits().maxBytes
        guard file.size <= limit else { throw .tooLarge(bytes: file.size, limit: limit) }
        // A file cut short while read gives what was there; one that cannot be read, no entries.
        let bytes = (try? PositionalRead.bytes(file.fd, at: 0, count: file.size)) ?? []
        let dot = name.lastIndex(of: ".").map { name[name.index(after: $0)...] }
        return try PlaylistParser.parse(bytes[...], encoding: PlaylistTextEncoding(fileExtension: dot.map(String.init)))
    }

    private func describe(_ absolute: String, file: OpenFile) -> FolderPlaylist? {
        guard let relative = resolver.relative(absolute) else { return nil }
        let name = String(relative.split(separator: "/").last ?? "")
        let playlist: PlaylistFile
        do {
            playlist = try read(file, name: name)
        } catch {
            logger.warning("playlist \(relative): not listed: \(error)")
            return nil
        }
        let folder = String(absolute[..<(absolute.lastIndex(of: "/") ?? absolute.endIndex)])
        let kept = rewrite(playlist, folder: folder, name: relative, logger: logger)
        return FolderPlaylist(path: relative, format: playlist.format, title: playlist.title, entries: kept.count,
                              dropped: playlist.entries.count - kept.count, size: file.size, mtime: file.mtime)
    }

    /// The entries that name a regular, non-hidden file inside the music folder.
    private func rewrite(_ playlist: PlaylistFile, folder: String, name: String,
                         logger: Logger?) -> [LibraryPlaylistEntry] {
        var kept: [LibraryPlaylistEntry] = []
        var droppedCount = 0
        for (index, entry) in playlist.entries.enumerated() {
            let result = libraryPath(of: entry.location, folder: folder)
            switch result {
            case .success(let path):
                kept.append(LibraryPlaylistEntry(path: path, written: entry))
            case .failure(let why):
                droppedCount += 1
                // At most 20 lines a playlist: a list of 100,000 foreign paths must not flood the log.
                if droppedCount <= 20 {
                    logger?.warning("playlist \(name): entry \(index + 1) '\(entry.location.prefix(120))' dropped: \(why.reason)")
                } else if droppedCount == 21 {
                    logger?.warning("playlist \(name): more entries dropped (the listing counts them)")
                }
            }
        }
        return kept
    }

    struct DropReason: Error { var reason: String }

    /// The path relative to the music folder of the file a location names.
    private func libraryPath(of location: String, folder: String) -> Result<String, DropReason> {
        switch PlaylistLocation.resolve(location, relativeTo: folder) {
        case .remote:
            return .failure(DropReason(reason: "not a file of the music folder (a URL)"))
        case .unresolvable(let why):
            return .failure(DropReason(reason: why))
        case .local(let path):
            guard path.hasPrefix(resolver.root + "/") else { return .failure(DropReason(reason: "outside the music folder")) }
            guard let real = PathResolver.realPath(path) else { return .failure(DropReason(reason: "no such file")) }
            guard let relative = resolver.relative(real) else { return .failure(DropReason(reason: "outside the music folder")) }
            guard !PathResolver.isHidden(relative) else { return .failure(DropReason(reason: "a hidden file")) }
            var info = stat()
            guard stat(real, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                return .failure(DropReason(reason: "not a regular file"))
            }
            return .success(relative)
        }
    }

    // MARK: Finding the files

    /// The playlist files, walking the tree again when a folder changed.
    private func currentPaths() -> [String] {
        let now = monotonicNanos()
        let due: (walked: Bool, stamps: [String: Int])? = lock.withLock { _ in
            if walked && now - lastCheck <= 1_000_000_000 { return nil }
            lastCheck = now
            return (walked, folderStamps)
        }
        if let due, !due.walked || due.stamps.contains(where: { Self.mtimeNanos($0.key) != $0.value }) {
            var paths: [String] = []
            var stamps: [String: Int] = [:]
            walk(resolver.root, depth: 0, paths: &paths, stamps: &stamps)
            paths.sort()
            let present = Set(paths)
            lock.withLock { _ in
                found = paths
                folderStamps = stamps
                walked = true
                parsed = parsed.filter { present.contains($0.key) }
            }
        }
        return lock.withLock { _ in found }
    }

    static func mtimeNanos(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        // Wrapping: past 2262 (ext4 keeps times to 2446) the nanoseconds overflow 64 bits, and a
        // checked multiply trapped on a playlist's date.
        return Int(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int(info.st_mtim.tv_nsec)
    }

    private func walk(_ folder: String, depth: Int, paths: inout [String], stamps: inout [String: Int]) {
        guard depth < Self.maxDepth, let dir = opendir(folder) else { return }
        defer { closedir(dir) }
        stamps[folder] = Self.mtimeNanos(folder)
        var folders: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            let path = folder + "/" + name
            var type = entry.pointee.d_type
            if type == UInt8(DT_UNKNOWN) {
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                type = info.st_mode & S_IFMT == S_IFDIR ? UInt8(DT_DIR) : info.st_mode & S_IFMT == S_IFREG ? UInt8(DT_REG) : 0
            }
            // Symlinks are not followed: a playlist's entries may use them, the walk need not.
            if type == UInt8(DT_DIR) {
                folders.append(path)
            } else if type == UInt8(DT_REG), Self.isPlaylist(name), paths.count < Self.maxPlaylists {
                paths.append(path)
            }
        }
        for path in folders { walk(path, depth: depth + 1, paths: &paths, stamps: &stamps) }
    }
}
