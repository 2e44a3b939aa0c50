#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP

/// The known files of the catalog (listed and skipped) in path order, read a batch at a time
/// (keyset paging: a long scan holds no read transaction and no list of the whole library).
final class KnownFileCursor {
    private let store: LibraryStore
    private let prefix: String?
    private var batch: [(path: String, stamp: FileStamp)] = []
    private var index = 0
    private var exhausted = false
    static let batchSize = 2048

    init(store: LibraryStore, under prefix: String?) {
        self.store = store
        self.prefix = prefix
    }

    /// The next known file, or nil after the last.
    func peek() throws(SQLiteError) -> (path: String, stamp: FileStamp)? {
        if index == batch.count && !exhausted {
            let after = batch.last?.path ?? ""
            batch = try store.stamps(after: after, under: prefix, limit: Self.batchSize)
            index = 0
            exhausted = batch.count < Self.batchSize
        }
        return index < batch.count ? batch[index] : nil
    }

    func advance() { index += 1 }
}

/// One scan: the folder walked in path order (each folder's entries sorted by their bytes, a
/// folder's name with its `/`, which is the order SQLite keeps the paths in), merged with the
/// known files as they come, so that neither the folder's listing nor the catalog's is ever
/// held whole: new and changed files are handed to `read` a chunk at a time, the known files
/// the walk did not meet are removed at the end. Files reached through a symbolic link (inside
/// the library; they come out of order) are set apart and compared one by one at the end.
/// Companion files (`CompanionFiles`: cover pictures, notes, playlists) are counted and passed
/// by: never read, never listed, and a catalog row left from before is removed like a gone file.
final class CatalogWalk {
    let root: String
    let excludedPrefix: String?
    private let cursor: KnownFileCursor
    private let store: LibraryStore
    private let chunkSize: Int
    private let read: ([(path: String, stamp: FileStamp)]) -> Void
    /// Returns once what `read` was given is in the catalog (it may write on another thread).
    private let awaitWrites: () -> Void
    /// Called with the counts so far (files found, files to read, companion files passed by)
    /// every few hundred files.
    private let progress: (_ found: Int, _ toRead: Int, _ ignored: Int) -> Void

    private var pending: [(path: String, stamp: FileStamp)] = []
    private var removed: [String] = []
    private var strays: [String: FileStamp] = [:]
    /// Every folder walked (absolute), for the watcher.
    private(set) var folders: [String] = []
    private(set) var found = 0
    private(set) var toRead = 0
    /// Companion files met (`CompanionFiles`), not counted in `found`.
    private(set) var ignored = 0
    private(set) var failure: SQLiteError?

    init(root: String, excludedPrefix: String?, store: LibraryStore, under prefix: String?, chunkSize: Int,
         read: @escaping ([(path: String, stamp: FileStamp)]) -> Void,
         awaitWrites: @escaping () -> Void = {},
         progress: @escaping (_ found: Int, _ toRead: Int, _ ignored: Int) -> Void) {
        self.root = root
        self.excludedPrefix = excludedPrefix
        self.store = store
        cursor = KnownFileCursor(store: store, under: prefix)
        self.chunkSize = max(1, chunkSize)
        self.read = read
        self.awaitWrites = awaitWrites
        self.progress = progress
    }

    /// Walks the whole folder, reads what changed and returns the known files that are gone.
    func scanAll() -> [String] {
        walk(root, depth: 0)
        return finish()
    }

    /// Walks one file or folder (relative path) the same way.
    func scan(relative: String) -> [String] {
        visit(root + "/" + relative, depth: relative.split(separator: "/").count, ordered: true)
        return finish()
    }

    /// Byte order of UTF-8, SQLite's BINARY collation (Swift's `<` on strings is not).
    static func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    private func walk(_ folder: String, depth: Int, ordered: Bool = true) {
        guard depth < 32, failure == nil, let dir = opendir(folder) else { return }
        folders.append(folder)
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        closedir(dir)   // before going down: open folders stay one, however deep the tree
        // What a name sorts as among the paths: a folder's with the `/` its files carry.
        var entries: [(key: String, path: String, info: stat)] = []
        entries.reserveCapacity(names.count)
        for name in names {
            let path = folder + "/" + name
            if let excludedPrefix, path.hasPrefix(excludedPrefix) { continue }
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            entries.append((info.st_mode & S_IFMT == S_IFDIR ? name + "/" : name, path, info))
        }
        if ordered { entries.sort { Self.precedes($0.key, $1.key) } }
        for entry in entries where failure == nil {
            handle(entry.path, entry.info, depth: depth + 1, ordered: ordered)
        }
    }

    /// Lists the file at `candidate`, or walks the folder there.
    private func visit(_ candidate: String, depth: Int, ordered: Bool) {
        if let excludedPrefix, candidate.hasPrefix(excludedPrefix) { return }
        var info = stat()
        guard lstat(candidate, &info) == 0 else { return }
        handle(candidate, info, depth: depth, ordered: ordered)
    }

    private func handle(_ candidate: String, _ found: stat, depth: Int, ordered: Bool) {
        var path = candidate
        var info = found
        var inOrder = ordered
        if info.st_mode & S_IFMT == S_IFLNK {
            // Follow symlinks only when they stay inside the library, and not into a hidden part
            // of it; what they lead to is filed under its own path, out of the walk's order.
            guard let real = PathResolver.realPath(path), real.hasPrefix(root + "/"),
                  !PathResolver.isHidden(String(real.dropFirst(root.count + 1))),
                  stat(real, &info) == 0 else { return }
            path = real
            inOrder = false
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            walk(path, depth: depth, ordered: inOrder)
        } else if info.st_mode & S_IFMT == S_IFREG {
            let relative = String(path.dropFirst(root.count + 1))
            if CompanionFiles.isCompanion(relative) {
                ignored += 1
                return
            }
            let stamp = Catalog.stamp(info)
            if inOrder { file(relative, stamp) } else { strays[relative] = stamp }
        }
    }

    /// One file met in path order: the known files before it are gone; it is read unless known
    /// with the same stamp.
    private func file(_ relative: String, _ stamp: FileStamp) {
        do {
            while let known = try cursor.peek(), Self.precedes(known.path, relative) {
                removed.append(known.path)
                cursor.advance()
            }
            var changed = true
            if let known = try cursor.peek(), known.path == relative {
                cursor.advance()
                changed = known.stamp != stamp
            }
            found += 1
            if changed { queue(relative, stamp) }
            if found % 256 == 0 { progress(found, toRead, ignored) }
        } catch {
            failure = error
        }
    }

    private func queue(_ relative: String, _ stamp: FileStamp) {
        pending.append((relative, stamp))
        toRead += 1
        if pending.count >= chunkSize { flush() }
    }

    private func flush() {
        guard !pending.isEmpty else { return }
        progress(found, toRead, ignored)
        read(pending)
        pending.removeAll(keepingCapacity: true)
    }

    /// The known files after the last one walked are gone; the strays are compared with what
    /// the catalog holds for their paths; the gone files are returned (none after a failure).
    private func finish() -> [String] {
        do {
            while let known = try cursor.peek() {
                removed.append(known.path)
                cursor.advance()
            }
        } catch {
            failure = error
        }
        flush()
        guard failure == nil else { return [] }
        if !strays.isEmpty { awaitWrites() }
        for (relative, stamp) in strays.sorted(by: { Self.precedes($0.key, $1.key) }) {
            do {
                if try store.stamps(under: relative)[relative] != stamp {
                    found += 1
                    queue(relative, stamp)
                }
            } catch {
                failure = error
                return []
            }
        }
        flush()
        progress(found, toRead, ignored)
        return strays.isEmpty ? removed : removed.filter { strays[$0] == nil }
    }
}
