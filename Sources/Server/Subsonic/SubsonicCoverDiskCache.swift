import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP

/// Resized covers on disk (`<db>.covers/`, one `<hash>.jpg` per picture version and size), so
/// a restart serves them without resizing again. Each file starts with its key and a newline,
/// checked on load (a hash collision or a torn file is a miss, and the file goes). Bounded: after
/// each write the least recently used files (by modification time, which a load renews) go until
/// the folder holds at most `maxBytes`. Used off the event loop only (the blocking pool).
final class SubsonicCoverDiskCache: Sendable {
    private let folder: BoundedFileFolder
    var directory: String { folder.directory }
    var maxBytes: Int { folder.maxBytes }
    /// Largest file loaded (a thumbnail of at most 4096 x 4096 pixels).
    static let maxFileBytes = 16 << 20

    init(directory: String, maxBytes: Int = 128 << 20) {
        folder = BoundedFileFolder(directory: directory, maxBytes: maxBytes, suffix: ".jpg")
    }

    /// FNV-1a of the key, 16 hex digits: a file name whatever the key holds.
    static func name(key: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + ".jpg"
    }

    /// The stored thumbnail for `key`, if there is one.
    func load(key: String) -> [UInt8]? {
        let name = Self.name(key: key)
        guard let bytes = folder.read(name, limit: Self.maxFileBytes) else { return nil }
        let prefix = Array(key.utf8) + [0x0A]
        guard bytes.count > prefix.count, bytes.starts(with: prefix) else {
            folder.remove(name)
            return nil
        }
        folder.renew(name)
        return Array(bytes[prefix.count...])
    }

    /// Stores the thumbnail for `key`, then trims the folder to `maxBytes`; a failure is returned for the log.
    func store(_ jpeg: [UInt8], key: String) -> String? {
        let bytes = Array(key.utf8) + [0x0A] + jpeg
        guard bytes.count <= Self.maxFileBytes else { return nil }
        return folder.write(bytes, as: Self.name(key: key))
    }
}
