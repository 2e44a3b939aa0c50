#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StreamShared

/// Errors from reading local files, carrying the call that failed and its errno.
public struct FileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    /// The C call that failed (`open`, `fstat`, `pread`).
    public var call: String
    public var errno: Int32

    /// The call, the path and the reason, without the component prefix.
    public var detail: String { "\(call) \(path): \(String(cString: strerror(errno)))" }

    public var description: String { "source: " + detail }
}

/// A local file opened for random-access reads (`pread`), closed when released.
public final class LocalFile: RandomAccessBytes, @unchecked Sendable {
    // @unchecked: the descriptor and size never change after init, and pread is thread-safe.
    public let path: String
    public let size: Int
    private let fd: Int32

    public init(path: String) throws(FileError) {
        self.path = path
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw FileError(path: path, call: "open", errno: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw FileError(path: path, call: "fstat", errno: code)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw FileError(path: path, call: "open", errno: EISDIR)
        }
        self.fd = fd
        self.size = Int(info.st_size)
    }

    deinit { close(fd) }

    /// Reads up to `buffer.count` bytes at `offset` into `buffer` (fewer at the end of the
    /// file); returns how many. The file source reads into one buffer this way, allocating nothing.
    public func read(at offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws(FileError) -> Int {
        guard offset >= 0, offset < size, let base = buffer.baseAddress else { return 0 }
        do {
            return try PositionalRead.fill(fd, UnsafeMutableRawBufferPointer(start: base, count: min(buffer.count, size - offset)), at: offset)
        } catch {
            throw FileError(path: path, call: "pread", errno: error.errno)
        }
    }

    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, offset < size, count > 0 else { return [] }
        do {
            return try PositionalRead.bytes(fd, at: offset, count: min(count, size - offset))
        } catch {
            throw FileError(path: path, call: "pread", errno: error.errno)
        }
    }
}
