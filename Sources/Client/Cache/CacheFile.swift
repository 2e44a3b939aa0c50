#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// A file of the disk cache, opened for positioned reads and writes (`pread`/`pwrite`), closed
/// when released. Every call retries EINTR and throws `FileError` with the call and errno.
final class CacheFile {
    let path: String
    private let fd: Int32

    /// Opens `path` for reading and writing, creating it (mode 0600) when `create` is set.
    init(path: String, create: Bool) throws {
        self.path = path
        var fd: Int32
        let flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0)
        repeat { fd = open(path, flags, 0o600) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw FileError(path: path, call: "open", errno: errno) }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Current length in bytes.
    func size() throws -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileError(path: path, call: "fstat", errno: errno) }
        return Int(info.st_size)
    }

    /// Bytes the file really occupies on disk (sparse holes not counted).
    func allocatedBytes() throws -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileError(path: path, call: "fstat", errno: errno) }
        return Int(info.st_blocks) * 512
    }

    /// Up to `count` bytes at `offset`; fewer at the end of the file.
    func read(at offset: Int, count: Int) throws -> [UInt8] {
        do {
            return try PositionalRead.bytes(fd, at: offset, count: count)
        } catch {
            throw FileError(path: path, call: "pread", errno: error.errno)
        }
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: ArraySlice<UInt8>, at offset: Int) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return pwrite(fd, base + done, bytes.count - done, off_t(offset + done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw FileError(path: path, call: "pwrite", errno: errno)
            }
            done += n
        }
    }

    /// Cuts the file to `length` bytes.
    func truncate(to length: Int) throws {
        guard ftruncate(fd, off_t(length)) == 0 else { throw FileError(path: path, call: "ftruncate", errno: errno) }
    }

    /// Removes a file; a file that is already gone is not an error.
    static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// Creates the directory (and its parents) when it does not exist.
    static func makeDirectory(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw FileError(path: prefix, call: "mkdir", errno: errno)
            }
            prefix += "/"
        }
    }

    /// Names of the entries of a directory (without "." and "..").
    static func list(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw FileError(path: path, call: "opendir", errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Modification time in nanoseconds since the epoch (the entry's last use), 0 when unknown;
    /// `Int64.max` for a time past 2262, whose nanoseconds do not fit (a checked multiply trapped
    /// there: ext4 keeps times to 2446, and a clock set wrong writes them).
    static func modificationTime(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        let (whole, overflow) = Int64(info.st_mtim.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        let (nanos, carry) = whole.addingReportingOverflow(Int64(info.st_mtim.tv_nsec))
        guard !overflow, !carry else { return info.st_mtim.tv_sec < 0 ? 0 : .max }
        return nanos
    }

    /// Sets the modification time to `nanoseconds` since the epoch: when the entry was last used.
    /// Given exactly rather than "now", because file times tick only every few milliseconds and
    /// the LRU order needs every use to be later than the one before.
    static func touch(_ path: String, nanoseconds: Int64) {
        let t = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        let times = [t, t]
        _ = utimensat(AT_FDCWD, path, times, 0)
    }
}
