import StreamShared

/// `streamplay --info`: the facts about a track as one JSON object.
public enum TrackInfo {
    /// Analyzes a local file.
    public static func analyze(path: String) throws -> TrackAnalysis {
        try TrackAnalyzer.analyze(LocalFile(path: path))
    }

    /// The `--info` JSON object, fields in the documented order.
    public static func json(_ a: TrackAnalysis) -> String {
        var w = JSONObjectWriter()
        w.add("container", a.container.rawValue)
        w.add("codec", a.codec)
        w.add("sample_rate", a.sampleRate)
        w.add("channels", a.channels)
        w.add("duration_s", a.durationSeconds)
        w.add("bitrate", a.bitrate)
        w.add("frames", a.frames)
        w.add("first_frame_offset", a.firstFrameOffset)
        w.add("encoder_delay", a.encoderDelay)
        w.add("encoder_padding", a.encoderPadding)
        w.add("title", a.tags.title)
        w.add("artist", a.tags.artist)
        w.add("album", a.tags.album)
        w.add("track", a.tags.track)
        w.add("cover_art_bytes", a.tags.coverArtBytes)
        w.add("total_samples", a.totalSamples)
        if !a.notes.isEmpty {
            w.addRaw("notes", "[" + a.notes.map(JSONObjectWriter.quote).joined(separator: ",") + "]")
        }
        return w.text
    }
}
