import StreamShared

/// Settings of HLS playback.
public struct HLSOptions: Sendable {
    /// Choose the variant with the highest BANDWIDTH at or below this (bits per second).
    public var maxBitrate: Int?
    /// Largest playlist accepted, in bytes.
    public var maxPlaylistBytes = 16 << 20
    /// Largest segment (or init section) accepted, in bytes.
    public var maxSegmentBytes = 32 << 20
    public var limits = M3U8Limits()
    public init() {}
}

/// The media playlist to play and where its URIs resolve from.
struct HLSMediaPlaylist {
    var playlist: M3U8MediaPlaylist
    /// The playlist's location after redirects.
    var base: String
    /// The location it was requested from (reloads of a live playlist go there).
    var location: String
}

/// Loads playlists: a master playlist is resolved to one media playlist (variant choice and
/// audio renditions); deeper nesting is refused.
struct HLSPlaylistLoader {
    let options: HLSOptions
    let fetcher: HLSFetcher
    let log: (String) -> Void

    /// Codec strings (RFC 6381) of the audio this player decodes.
    static func isPlayableAudio(_ codec: String) -> Bool {
        let c = codec.lowercased()
        return c.hasPrefix("mp4a") || c == "mp3" || c.hasPrefix(".mp3")
    }

    static func isAudio(_ codec: String) -> Bool {
        let c = codec.lowercased()
        return isPlayableAudio(c) || ["ac-3", "ec-3", "opus", "flac", "alac", "ac-4", "dtsc"].contains { c.hasPrefix($0) }
    }

    /// The media playlist at `location`, through a master playlist when it is one.
    func load(_ location: String) throws -> HLSMediaPlaylist {
        let (playlist, base) = try fetch(location)
        switch playlist {
        case .media(let media):
            return HLSMediaPlaylist(playlist: media, base: base, location: location)
        case .master(let master):
            let chosen = try choose(from: master, base: base)
            let (nested, nestedBase) = try fetch(chosen)
            guard case .media(let media) = nested else {
                throw SourceError.hls("\(chosen) is another master playlist (a master playlist may only list media playlists)")
            }
            return HLSMediaPlaylist(playlist: media, base: nestedBase, location: chosen)
        }
    }

    /// Reloads a live media playlist.
    func reload(_ current: HLSMediaPlaylist) throws -> HLSMediaPlaylist {
        let (playlist, base) = try fetch(current.location)
        guard case .media(let media) = playlist else {
            throw SourceError.hls("\(current.location) turned into a master playlist on reload")
        }
        return HLSMediaPlaylist(playlist: media, base: base, location: current.location)
    }

    private func fetch(_ location: String) throws -> (M3U8Playlist, String) {
        let body = try fetcher.get(location, limit: options.maxPlaylistBytes)
        do {
            return (try M3U8Parser.parse(body.bytes[...], limits: options.limits), body.base)
        } catch let error as FormatError {
            throw SourceError.hls("playlist \(location): \(error)")
        }
    }

    /// The variant to play: among those whose CODECS include MP3 or AAC (or say nothing), the
    /// highest BANDWIDTH within `maxBitrate` (the lowest when none fits). A variant whose audio
    /// is an EXT-X-MEDIA rendition plays that rendition's playlist.
    func choose(from master: M3U8MasterPlaylist, base: String) throws -> String {
        let playable = master.variants.filter { variant in
            variant.codecs.isEmpty || variant.codecs.contains(where: Self.isPlayableAudio)
                || (variant.audioGroup != nil && !variant.codecs.contains(where: Self.isAudio))
        }
        guard !playable.isEmpty else {
            let codecs = Set(master.variants.flatMap(\.codecs)).sorted().joined(separator: ", ")
            throw SourceError.hls("no variant with MP3 or AAC audio (codecs: \(codecs.isEmpty ? "none given" : codecs))")
        }
        let sorted = playable.sorted { $0.bandwidth < $1.bandwidth }
        var variant = sorted[sorted.count - 1]
        if let limit = options.maxBitrate {
            if let fitting = sorted.last(where: { $0.bandwidth <= limit }) {
                variant = fitting
            } else {
                variant = sorted[0]
                log("no variant fits --max-bitrate \(limit); taking the lowest (\(variant.bandwidth) bit/s)")
            }
        }
        log("variant \(variant.bandwidth) bit/s \(variant.codecs.joined(separator: ",")) of \(master.variants.count): \(variant.uri)")
        if let group = variant.audioGroup {
            let renditions = master.renditions.filter { $0.type == "AUDIO" && $0.groupID == group && $0.uri != nil }
            if let rendition = renditions.first(where: \.isDefault) ?? renditions.first, let uri = rendition.uri {
                log("audio rendition '\(rendition.name)' of group \(group): \(uri)")
                return HLSFetcher.resolve(uri, against: base)
            }
        }
        return HLSFetcher.resolve(variant.uri, against: base)
    }
}
