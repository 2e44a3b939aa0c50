#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// A file opened to serve one response; the descriptor closes when the last user lets go.
public final class OpenFile: @unchecked Sendable {
    // @unchecked: every property is immutable after init; the fd is only read (pread/sendfile).
    public let fd: Int32
    public let size: Int
    /// Modification time, seconds since the epoch.
    public let mtime: Int
    /// Strong validator built from inode, size and mtime (nanoseconds), like nginx's.
    public let etag: String
    public let inode: UInt64
    /// Modification time, nanoseconds since the epoch.
    public let mtimeNanos: Int

    /// Opens `path` read-only; throws `SystemError` (ENOENT, EACCES, EISDIR, ...).
    public convenience init(path: String) throws(SystemError) {
        let fd = try syscallChecked("open") { open(path, O_RDONLY | O_CLOEXEC) }
        try self.init(adopting: fd)
    }

    /// Takes over `fd` (closed on failure too); throws EISDIR unless it is a regular file.
    public init(adopting fd: Int32) throws(SystemError) {
        var info = stat()
        if fstat(fd, &info) != 0 {
            let code = errno
            close(fd)
            throw SystemError(call: "fstat", errno: code)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw SystemError(call: "open", errno: EISDIR)
        }
        self.fd = fd
        self.size = Int(info.st_size)
        self.mtime = Int(info.st_mtim.tv_sec)
        // Wrapping arithmetic on signed seconds, as the catalog's stamps are made: a file dated
        // before 1970 (ext4 keeps times from 1901) has negative seconds, on which a checked
        // UInt64 conversion trapped, in a request for the file and in the analyzer worker. The
        // tag takes such a time as 0, as `FileStamp.etag` and the API's items do.
        let nanos = Int(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int(info.st_mtim.tv_nsec)
        self.inode = UInt64(info.st_ino)
        self.mtimeNanos = nanos
        self.etag = FileStamp(size: Int(info.st_size), mtimeNanos: nanos, inode: UInt64(info.st_ino)).etag
    }

    deinit { close(fd) }
}

/// One piece of a response on the wire: bytes in memory, or a span of a file sent with sendfile.
public enum BodyPart: Sendable {
    case bytes([UInt8])
    case file(OpenFile, offset: Int, length: Int)

    package var length: Int {
        switch self {
        case .bytes(let b): return b.count
        case .file(_, _, let length): return length
        }
    }
}

/// Produces a response body part by part, so a 4-hour file never sits in memory.
public protocol ResponseBody: AnyObject, Sendable {
    /// The next part, or nil when the body is complete.
    func nextPart() -> BodyPart?
    /// A body that costs CPU to produce (a generated playlist) lets the event loop serve its
    /// other connections after this many bytes written in one go; nil writes while the socket takes.
    var yieldAfterBytes: Int? { get }
}

extension ResponseBody {
    public var yieldAfterBytes: Int? { nil }
}

/// A body made of parts known up front (small bodies, ranges, multipart).
public final class FixedBody: ResponseBody, @unchecked Sendable {
    // @unchecked: used by one event-loop thread at a time.
    private var parts: [BodyPart]
    private var index = 0

    public init(_ parts: [BodyPart]) { self.parts = parts }

    public func nextPart() -> BodyPart? {
        guard index < parts.count else { return nil }
        defer { index += 1 }
        return parts[index]
    }
}

/// A file span framed with `Transfer-Encoding: chunked` around sendfile'd chunks.
public final class ChunkedFileBody: ResponseBody, @unchecked Sendable {
    // @unchecked: used by one event-loop thread at a time.
    private let file: OpenFile
    private var offset: Int
    private let end: Int
    private let chunkSize: Int
    private enum Step { case chunkHeader, chunkData(Int), chunkTrailer, done }
    private var step = Step.chunkHeader

    public init(file: OpenFile, range: Range<Int>, chunkSize: Int = 256 * 1024) {
        self.file = file
        self.offset = range.lowerBound
        self.end = range.upperBound
        self.chunkSize = chunkSize
    }

    public func nextPart() -> BodyPart? {
        switch step {
        case .chunkHeader:
            let n = min(chunkSize, end - offset)
            if n <= 0 {
                step = .done
                return .bytes(Array("0\r\n\r\n".utf8))
            }
            step = .chunkData(n)
            return .bytes(Array((String(n, radix: 16) + "\r\n").utf8))
        case .chunkData(let n):
            step = .chunkTrailer
            defer { offset += n }
            return .file(file, offset: offset, length: n)
        case .chunkTrailer:
            step = .chunkHeader
            return .bytes([0x0D, 0x0A])
        case .done:
            return nil
        }
    }
}

/// A response: status, headers and an optional body.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: (any ResponseBody)?
    /// Pace the body to this many bytes per second (`?kbps=N`).
    public var pacingBytesPerSecond: Int?
    /// Close the connection after this response whatever the request asked.
    public var closeConnection = false
    /// Say `Connection: keep-alive` when the connection stays open: an HTTP/1.0 client assumes
    /// a close otherwise and would wait for it (RFC 9112 section 9.3).
    public var announceKeepAlive = false
    /// An exchange that takes the connection over after the head (radio listeners and sources);
    /// it replaces `body`.
    public var live: (any LiveExchange)?
    /// The exchange reads the request's body (a radio source); any other request with a body is
    /// refused with 413.
    public var takesRequestBody = false
    /// Work that may wait (a worker process, the disk, a query that is not a point lookup): the
    /// event loop runs it on the server's `BlockingPool` and sends the response it makes instead
    /// of this one, so the loop's other connections never wait behind it.
    public var offLoop: (@Sendable () throws(HTTPRefusal) -> HTTPResponse)?
    /// A response that waits for an event (a segment still being encoded) without holding any
    /// thread: see `ParkedResponse`.
    public var parked: ParkedResponse?

    public init(status: Int, headers: [(String, String)] = [], body: (any ResponseBody)? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The response `make` returns, made on the blocking pool rather than on the event loop.
    public static func offLoop(_ make: @escaping @Sendable () throws(HTTPRefusal) -> HTTPResponse) -> HTTPResponse {
        var response = HTTPResponse(status: 0)
        response.offLoop = make
        return response
    }

    /// A response that waits, holding no thread, until `parked`'s event source wakes it or its
    /// timeout passes.
    public static func parked(_ parked: ParkedResponse) -> HTTPResponse {
        var response = HTTPResponse(status: 0)
        response.parked = parked
        return response
    }

    /// A small in-memory response with Content-Length.
    public static func bytes(_ status: Int, _ body: [UInt8], contentType: String,
                             extraHeaders: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status,
                     headers: [("Content-Type", contentType), ("Content-Length", String(body.count))] + extraHeaders,
                     body: FixedBody([.bytes(body)]))
    }

    /// A JSON error body `{"error": message}` (the contract for 4xx/5xx).
    public static func error(_ status: Int, _ message: String, close: Bool = false) -> HTTPResponse {
        var w = JSONObjectWriter()
        w.add("error", message)
        var response = bytes(status, Array((w.text + "\n").utf8), contentType: "application/json")
        response.closeConnection = close
        return response
    }

    /// The serialized status line and headers, ending with the blank line.
    func head(keepAlive: Bool, date: String) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(HTTPStatus.reason(status))\r\n"
        text += "Server: streamd\r\nDate: \(date)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !keepAlive {
            text += "Connection: close\r\n"
        } else if announceKeepAlive {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }
}

/// A request parked until an event: the loop keeps the connection (reading nothing more), asks
/// the event's source to wake it (`arm`), then makes the response on the blocking pool
/// (`resume`, which may park it again); when `timeout` passes first, `expired` answers. No thread
/// waits meanwhile, neither the loop's nor the pool's.
public struct ParkedResponse: Sendable {
    /// The longest wait from the first parking of the request (ns); re-parking does not extend it.
    public var timeout: UInt64
    /// Asks the event's source to call `wake` once, from any thread (at once when it is already due).
    public var arm: @Sendable (_ wake: @escaping @Sendable () -> Void) -> Void
    /// Made on the blocking pool after a wake: the response, or another parked one.
    public var resume: @Sendable () throws(HTTPRefusal) -> HTTPResponse
    /// The answer when the timeout passes first (or the server stops).
    public var expired: @Sendable () -> HTTPResponse

    public init(timeout: UInt64, arm: @escaping @Sendable (_ wake: @escaping @Sendable () -> Void) -> Void,
                resume: @escaping @Sendable () throws(HTTPRefusal) -> HTTPResponse, expired: @escaping @Sendable () -> HTTPResponse) {
        self.timeout = timeout
        self.arm = arm
        self.resume = resume
        self.expired = expired
    }
}
