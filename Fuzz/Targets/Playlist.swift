@testable import StreamShared

/// The track-playlist parser (M3U, extended M3U, PLS) in both text encodings, the location
/// resolver on every entry, and the M3U writer read back.
enum PlaylistTarget {
    static func run(_ bytes: [UInt8]) {
        for encoding in [PlaylistTextEncoding.utf8, .utf8OrWindows1252] {
            guard let playlist = try? PlaylistParser.parse(bytes[...], encoding: encoding) else { continue }
            require(playlist.entries.count <= PlaylistLimits().maxEntries, "\(playlist.entries.count) entries")
            for entry in playlist.entries {
                require(!entry.location.isEmpty, "empty location")
                if let duration = entry.duration {
                    require(duration.isFinite && duration >= 0 && duration <= InputLimits.maxDurationSeconds, "duration \(duration)")
                }
                if case .local(let path) = PlaylistLocation.resolve(entry.location, relativeTo: "/music/lists") {
                    require(path.hasPrefix("/") && !path.split(separator: "/").contains { $0 == ".." || $0 == "." },
                            "unnormalised path \(path)")
                }
            }
            // What the writer writes reads back as the same list, entry for entry.
            let text = M3UWriter.render(playlist.entries, title: playlist.title)
            guard let back = try? PlaylistParser.parse(Array(text.utf8)[...], encoding: .utf8) else {
                require(false, "the writer's output does not parse")
                return
            }
            require(back.entries.count == playlist.entries.count,
                    "wrote \(playlist.entries.count) entries, read back \(back.entries.count)")
            for (written, read) in zip(playlist.entries, back.entries) {
                require(read.location == M3UWriter.escapeLocation(written.location), "location \(read.location)")
                let title = M3UWriter.escapeTitle(written.title ?? "")
                require(read.title == (title.isEmpty ? nil : title), "title \(String(describing: read.title))")
            }
        }
    }
}
