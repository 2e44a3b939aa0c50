/// Random access to the bytes of a whole track (a file, or a downloaded buffer).
/// StreamShared does no I/O itself: callers implement this over files or memory.
public protocol RandomAccessBytes {
    /// Total size in bytes.
    var size: Int { get }
    /// Up to `count` bytes starting at `offset` (fewer only at the end of the data).
    func read(at offset: Int, count: Int) throws -> [UInt8]
}

/// An in-memory `RandomAccessBytes`.
public struct MemoryBytes: RandomAccessBytes, Sendable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var size: Int { bytes.count }
    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= bytes.count else { return [] }
        return Array(bytes[offset..<min(bytes.count, offset + count)])
    }
}

/// A `RandomAccessBytes` that reads the head and the tail of its source once each and answers
/// the reads inside them from memory: a quick look at a track (headers, tags, the last page or
/// frame) asks for the same few kilobytes several times (the probe, the metadata blocks one by
/// one, the trailing tags), each a system call and a copy; a file no larger than both windows
/// is read whole, once. Reads outside the windows go to the source.
public final class ReadAheadBytes<Source: RandomAccessBytes>: RandomAccessBytes {
    private let source: Source
    public let size: Int
    private let headLength: Int
    private let tailLength: Int
    private var head: [UInt8]?
    private var tail: [UInt8]?

    /// - Parameters:
    ///   - headBytes: bytes from the start read at the first read that falls inside them.
    ///   - tailBytes: bytes before the end read at the first read that falls inside them.
    public init(_ source: Source, headBytes: Int = 128 << 10, tailBytes: Int = 128 << 10) {
        self.source = source
        size = source.size
        let whole = size <= max(0, headBytes) + max(0, tailBytes)
        headLength = whole ? size : min(size, max(0, headBytes))
        tailLength = whole ? 0 : min(size - headLength, max(0, tailBytes))
    }

    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, count > 0, offset < size else { return [] }
        let end = offset + min(count, size - offset)
        if end <= headLength {
            if head == nil { head = try source.read(at: 0, count: headLength) }
            if let head, end <= head.count { return Array(head[offset..<end]) }
        } else if tailLength > 0, offset >= size - tailLength {
            let start = size - tailLength
            if tail == nil { tail = try source.read(at: start, count: tailLength) }
            if let tail, end - start <= tail.count { return Array(tail[(offset - start)..<(end - start)]) }
        }
        return try source.read(at: offset, count: count)
    }
}
