import StreamShared
import StreamHTTP
import StreamLibrary

/// Lyrics from the `.lrc` file beside a track (`Song.mp3` → `Song.lrc`).
extension SubsonicService {
    /// Largest `.lrc` read.
    static let maxLyricsBytes = 1 << 20

    func lyrics(for track: Track) -> LRCLyrics? {
        guard let dot = track.path.lastIndex(of: "."), !track.path[dot...].contains("/") else { return nil }
        let lrc = String(track.path[..<dot]) + ".lrc"
        guard let opened = try? catalog.resolver.open(encoded: Substring(PathResolver.percentEncode(lrc))),
              opened.file.size <= Self.maxLyricsBytes, let bytes = SubsonicCoverCache.readWhole(opened.file) else { return nil }
        let lyrics = LRCLyrics(bytes)
        return lyrics.lines.isEmpty ? nil : lyrics
    }

    /// The first song with this artist and title that has lyrics: plain text (getLyrics).
    func getLyrics(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let artist = call.parameters.string("artist"), title = call.parameters.string("title")
        var body = SubsonicElement()
        let songs = try library.songs("WHERE (?1 IS NULL OR t.artist = ?1 COLLATE NOCASE) AND (?2 IS NULL OR t.title = ?2 COLLATE NOCASE) ORDER BY t.id LIMIT 20",
                                      [.optional(artist), .optional(title)], user: call.user.id)
        for song in songs {
            guard let found = lyrics(for: song.track) else { continue }
            body.add("lyrics", SubsonicElement([("artist", .optional(song.track.artist)), ("title", .string(song.track.displayTitle))],
                                               text: found.lines.map(\.text).joined(separator: "\n")))
            return .element(body)
        }
        body.add("lyrics", SubsonicElement([("artist", .optional(artist)), ("title", .optional(title))], text: ""))
        return .element(body)
    }

    /// Structured lyrics of a song (OpenSubsonic `songLyrics`): synced lines with their start, or plain lines.
    func getLyricsBySongId(_ call: SubsonicCall) throws -> SubsonicAnswer {
        let track = try track(call)
        var list = SubsonicElement()
        if let found = lyrics(for: track) {
            var structured = SubsonicElement([("displayArtist", .optional(found.artist ?? track.artist)),
                                              ("displayTitle", .string(found.title ?? track.displayTitle)), ("lang", .string("xxx")),
                                              ("offset", .int(found.offsetMilliseconds)), ("synced", .bool(found.synced))])
            structured.add("line", list: found.lines.map { line in
                SubsonicElement([("start", line.startMilliseconds.map { .int($0) })], text: line.text)
            })
            list.add("structuredLyrics", list: [structured])
        } else {
            list.add("structuredLyrics", list: [])
        }
        return Self.body("lyricsList", list)
    }
}
