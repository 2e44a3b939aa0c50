import Testing
@testable import StreamLibrary

/// What a path says about a track whose tags say nothing: file names as rippers, shops and
/// people write them, disc folders, and files near the library root.
@Suite struct PathDerivedTagsTests {
    /// (file name, title, track, disc)
    static let names: [(String, String, Int?, Int?)] = [
        ("01 - Song.mp3", "Song", 1, nil),
        ("01. Song.flac", "Song", 1, nil),
        ("01 Song.m4a", "Song", 1, nil),
        ("01_Song.wav", "Song", 1, nil),
        ("01-Song.ogg", "Song", 1, nil),
        ("01.Song.opus", "Song", 1, nil),
        ("1 - Song.mp3", "Song", 1, nil),
        ("07 – Song With En Dash.mp3", "Song With En Dash", 7, nil),
        ("07 — Em Dash.mp3", "Em Dash", 7, nil),
        ("(03) Bracketed.mp3", "Bracketed", 3, nil),
        ("[12] Square.mp3", "Square", 12, nil),
        ("101 - Long Album Track.mp3", "Long Album Track", 101, nil),
        ("1-03 Disc And Track.mp3", "Disc And Track", 3, 1),
        ("2-11 - Second Disc.flac", "Second Disc", 11, 2),
        ("1-03.mp3", "1-03", 3, 1),
        ("01 - Artist - Title.mp3", "Artist - Title", 1, nil),
        ("01_my_little_song.mp3", "my little song", 1, nil),
        ("my_song.mp3", "my song", nil, nil),
        ("01 - keep_underscores here.mp3", "keep_underscores here", 1, nil),
        // Only a number: the number is the title and the track.
        ("07.mp3", "07", 7, nil),
        ("7.wav", "7", 7, nil),
        ("Track 01.mp3", "Track 01", 1, nil),
        ("track07.wav", "track07", 7, nil),
        ("Track_3.mp3", "Track 3", 3, nil),
        // Numbers that are part of the title.
        ("1999.mp3", "1999", nil, nil),
        ("1999 - Prince Song.mp3", "1999 - Prince Song", nil, nil),
        ("3am.mp3", "3am", nil, nil),
        ("01Intro.mp3", "01Intro", nil, nil),
        ("2.5 Minutes.mp3", "2.5 Minutes", nil, nil),
        ("4'33.mp3", "4'33", nil, nil),
        // Dots in names: only a short alphanumeric end is an extension.
        ("Mr. Jones.mp3", "Mr. Jones", nil, nil),
        ("05. St. Elmo's Fire.mp3", "St. Elmo's Fire", 5, nil),
        ("Live at the B.B.C..flac", "Live at the B.B.C.", nil, nil),
        ("No Extension", "No Extension", nil, nil),
        ("Vol. 2 Part 1", "Vol. 2 Part 1", nil, nil),
        ("Take 2.5", "Take 2.5", nil, nil),
        (".hidden", ".hidden", nil, nil),
        ("song.tar.gz", "song.tar", nil, nil),
        // Unicode.
        ("01 - 夜に駆ける.flac", "夜に駆ける", 1, nil),
        ("03. Ünïcødé Straße.mp3", "Ünïcødé Straße", 3, nil),
        ("02 - Café\u{301} (décomposé).mp3", "Café\u{301} (décomposé)", 2, nil),
        ("05 - Песня.ogg", "Песня", 5, nil),
        ("١٢ - Arabic digits.mp3", "١٢ - Arabic digits", nil, nil),
        ("10 - 🎵 Emoji.mp3", "🎵 Emoji", 10, nil),
        // Nothing after the number, or nothing at all.
        ("01 - .mp3", "01 -", 1, nil),
        ("  02  -  Spaced  .mp3", "Spaced", 2, nil),
        (".mp3", ".mp3", nil, nil),
    ]

    @Test func fileNames_titleTrackAndDisc() {
        for (name, title, track, disc) in Self.names {
            let parsed = PathDerivedTags.parseFileName(name)
            #expect(parsed.title == title && parsed.track == track && parsed.disc == disc,
                    "\(name): \(parsed)")
        }
    }

    @Test func aTitleIsNeverEmpty() {
        for name in [" ", ".", "_", "-", "01", "01 ", "0", "(01)", "[", "1-"] {
            #expect(!PathDerivedTags.parseFileName(name).title.isEmpty, "'\(name)'")
            #expect(!PathDerivedTags(path: "A/B/" + name).title.isEmpty, "'\(name)'")
        }
    }

    @Test func discFolders() {
        for (name, disc) in [("CD1", 1), ("CD 2", 2), ("cd02", 2), ("Disc 1", 1), ("disc_3", 3), ("Disk 4", 4),
                             ("DISC-5", 5), ("CD1 - Bonus", 1), ("Disc 2 (Live)", 2), ("CD.1", 1)] {
            #expect(PathDerivedTags.discFolderNumber(name) == disc, "\(name)")
        }
        for name in ["CDs", "Discography", "Disco 2000", "CD1a", "Album", "CD", "Disc 100", "1 CD"] {
            #expect(PathDerivedTags.discFolderNumber(name) == nil, "\(name)")
        }
    }

    @Test func folders_albumAndArtist() {
        #expect(PathDerivedTags(path: "Artist/Album/01 - Song.mp3")
                == PathDerivedTags(title: "Song", trackNumber: 1, album: "Album", artist: "Artist"))
        // Deeper trees: the two folders nearest the file.
        #expect(PathDerivedTags(path: "Music/Rock/Artist/Album/03 Song.flac")
                == PathDerivedTags(title: "Song", trackNumber: 3, album: "Album", artist: "Artist"))
        // A disc folder gives the disc; album and artist are the folders above it.
        #expect(PathDerivedTags(path: "Artist/Album/CD2/04 Song.mp3")
                == PathDerivedTags(title: "Song", trackNumber: 4, discNumber: 2, album: "Album", artist: "Artist"))
        // The name's disc wins over the folder's.
        #expect(PathDerivedTags(path: "Artist/Album/Disc 1/2-05 Song.mp3")
                == PathDerivedTags(title: "Song", trackNumber: 5, discNumber: 2, album: "Album", artist: "Artist"))
        // A disc folder alone under the root is an album of that name.
        #expect(PathDerivedTags(path: "CD1/01 Song.mp3") == PathDerivedTags(title: "Song", trackNumber: 1, album: "CD1"))
        // One folder down: an album, no artist (the root's name says nothing).
        #expect(PathDerivedTags(path: "Album/Song.mp3") == PathDerivedTags(title: "Song", album: "Album"))
        // In the root: the title alone.
        #expect(PathDerivedTags(path: "01 Song.mp3") == PathDerivedTags(title: "Song", trackNumber: 1))
        // Folder names are trimmed; Unicode and dots kept.
        #expect(PathDerivedTags(path: " Sigur Rós /Ágætis byrjun (1999)/02 - Svefn-g-englar.mp3")
                == PathDerivedTags(title: "Svefn-g-englar", trackNumber: 2, album: "Ágætis byrjun (1999)", artist: "Sigur Rós"))
        #expect(PathDerivedTags(path: "R.E.M./Out of Time/01. Radio Song.mp3")
                == PathDerivedTags(title: "Radio Song", trackNumber: 1, album: "Out of Time", artist: "R.E.M."))
        #expect(PathDerivedTags(path: "坂本龍一/音楽図鑑/01 - 羽の林で.flac")
                == PathDerivedTags(title: "羽の林で", trackNumber: 1, album: "音楽図鑑", artist: "坂本龍一"))
    }
}
