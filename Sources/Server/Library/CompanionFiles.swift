import StreamHTTP
/// The files that sit beside the tracks of a music folder and are not audio: cover pictures,
/// booklets, notes, rip logs, cue sheets, playlists, checksums, the desktop's own files. The scan
/// never hands them to the analyzer and does not list them as skipped (they are counted,
/// `ignored_count` in `/api/status`): "skipped" is kept for files that look like audio, or whose
/// kind is unknown, and could not be read. A file is known by its extension only (case ignored);
/// a file without one, or with any other, is analyzed as before.
///
/// Cover lookup and playlist discovery read the folder themselves, so they still find these files.
public enum CompanionFiles {
    /// Extensions (lower case, without the dot) of files that are never audio.
    public static let extensions: Set<String> = [
        // pictures (cover.jpg, folder.jpg, front.png, scans)
        "jpg", "jpeg", "jpe", "jfif", "png", "gif", "bmp", "webp", "tif", "tiff", "heic", "heif", "avif", "ico", "svg", "psd",
        // booklets, notes, tags, lyrics
        "pdf", "txt", "nfo", "rtf", "md", "doc", "docx", "odt", "html", "htm", "xml", "json", "csv", "lrc", "url", "nzb",
        // rip logs, cue sheets, checksums
        "log", "cue", "toc", "accurip", "sfv", "md5", "sha1", "sha256", "ffp", "st5", "par2",
        // playlists (listed by /api/playlists, not as tracks)
        "m3u", "m3u8", "pls", "xspf", "wpl", "asx",
        // the desktop's and other programs' files (Thumbs.db, desktop.ini, .directory)
        "db", "ini", "directory", "lnk", "desktop", "torrent",
        // archives
        "zip", "rar", "7z", "tar", "gz", "bz2", "xz",
    ]

    /// Whether the file at `path` (a name or a path) is a companion file by its extension.
    public static func isCompanion(_ path: String) -> Bool {
        let name = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { path[path.index(after: $0)...] } ?? path[...]
        guard let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")), dot != name.startIndex else { return false }
        let ext = name[name.index(after: dot)...]
        // The longest extension in the list has 9 characters: longer ones need no lower-casing.
        guard !ext.isEmpty, ext.utf8.count <= 9 else { return false }
        return extensions.contains(ext.lowercased())
    }
}
