import Foundation
import Logging
import StreamShared
import StreamHTTP
import StreamLibrary

/// `streamd package`: writes what the HLS routes serve as static files, laid out like streamd's
/// URLs (`hls/<path>/…` and `media/<path>`), so any web server or CDN can serve the folder.
public enum HLSPackager {
    /// What a package run wrote.
    public struct Report: Sendable {
        public var tracks = 0
        public var segments = 0
        public var bytes = 0
        public var skipped = 0
    }

    /// Packages every track of `catalog` into `out`; `logger` gets one line per skipped track (info).
    public static func package(catalog: Catalog, out: String, logger: Logger = .silent("streamd.hls")) throws -> Report {
        let fm = FileManager.default
        let root = URL(fileURLWithPath: out, isDirectory: true)
        try fm.createDirectory(at: root, withIntermediateDirectories: true)
        // Refuse to write into the library itself: the catalog would pick up the segments next time.
        let outReal = root.resolvingSymlinksInPath().path
        if outReal == catalog.resolver.root || outReal.hasPrefix(catalog.resolver.root + "/") {
            throw HLSError.invalid("the output folder may not be inside the music folder")
        }
        var report = Report()
        var listed: [(track: Track, plan: HLSTrackPlan)] = []
        for track in catalog.tracks() {
            let plan: HLSTrackPlan
            let file: OpenFile
            let absolutePath = catalog.absolutePath(of: track)
            do {
                file = try OpenFile(path: absolutePath)
                let analysis = try catalog.analysis(forAbsolutePath: absolutePath, file: file)
                plan = try HLSTrackPlan.make(file: file, etag: file.etag, analysis: analysis)
            } catch {
                logger.info("skipping \(track.path): \(error)")
                report.skipped += 1
                continue
            }
            let folder = root.appendingPathComponent("hls").appendingPathComponent(track.path, isDirectory: true)
            try fm.createDirectory(at: folder, withIntermediateDirectories: true)
            func write(_ name: String, _ bytes: [UInt8]) throws {
                try Data(bytes).write(to: folder.appendingPathComponent(name))
                report.bytes += bytes.count
            }
            try write("index.m3u8", Array(plan.mediaPlaylist(query: "").render().utf8))
            try write("master.m3u8", Array(plan.masterPlaylist(query: "").render().utf8))
            if let initSegment = plan.initSegment { try write("init.mp4", initSegment) }
            // Packed audio also goes into one file, the segments back to back, with a playlist of
            // byte ranges of it (each range a whole segment, ID3 timestamp first, as RFC 8216 wants).
            var packed: FileHandle?
            if plan.supportsByteRanges {
                let url = folder.appendingPathComponent(plan.packedFileName)
                guard fm.createFile(atPath: url.path, contents: nil) else { throw HLSError.invalid("cannot create \(url.path)") }
                packed = try FileHandle(forWritingTo: url)
            }
            defer { try? packed?.close() }
            var written = 0
            do {
                for i in plan.spans.indices {
                    let segment = try plan.segment(i, from: file)
                    try write(plan.segmentName(i), segment)
                    if let packed {
                        try packed.write(contentsOf: segment)
                        report.bytes += segment.count
                    }
                    written += 1
                }
            } catch let error as HLSError {
                // A file whose frames the plan's index promised but the bytes do not hold (damage
                // a reference decoder refuses too): this track is left out, the others go on.
                logger.info("skipping \(track.path): \(error)")
                try? fm.removeItem(at: folder)
                report.skipped += 1
                continue
            }
            report.segments += written
            if plan.supportsByteRanges {
                try write("byterange.m3u8", Array(plan.byteRangePlaylist(fileURI: plan.packedFileName).render().utf8))
            }
            // The original file beside the segments, for download.
            let original = root.appendingPathComponent("media").appendingPathComponent(track.path)
            try fm.createDirectory(at: original.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? fm.removeItem(at: original)
            if (try? fm.linkItem(atPath: absolutePath, toPath: original.path)) == nil {
                try fm.copyItem(atPath: absolutePath, toPath: original.path)
            }
            report.tracks += 1
            listed.append((track, plan))
        }
        try Data(indexPage(listed).utf8).write(to: root.appendingPathComponent("index.html"))
        return report
    }

    /// The page: one player per track, native HLS where the browser has it, else a small
    /// Media Source Extensions player that appends the segments in order.
    static func indexPage(_ tracks: [(track: Track, plan: HLSTrackPlan)]) -> String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        var rows = ""
        for (track, plan) in tracks {
            let base = "hls/" + PathResolver.percentEncode(track.path) + "/"
            let mime = plan.kind == .fmp4 ? "audio/mp4; codecs=\"\(plan.codec)\"" : plan.segmentContentType
            rows += """
            <li><div class="title">\(escape(track.displayTitle))</div>
            <div class="meta">\(escape(track.artist ?? "")) · \(Int(track.durationSeconds.rounded())) s · \(escape(plan.codec))</div>
            <audio controls preload="none" data-master="\(escape(base))master.m3u8" data-index="\(escape(base))index.m3u8" data-mime="\(escape(mime))"></audio></li>

            """
        }
        return """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>streamd HLS package</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>body{font-family:sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}
        li{list-style:none;margin:0 0 1.2rem}.meta{color:#666;font-size:.9rem}audio{width:100%}</style></head>
        <body><h1>Library (HLS)</h1><ul>
        \(rows)</ul>
        <script>
        // Media Source Extensions get the segments of the media playlist, one after another.
        async function feed(audio) {
          const source = new MediaSource();
          audio.src = URL.createObjectURL(source);
          await new Promise(r => source.addEventListener('sourceopen', r, {once: true}));
          const base = new URL(audio.dataset.index, location.href);
          if (audio.paused) await new Promise(r => audio.addEventListener('play', r, {once: true}));
          const text = await (await fetch(base)).text();
          const uris = [];
          for (const line of text.split('\\n')) {
            const map = line.match(/^#EXT-X-MAP:URI="([^"]+)"/);
            if (map) uris.push(map[1]);
            else if (line && !line.startsWith('#')) uris.push(line.trim());
          }
          const buffer = source.addSourceBuffer(audio.dataset.mime);
          if (!audio.dataset.mime.includes('mp4')) buffer.mode = 'sequence';
          const settle = () => new Promise(r => buffer.addEventListener('updateend', r, {once: true}));
          let placed = buffer.mode === 'sequence';
          for (const uri of uris) {
            const bytes = await (await fetch(new URL(uri, base))).arrayBuffer();
            // Stay at most 60 s ahead of the playhead.
            while (buffer.buffered.length && buffer.buffered.end(0) - audio.currentTime > 60)
              await new Promise(r => setTimeout(r, 500));
            buffer.appendBuffer(bytes);
            await settle();
            // fMP4 times start at the variants' shared origin (1 s), not 0: the first fragment is
            // put again so that the track starts at 0, where the playhead is.
            if (!placed && buffer.buffered.length) {
              placed = true;
              const start = buffer.buffered.start(0);
              if (start > 0) {
                buffer.remove(0, Infinity);
                await settle();
                buffer.timestampOffset = -start;
                buffer.appendBuffer(bytes);
                await settle();
              }
            }
          }
          source.endOfStream();
        }
        // Media Source Extensions first where they take the segment type: Chromium's native HLS (156)
        // refuses packed MP3. Elsewhere (iPhone Safari) the browser's own HLS plays the master playlist.
        for (const audio of document.querySelectorAll('audio[data-master]')) {
          if (window.MediaSource && MediaSource.isTypeSupported(audio.dataset.mime)) feed(audio).catch(e => console.error(e));
          else if (audio.canPlayType('application/vnd.apple.mpegurl')) audio.src = audio.dataset.master;
        }
        </script></body></html>

        """
    }
}
