/// What identifies one version of a file: a file whose stamp is unchanged is not read again.
public struct FileStamp: Sendable, Equatable, Hashable {
    public var size: Int
    /// Modification time in nanoseconds since the epoch.
    public var mtimeNanos: Int
    public var inode: UInt64

    public init(size: Int, mtimeNanos: Int, inode: UInt64) {
        self.size = size
        self.mtimeNanos = mtimeNanos
        self.inode = inode
    }

    /// The strong validator `/media` sends for this version (`OpenFile.etag`'s form).
    public var etag: String {
        "\"\(String(inode, radix: 16))-\(String(size, radix: 16))-\(String(UInt64(max(0, mtimeNanos)), radix: 16))\""
    }
}
