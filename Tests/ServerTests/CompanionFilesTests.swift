import Foundation
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

/// The rule for the files beside the tracks that are never audio (cover pictures, booklets,
/// notes, logs, cue sheets, playlists, the desktop's files): passed by, counted, not "skipped".
@Suite struct CompanionFilesTests {
    @Test func knownNonAudioExtensions_areCompanions_caseIgnored() {
        for name in ["cover.jpg", "Folder.JPG", "front.jpeg", "back.png", "scan.TIFF", "booklet.pdf", "notes.txt", "album.nfo",
                     "EAC rip.log", "album.cue", "list.m3u", "list.m3u8", "radio.pls", "Thumbs.db", "desktop.ini",
                     "a/b/c/cover.webp", "Artist/Album/lyrics.lrc", "album.accurip", "checksums.ffp", "album.md5"] {
            #expect(CompanionFiles.isCompanion(name), "\(name)")
        }
    }

    @Test func audio_unknownAndExtensionless_areNot() {
        for name in ["song.mp3", "Song.M4A", "x.aac", "x.wav", "x.flac", "x.ogg", "x.opus", "x.mp4", "README", "track.01",
                     "weird.jpg.mp3", "cover.jpg/inside.mp3", "Album.pdf/01.mp3", ".jpg", "a/.txt", "x.", "x.averyverylongextension"] {
            #expect(!CompanionFiles.isCompanion(name), "\(name)")
        }
    }

    /// The walk passes them by (not read, counted apart), and rows a catalog of before holds for
    /// them (skipped as "not an audio stream") are named as gone, so the scan removes them.
    @Test func walk_passesCompanionsBy_andDropsTheirOldRows() throws {
        let root = try LibraryStoreTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        for path in ["A/01.mp3", "A/cover.jpg", "A/booklet.pdf", "A/02.mp3", "A/rip.log", "B/x.mp3", "B/notes.txt", "B/mystery.bin",
                     "list.m3u8"] {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(path.utf8).write(to: url)
        }
        let store = try LibraryStore(path: ":memory:", folder: root.path)
        // What an older streamd recorded: the cover and the notes as skipped files.
        try store.apply([.skipped(path: "A/cover.jpg", stamp: CatalogWalkTests.stamp(root, "A/cover.jpg"),
                                  reason: "parser: not an audio stream", quarantined: false),
                         .skipped(path: "B/notes.txt", stamp: CatalogWalkTests.stamp(root, "B/notes.txt"),
                                  reason: "parser: not an audio stream", quarantined: false)])
        let result = CatalogWalkTests.walk(root, store, chunkSize: 100)
        #expect(result.read.joined().sorted() == ["A/01.mp3", "A/02.mp3", "B/mystery.bin", "B/x.mp3"],
                "audio and unknown kinds are read; companions are not: \(result.read)")
        #expect(result.walk.ignored == 5 && result.walk.found == 4, "\(result.walk.ignored) \(result.walk.found)")
        #expect(result.removed.sorted() == ["A/cover.jpg", "B/notes.txt"], "their old rows go: \(result.removed)")
        // A scan of one folder (an inotify event) passes them by the same way.
        let one = CatalogWalkTests.walk(root, store, under: "A", chunkSize: 100)
        #expect(one.walk.ignored == 3 && one.read.joined().isEmpty, "\(one.read)")
    }
}
