import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// Finished waveforms on disk, one `WaveformFile` per track version
/// (`<track id>-<identity>.wf` in a folder of the state directory, beside the catalog
/// database), so a track's waveform is computed once, not once per run. Bounded: after each
/// write, the least recently used files (by modification time, which a read renews) go until
/// the folder holds at most `maxBytes`. A file that does not decode is removed. Used off the
/// event loop only (the builder threads and the blocking pool).
final class WaveformDiskCache: Sendable {
    let directory: String
    let maxBytes: Int
    /// Serializes the writes and the trimming (reads need no lock: files are renamed into place).
    private let writeLock = Lock(())

    init(directory: String, maxBytes: Int) {
        self.directory = directory
        self.maxBytes = maxBytes
    }

    static func name(trackID: Int, identity: UInt64) -> String {
        "\(trackID)-\(String(identity, radix: 16)).wf"
    }

    /// The waveform of that track version, when it is on disk and whole.
    func load(trackID: Int, identity: UInt64) -> WaveformPyramid? {
        let path = directory + "/" + Self.name(trackID: trackID, identity: identity)
        guard let bytes = Self.read(path, limit: WaveformFile.headerSize + 4 * WaveformPyramid.defaultMaxBasePairs) else {
            return nil
        }
        guard let decoded = try? WaveformFile.decode(bytes), decoded.identity == identity else {
            unlink(path)
            return nil
        }
        // Renewed as used, so the trimming keeps what is asked for.
        utimensat(AT_FDCWD, path, nil, 0)
        return decoded.pyramid
    }

    /// Writes the finished waveform of that track version (any older version of the track's
    /// goes), then trims the folder to `maxBytes`. Failures are returned for the log.
    func store(_ pyramid: WaveformPyramid, trackID: Int, identity: UInt64) -> String? {
        guard let bytes = WaveformFile.encode(pyramid, identity: identity) else { return "not finished" }
        guard bytes.count <= maxBytes else { return nil }
        return writeLock.withLock { _ -> String? in
            let manager = FileManager.default
            do {
                try manager.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                            attributes: [.posixPermissions: 0o700])
            } catch {
                return "cannot create \(directory): \(error)"
            }
            let name = Self.name(trackID: trackID, identity: identity)
            let temporary = directory + "/." + name + ".\(getpid()).tmp"
            guard Self.write(bytes, to: temporary) else {
                unlink(temporary)
                return "cannot write \(temporary): \(String(cString: strerror(errno)))"
            }
            guard rename(temporary, directory + "/" + name) == 0 else {
                unlink(temporary)
                return "cannot rename \(temporary): \(String(cString: strerror(errno)))"
            }
            trim(keeping: name, trackPrefix: "\(trackID)-")
            return nil
        }
    }

    /// Removes the track's other versions, then the least recently used files over `maxBytes`.
    private func trim(keeping kept: String, trackPrefix: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        var files: [(name: String, size: Int, used: Int)] = []
        for name in names where name.hasSuffix(".wf") {
            let path = directory + "/" + name
            if name != kept && name.hasPrefix(trackPrefix) {
                unlink(path)
                continue
            }
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            files.append((name, Int(info.st_size), Int(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int(info.st_mtim.tv_nsec)))
        }
        var total = files.reduce(0) { $0 + $1.size }
        for file in files.sorted(by: { $0.used < $1.used }) where total > maxBytes && file.name != kept {
            unlink(directory + "/" + file.name)
            total -= file.size
        }
    }

    /// The whole file at `path` if it is at most `limit` bytes.
    static func read(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 0, Int(info.st_size) <= limit else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress.map { $0 + done }, $0.count - done, off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
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
