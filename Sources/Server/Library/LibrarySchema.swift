import StreamHTTP
/// The catalog database's tables and their migrations.
///
/// `PRAGMA application_id` marks the file as streamd's; `PRAGMA user_version` is the schema
/// version. Migration N takes a database from version N to N + 1; a new database runs them all.
enum LibrarySchema {
    /// 'strd': a database without it (and not empty) is someone else's file.
    static let applicationID: Int = 0x7374_7264
    static var version: Int { migrations.count }

    static let migrations: [String] = [
        // 0 → 1: tracks keyed by relative path, artists, albums, search index, skipped files,
        // cached exact analyses (seek indexes).
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE artists(
          id INTEGER PRIMARY KEY,
          name TEXT NOT NULL UNIQUE COLLATE NOCASE);
        CREATE TABLE albums(
          id INTEGER PRIMARY KEY,
          artist_id INTEGER NOT NULL REFERENCES artists(id),
          artist_name TEXT NOT NULL,
          title TEXT NOT NULL COLLATE NOCASE,
          track_count INTEGER NOT NULL DEFAULT 0,
          duration_s REAL NOT NULL DEFAULT 0,
          year INTEGER,
          cover_track_id INTEGER,
          folder TEXT NOT NULL DEFAULT '',
          UNIQUE(artist_id, title));
        CREATE INDEX albums_by_name ON albums(artist_name COLLATE NOCASE, title COLLATE NOCASE, id);
        CREATE INDEX albums_by_title ON albums(title COLLATE NOCASE, id);
        CREATE TABLE tracks(
          id INTEGER PRIMARY KEY,
          path TEXT NOT NULL UNIQUE,
          size INTEGER NOT NULL,
          mtime_ns INTEGER NOT NULL,
          inode INTEGER NOT NULL,
          title TEXT, artist TEXT, album TEXT, album_artist TEXT,
          track_number INTEGER, track_total INTEGER, disc_number INTEGER, disc_total INTEGER,
          year INTEGER, genre TEXT,
          duration_s REAL NOT NULL,
          codec TEXT NOT NULL, container TEXT NOT NULL,
          sample_rate INTEGER NOT NULL, channels INTEGER NOT NULL, bitrate INTEGER NOT NULL,
          frames INTEGER NOT NULL, total_samples INTEGER NOT NULL, first_frame_offset INTEGER NOT NULL,
          encoder_delay INTEGER NOT NULL, encoder_padding INTEGER NOT NULL,
          rg_track_gain REAL, rg_track_peak REAL, rg_album_gain REAL, rg_album_peak REAL,
          cover_art_bytes INTEGER,
          sort_title TEXT NOT NULL,
          artist_id INTEGER REFERENCES artists(id),
          album_id INTEGER REFERENCES albums(id));
        CREATE INDEX tracks_by_title ON tracks(sort_title COLLATE NOCASE, path);
        CREATE INDEX tracks_by_artist ON tracks(artist COLLATE NOCASE, album COLLATE NOCASE, disc_number, track_number, path);
        CREATE INDEX tracks_by_album ON tracks(album_id, disc_number, track_number, path);
        CREATE INDEX tracks_by_artist_id ON tracks(artist_id);
        CREATE INDEX tracks_by_album_title ON tracks(album COLLATE NOCASE, disc_number, track_number, path);
        CREATE INDEX tracks_by_duration ON tracks(duration_s, path);
        CREATE INDEX tracks_by_year ON tracks(year, path);
        CREATE VIRTUAL TABLE tracks_fts USING fts5(title, artist, album, tokenize = 'unicode61 remove_diacritics 2');
        CREATE TRIGGER tracks_fts_insert AFTER INSERT ON tracks BEGIN
          INSERT INTO tracks_fts(rowid, title, artist, album)
            VALUES (new.id, new.sort_title, coalesce(new.artist, '') || ' ' || coalesce(new.album_artist, ''), coalesce(new.album, ''));
        END;
        CREATE TRIGGER tracks_fts_delete AFTER DELETE ON tracks BEGIN
          DELETE FROM tracks_fts WHERE rowid = old.id;
        END;
        CREATE TRIGGER tracks_fts_update AFTER UPDATE OF sort_title, artist, album_artist, album ON tracks BEGIN
          DELETE FROM tracks_fts WHERE rowid = old.id;
          INSERT INTO tracks_fts(rowid, title, artist, album)
            VALUES (new.id, new.sort_title, coalesce(new.artist, '') || ' ' || coalesce(new.album_artist, ''), coalesce(new.album, ''));
        END;
        CREATE TABLE skipped(
          path TEXT PRIMARY KEY,
          size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL,
          reason TEXT NOT NULL, quarantined INTEGER NOT NULL);
        CREATE TABLE analyses(
          path TEXT PRIMARY KEY,
          size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL,
          data BLOB NOT NULL);
        """,
        // 1 → 2: the search index keeps prefix indexes of 2 to 6 characters. A prefix query
        // ("riv"*) without one merges the doclists of every term it matches into memory before
        // its first row, on every query: 0.5-1 ms at 100,000 tracks, three times per search;
        // with them, the prefix's own doclist is read in rowid order and LIMIT stops it early
        // (0.05 ms). Longer prefixes match few terms, which is cheap to merge. The index grows by
        // about a fifth of the database (124 → 149 MB at 100,000 tracks). The new index starts
        // empty without its insert trigger, as in a first scan: the next full scan fills it from
        // the tracks before its walk (`LibraryStore.indexSearchBacklog`), after the server
        // listens (filling it here took 2.6 s before listening at 100,000 tracks).
        """
        DROP TABLE tracks_fts;
        CREATE VIRTUAL TABLE tracks_fts USING fts5(title, artist, album, tokenize = 'unicode61 remove_diacritics 2',
                                                   prefix = '2 3 4 5 6');
        DROP TRIGGER IF EXISTS tracks_fts_insert;
        """,
        // 2 → 3: each track's `/api/tracks` item, written with the row (`TrackJSON`), so that a
        // page or a search answer is copied from one column per track instead of written from
        // twenty. Any change to a track's row drops its item (the triggers), so an item is never
        // older than its row; the writer writes it again at once, and rows without one (those
        // of a database from before, until the next scan fills them in) are written from the
        // columns when asked.
        """
        CREATE TABLE track_json(id INTEGER PRIMARY KEY, json BLOB NOT NULL);
        CREATE TRIGGER track_json_delete AFTER DELETE ON tracks BEGIN
          DELETE FROM track_json WHERE id = old.id;
        END;
        CREATE TRIGGER track_json_update AFTER UPDATE ON tracks BEGIN
          DELETE FROM track_json WHERE id = old.id;
        END;
        """,
        // 3 → 4: fields the tags leave empty are taken from the path (`PathDerivedTags`) and
        // noted in `derived` (a `DerivedFields` bit set; an album's is its own title/artist).
        // The stored items lack the `derived` member: dropped, written again from the columns
        // until the next full scan fills them in. Tracks with an empty title, artist, album or
        // track number get an mtime no file has, so the next scan reads them again (headers
        // only) and derives what they lack; their albums follow in that scan's writes.
        """
        ALTER TABLE tracks ADD COLUMN derived INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE albums ADD COLUMN derived INTEGER NOT NULL DEFAULT 0;
        DELETE FROM track_json;
        UPDATE tracks SET mtime_ns = -1
          WHERE title IS NULL OR artist IS NULL OR album IS NULL OR track_number IS NULL;
        """,
        // 4 → 5: FLAC, Ogg (Opus, Vorbis), AIFF and ALAC are catalogued, with their bit depth
        // (`bits_per_sample`, null for lossy codecs). Files skipped as unsupported formats (and
        // ALAC, refused as an MP4 audio codec) are
        // forgotten so the next scan reads them; WAV rows are read again for their depth; the
        // stored items (which lack the new members) and cached analyses (an older wire version)
        // are dropped.
        """
        ALTER TABLE tracks ADD COLUMN bits_per_sample INTEGER;
        DELETE FROM track_json;
        DELETE FROM analyses;
        DELETE FROM skipped WHERE reason LIKE '%files are not supported%' OR reason LIKE '%audio codec ''alac''%';
        UPDATE tracks SET mtime_ns = -1 WHERE container = 'wav';
        """,
        // 5 → 6: accounts (`UserStore`, docs/DESIGN.md "Access"). A web password is kept as an
        // argon2id hash; the Subsonic app password sealed (secretbox) under the key file beside
        // the database, because Subsonic's token auth needs it in clear; API keys as BLAKE2b
        // hashes of random secrets, shown once.
        """
        CREATE TABLE users(
          id INTEGER PRIMARY KEY,
          name TEXT NOT NULL UNIQUE COLLATE NOCASE,
          admin INTEGER NOT NULL DEFAULT 0,
          password_hash TEXT NOT NULL,
          subsonic_password BLOB NOT NULL,
          created_s INTEGER NOT NULL);
        CREATE TABLE api_keys(
          id INTEGER PRIMARY KEY,
          user_id INTEGER NOT NULL REFERENCES users(id),
          key_hash BLOB NOT NULL UNIQUE,
          label TEXT NOT NULL,
          created_s INTEGER NOT NULL);
        CREATE INDEX api_keys_by_user ON api_keys(user_id);
        """,
        // 6 → 7: track items carry the gapless values (first_frame_offset, encoder_delay,
        // encoder_padding, total_samples) so the page plays without waiting for `/api/index`;
        // the stored items lack them: dropped, written again from the columns when asked.
        """
        DELETE FROM track_json;
        """,
        // 7 → 8: the page's login sessions (`SessionTable`), so a restart does not log every
        // browser out. Only a BLAKE2b hash of each token is kept (a copy of the file hands out
        // no live cookie); the CSRF token is derived from the token under the key file's secret;
        // `stamp` is the password stamp at login (a changed password ends the session).
        """
        CREATE TABLE web_sessions(
          token_hash BLOB PRIMARY KEY,
          user_id INTEGER NOT NULL,
          stamp BLOB NOT NULL,
          created_s INTEGER NOT NULL,
          last_seen_s INTEGER NOT NULL,
          expires_s INTEGER NOT NULL);
        CREATE INDEX web_sessions_by_user ON web_sessions(user_id);
        CREATE INDEX web_sessions_by_expiry ON web_sessions(expires_s);
        """,
    ]
}
