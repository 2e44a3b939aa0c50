#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation
import StreamHTTP

/// inotify over a folder tree: one watch per folder, events turned into the paths that changed.
/// The owner (the catalog's scanner thread) adds the folders a scan walked and reads events
/// when the descriptor is readable. Not thread-safe: one thread uses it.
final class FolderWatcher {
    /// The inotify descriptor (non-blocking), for poll.
    let fd: Int32
    private var folders: [Int32: String] = [:]
    /// Watches to add at most (test-only stand-in for the kernel's limit), nil for the kernel's.
    private let maxWatches: Int?
    /// Set once a watch could not be added for lack of room (ENOSPC): the tree is not fully covered.
    private(set) var limitHit = false

    /// What happened to a path.
    enum Event: Equatable {
        /// A file or folder appeared, changed, or was moved in or out: look at it again.
        case changed(path: String, isFolder: Bool)
        /// The kernel dropped events (its queue overflowed): only a full scan is sure.
        case overflow
    }

    static let mask = UInt32(IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO
                             | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    init(maxWatches: Int? = nil) throws(SystemError) {
        fd = try syscallChecked("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
        self.maxWatches = maxWatches
    }

    deinit { close(fd) }

    /// Folders watched now.
    var count: Int { folders.count }

    /// The kernel's limit on watches per user (`fs.inotify.max_user_watches`), when readable.
    static var kernelLimit: Int? {
        let fd = open("/proc/sys/fs/inotify/max_user_watches", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return Int(String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Watches every folder of `paths` (a folder already watched keeps its watch, now under
    /// this path: a moved folder's watch follows it). Returns false when the limit stopped it.
    @discardableResult
    func watch(_ paths: [String]) -> Bool {
        for path in paths {
            if let maxWatches, folders.count >= maxWatches, !folders.values.contains(path) {
                limitHit = true
                return false
            }
            let wd = inotify_add_watch(fd, path, Self.mask)
            if wd < 0 {
                if errno == ENOSPC {
                    limitHit = true
                    return false
                }
                continue   // gone meanwhile, or unreadable: the scan says so if it matters
            }
            folders[wd] = path
        }
        return true
    }

    /// Reads every pending event (never blocks).
    func read() -> [Event] {
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            parse(buffer[0..<n], into: &events)
        }
        return events
    }

    /// `struct inotify_event`: wd (i32), mask (u32), cookie (u32), len (u32), then `len` bytes of NUL-padded name.
    private func parse(_ bytes: ArraySlice<UInt8>, into events: inout [Event]) {
        var at = bytes.startIndex
        func u32(_ offset: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
        }
        while at + 16 <= bytes.endIndex {
            let wd = Int32(bitPattern: u32(at))
            let mask = u32(at + 4)
            let length = Int(u32(at + 12))
            guard at + 16 + length <= bytes.endIndex else { break }
            let name = String(decoding: bytes[(at + 16)..<(at + 16 + length)].prefix { $0 != 0 }, as: UTF8.self)
            at += 16 + length
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                events.append(.overflow)
                continue
            }
            guard let folder = folders[wd] else { continue }
            if mask & UInt32(IN_IGNORED) != 0 {
                folders[wd] = nil
                continue
            }
            if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                events.append(.changed(path: folder, isFolder: true))
                continue
            }
            guard !name.isEmpty else { continue }
            events.append(.changed(path: folder + "/" + name, isFolder: mask & UInt32(IN_ISDIR) != 0))
        }
    }
}
