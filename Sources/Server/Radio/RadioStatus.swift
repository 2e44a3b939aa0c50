import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// The radio status documents: `/api/channels` (ours) and `/status-json.xsl` (Icecast's shape,
/// so dashboards written for Icecast read it).
package enum RadioStatus {
    package static func channelsJSON(_ channels: [RadioChannel]) -> String {
        let items = channels.map { channel -> String in
            let s = channel.snapshot()
            var w = JSONObjectWriter()
            w.add("name", s.name)
            w.add("url", "/radio/\(s.name)")
            w.add("listeners", s.listeners)
            w.add("listener_peak", s.listenerPeak)
            w.add("now_playing", s.title)
            w.add("source_connected", s.sourceConnected)
            w.add("bytes_out", s.bytesOut)
            w.add("skips", s.skips)
            w.add("stream_bytes", s.streamBytes)
            w.add("content_type", s.format?.contentType)
            w.add("codec", s.format?.codecName)
            w.add("tracks_encoded", s.tracksEncoded)
            w.add("sample_rate", s.format?.sampleRate)
            w.add("channels", s.format?.channels)
            w.add("bitrate_kbps", s.format?.kbps)
            w.add("ended", s.ended)
            w.add("hls_url", "/radio/\(s.name)/index.m3u8")
            w.add("hls_playlist_requests", channel.segments.playlistRequests.load(ordering: .relaxed))
            w.add("hls_segment_requests", channel.segments.segmentRequests.load(ordering: .relaxed))
            return w.text
        }
        return "[" + items.joined(separator: ",") + "]\n"
    }

    /// Icecast 2.4's status-json.xsl: `icestats` with a `source` array (always an array here;
    /// Icecast gives a bare object when one source is up).
    package static func icecastJSON(_ channels: [RadioChannel], host: String, serverStart: Int) -> String {
        let sources = channels.compactMap { channel -> String? in
            let s = channel.snapshot()
            guard let format = s.format, !s.ended else { return nil }
            var w = JSONObjectWriter()
            w.add("audio_info", "channels=\(format.channels);samplerate=\(format.sampleRate);bitrate=\(format.kbps)")
            w.add("bitrate", format.kbps)
            w.add("channels", format.channels)
            w.add("samplerate", format.sampleRate)
            w.add("genre", s.station.genre ?? "various")
            w.add("listener_peak", s.listenerPeak)
            w.add("listeners", s.listeners)
            w.add("listenurl", "http://\(host)/radio/\(s.name)")
            w.add("server_description", s.station.description ?? "streamd radio channel")
            w.add("server_name", s.station.name)
            w.add("server_type", format.contentType)
            // Icecast names the codec inside an Ogg mount ("Opus", "Vorbis").
            if let codec = format.oggCodec { w.add("subtype", codec.prefix(1).uppercased() + codec.dropFirst()) }
            w.add("server_url", s.station.url)
            w.add("stream_start", HTTPDate.format(s.createdWall))
            w.add("stream_start_iso8601", iso8601(s.createdWall))
            w.add("title", s.title)
            w.add("source_connected", s.sourceConnected)
            w.add("slow_listeners", s.skips)
            w.add("total_bytes_sent", s.bytesOut)
            w.addRaw("dummy", "null")
            return w.text
        }
        var stats = JSONObjectWriter()
        stats.add("admin", "admin@localhost")
        stats.add("host", host)
        stats.add("location", "streamd")
        stats.add("server_id", "streamd")
        stats.add("server_start", HTTPDate.format(serverStart))
        stats.add("server_start_iso8601", iso8601(serverStart))
        stats.addRaw("source", "[" + sources.joined(separator: ",") + "]")
        var root = JSONObjectWriter()
        root.addRaw("icestats", stats.text)
        return root.text + "\n"
    }

    static func iso8601(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))+0000"
    }
}
