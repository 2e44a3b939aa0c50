import Glibc
import Logging
import StreamClient
import StreamLog
import StreamShared

/// streamplay: plays (and describes) an audio stream.
@main
struct StreamPlay {
    /// Every positional argument: tracks, folders, playlists (a queue when more than one).
    var sources: [String] = []
    /// The first source (the only one for a single track or --info).
    var source: String { sources.first ?? "" }
    var info = false
    var output = "alsa"
    var start: Double = 0
    var duration: Double?
    var volume: Float = 1
    var rate: Double = 1
    var pitch: Double = 0
    var eq: String?
    var replaygain = "off"
    var preamp: Double = 0
    var outputRate: Int?
    var stretchEngine = "wsola"
    var bufferBytes = 1 << 20
    var realtime = false
    var stats = false
    var verbose = false
    var retryFor: Double = 30
    var stallTimeout: Double = 10
    var maxBitrate: Int?
    var shuffle = false
    var seed: UInt64?
    var loop = "off"
    var startTrack: Int?
    var cacheDir: String?
    var cacheMb = 512
    var crossfade: Double = 0
    var album: String?
    var search: String?
    var caFile: String?
    var user: String?
    var format: String?
    var bitrate: Int?

    /// The command line: every option with its help, in the order `--help` lists them.
    static var commandLine: CommandLineParser<StreamPlay> { CommandLineParser(
        name: "streamplay",
        overview: "Stream and play audio from a streamd server, any HTTP server, or a local file.",
        argumentName: "source", argumentHelp: "URLs or local paths: tracks, folders (their audio files in path order), track playlists (M3U, M3U8, PLS) or HLS playlists; several make a queue.",
        options: [
            .flag("info", help: "Print what the track is (container, codec, duration, tags) as one JSON object and exit.", \.info),
            .value("output", help: "alsa[:DEVICE], wav:PATH or null.", \.output, defaults: StreamPlay()),
            .value("start", help: "Start position in seconds.", \.start, defaults: StreamPlay()),
            .optional("duration", help: "Play at most this many seconds.", \.duration),
            .value("volume", help: "Volume, 0...2.", \.volume, defaults: StreamPlay()),
            .value("rate", help: "Playback rate 0.1...16, pitch kept.", \.rate, defaults: StreamPlay()),
            .value("pitch", help: "Pitch shift in semitones, -12...12, tempo kept.", \.pitch, unconditional: true,
                   defaults: StreamPlay()),
            .optional("eq", help: "Equalizer: a preset (flat, bass, treble, loudness, vocal, speech, rock, pop, jazz, classical) or bands like 31:+3,1k:-2,hs8k:+2:0.7,preamp:-3.", \.eq),
            .value("replaygain", help: "ReplayGain: off, track, album, or auto (album gain while consecutive tracks share an album, else track).",
                   \.replaygain, defaults: StreamPlay()),
            .value("preamp", help: "dB added to the ReplayGain of tagged tracks, -15...15 (peaks still never clip).", \.preamp,
                   unconditional: true, defaults: StreamPlay()),
            .optional("output-rate", help: "Resample to this rate (Hz) when the track's differs, e.g. the sound card's.", \.outputRate),
            .value("stretch-engine", help: "Time-stretch engine: wsola or sonic.", \.stretchEngine, hidden: true, defaults: StreamPlay()),
            .value("buffer-bytes", help: "Throttle buffer size in bytes.", \.bufferBytes, defaults: StreamPlay()),
            .flag("realtime", help: "Pace wav: and null outputs to real time.", \.realtime),
            .flag("stats", help: "Print a JSON object of playback statistics as the last stdout line.", \.stats),
            .flag("verbose", help: "Component-tagged diagnostics on stderr.", \.verbose),
            .value("retry-for", help: "Give up after this many seconds without receiving data.", \.retryFor, defaults: StreamPlay()),
            .value("stall-timeout", help: "Treat a transfer that stalls this many seconds as dropped and reconnect.",
                   \.stallTimeout, defaults: StreamPlay()),
            .optional("max-bitrate", help: "HLS: play the master playlist's variant with the highest BANDWIDTH at or below this many bits per second.", \.maxBitrate),
            .flag("shuffle", help: "Play the queue in random order.", \.shuffle),
            .optional("seed", help: "Seed for --shuffle: the same seed gives the same order.", \.seed),
            .value("loop", help: "off, track (repeat the track until n) or all (repeat the queue).", \.loop, defaults: StreamPlay()),
            .optional("start-track", help: "Begin the queue at this track (1-based, in the order given; with --shuffle it plays first).",
                      \.startTrack),
            .optional("cache-dir", help: "Keep streamed bytes in this folder and play them from there next time (HTTP sources).",
                      \.cacheDir),
            .value("cache-mb", help: "Bound of --cache-dir in MiB (least recently used entries go first).", \.cacheMb,
                   defaults: StreamPlay()),
            .value("crossfade", help: "Seconds of equal-power crossfade between a queue's tracks, 0...12 (never between tracks of one album, which join gaplessly).",
                   \.crossfade, defaults: StreamPlay()),
            .optional("album", help: "With a streamd server's URL (http://HOST:PORT/): play the album of this title (or the one album whose title holds it).",
                      \.album),
            .optional("search", help: "With a streamd server's URL: play the tracks its search finds for this text, best first.",
                      \.search),
            .optional("format", help: "With a streamd track URL (/media/...): ask streamd for a transcode, opus or mp3, and play it (--start becomes the transcode's offset=).", \.format),
            .optional("bitrate", help: "kbit/s of the --format transcode (opus 6...510, default 128; mp3 8...320, default 192).", \.bitrate),
            .optional("user", help: "Log in to the server as this user (password from the terminal, or one line of stdin); without it, a token from ~/.config/streamplay/tokens or a ~/.netrc entry for the host is used.", \.user),
            .optional("ca-file", help: "https: trust the certificates in this PEM file (a private server's CA); replaces the system's list.",
                      \.caFile),
        ],
        setArgument: { command, source in command.sources.append(source) }, acceptsSeveralArguments: true) }
}

extension StreamPlay {
    func validate() throws {
        guard (0...2).contains(volume) else { throw UsageError("--volume must be within 0...2") }
        // Times become sample and frame counts: a week bounds them as it bounds a file's own times.
        let week = InputLimits.maxDurationSeconds
        guard (0...week).contains(start) else { throw UsageError("--start must be within 0...\(Int(week)) seconds") }
        if let duration, !(duration > 0 && duration <= week) {
            throw UsageError("--duration must be positive and at most \(Int(week)) seconds")
        }
        guard retryFor >= 0, retryFor <= week else { throw UsageError("--retry-for must be within 0...\(Int(week)) seconds") }
        guard stallTimeout > 0, stallTimeout <= 86_400 else { throw UsageError("--stall-timeout must be within 0...86400 seconds") }
        guard bufferBytes >= 65_536 else { throw UsageError("--buffer-bytes must be at least 65536") }
        if let maxBitrate, maxBitrate <= 0 { throw UsageError("--max-bitrate must be positive") }
        guard (0.1...16).contains(rate) else { throw UsageError("--rate must be within 0.1...16") }
        guard (-12...12).contains(pitch) else { throw UsageError("--pitch must be within -12...12 semitones") }
        if let eq { do { _ = try EQSettings.parse(eq) } catch { throw UsageError(error.description) } }
        guard ReplayGainMode(rawValue: replaygain) != nil else { throw UsageError("--replaygain must be off, track, album or auto") }
        guard (-15...15).contains(preamp) else { throw UsageError("--preamp must be within -15...15 dB") }
        if let outputRate, !(8_000...384_000).contains(outputRate) { throw UsageError("--output-rate must be within 8000...384000") }
        guard TimePitch.Engine(rawValue: stretchEngine) != nil else { throw UsageError("--stretch-engine must be wsola or sonic") }
        if info && sources.count > 1 { throw UsageError("--info takes one URL or path") }
        guard LoopMode(rawValue: loop) != nil else { throw UsageError("--loop must be off, track or all") }
        if let startTrack, startTrack < 1 { throw UsageError("--start-track must be 1 or more") }
        guard (1...1_048_576).contains(cacheMb) else { throw UsageError("--cache-mb must be within 1...1048576") }
        if cacheDir?.isEmpty == true { throw UsageError("--cache-dir must name a folder") }
        guard (0...PlayerOptions.maxCrossfadeSeconds).contains(crossfade) else { throw UsageError("--crossfade must be within 0...12 seconds") }
        if let format {
            guard let encoding = TranscodeRequest.Format(rawValue: format) else { throw UsageError("--format must be opus or mp3") }
            if let bitrate, !encoding.bitrates.contains(bitrate) {
                throw UsageError("--bitrate must be within \(encoding.bitrates.lowerBound)...\(encoding.bitrates.upperBound) for \(format)")
            }
            if info { throw UsageError("--info describes the track itself, not a --format transcode") }
        } else if bitrate != nil {
            throw UsageError("--bitrate needs --format opus or mp3")
        }
        if album != nil || search != nil {
            guard album == nil || search == nil else { throw UsageError("--album and --search cannot be combined") }
            guard sources.count == 1, StreamdLibrary.isServerRoot(source) else {
                throw UsageError("--album and --search take one streamd server URL, e.g. http://127.0.0.1:8080/")
            }
            if let album, album.isEmpty || album.utf8.count > 256 { throw UsageError("--album must be 1...256 bytes") }
            if let search, search.isEmpty || search.utf8.count > 256 { throw UsageError("--search must be 1...256 bytes") }
            if info { throw UsageError("--info takes one track, not --album or --search") }
        }
    }

    func run() throws {
        if let user { try logIn(as: user) }
        if info { return try printInfo() }
        let sink: AudioOutput
        if output == "null" {
            sink = NullOutput()
        } else if output.hasPrefix("wav:") {
            sink = WAVFileOutput(path: String(output.dropFirst(4)))
        } else if output == "alsa" || output.hasPrefix("alsa:") {
            sink = ALSAOutput(device: output.hasPrefix("alsa:") ? String(output.dropFirst(5)) : "default")
        } else {
            throw UsageError("--output must be alsa[:DEVICE], wav:PATH or null")
        }
        var options = PlayerOptions()
        options.start = start
        // A transcode is asked for at its start position (offset=), which an encode in progress
        // can answer where a Range request cannot: the player starts at the response's beginning.
        var url = source
        let transcode = format.flatMap(TranscodeRequest.Format.init(rawValue:)).map { TranscodeRequest(format: $0, bitrateKbps: bitrate) }
        if let transcode {
            guard sources.count == 1, album == nil, search == nil, !shuffle, seed == nil, loop == "off", startTrack == nil else {
                Self.fail("streamplay: --format takes one streamd track URL (http(s)://HOST:PORT/media/...), no queue options", code: 2)
            }
            do { url = try transcode.url(for: source, offsetSeconds: start) } catch {
                Self.fail("streamplay: \(error)", code: 2)
            }
            options.start = 0
        }
        options.duration = duration
        options.volume = volume
        options.bufferBytes = bufferBytes
        options.rate = rate
        options.semitones = pitch
        if let eq { options.eq = (try? EQSettings.parse(eq)) ?? .flat }
        options.outputSampleRate = outputRate
        options.replayGain = ReplayGainSettings(mode: ReplayGainMode(rawValue: replaygain) ?? .off, preampDB: preamp)
        options.stretchEngine = TimePitch.Engine(rawValue: stretchEngine) ?? .wsola
        options.realtime = realtime
        options.crossfadeSeconds = crossfade
        options.http.retryFor = retryFor
        options.http.stallTimeout = stallTimeout
        options.http.caFile = caFile
        options.hls.maxBitrate = maxBitrate
        if let cacheDir {
            do {
                options.http.cache = try DiskCache(directory: cacheDir, capacityBytes: cacheMb << 20)
            } catch {
                Self.fail("streamplay: cache: \(error)", code: 1)
            }
        }
        let logger = Logger(label: "streamplay.player")
        // The player's component-tagged diagnostics are debug lines: made only with --verbose.
        let log = verbose ? logger : nil
        if transcode == nil, let queue = queueTracks(http: options.http) {
            return runQueue(queue, output: sink, options: options, log: log)
        }
        let player: Player
        do {
            player = try Player(url: url, output: sink, options: options, logger: log)
        } catch {
            Self.fail("streamplay: \(error)", code: 1)
        }
        let terminal = TerminalUI(player: player, enabled: isatty(0) == 1 && isatty(1) == 1 && (sink.isRealtime || realtime))
        terminal.start()
        let outcome = Result { () throws(PlaybackError) -> PlayerStats in try player.run() }
        terminal.stop()
        for warning in (try? outcome.get())?.warnings ?? player.lastStats?.warnings ?? [] {
            logger.warning("warning: \(warning)")
        }
        switch outcome {
        case .success(var result):
            if let transcode { Self.describe(transcode, in: &result, logger: logger) }
            if stats { print(result.json) }
        case .failure(let error):
            if stats, var partial = player.lastStats {
                if let transcode { Self.describe(transcode, in: &partial, logger: logger) }
                print(partial.json)
            }
            Self.fail("streamplay: \(error.message)", code: error.exitCode)
        }
    }

    /// Names the transcode in the stats: the encoding and bitrate asked for, which the codec the
    /// player found in the response confirms (a server that ignored the query is warned about).
    static func describe(_ transcode: TranscodeRequest, in stats: inout PlayerStats, logger: Logger) {
        stats.transcodeFormat = transcode.format.rawValue
        stats.transcodeBitrateKbps = transcode.effectiveBitrate
        if !stats.codec.isEmpty && stats.codec != transcode.format.codec {
            logger.warning("warning: asked for \(transcode.format.rawValue) but the server sent \(stats.codec)")
        }
    }

    private func printInfo() throws {
        do {
            if HLSSource.isPlaylist(source) {
                var options = HLSOptions()
                options.maxBitrate = maxBitrate
                print(try HLSInfo.json(url: source, options: options))
            } else if source.contains("://") {
                let (analysis, bytesRead) = try TrackInfo.analyze(url: source)
                Logger(label: "streamplay.source").debug("source: --info read \(bytesRead) bytes through Range requests")
                print(TrackInfo.json(analysis))
            } else {
                print(TrackInfo.json(try TrackInfo.analyze(path: source)))
            }
        } catch let error as SourceError {
            Self.fail("streamplay: \(error)", code: error.exitCode)
        } catch {
            Self.fail("streamplay: \(error)", code: 1)
        }
    }

    /// Parses, validates and runs; a usage error exits 2 (DESIGN.md), any other failure 1.
    static func main() {
        do {
            switch try commandLine.parse(Array(CommandLine.arguments.dropFirst()), into: StreamPlay()) {
            case .help:
                print(commandLine.help)
            case .run(let command):
                command.bootstrapLogging()
                try command.validate()
                try command.run()
            }
        } catch let error as UsageError {
            if error.description.hasPrefix("Missing expected argument") {
                fail("Error: \(error)\n\n" + commandLine.help, code: 2)
            }
            let help = error.optionHelp.map { "\nHelp:  \($0)" } ?? ""
            fail("Error: \(error)\(help)\nUsage: \(commandLine.usage)\n  See '\(commandLine.name) --help' for more information.",
                 code: 2)
        } catch {
            fail("Error: \(error)", code: 1)
        }
    }

    /// Sets up logging once for the process: "streamplay: " and the message on stderr, debug
    /// lines with --verbose, else info and above (warnings, skipped queue tracks).
    func bootstrapLogging() {
        let level: Logger.Level = verbose ? .debug : .info
        LoggingSystem.bootstrap { _ in PrefixLogHandler(prefix: "streamplay: ", logLevel: level) }
    }

    static func stderrLine(_ message: String) {
        StandardStream.error.write(message + "\n")
    }

    /// Prints one line on stderr and exits with the documented status.
    static func fail(_ message: String, code: Int32) -> Never {
        stderrLine(message)
        Glibc.exit(code)
    }
}
