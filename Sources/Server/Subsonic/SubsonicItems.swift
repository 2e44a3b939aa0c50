#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamLibrary

/// The answers' items (Child, AlbumID3, ArtistID3 …) written from the catalog's rows.
enum SubsonicItems {
    /// Seconds since 1970 as ISO 8601 in UTC (`2026-12-07T04:30:00Z`).
    static func date(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let year = Int(parts.tm_year) + 1900
        guard (1000...9999).contains(year) else {
            func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
            return "\(year)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
        }
        // Digits into 20 bytes: string interpolation cost a few µs a date, one or two per song.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20)
        func digits(_ n: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(truncatingIfNeeded: 0x30 + n / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    static func now() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int(ts.tv_sec)
    }

    /// A file's suffix as Subsonic shows it (lower case, no dot).
    static func suffix(_ path: String) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return "" }
        return path[path.index(after: dot)...].lowercased()
    }

    static func contentType(_ path: String) -> String {
        contentType(suffix: suffix(path))
    }

    /// The type of a file with this `suffix` (the same as of its path: the catalog's table reads
    /// only what follows the last dot; a suffix is one word, splitting a whole path was not).
    static func contentType(suffix: String) -> String {
        let type = Catalog.contentType(byExtensionOf: "." + suffix)
        return type.hasPrefix("audio/") ? type : "application/octet-stream"
    }

    static func marks(_ marks: SubsonicMarks, into element: inout SubsonicElement, playCount: Bool = true) {
        element.set("starred", marks.starredAt.map { .string(date($0)) })
        element.set("userRating", marks.rating.map { .int($0) })
        if playCount { element.set("playCount", .int(marks.playCount)) }
        element.set("played", marks.playedAt.map { .string(date($0)) })
    }

    /// A song (Child).
    /// The artist, album and song lists of a search or starred answer: ID3 elements for the `2`/`3`
    /// calls (`id3`), folder-style ones for the older calls.
    static func artistsAlbumsSongs(_ artists: [SubsonicArtist], _ albums: [SubsonicAlbum], _ songs: [SubsonicSong],
                                   id3: Bool) -> SubsonicElement {
        var result = SubsonicElement()
        if id3 {
            result.add("artist", list: artists.map { artist($0) })
            result.add("album", list: albums.map { album($0) })
        } else {
            result.add("artist", list: artists.map(folderArtist))
            result.add("album", list: albums.map(albumChild))
        }
        result.add("song", list: songs.map(song))
        return result
    }

    static func song(_ song: SubsonicSong) -> SubsonicElement {
        var e = songFixed(song)
        marks(song.marks, into: &e)
        return e
    }

    /// A song (Child) without anyone's marks: the same for every user (what `SubsonicTables`
    /// writes once). Its attributes come before the marks', its children after.
    static func songFixed(_ song: SubsonicSong) -> SubsonicElement {
        let t = song.track
        let suffix = suffix(t.path)
        var e = SubsonicElement([
            ("id", .string(song.sid)), ("parent", .optional(song.albumSid)), ("isDir", .bool(false)),
            ("title", .string(t.displayTitle)), ("album", .optional(t.album)), ("artist", .optional(t.artist)),
            ("track", .optional(t.trackNumber)), ("year", .optional(t.year)), ("genre", .optional(t.genre)),
            ("coverArt", .optional(song.albumSid)), ("size", .int(t.stamp.size)), ("contentType", .string(contentType(suffix: suffix))),
            ("suffix", .string(suffix)), ("duration", .int(Int(t.durationSeconds.rounded()))),
            ("bitRate", .int(t.bitrate / 1000)), ("bitDepth", .optional(t.bitsPerSample)), ("samplingRate", .int(t.sampleRate)),
            ("channelCount", .int(t.channels)), ("path", .string(t.path)), ("isVideo", .bool(false)),
            ("discNumber", .optional(t.discNumber)), ("created", .string(date(max(0, t.stamp.mtimeNanos / 1_000_000_000)))),
            ("albumId", .optional(song.albumSid)), ("artistId", .optional(song.artistSid)), ("type", .string("music")),
            ("mediaType", .string("song")), ("displayArtist", .optional(t.artist)), ("displayAlbumArtist", .optional(t.albumArtist)),
        ])
        if let gain = t.replayGain {
            e.add("replayGain", SubsonicElement([("trackGain", gain.trackGain.map { .double($0) }), ("albumGain", gain.albumGain.map { .double($0) }),
                                                 ("trackPeak", gain.trackPeak.map { .double($0) }), ("albumPeak", gain.albumPeak.map { .double($0) })]))
        }
        e.add("genres", list: t.genre.map { [SubsonicElement([("name", .string($0))])] } ?? [])
        return e
    }

    /// An album (AlbumID3), with `songs` when given (AlbumID3WithSongs).
    static func album(_ album: SubsonicAlbum, songs: [SubsonicSong]? = nil) -> SubsonicElement {
        var e = albumFixed(album)
        marks(album.marks, into: &e)
        if let songs { e.add("song", list: songs.map(song)) }
        return e
    }

    /// An album (AlbumID3) without anyone's marks or songs: the same for every user (what
    /// `SubsonicTables` writes once). Its attributes come before the marks', its children after.
    static func albumFixed(_ album: SubsonicAlbum) -> SubsonicElement {
        var e = SubsonicElement([
            ("id", .string(album.sid)), ("name", .string(album.title)), ("artist", .string(album.artist)),
            ("artistId", .optional(album.artistSid)), ("coverArt", .string(album.sid)), ("songCount", .int(album.songCount)),
            ("duration", .int(Int(album.duration.rounded()))), ("created", .string(date(album.created))),
            ("year", .optional(album.year)), ("genre", .optional(album.genre)), ("displayArtist", .string(album.artist)),
            ("sortName", .string(album.title)), ("isCompilation", .bool(false)),
        ])
        e.add("genres", list: album.genre.map { [SubsonicElement([("name", .string($0))])] } ?? [])
        return e
    }

    /// An album as a directory entry (Child with isDir), for the folder-based calls.
    static func albumChild(_ album: SubsonicAlbum) -> SubsonicElement {
        var e = albumChildFixed(album)
        marks(album.marks, into: &e)
        return e
    }

    /// `albumChild` without anyone's marks.
    static func albumChildFixed(_ album: SubsonicAlbum) -> SubsonicElement {
        SubsonicElement([
            ("id", .string(album.sid)), ("parent", .optional(album.artistSid)), ("isDir", .bool(true)),
            ("title", .string(album.title)), ("name", .string(album.title)), ("album", .string(album.title)),
            ("artist", .string(album.artist)), ("year", .optional(album.year)), ("genre", .optional(album.genre)),
            ("coverArt", .string(album.sid)), ("duration", .int(Int(album.duration.rounded()))),
            ("created", .string(date(album.created))), ("albumId", .string(album.sid)), ("artistId", .optional(album.artistSid)),
            ("songCount", .int(album.songCount)), ("mediaType", .string("album")),
        ])
    }

    /// The attributes `marks(_:into:)` adds, in its order.
    static func markAttributes(_ marks: SubsonicMarks) -> [(String, SubsonicValue)] {
        var e = SubsonicElement()
        self.marks(marks, into: &e)
        return e.attributes
    }

    /// An artist (ArtistID3).
    static func artist(_ artist: SubsonicArtist, albums: [SubsonicAlbum]? = nil) -> SubsonicElement {
        var e = SubsonicElement([("id", .string(artist.sid)), ("name", .string(artist.name)), ("albumCount", .int(artist.albumCount)),
                                 ("sortName", .string(artist.name))])
        marks(artist.marks, into: &e, playCount: false)
        if let albums { e.add("album", list: albums.map { album($0) }) }
        return e
    }

    /// An artist in the folder-based calls (Artist).
    static func folderArtist(_ artist: SubsonicArtist) -> SubsonicElement {
        var e = SubsonicElement([("id", .string(artist.sid)), ("name", .string(artist.name))])
        e.set("starred", artist.marks.starredAt.map { .string(date($0)) })
        e.set("userRating", artist.marks.rating.map { .int($0) })
        return e
    }

    /// Articles an artist's index letter skips ("The Beatles" under B), as `ignoredArticles` lists them.
    static let ignoredArticles = ["The", "El", "La", "Los", "Las", "Le", "Les"]

    /// The index letter of a name: its first letter past an ignored article, upper case; `#` for anything but A-Z.
    static func indexLetter(_ name: String) -> String {
        var text = Substring(name)
        for article in ignoredArticles where text.count > article.count + 1 {
            if text.lowercased().hasPrefix(article.lowercased() + " ") {
                text = text.dropFirst(article.count + 1)
                break
            }
        }
        guard let first = text.first?.uppercased(), first.count == 1, let scalar = first.unicodeScalars.first,
              scalar.value >= 0x41 && scalar.value <= 0x5A else { return "#" }
        return first
    }

    /// Artists grouped by index letter, letters in order, `#` last.
    static func indexes(_ artists: [SubsonicArtist], item: (SubsonicArtist) -> SubsonicElement) -> [SubsonicElement] {
        var groups: [String: [SubsonicArtist]] = [:]
        for artist in artists { groups[indexLetter(artist.name), default: []].append(artist) }
        let letters = groups.keys.sorted { ($0 == "#" ? "\u{FFFF}" : $0) < ($1 == "#" ? "\u{FFFF}" : $1) }
        return letters.map { letter in
            var index = SubsonicElement([("name", .string(letter))])
            index.add("artist", list: (groups[letter] ?? []).map(item))
            return index
        }
    }
}
