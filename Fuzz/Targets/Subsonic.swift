@testable import StreamShared
import StreamHTTP

/// What the Subsonic API reads from a client or from the library that is text: a query or form
/// body's pairs (`QueryValue.pairs`), an `.lrc` file beside a track (`LRCLyrics`) and
/// getTranscodeDecision's JSON ClientInfo (`OpenSubsonicClientInfo`), each with its bounds.
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
        if let info = try? OpenSubsonicClientInfo(reading: bytes) {
            let limit = OpenSubsonicClientInfo.maxListItems
            require(info.directPlay.count <= limit && info.transcoding.count <= limit && info.codecProfiles.count <= limit, "a list past its bound")
            for profile in info.directPlay {
                for names in [profile.containers, profile.audioCodecs, profile.protocols] {
                    require(names.count <= limit && names.allSatisfy { !$0.isEmpty && $0 != "*" && $0.count <= 64 }, "names \(names)")
                }
            }
            require(info.codecProfiles.allSatisfy { $0.limitations.count <= limit }, "limitations past their bound")
            require(info.name.count <= 256 && info.platform.count <= 256 && info.maxAudioBitrate >= 0, "name, platform or bitrate")
        }
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
