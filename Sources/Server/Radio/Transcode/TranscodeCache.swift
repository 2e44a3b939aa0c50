#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StreamShared
import StreamHTTP

/// Completed transcodes on disk (`--transcode-cache DIR`), at most `capacity` bytes: the least
/// recently served file goes first. Files are named by a hash of their key; what the directory
/// held at start is taken over (oldest modification first), partial spools of a dead run removed.
final class TranscodeCache: @unchecked Sendable {
    // @unchecked: `directory` and `capacity` are immutable; the entries are behind a lock.
    let directory: String
    let capacity: Int
    private struct Entry { var size: Int; var used: UInt64 }
    private struct State { var entries: [String: Entry] = [:]; var total = 0; var clock: UInt64 = 0 }
    private let state = Lock(State())

    init(directory: String, capacity: Int) throws {
        self.directory = directory
        self.capacity = capacity
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var found: [(name: String, size: Int, mtime: Int)] = []
        for name in names {
            let path = directory + "/" + name
            if name.hasPrefix(".partial-") { unlink(path); continue }
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            found.append((name, Int(info.st_size), Int(info.st_mtim.tv_sec)))
        }
        state.withLock { s in
            for file in found.sorted(by: { $0.mtime < $1.mtime }) {
                s.clock += 1
                s.entries[file.name] = Entry(size: file.size, used: s.clock)
                s.total += file.size
            }
        }
        evict()
    }

    /// The file name of `key` with `ext` (FNV-1a 64 of the key, in hex).
    static func name(key: String, ext: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return String(hash, radix: 16) + "." + ext
    }

    func path(of name: String) -> String { directory + "/" + name }

    /// The cached file `name`, opened, and marked as just used; nil when not cached.
    func open(_ name: String) -> OpenFile? {
        guard state.withLock({ $0.entries[name] != nil }) else { return nil }
        guard let file = try? OpenFile(path: path(of: name)) else {
            state.withLock { s in if let gone = s.entries.removeValue(forKey: name) { s.total -= gone.size } }
            return nil
        }
        state.withLock { s in
            s.clock += 1
            s.entries[name]?.used = s.clock
        }
        return file
    }

    /// A completed transcode was moved in as `name`.
    func added(_ name: String, size: Int) {
        state.withLock { s in
            if let old = s.entries[name] { s.total -= old.size }
            s.clock += 1
            s.entries[name] = Entry(size: size, used: s.clock)
            s.total += size
        }
        evict()
    }

    /// Bytes cached now.
    var total: Int { state.withLock { $0.total } }

    private func evict() {
        let victims: [String] = state.withLock { s in
            var out: [String] = []
            while s.total > capacity, let oldest = s.entries.min(by: { $0.value.used < $1.value.used }) {
                s.entries[oldest.key] = nil
                s.total -= oldest.value.size
                out.append(oldest.key)
            }
            return out
        }
        // A file being served stays readable through its open descriptor.
        for name in victims { unlink(path(of: name)) }
    }
}
