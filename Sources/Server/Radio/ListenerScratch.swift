#if canImport(Glibc)
import Glibc
#endif
import CLinux
import StreamHTTP
import StreamLibrary
import StreamHLS

/// Buffers for building one listener's writev, shared by every listener of one event loop
/// (they are pumped one at a time on its thread), so a listener costs no buffers of its own.
final class ListenerScratch: @unchecked Sendable {
    // @unchecked: only the owning loop's thread uses an instance.
    static let maxSegments = 48
    /// Room for one chunk-size line ("ffffffff\r\n") per segment.
    static let headerSlot = 12
    let iovecs: UnsafeMutablePointer<iovec>
    let headers: UnsafeMutablePointer<UInt8>
    var segments: [ListenerSegment] = []
    /// Receives what a listener sends (nothing is expected: the bytes are dropped).
    package let input: UnsafeMutableRawPointer
    static let inputSize = 2048

    init() {
        iovecs = .allocate(capacity: Self.maxSegments + 1)   // and the response head, on a first write
        headers = .allocate(capacity: Self.maxSegments * Self.headerSlot)
        input = .allocate(byteCount: Self.inputSize, alignment: 8)
        segments.reserveCapacity(Self.maxSegments)
    }

    deinit {
        iovecs.deallocate()
        headers.deallocate()
        input.deallocate()
    }
}

/// One piece of a listener's writev, recorded so the bytes the kernel took can be accounted
/// exactly as they were planned.
enum ListenerSegment {
    /// The chunk-size line of an HTTP chunk of `size` bytes, from byte `from`; `meta` is the ICY
    /// block that chunk carries, decided with the size.
    case header(size: Int, from: Int, meta: ICYBlock?)
    /// The CRLF after an HTTP chunk's data, `count` bytes of it.
    case trailer(count: Int)
    /// An ICY block from byte `from`.
    case meta(ICYBlock, from: Int)
    /// Audio bytes at the cursor.
    case audio(count: Int)
}
