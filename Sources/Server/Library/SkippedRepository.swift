#if canImport(Glibc)
import Glibc
#endif
import Atomics
internal import CSQLite
import Foundation
import StreamShared
import StreamHTTP

/// The `skipped` table: the files under the folder that are not listed, and why.
public struct SkippedRepository: Sendable {
    let store: LibraryStore

    /// Why a file is not listed, for the files that are not.
    public func all() throws(SQLiteError) -> [SkippedRow] {
        try store.read { db throws(SQLiteError) in
            try db.query("SELECT path, size, mtime_ns, inode, reason, quarantined FROM skipped ORDER BY path") {
                SkippedRow(path: $0.text(0), stamp: FileStamp(size: $0.int(1), mtimeNanos: $0.int(2),
                                                              inode: UInt64(bitPattern: Int64($0.int(3)))),
                           reason: $0.text(4), quarantined: $0.int(5) != 0)
            }
        }
    }

    /// How many files are skipped and quarantined, and the first `limit` skipped rows by path:
    /// what `/api/status` shows, without reading every row (3,333 cover pictures at 100,000 tracks).
    public func summary(limit: Int) throws(SQLiteError) -> (count: Int, quarantined: Int, first: [SkippedRow]) {
        try store.read { db throws(SQLiteError) in
            let counts = try db.queryOne("SELECT count(*), coalesce(sum(quarantined != 0), 0) FROM skipped") { ($0.int(0), $0.int(1)) }
            let first = try db.query("SELECT path, size, mtime_ns, inode, reason, quarantined FROM skipped ORDER BY path LIMIT ?",
                                     [.int(Int64(max(0, limit)))]) {
                SkippedRow(path: $0.text(0), stamp: FileStamp(size: $0.int(1), mtimeNanos: $0.int(2),
                                                              inode: UInt64(bitPattern: Int64($0.int(3)))),
                           reason: $0.text(4), quarantined: $0.int(5) != 0)
            }
            return (counts?.0 ?? 0, counts?.1 ?? 0, first)
        }
    }

    /// The skipped-file row of a relative path.
    public func file(path: String) throws(SQLiteError) -> SkippedRow? {
        try store.read { db throws(SQLiteError) in
            try db.queryOne("SELECT path, size, mtime_ns, inode, reason, quarantined FROM skipped WHERE path = ?", [.text(path)]) {
                SkippedRow(path: $0.text(0), stamp: FileStamp(size: $0.int(1), mtimeNanos: $0.int(2),
                                                              inode: UInt64(bitPattern: Int64($0.int(3)))),
                           reason: $0.text(4), quarantined: $0.int(5) != 0)
            }
        }
    }
}
