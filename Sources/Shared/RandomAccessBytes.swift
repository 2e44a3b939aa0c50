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
