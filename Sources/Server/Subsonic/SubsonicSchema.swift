import StreamLibrary

/// The Subsonic tables in the catalog database, versioned on their own (`meta` key
/// `subsonic_schema`), so they migrate apart from the catalog's `LibrarySchema`.
///
/// Ids: `subsonic_track_ids`, `subsonic_album_ids` and `subsonic_artist_ids` map the catalog's
/// row ids to Subsonic ids made from content (`SubsonicIDs`), so a rescan, a rebuilt database or a
/// moved folder gives the same ids. Per-user data (`user_id`: the accounts' id, 0 for the one
/// implicit user of an open server) is keyed by Subsonic id, so it outlives the catalog's rows:
/// `subsonic_annotations` (stars, ratings, play counts of songs, albums and artists), playlists
/// and their entries, play queues.
enum SubsonicSchema {
    static let versionKey = "subsonic_schema"

    static let migrations: [String] = [
        """
        CREATE TABLE IF NOT EXISTS subsonic_track_ids(
          track_id INTEGER PRIMARY KEY,
          base TEXT NOT NULL,
          sid TEXT NOT NULL UNIQUE);
        CREATE INDEX IF NOT EXISTS subsonic_track_ids_by_base ON subsonic_track_ids(base);
        CREATE TABLE IF NOT EXISTS subsonic_album_ids(
          album_id INTEGER PRIMARY KEY,
          sid TEXT NOT NULL UNIQUE,
          created INTEGER NOT NULL,
          genre TEXT);
        CREATE INDEX IF NOT EXISTS subsonic_albums_by_created ON subsonic_album_ids(created, album_id);
        CREATE TABLE IF NOT EXISTS subsonic_artist_ids(
          artist_id INTEGER PRIMARY KEY,
          sid TEXT NOT NULL UNIQUE);
        CREATE TABLE IF NOT EXISTS subsonic_annotations(
          user_id INTEGER NOT NULL,
          sid TEXT NOT NULL,
          starred_at INTEGER,
          rating INTEGER,
          play_count INTEGER NOT NULL DEFAULT 0,
          played_at INTEGER,
          PRIMARY KEY(user_id, sid)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS subsonic_annotations_starred ON subsonic_annotations(user_id, starred_at) WHERE starred_at IS NOT NULL;
        CREATE TABLE IF NOT EXISTS subsonic_playlists(
          id INTEGER PRIMARY KEY,
          user_id INTEGER NOT NULL,
          name TEXT NOT NULL,
          comment TEXT,
          public INTEGER NOT NULL DEFAULT 0,
          created INTEGER NOT NULL,
          changed INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS subsonic_playlist_entries(
          playlist_id INTEGER NOT NULL REFERENCES subsonic_playlists(id) ON DELETE CASCADE,
          position INTEGER NOT NULL,
          sid TEXT NOT NULL,
          PRIMARY KEY(playlist_id, position)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS subsonic_play_queues(
          user_id INTEGER PRIMARY KEY,
          current TEXT,
          position_ms INTEGER NOT NULL DEFAULT 0,
          changed INTEGER NOT NULL,
          changed_by TEXT NOT NULL,
          entries TEXT NOT NULL);
        """,
    ]

    /// Brings the tables to the current version in one transaction.
    static func migrate(_ store: LibraryStore) throws(SQLiteError) {
        try store.write { db throws(SQLiteError) in
            try db.transaction { () throws(SQLiteError) in
                let current = try db.queryOne("SELECT value FROM meta WHERE key = ?", [.text(versionKey)]) { Int($0.text(0)) ?? 0 } ?? 0
                guard current < migrations.count else { return }
                for step in migrations[current...] { try db.execute(step) }
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(versionKey), .text(String(migrations.count))])
            }
        }
    }
}
