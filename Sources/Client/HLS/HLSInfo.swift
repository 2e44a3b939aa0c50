import StreamShared
import StreamAudio

/// `streamplay --info URL.m3u8`: what an HLS stream is, from its playlist and first segment.
public enum HLSInfo {
    /// The `--info` JSON object for an HLS stream: the chosen media playlist's facts and the
    /// codec, rate and channels of its first segment's audio.
    public static func json(url: String, options: HLSOptions = HLSOptions(), http: HTTPSourceOptions = HTTPSourceOptions()) throws -> String {
        let fetcher = HLSFetcher(options: http, origin: url)
        let loader = HLSPlaylistLoader(options: options, fetcher: fetcher, log: { _ in })
        let media = try loader.load(url)
        let playlist = media.playlist
        guard let first = playlist.segments.first else { throw SourceError.hls("\(media.location) lists no segments") }
        var unpacker = HLSSegmentUnpacker()
        var stream: [UInt8] = []
        if let map = first.map {
            let body = try fetcher.get(HLSFetcher.resolve(map.uri, against: media.base), range: map.byteRange,
                                       limit: options.maxSegmentBytes)
            stream = try unpacker.unpackInit(body.bytes, label: "init section \(map.uri)")
        }
        let url0 = HLSFetcher.resolve(first.uri, against: media.base)
        let body = try fetcher.get(url0, range: first.byteRange, limit: options.maxSegmentBytes)
        stream += try unpacker.unpack(body.bytes, label: "segment \(first.sequence) (\(url0))").stream
        var codec = "unknown", sampleRate = 0, channels = 0
        switch try Probe.probe(stream[...], isComplete: true) {
        case .audio(let probed):
            codec = probed.codec
            if let header = probed.mpegFrame?.header {
                (sampleRate, channels) = (header.sampleRate, header.channels)
            } else if let header = probed.adtsHeader {
                (sampleRate, channels) = (header.sampleRate, header.audioSpecificConfig.channels)
                // The format the frames really make (implicit SBR/PS), as the player will find it.
                var converter = try ADTSConverter(first: header)
                if let format = try decodedFormat(&converter, stream: stream, from: probed.firstFrameOffset) {
                    (sampleRate, channels) = (format.sampleRate, format.channels)
                }
            } else if probed.container == .mp4, let moov = try MP4TopLevel.scan(prefix: stream[...], fileSize: stream.count).0.moovRange {
                let movie = try MP4Movie.parse(moov: stream[moov])
                if let track = movie.audio {
                    let asc = try? AudioSpecificConfig.parse(track.decoderSpecificInfo[...])
                    codec = track.codec == "mp4a" ? "aac" : track.codec
                    sampleRate = asc?.outputSampleRate ?? track.sampleRate
                    channels = asc?.channels ?? track.channels
                    if codec == "aac" {
                        var converter = try FragmentedMP4Converter(track: track, defaults: movie.audioTrackExtends,
                                                                   audioStart: moov.upperBound, outputSampleRate: sampleRate,
                                                                   declaredChannels: channels)
                        if let format = try decodedFormat(&converter, stream: stream, from: moov.upperBound) {
                            (sampleRate, channels) = (format.sampleRate, format.channels)
                        }
                    }
                }
            }
        case .needMore:
            throw SourceError.hls("segment \(first.sequence) (\(url0)) holds no whole audio frame")
        }
        var w = JSONObjectWriter()
        w.add("container", "hls")
        w.add("codec", codec)
        w.add("sample_rate", sampleRate)
        w.add("channels", channels)
        w.add("duration_s", playlist.isLive ? nil : playlist.totalDuration)
        w.add("segment_format", unpacker.kind?.rawValue ?? "unknown")
        w.add("segments", playlist.segments.count)
        w.add("target_duration", playlist.targetDuration)
        w.add("live", playlist.isLive)
        w.add("media_playlist", media.location)
        return w.text
    }

    /// Runs an AAC converter over the first segment's stream (from `offset`) until its decoder
    /// reports the format it outputs; nil when no frame decodes within 16 units.
    static func decodedFormat(_ converter: inout some PacketConverter, stream: [UInt8], from offset: Int) throws -> AudioFormat? {
        try converter.restart(at: offset)
        converter.append(Array(stream.dropFirst(offset)))
        for _ in 0..<16 {
            guard try converter.convertNext(isComplete: true, { _ in }) else { return nil }
            if let format = converter.decodedFormat { return format }
        }
        return nil
    }
}
