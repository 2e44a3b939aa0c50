import StreamShared

/// The library page at `/`: one self-contained HTML document, no external assets.
public enum WebPage {
    public static func render(_ tracks: [CatalogEntry]) -> String {
        var rows = ""
        for (i, track) in tracks.enumerated() {
            let a = track.analysis
            let url = "/media/" + PathResolver.percentEncode(track.path)
            rows += """
            <li class="track" data-path="\(escape(track.path))" data-duration="\(JSONObjectWriter.number(a.durationSeconds, decimals: 3))">
              <div class="meta"><span class="title">\(escape(track.displayTitle))</span>
              <span class="artist">\(escape(a.tags.artist ?? ""))</span>
              <span class="album">\(escape(a.tags.album ?? ""))</span>
              <span class="duration">\(clock(a.durationSeconds))</span>
              <span class="format">\(escape(a.codec)) · \(kilohertz(a.sampleRate)) kHz · \(a.bitrate / 1000) kbit/s</span></div>
              <audio id="track-\(i)" controls preload="metadata" src="\(escape(url))"></audio>
            </li>

            """
        }
        return """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>streamd library</title>
        <style>
          body { font: 15px/1.4 system-ui, sans-serif; margin: 2rem auto; max-width: 52rem; color: #222; }
          h1 { font-size: 1.4rem; }
          ol { list-style: none; padding: 0; }
          li.track { padding: .6rem 0; border-bottom: 1px solid #ddd; }
          .meta span { margin-right: .8rem; }
          .title { font-weight: 600; }
          .artist, .album, .format { color: #666; }
          .duration { font-variant-numeric: tabular-nums; }
          audio { width: 100%; margin-top: .3rem; }
        </style></head>
        <body>
        <h1>streamd — \(tracks.count) track\(tracks.count == 1 ? "" : "s")</h1>
        <ol id="tracks">
        \(rows)</ol>
        <script>
          // Play one track at a time, and go on to the next when one ends.
          const players = Array.from(document.querySelectorAll('audio'));
          players.forEach((p, i) => {
            p.addEventListener('play', () => players.forEach(o => { if (o !== p) o.pause(); }));
            p.addEventListener('ended', () => { if (players[i + 1]) players[i + 1].play(); });
          });
        </script>
        </body></html>

        """
    }

    /// 44100 → "44.1", 48000 → "48".
    static func kilohertz(_ rate: Int) -> String {
        rate % 1000 == 0 ? String(rate / 1000) : JSONObjectWriter.number(Double(rate) / 1000, decimals: 2)
    }

    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        let s = total % 60
        return "\(total / 60):\(s < 10 ? "0" : "")\(s)"
    }

    /// Escapes text for HTML element content and attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
