@testable import StreamShared
import StreamHTTP

/// What the Subsonic API reads from a client or from the library that is text: a query or form
/// body's pairs (`QueryValue.pairs`) and an `.lrc` file beside a track (`LRCLyrics`), each with
/// its bounds.
enum SubsonicTarget {
    static func run(_ bytes: [UInt8]) {
        let lyrics = LRCLyrics(bytes)
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
        require(abs(lyrics.offsetMilliseconds) <= 86_400_000, "offset \(lyrics.offsetMilliseconds)")
        let text = String(decoding: bytes, as: UTF8.self)
        if case .success(let pairs) = QueryValue.pairs(Substring(text), maxValueBytes: 4096) {
            require(pairs.count <= 10_000, "\(pairs.count) pairs")
            for (name, value) in pairs {
                require(name.utf8.count <= 64 && value.utf8.count <= 4096, "a pair past its bounds")
                require(!name.utf8.contains { $0 < 0x20 || $0 == 0x7F } && !value.utf8.contains { $0 < 0x20 || $0 == 0x7F },
                        "a control byte decoded")
            }
        }
    }
}
