#if canImport(Glibc)
import Glibc
#endif

/// A folder of files kept under `maxBytes`, least recently used out first: the one place the
/// server's disk caches (waveforms, cover thumbnails, transcodes) write, read and trim their files. A file is
/// written whole under a temporary name and renamed into place, so readers need no lock; a read
/// that counts renews the file's modification time, which is its last use; after each write the
/// least recently used files go until the folder fits. It touches the disk: off the event loops only.
public final class BoundedFileFolder: Sendable {
    public let directory: String
    public let maxBytes: Int
    /// The ending of the folder's own files (others, and temporary files, are left alone).
    public let suffix: String
    /// Serializes the writes and the trimming.
    private let writeLock = Lock(())
    /// Which of a file's times marks its last use.
    public enum UseMark: Sendable {
        /// The modification time (the waveform and cover caches, whose files carry no validator).
        case modification
        /// The access time: a file served as it is (a transcode) keeps the modification time its
        /// ETag is made from, so a hit does not change the validator clients hold.
        case access
    }
    public let useMark: UseMark

    public init(directory: String, maxBytes: Int, suffix: String, useMark: UseMark = .modification) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.suffix = suffix
        self.useMark = useMark
    }

    /// The whole file `name` if it exists and holds at most `limit` bytes.
    public func read(_ name: String, limit: Int) -> [UInt8]? {
        let fd = open(path(name), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 0, Int(info.st_size) <= limit else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress.map { $0 + done }, $0.count - done, off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// Marks `name` as just used, so the trimming keeps it longest.
    public func renew(_ name: String) {
        switch useMark {
        case .modification: utimensat(AT_FDCWD, path(name), nil, 0)
        case .access:
            // utimensat's `UTIME_NOW` and `UTIME_OMIT` (bits/stat.h macros Swift does not import).
            let now = (1 << 30) - 1, omit = (1 << 30) - 2
            var times = [timespec(tv_sec: 0, tv_nsec: now), timespec(tv_sec: 0, tv_nsec: omit)]
            utimensat(AT_FDCWD, path(name), &times, 0)
        }
    }

    /// Removes `name` (a file that did not decode).
    public func remove(_ name: String) { unlink(path(name)) }

    /// Writes `bytes` as `name`, removes the folder's files `isObsolete` picks (other versions of
    /// the same thing), then trims the folder to `maxBytes`. A file larger than the folder is not
    /// written (nil); a failure is returned for the log.
    public func write(_ bytes: [UInt8], as name: String, removing isObsolete: (String) -> Bool = { _ in false }) -> String? {
        guard bytes.count <= maxBytes else { return nil }
        return writeLock.withLock { _ -> String? in
            guard makeDirectory() else { return "cannot create \(directory): \(String(cString: strerror(errno)))" }
            let temporary = directory + "/." + name + ".\(getpid()).tmp"
            guard Self.write(bytes, to: temporary) else {
                unlink(temporary)
                return "cannot write \(temporary): \(String(cString: strerror(errno)))"
            }
            guard rename(temporary, path(name)) == 0 else {
                unlink(temporary)
                return "cannot rename \(temporary): \(String(cString: strerror(errno)))"
            }
            trim(keeping: name, removing: isObsolete)
            return nil
        }
    }

    /// A file whose maker moved it in whole as `name` (a completed transcode renamed from its
    /// spool): the folder is trimmed as after a `write`, keeping it.
    public func added(_ name: String) {
        writeLock.withLock { _ in trim(keeping: name, removing: { _ in false }) }
    }

    /// Trims the folder to `maxBytes` (the least recently used files first): what a new server
    /// finds there from an earlier run, under a smaller bound.
    public func trim() {
        writeLock.withLock { _ in trim(keeping: "", removing: { _ in false }) }
    }

    /// The bytes the folder's own files hold now (a walk of the folder).
    public var totalBytes: Int {
        guard let folder = opendir(directory) else { return 0 }
        defer { closedir(folder) }
        var total = 0
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasSuffix(suffix), !name.hasPrefix(".") else { continue }
            var info = stat()
            if stat(path(name), &info) == 0, info.st_mode & S_IFMT == S_IFREG { total += Int(info.st_size) }
        }
        return total
    }

    /// Where `name` is (or would be) on disk.
    public func path(of name: String) -> String { path(name) }

    private func path(_ name: String) -> String { directory + "/" + name }

    /// The folder, and any missing above it, created private (0700).
    private func makeDirectory() -> Bool {
        var made = directory.hasPrefix("/") ? "/" : ""
        for part in directory.split(separator: "/") {
            made += (made.isEmpty || made.hasSuffix("/") ? "" : "/") + part
            if mkdir(made, 0o700) != 0 && errno != EEXIST { return false }
        }
        return true
    }

    /// Removes the obsolete files, then the least recently used ones over `maxBytes`.
    private func trim(keeping kept: String, removing isObsolete: (String) -> Bool) {
        guard let folder = opendir(directory) else { return }
        var files: [(name: String, size: Int, used: Int)] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasSuffix(suffix), !name.hasPrefix(".") else { continue }
            if name != kept && isObsolete(name) {
                unlink(path(name))
                continue
            }
            var info = stat()
            guard stat(path(name), &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let used = useMark == .modification ? info.st_mtim : info.st_atim
            files.append((name, Int(info.st_size), Int(used.tv_sec) &* 1_000_000_000 &+ Int(used.tv_nsec)))
        }
        closedir(folder)
        var total = files.reduce(0) { $0 + $1.size }
        for file in files.sorted(by: { $0.used < $1.used }) where total > maxBytes && file.name != kept {
            unlink(path(file.name))
            total -= file.size
        }
    }

    private static func write(_ bytes: [UInt8], to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress.map { $0 + done }, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }
}
