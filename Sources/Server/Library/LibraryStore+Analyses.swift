#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP

/// Cached exact analyses: the full seek index of a version of a file, stored once built.
extension LibraryStore {
    /// The exact analysis (full seek index) stored for this version of the file, if any.
    public func cachedAnalysis(path: String, stamp: FileStamp) throws(SQLiteError) -> TrackAnalysis? {
        let blob = try read { db throws(SQLiteError) in
            try db.queryOne("SELECT data FROM analyses WHERE path = ? AND size = ? AND mtime_ns = ? AND inode = ?",
                            [.text(path), .int(Int64(stamp.size)), .int(Int64(stamp.mtimeNanos)), .int(Int64(bitPattern: stamp.inode))]) {
                $0.blob(0)
            }
        }
        guard let blob else { return nil }
        // A blob from another build's wire version is simply not a hit.
        return try? TrackAnalysis(encoded: blob[...])
    }

    /// Stores the exact analysis of this version of the file (replacing an older one).
    public func storeAnalysis(path: String, stamp: FileStamp, analysis: TrackAnalysis) throws(SQLiteError) {
        try write { db throws(SQLiteError) in
            try db.run("INSERT OR REPLACE INTO analyses(path, size, mtime_ns, inode, data) VALUES (?, ?, ?, ?, ?)",
                       [.text(path), .int(Int64(stamp.size)), .int(Int64(stamp.mtimeNanos)),
                        .int(Int64(bitPattern: stamp.inode)), .blob(analysis.encoded())])
        }
    }
}
