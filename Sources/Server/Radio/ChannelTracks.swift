#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import Logging

/// What a channel plays and how: its tracks, the stream's format, and whether the tracks are
/// transcoded to it (mixed formats, or a bitrate asked for) or their frames pass as they are.
public struct ChannelPlan: Sendable {
    public var tracks: [ChannelTrack]
    public var format: ChannelFormat
    public var transcodes: Bool
}

/// Builds a channel's track list from the catalog: the track or the library files under the
/// folder a `--channel` names, in path order, and decides whether the channel transcodes.
public enum ChannelTracks {
    /// Why a channel cannot play.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The tracks for `spec` (PATH relative to the library root, or absolute inside it: a track,
    /// a folder, or an M3U/M3U8/PLS playlist file of the library) and the channel's format: the
    /// tracks' own when they all share one codec, rate and channel count, else MP3 they are
    /// transcoded to. `logger` hears about every file left out (warnings). Throws when none is playable.
    public static func resolve(_ spec: ChannelSpec, catalog: Catalog,
                               logger: Logger) throws(Failure) -> ChannelPlan {
        let root = catalog.resolver.root
        var wanted = spec.path.hasPrefix("/") ? spec.path : root + "/" + spec.path
        while wanted.count > 1, wanted.hasSuffix("/") { wanted.removeLast() }
        // The catalog holds real paths (symlinks resolved).
        if let real = realpath(wanted, nil) {
            wanted = String(cString: real)
            free(real)
        }
        let entries: [Track]
        if PlaylistFolder.isPlaylist(wanted), wanted.hasPrefix(root + "/") {
            // A playlist file of the library: its entries in its order (the folder code rewrites them to library paths).
            let relative = String(wanted.dropFirst(root.count + 1))
            do {
                let listed = try PlaylistFolder(resolver: catalog.resolver).entries(relative: relative).entries
                entries = listed.compactMap { entry in
                    let found = catalog.track(forAbsolutePath: root + "/" + entry.path)
                    if found == nil { logger.warning("channel \(spec.name): \(entry.path) (from \(relative)) is not a library track") }
                    return found
                }
            } catch {
                throw Failure(description: "channel \(spec.name): playlist \(spec.path): \(error)")
            }
        } else {
            // The catalog's paths are relative to `root`: the track, or the tracks under the folder, wanted.
            let relative = wanted == root ? "" : wanted.hasPrefix(root + "/") ? String(wanted.dropFirst(root.count + 1)) : nil
            entries = relative.map { relative in
                catalog.tracks()
                    .filter { relative.isEmpty || $0.path == relative || $0.path.hasPrefix(relative + "/") }
                    .sorted { $0.path < $1.path }
            } ?? []
        }
        guard !entries.isEmpty else {
            throw Failure(description: "channel \(spec.name): no library file at \(spec.path)")
        }
        var tracks: [ChannelTrack] = []
        for entry in entries {
            guard entry.sampleRate > 0, entry.channels > 0 else {
                logger.warning("channel \(spec.name): \(entry.path) skipped: \(entry.container) has no audio a channel can play")
                continue
            }
            tracks.append(ChannelTrack(track: entry, path: catalog.absolutePath(of: entry)))
        }
        guard let first = tracks.first else {
            throw Failure(description: "channel \(spec.name): no playable track at \(spec.path)")
        }
        if spec.passthrough, let plan = oggPassthrough(tracks) { return plan }
        if spec.format == .opus {
            // Every track encoded to Opus, each a link of one chained Ogg stream (OggTrackFeeder).
            return ChannelPlan(tracks: tracks, format: opusFormat(kbps: spec.bitrate ?? TranscodeFormat.opus.defaultKbps),
                               transcodes: true)
        }
        // One format and no bitrate or format asked for: the frames pass as they are (no decoding at all).
        if spec.bitrate == nil, spec.format == nil, let codec = first.codec, tracks.allSatisfy({
            $0.codec == codec && $0.sampleRate == first.sampleRate && $0.channels == first.channels
        }) {
            return ChannelPlan(tracks: tracks, format: ChannelFormat(codec: codec, sampleRate: first.sampleRate,
                                                                     channels: first.channels, kbps: first.kbps),
                               transcodes: false)
        }
        let format = transcodedFormat(firstRate: first.sampleRate, kbps: spec.bitrate ?? ChannelSpec.defaultBitrate)
        let kinds = Set(tracks.map { describe(ChannelFormat(codec: $0.codec ?? .mpeg, sampleRate: $0.sampleRate,
                                                            channels: $0.channels, kbps: 0), container: $0.container,
                                                   codec: $0.track.codec) })
        if spec.passthrough {
            throw Failure(description: "channel \(spec.name): passthrough needs tracks of one stream format (all Ogg Opus, all Ogg Vorbis of one rate, "
                          + "or MP3/AAC of one rate), found \(kinds.count) (\(kinds.sorted().joined(separator: ", "))); "
                          + "leave out passthrough to transcode them to MP3")
        }
        if spec.bitrate == nil, spec.format == nil {
            logger.warning(.init(stringLiteral: "channel \(spec.name): tracks of \(kinds.count) formats (\(kinds.sorted().joined(separator: ", "))): "
                 + "transcoded to MP3 \(format.sampleRate) Hz stereo \(format.kbps) kbit/s"))
        }
        return ChannelPlan(tracks: tracks, format: format, transcodes: true)
    }

    /// A pass-through Ogg plan when every track is Ogg Opus, or every track Ogg Vorbis of one
    /// rate, all of one channel count (a link's decoder setup changes with its headers, but a
    /// player's output need not: Opus always decodes at 48 kHz); nil otherwise.
    static func oggPassthrough(_ tracks: [ChannelTrack]) -> ChannelPlan? {
        guard let first = tracks.first, first.container == .ogg else { return nil }
        let codec = first.track.codec
        guard codec == "opus" || codec == "vorbis" else { return nil }
        let rate = codec == "opus" ? 48_000 : first.sampleRate
        guard tracks.allSatisfy({
            $0.container == .ogg && $0.track.codec == codec && $0.channels == first.channels
                && (codec == "opus" || $0.sampleRate == rate)
        }) else { return nil }
        return ChannelPlan(tracks: tracks, format: ChannelFormat(codec: .ogg, sampleRate: rate, channels: first.channels,
                                                                 kbps: first.kbps, oggCodec: codec),
                           transcodes: false)
    }

    /// What a transcoding channel sends: MP3, stereo, at the first track's rate when MP3 has it
    /// at that bitrate (MPEG-2 and 2.5 rates stop at 160 kbit/s), else 44.1 kHz.
    static func transcodedFormat(firstRate: Int, kbps: Int) -> ChannelFormat {
        var rate = LAMEEncoder.sampleRates.contains(firstRate) ? firstRate : 44_100
        if rate < 32_000 && kbps > 160 { rate = 44_100 }
        return ChannelFormat(codec: .mpeg, sampleRate: rate, channels: 2, kbps: kbps)
    }

    /// What an Opus channel sends: Ogg Opus, stereo, 48 kHz (Opus' own rate), at `kbps`.
    static func opusFormat(kbps: Int) -> ChannelFormat {
        ChannelFormat(codec: .ogg, sampleRate: OggOpusEncoder.sampleRate, channels: 2, kbps: kbps, oggCodec: "opus")
    }

    /// `codec`: the catalog's codec name (it tells ALAC from AAC in MP4, Opus from Vorbis in Ogg).
    static func describe(_ format: ChannelFormat, container: Container? = nil, codec: String? = nil) -> String {
        let name = switch container {
        case .mp4?: codec == "alac" ? "ALAC (MP4)" : "AAC (MP4)"
        case .wav?: "WAV"
        case .flac?: "FLAC"
        case .aiff?: "AIFF"
        case .ogg?: codec == "opus" ? "Opus (Ogg)" : codec == "vorbis" ? "Vorbis (Ogg)" : "Ogg"
        default: format.codec == .mpeg ? "MPEG audio" : "AAC"
        }
        return "\(name) \(format.sampleRate) Hz \(format.channels == 1 ? "mono" : "\(format.channels) channels")"
    }
}
