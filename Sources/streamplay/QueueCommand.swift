import Glibc
import Logging
import StreamClient
import StreamShared

/// streamplay with several sources, a directory or a track playlist: the queue.
extension StreamPlay {
    /// True when the sources make a queue rather than one track: more than one, a queue option,
    /// or a single source that expands to anything but itself (a directory, a track playlist).
    func queueTracks(http: HTTPSourceOptions) -> QueueSources.Expansion? {
        let asked = sources.count > 1 || shuffle || seed != nil || loop != "off" || startTrack != nil
        let single = sources.first ?? ""
        if album != nil || search != nil { return libraryQuery(http: http) }
        let mayExpand = !single.contains("://") && QueueSources.isDirectory(single) || QueuePlaylists.mayBePlaylist(single)
            || StreamdLibrary.isServerRoot(single)
        guard asked || mayExpand else { return nil }
        let expansion = QueueSources.expand(sources, http: http)
        if !asked && expansion.tracks == [single] && expansion.warnings.isEmpty { return nil }
        return expansion
    }

    /// `--album NAME` / `--search QUERY` on a streamd server's root URL: the album's or the
    /// search's tracks, through streamd's API. Exits when the server cannot answer.
    func libraryQuery(http: HTTPSourceOptions) -> QueueSources.Expansion {
        do {
            if let album {
                return QueueSources.expand([try StreamdLibrary.albumPlaylist(named: album, base: source, http: http)], http: http)
            }
            return QueueSources.Expansion(tracks: try StreamdLibrary.searchTracks(search ?? "", base: source, http: http),
                                          warnings: [])
        } catch let error as SourceError {
            Self.fail("streamplay: \(error)", code: error.exitCode)
        } catch {
            Self.fail("streamplay: \(error)", code: 1)
        }
    }

    /// Plays the queue; returns (exit 0) when at least one track played, else exits with the
    /// status of the last failure.
    func runQueue(_ expansion: QueueSources.Expansion, output sink: AudioOutput, options: PlayerOptions,
                  log: Logger?) {
        let logger = Logger(label: "streamplay.queue")
        for warning in expansion.warnings { logger.warning("\(warning)") }
        guard !expansion.tracks.isEmpty else { Self.fail("streamplay: queue: nothing to play", code: 1) }
        let queue = PlayQueue(count: expansion.tracks.count, shuffle: shuffle, seed: seed,
                              loop: LoopMode(rawValue: loop) ?? .off, startTrack: startTrack ?? 1)
        let output = QueueOutput(sink, reopensOnFormatChange: sink.isRealtime)
        let player = QueuePlayer(urls: expansion.tracks, queue: queue, output: output, options: options, logger: log)
        let terminal = TerminalUI(queue: player, enabled: isatty(0) == 1 && isatty(1) == 1 && (sink.isRealtime || realtime))
        terminal.start()
        let results = player.run { event in
            switch event {
            case let .started(number, count, url):
                logger.debug("queue: started \(number)/\(count) \(url)")
            case let .ended(number, url, stats):
                logger.debug("queue: ended \(number) \(url) (\(stats.framesOut) frames)")
                for warning in stats.warnings { logger.warning("warning: \(url): \(warning)") }
            case let .skipped(number, url, reason):
                logger.warning("skipped \(number)/\(expansion.tracks.count) \(url): \(reason)")
            }
        }
        terminal.stop()
        if stats { print(Self.queueStatsJSON(results)) }
        let played = results.filter { $0.skipReason == nil && $0.number > 0 }
        if played.isEmpty {
            Self.fail("streamplay: queue: no track could be played", code: results.last?.exitCode ?? 1)
        }
        if let outputFailure = results.first(where: { $0.number == 0 }), let reason = outputFailure.skipReason {
            Self.fail("streamplay: \(reason)", code: 1)
        }
    }

    /// `--stats` for a queue: one entry per track in play order, then the totals.
    static func queueStatsJSON(_ results: [QueueTrackResult]) -> String {
        var entries: [String] = []
        var frames = 0, underruns = 0, reconnects = 0, bytes = 0, played = 0, skipped = 0
        var seconds = 0.0
        for result in results where result.number > 0 {
            var w = JSONObjectWriter()
            w.add("number", result.number)
            w.add("url", result.url)
            w.add("status", result.skipReason == nil ? "played" : "skipped")
            w.add("reason", result.skipReason)
            if let s = result.stats {
                w.addRaw("stats", s.json)
                frames += s.framesOut
                underruns += s.underruns
                reconnects += s.reconnects
                bytes += s.bytesDownloaded
                seconds += s.durationSeconds ?? 0
            }
            if result.skipReason == nil { played += 1 } else { skipped += 1 }
            entries.append(w.text)
        }
        var totals = JSONObjectWriter()
        totals.add("tracks_played", played)
        totals.add("tracks_skipped", skipped)
        totals.add("frames_out", frames)
        totals.add("duration_s", seconds, decimals: 3)
        totals.add("underruns", underruns)
        totals.add("reconnects", reconnects)
        totals.add("bytes_downloaded", bytes)
        var w = JSONObjectWriter()
        w.addRaw("tracks", "[" + entries.joined(separator: ",") + "]")
        w.addRaw("totals", totals.text)
        return w.text
    }
}
