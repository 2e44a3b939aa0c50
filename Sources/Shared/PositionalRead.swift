#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `pread` that failed, with its errno; each reader turns it into its own error type.
public struct PositionalReadError: Error, Sendable, Equatable {
    public var errno: Int32

    public init(errno: Int32) { self.errno = errno }
}

/// Reads of a descriptor at an offset until the bytes asked for are in or the file ends: the one
/// loop behind every file reader of both programs (EINTR retried, short reads continued, a file
/// that shrank while read gives what it still had).
public enum PositionalRead {
    /// Fills `buffer` from `offset`; returns how many bytes came (fewer when the file ends first).
    public static func fill(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(PositionalReadError) -> Int {
        guard offset >= 0, let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let n = pread(fd, base + done, buffer.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw PositionalReadError(errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Up to `count` bytes at `offset` (fewer when the file ends first).
    public static func bytes(_ fd: Int32, at offset: Int, count: Int) throws(PositionalReadError) -> [UInt8] {
        guard offset >= 0, count > 0 else { return [] }
        var result = [UInt8](repeating: 0, count: count)
        let done = result.withUnsafeMutableBytes { raw in Result { () throws(PositionalReadError) -> Int in try fill(fd, raw, at: offset) } }
        result.removeLast(count - (try done.get()))
        return result
    }
}
