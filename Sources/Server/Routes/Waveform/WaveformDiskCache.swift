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
    private let folder: BoundedFileFolder
    var directory: String { folder.directory }
    var maxBytes: Int { folder.maxBytes }

    init(directory: String, maxBytes: Int) {
        folder = BoundedFileFolder(directory: directory, maxBytes: maxBytes, suffix: ".wf")
    }

    static func name(trackID: Int, identity: UInt64) -> String {
        "\(trackID)-\(String(identity, radix: 16)).wf"
    }

    /// The waveform of that track version, when it is on disk and whole.
    func load(trackID: Int, identity: UInt64) -> WaveformPyramid? {
        let name = Self.name(trackID: trackID, identity: identity)
        guard let bytes = folder.read(name, limit: WaveformFile.headerSize + 4 * WaveformPyramid.defaultMaxBasePairs) else {
            return nil
        }
        guard let decoded = try? WaveformFile.decode(bytes), decoded.identity == identity else {
            folder.remove(name)
            return nil
        }
        folder.renew(name)
        return decoded.pyramid
    }

    /// Writes the finished waveform of that track version (any older version of the track's
    /// goes), then trims the folder to `maxBytes`. Failures are returned for the log.
    func store(_ pyramid: WaveformPyramid, trackID: Int, identity: UInt64) -> String? {
        guard let bytes = WaveformFile.encode(pyramid, identity: identity) else { return "not finished" }
        let trackPrefix = "\(trackID)-"
        return folder.write(bytes, as: Self.name(trackID: trackID, identity: identity)) { $0.hasPrefix(trackPrefix) }
    }
}
