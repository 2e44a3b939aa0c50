@testable import StreamShared

/// The M3U8 playlist parser (master and media playlists).
enum M3U8Target {
    static func run(_ bytes: [UInt8]) {
        guard let playlist = try? M3U8Parser.parse(bytes[...]) else { return }
        if case .media(let media) = playlist {
            require(media.totalDuration.isFinite, "total duration \(media.totalDuration)")
            _ = media.isLive
        }
    }
}
