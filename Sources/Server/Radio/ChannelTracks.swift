#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// Builds a channel's track list from the catalog: the track or the library files under the
/// folder a `--channel` names, in path order, keeping those that share the first one's format.
public enum ChannelTracks {
    /// Why a channel cannot play.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The tracks for `spec` (PATH relative to the library root, or absolute inside it: a track,
    /// a folder, or an M3U/M3U8/PLS playlist file of the library) and the channel's format;
    /// `warn` hears about every file left out. Throws when none is playable.
    public static func resolve(_ spec: ChannelSpec, catalog: Catalog,
                               warn: (String) -> Void) throws(Failure) -> (tracks: [ChannelTrack], format: ChannelFormat) {
        let root = catalog.resolver.root
        var wanted = spec.path.hasPrefix("/") ? spec.path : root + "/" + spec.path
        while wanted.count > 1, wanted.hasSuffix("/") { wanted.removeLast() }
        // The catalog holds real paths (symlinks resolved).
        if let real = realpath(wanted, nil) {
            wanted = String(cString: real)
            free(real)
        }
        let entries: [CatalogEntry]
        if PlaylistFolder.isPlaylist(wanted), wanted.hasPrefix(root + "/") {
            // A playlist file of the library: its entries in its order (the folder code rewrites them to library paths).
            let relative = String(wanted.dropFirst(root.count + 1))
            do {
                let listed = try PlaylistFolder(resolver: catalog.resolver).entries(relative: relative).entries
                entries = listed.compactMap { entry in
                    let found = catalog.entry(forAbsolutePath: root + "/" + entry.path)
                    if found == nil { warn("channel \(spec.name): \(entry.path) (from \(relative)) is not a library track") }
                    return found
                }
            } catch {
                throw Failure(description: "channel \(spec.name): playlist \(spec.path): \(error)")
            }
        } else {
            entries = catalog.tracks()
                .filter { $0.absolutePath == wanted || $0.absolutePath.hasPrefix(wanted + "/") }
                .sorted { $0.absolutePath < $1.absolutePath }
        }
        guard !entries.isEmpty else {
            throw Failure(description: "channel \(spec.name): no library file at \(spec.path)")
        }
        var tracks: [ChannelTrack] = []
        var format: ChannelFormat?
        for entry in entries {
            guard let track = track(for: entry) else {
                warn("channel \(spec.name): \(entry.path) skipped: \(entry.analysis.container.rawValue) cannot be streamed as is (MP3 or ADTS AAC only)")
                continue
            }
            let trackFormat = ChannelFormat(codec: track.codec, sampleRate: track.sampleRate, channels: track.channels,
                                            kbps: track.kbps)
            if let format {
                guard format.codec == trackFormat.codec, format.sampleRate == trackFormat.sampleRate,
                      format.channels == trackFormat.channels else {
                    warn("channel \(spec.name): \(entry.path) skipped: \(describe(trackFormat)) differs from the channel's \(describe(format))")
                    continue
                }
            } else {
                format = trackFormat
            }
            tracks.append(track)
        }
        guard let format, !tracks.isEmpty else {
            throw Failure(description: "channel \(spec.name): no playable track at \(spec.path)")
        }
        return (tracks, format)
    }

    static func describe(_ format: ChannelFormat) -> String {
        "\(format.codec == .mpeg ? "MPEG audio" : "AAC") \(format.sampleRate) Hz \(format.channels == 1 ? "mono" : "\(format.channels) channels")"
    }

    /// The channel track of a catalog entry, nil for containers a radio stream cannot carry.
    static func track(for entry: CatalogEntry) -> ChannelTrack? {
        let analysis = entry.analysis
        let codec: AudioFrameSplitter.Codec
        switch analysis.container {
        case .mp3: codec = .mpeg
        case .adts: codec = .adts
        default: return nil
        }
        let tags = analysis.tags
        let title: String
        if let artist = tags.artist, !artist.isEmpty, let name = tags.title, !name.isEmpty {
            title = "\(artist) - \(name)"
        } else if let name = tags.title, !name.isEmpty {
            title = name
        } else {
            let file = entry.path.split(separator: "/").last.map(String.init) ?? entry.path
            title = file.split(separator: ".").dropLast().joined(separator: ".")
        }
        return ChannelTrack(path: entry.absolutePath, title: title.isEmpty ? entry.path : title, codec: codec,
                            sampleRate: analysis.sampleRate, channels: analysis.channels,
                            kbps: max(1, analysis.bitrate / 1000),
                            audioStart: analysis.seekIndex.firstFrameOffset, audioEnd: analysis.seekIndex.audioEndOffset)
    }
}
