#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamLibrary

/// A page login session as the catalog database keeps it (`web_sessions`): never the token,
/// only its hash.
struct StoredSession: Sendable, Equatable {
    /// BLAKE2b of the token (the cookie's value).
    var tokenHash: [UInt8]
    var userID: Int64
    /// The user's password stamp at login (`UserStore.userAndStamp`).
    var stamp: [UInt8]
    /// Wall-clock seconds since 1970.
    var createdSeconds: Int64
    var lastSeenSeconds: Int64
    var expiresSeconds: Int64
}

/// The page's sessions in the catalog database, so they outlive a restart. Every call reads or
/// writes SQLite: never on an event loop (login and logout run on the blocking pool, last-seen
/// times are written in batches by `SessionTable`'s flush thread).
extension UserStore {
    /// The sessions not expired at `now` (most recently seen first, at most `limit`), after
    /// deleting the expired ones.
    func loadSessions(now: Int64, limit: Int) throws(UserStoreError) -> [StoredSession] {
        try withDatabase { db throws(SQLiteError) in
            try db.run("DELETE FROM web_sessions WHERE expires_s <= ?", [.int(now)])
            return try db.query("""
                SELECT token_hash, user_id, stamp, created_s, last_seen_s, expires_s FROM web_sessions
                ORDER BY last_seen_s DESC LIMIT ?
                """, [.int(Int64(limit))]) { row in
                StoredSession(tokenHash: row.blob(0), userID: Int64(row.int(1)), stamp: row.blob(2), createdSeconds: Int64(row.int(3)),
                              lastSeenSeconds: Int64(row.int(4)), expiresSeconds: Int64(row.int(5)))
            }
        }
    }

    /// Keeps a new session.
    func insertSession(_ session: StoredSession) throws(UserStoreError) {
        try withDatabase { db throws(SQLiteError) in
            try db.run("INSERT OR REPLACE INTO web_sessions(token_hash, user_id, stamp, created_s, last_seen_s, expires_s) VALUES (?, ?, ?, ?, ?, ?)",
                       [.blob(session.tokenHash), .int(session.userID), .blob(session.stamp), .int(session.createdSeconds),
                        .int(session.lastSeenSeconds), .int(session.expiresSeconds)])
        }
    }

    /// One transaction: new last-seen times (an UPDATE, so a session revoked meanwhile by
    /// `streamd user passwd|del` in another process stays gone), the sessions ended, and the
    /// expired ones swept.
    func writeSessionChanges(touched: [(tokenHash: [UInt8], lastSeenSeconds: Int64, expiresSeconds: Int64)],
                             removed: [[UInt8]], now: Int64) throws(UserStoreError) {
        try withDatabase { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                for touch in touched {
                    try db.run("UPDATE web_sessions SET last_seen_s = ?, expires_s = ? WHERE token_hash = ?",
                               [.int(touch.lastSeenSeconds), .int(touch.expiresSeconds), .blob(touch.tokenHash)])
                }
                for hash in removed {
                    try db.run("DELETE FROM web_sessions WHERE token_hash = ?", [.blob(hash)])
                }
                try db.run("DELETE FROM web_sessions WHERE expires_s <= ?", [.int(now)])
            }
        }
    }

    /// Deletes one session at once (logout: it must not come back after a restart).
    func deleteSession(tokenHash: [UInt8]) throws(UserStoreError) {
        try withDatabase { db throws(SQLiteError) in
            try db.run("DELETE FROM web_sessions WHERE token_hash = ?", [.blob(tokenHash)])
        }
    }
}
