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
    let directory: String
    let maxBytes: Int
    /// Serializes the writes and the trimming (loads need no lock: files are renamed into place).
    private let writeLock = Lock(())
    /// Largest file loaded (a thumbnail of at most 4096 x 4096 pixels).
    static let maxFileBytes = 16 << 20

    init(directory: String, maxBytes: Int = 128 << 20) {
        self.directory = directory
        self.maxBytes = maxBytes
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
        let path = directory + "/" + Self.name(key: key)
        guard let bytes = Self.read(path, limit: Self.maxFileBytes) else { return nil }
        let prefix = Array(key.utf8) + [0x0A]
        guard bytes.count > prefix.count, bytes.starts(with: prefix) else {
            unlink(path)
            return nil
        }
        // Renewed as used, so the trimming keeps what is asked for.
        utimensat(AT_FDCWD, path, nil, 0)
        return Array(bytes[prefix.count...])
    }

    /// Stores the thumbnail for `key`, then trims the folder to `maxBytes`; a failure is returned for the log.
    func store(_ jpeg: [UInt8], key: String) -> String? {
        let bytes = Array(key.utf8) + [0x0A] + jpeg
        guard bytes.count <= min(maxBytes, Self.maxFileBytes) else { return nil }
        return writeLock.withLock { _ -> String? in
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                return "cannot create \(directory): \(error)"
            }
            let name = Self.name(key: key)
            let temporary = directory + "/." + name + ".\(getpid()).tmp"
            guard Self.write(bytes, to: temporary) else {
                unlink(temporary)
                return "cannot write \(temporary): \(String(cString: strerror(errno)))"
            }
            guard rename(temporary, directory + "/" + name) == 0 else {
                unlink(temporary)
                return "cannot rename \(temporary): \(String(cString: strerror(errno)))"
            }
            trim(keeping: name)
            return nil
        }
    }

    /// Removes the least recently used files over `maxBytes`.
    private func trim(keeping kept: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        var files: [(name: String, size: Int, used: Int)] = []
        for name in names where name.hasSuffix(".jpg") && !name.hasPrefix(".") {
            var info = stat()
            guard stat(directory + "/" + name, &info) == 0 else { continue }
            files.append((name, Int(info.st_size), Int(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int(info.st_mtim.tv_nsec)))
        }
        var total = files.reduce(0) { $0 + $1.size }
        for file in files.sorted(by: { $0.used < $1.used }) where total > maxBytes && file.name != kept {
            unlink(directory + "/" + file.name)
            total -= file.size
        }
    }

    static func read(_ path: String, limit: Int) -> [UInt8]? {
        guard let file = try? OpenFile(path: path), file.size <= limit else { return nil }
        return SubsonicCoverCache.readWhole(file)
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
