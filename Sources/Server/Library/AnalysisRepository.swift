#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP

/// The `analyses` table: the exact analysis (full seek index) of a version of a file, stored once built.
public struct AnalysisRepository: Sendable {
    let store: LibraryStore

    /// The exact analysis (full seek index) stored for this version of the file, if any.
    public func cached(path: String, stamp: FileStamp) throws(SQLiteError) -> TrackAnalysis? {
        let blob = try store.read { db throws(SQLiteError) in
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
    public func save(path: String, stamp: FileStamp, analysis: TrackAnalysis) throws(SQLiteError) {
        try store.write { db throws(SQLiteError) in
            try db.run("INSERT OR REPLACE INTO analyses(path, size, mtime_ns, inode, data) VALUES (?, ?, ?, ?, ?)",
                       [.text(path), .int(Int64(stamp.size)), .int(Int64(stamp.mtimeNanos)),
                        .int(Int64(bitPattern: stamp.inode)), .blob(analysis.encoded())])
        }
    }

    /// Number of exact analyses (seek indexes) cached.
    public func count() throws(SQLiteError) -> Int {
        try store.read { db throws(SQLiteError) in try db.queryOne("SELECT count(*) FROM analyses") { $0.int(0) } ?? 0 }
    }

    /// Listed tracks of at least `minSeconds` whose exact analysis is not stored for their
    /// current size, mtime and inode, longest first (what is worth building before anyone asks).
    /// WAV is left out: its seek is arithmetic.
    public func missing(minSeconds: Double, limit: Int) throws(SQLiteError) -> [(path: String, stamp: FileStamp)] {
        try store.read { db throws(SQLiteError) in
            try db.query("""
                SELECT t.path, t.size, t.mtime_ns, t.inode FROM tracks t
                LEFT JOIN analyses a ON a.path = t.path AND a.size = t.size AND a.mtime_ns = t.mtime_ns AND a.inode = t.inode
                WHERE a.path IS NULL AND t.duration_s >= ? AND t.container != 'wav'
                ORDER BY t.duration_s DESC, t.path LIMIT ?
                """, [.double(minSeconds), .int(Int64(max(0, limit)))]) { row in
                (row.text(0), FileStamp(size: row.int(1), mtimeNanos: row.int(2), inode: UInt64(bitPattern: Int64(row.int(3)))))
            }
        }
    }
}
