@testable import StreamShared

/// Lyrics embedded in a track (`EmbeddedLyricsReader`), as Subsonic's getLyricsBySongId reads
/// them: the whole input as a file (ID3v2 USLT/SYLT in front of MP3/AAC/FLAC, FLAC and Ogg
/// Vorbis comments, an MP4 moov's ©lyr, an AIFF ID3 chunk), and the input as a bare ID3v2 tag, a
/// moov box and a Vorbis comment block. Every set kept stays within the reader's bounds; synced
/// lines are in time order.
enum LyricsTarget {
    static func run(_ bytes: [UInt8]) {
        if let found = try? EmbeddedLyricsReader.lyrics(in: MemoryBytes(bytes)) { check(found) }
        if let found = try? EmbeddedLyricsReader.id3Lyrics(bytes[...]) { check(found) }
        if let found = try? EmbeddedLyricsReader.moovLyrics(bytes[...]) { check(found) }
        if let comment = try? VorbisComment.parse(bytes[...]) { check(EmbeddedLyricsReader.commentLyrics(comment)) }
    }

    static func check(_ found: [EmbeddedLyrics]) {
        require(found.count <= EmbeddedLyricsReader.maxEntries, "\(found.count) sets")
        for entry in found {
            require(entry.language.utf8.count == 3, "language \(entry.language)")
            let lyrics = entry.lyrics
            require(!lyrics.lines.isEmpty, "an empty set kept")
            require(lyrics.lines.count <= LRCLyrics.maxLines * 64, "\(lyrics.lines.count) lines")
            var last = Int.min
            for line in lyrics.lines {
                require(line.text.utf8.count <= LRCLyrics.maxLineBytes * 3, "a line of \(line.text.utf8.count) bytes")
                if lyrics.synced {
                    guard let start = line.startMilliseconds else { return require(false, "a synced line without a time") }
                    require(start >= 0 && start >= last, "times out of order: \(start) after \(last)")
                    last = start
                } else {
                    require(line.startMilliseconds == nil, "an unsynced line with a time")
                }
            }
        }
    }
}
