#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StreamShared
import StreamHTTP

/// Completed transcodes on disk (`--transcode-cache DIR`), at most `capacity` bytes: a
/// `BoundedFileFolder`, as the waveform and cover caches, so the least recently served file goes
/// first (a hit renews its access time, not its modification time, which the file's ETag is
/// made from; each file moved in trims the folder). Files are
/// named by a hash of their key; what the folder held at start is taken over, trimmed to the
/// bound, and partial spools of a dead run (`.partial-*`, which the folder leaves alone) removed;
/// those of a live process are another server's encodes under way, and stay.
final class TranscodeCache: Sendable {
    let directory: String
    let capacity: Int
    private let folder: BoundedFileFolder

    init(directory: String, capacity: Int) throws {
        self.directory = directory
        self.capacity = capacity
        // Every transcode's file (`.opus`, `.mp3`, HLS renditions): no one ending.
        folder = BoundedFileFolder(directory: directory, maxBytes: capacity, suffix: "", useMark: .access)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where name.hasPrefix(".partial-") && !Self.spoolWriterIsAlive(name) {
            unlink(directory + "/" + name)
        }
        folder.trim()
    }

    /// Whether the process a partial spool is named after (`.partial-<pid>-<n>`, `TranscodeJob`)
    /// still runs: another streamd sharing this folder (the default one is per user) is writing
    /// it, and removing it would cost that server its encode. A name without a pid: not alive.
    static func spoolWriterIsAlive(_ name: String) -> Bool {
        guard let pidText = name.dropFirst(".partial-".count).split(separator: "-").first,
              let pid = pid_t(pidText), pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// The file name of `key` with `ext` (FNV-1a 64 of the key, in hex).
    static func name(key: String, ext: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return String(hash, radix: 16) + "." + ext
    }

    func path(of name: String) -> String { folder.path(of: name) }

    /// The cached file `name`, opened, and marked as just used; nil when not cached.
    func open(_ name: String) -> OpenFile? {
        guard let file = try? OpenFile(path: path(of: name)) else { return nil }
        folder.renew(name)
        return file
    }

    /// A completed transcode was moved in as `name`: the folder is trimmed to its bound.
    func added(_ name: String) { folder.added(name) }

    /// Bytes cached now.
    var total: Int { folder.totalBytes }
}
