import StreamShared
import StreamHTTP
import StreamLibrary

/// Lyrics of a track: the `.lrc` file beside it (`Song.mp3` → `Song.lrc`), then those in its own
/// tags (`EmbeddedLyricsReader`: ID3 USLT/SYLT, Vorbis LYRICS/UNSYNCEDLYRICS, MP4 ©lyr), read at
/// request time on the blocking pool.
extension SubsonicService {
    /// Largest `.lrc` read.
    static let maxLyricsBytes = 1 << 20

    /// The `.lrc` beside the track, when there is one with lines.
    func lyricsFile(for track: Track) -> LRCLyrics? {
        guard let dot = track.path.lastIndex(of: "."), !track.path[dot...].contains("/") else { return nil }
        let lrc = String(track.path[..<dot]) + ".lrc"
        guard let opened = try? catalog.resolver.open(encoded: Substring(PathResolver.percentEncode(lrc))),
              opened.file.size <= Self.maxLyricsBytes, let bytes = SubsonicCoverCache.readWhole(opened.file) else { return nil }
        let lyrics = LRCLyrics(bytes)
        return lyrics.lines.isEmpty ? nil : lyrics
    }

    /// Every set of lyrics the track has: the `.lrc` first, then the tags'. The tags are read only
    /// from the version of the file the catalog analyzed (one a worker already read without harm);
    /// a tag that does not parse is logged and skipped.
    func lyrics(for track: Track) -> [EmbeddedLyrics] {
        var found: [EmbeddedLyrics] = []
        if let file = lyricsFile(for: track) { found.append(EmbeddedLyrics(language: "xxx", description: "", lyrics: file)) }
        guard let opened = try? catalog.resolver.open(encoded: Substring(PathResolver.percentEncode(track.path))),
              opened.file.stamp == track.stamp else { return found }
        do {
            found += try EmbeddedLyricsReader.lyrics(in: opened.file)
        } catch {
            logger.info("lyrics of \(track.path): \(error)")
        }
        return found
    }

    /// The first song with this artist and title that has lyrics: plain text (getLyrics).
    func getLyrics(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let artist = call.parameters.string("artist"), title = call.parameters.string("title")
        var body = SubsonicElement()
        let songs = try library.songs("WHERE (?1 IS NULL OR t.artist = ?1 COLLATE NOCASE) AND (?2 IS NULL OR t.title = ?2 COLLATE NOCASE) ORDER BY t.id LIMIT 20",
                                      [.optional(artist), .optional(title)], user: call.user.id)
        for song in songs {
            guard let found = lyrics(for: song.track).first?.lyrics else { continue }
            body.add("lyrics", SubsonicElement([("artist", .optional(song.track.artist)), ("title", .string(song.track.displayTitle))],
                                               text: found.lines.map(\.text).joined(separator: "\n")))
            return .element(body)
        }
        body.add("lyrics", SubsonicElement([("artist", .optional(artist)), ("title", .optional(title))], text: ""))
        return .element(body)
    }

    /// Structured lyrics of a song (OpenSubsonic `songLyrics`): one entry per set found, synced
    /// lines with their start, or plain lines.
    func getLyricsBySongId(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let track = try track(call)
        var list = SubsonicElement()
        list.add("structuredLyrics", list: lyrics(for: track).map { found in
            let lyrics = found.lyrics
            var structured = SubsonicElement([("displayArtist", .optional(lyrics.artist ?? track.artist)),
                                              ("displayTitle", .string(lyrics.title ?? track.displayTitle)), ("lang", .string(found.language)),
                                              ("offset", .int(lyrics.offsetMilliseconds)), ("synced", .bool(lyrics.synced))])
            structured.add("line", list: lyrics.lines.map { line in
                SubsonicElement([("start", line.startMilliseconds.map { .int($0) })], text: line.text)
            })
            return structured
        })
        return Self.body("lyricsList", list)
    }
}
