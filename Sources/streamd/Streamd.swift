import ArgumentParser
import Foundation
import Logging
import StreamLog
import StreamServer
import StreamShared
import CLinux
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio
import StreamAuth
import StreamSubsonic

/// streamd: hosts a music folder over HTTP (the default command), or packages it as static HLS.
@main
struct Streamd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "streamd",
        abstract: "Serve a music folder over HTTP: files with Range support, a catalog, seek indexes, HLS and a web player.",
        subcommands: [Serve.self, Package.self, UserCommand.self,
                      WorkerCommand<AnalyzerWorker>.self, WorkerCommand<DecodeWorker>.self, WorkerCommand<CoverWorker>.self],
        defaultSubcommand: Serve.self)
}

/// `streamd [DIR] [options]`: the server.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a music folder over HTTP (the default: `streamd DIR` is `streamd serve DIR`).")

    @Argument(help: "The music folder to serve.")
    var folder: String = "media"

    @Option(help: "Address to listen on (IPv4 or IPv6).")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free port.")
    var port: Int = 8080

    @Option(help: "Event-loop threads (default: number of cores).")
    var threads: Int?

    @Option(help: "Maximum simultaneous connections; beyond it new ones are closed at once.")
    var maxConnections: Int = 10_000

    @Option(help: "Seconds a response may wait for a client that takes no bytes before the connection is closed.")
    var writeTimeout: Double = 30

    @Option(help: "Seconds for a request head to arrive (then 408).")
    var headTimeout: Double = 10

    @Option(help: "Seconds an idle keep-alive connection is kept open.")
    var idleTimeout: Double = 30

    @Flag(help: "Warnings and errors only: no access log, no progress lines.")
    var quiet = false

    @Flag(help: "Debug lines too.")
    var verbose = false

    @Flag(inversion: .prefixedNo, help: "Serve HLS playlists and segments under /hls/ (on by default).")
    var hls = true

    @Option(help: "Memory for generated HLS segments, in MiB (least recently used go first; 0 caches nothing).")
    var hlsCacheMb: Int = 64

    @Option(help: "Bitrates in kbit/s (32...320) of the transcoded HLS variants each master playlist offers, as Opus and as MP3 ('none': the original only).")
    var hlsLadder = HLSLadder.defaultRungs.map(String.init).joined(separator: ",")

    @Flag(help: "Send whole files with Content-Length instead of chunked, for clients that seek only when they know the size (GStreamer's souphttpsrc).")
    var contentLength = false

    @Option(help: ArgumentHelp("Publish the track at PATH as a looping live HLS stream at /live/NAME/index.m3u8 (repeatable).",
                               valueName: "NAME=PATH"))
    var live: [String] = []

    @Option(help: ArgumentHelp("A radio channel at /radio/NAME playing the library track, folder or playlist PATH in real time, in path order or shuffled (repeatable). Tracks of mixed formats, or bitrate=KBPS, are transcoded to one MP3 stream (default 128 kbit/s); format=opus encodes every track to Ogg Opus (a chained stream, one link per track, default 128 kbit/s); passthrough sends Ogg Opus or Vorbis tracks as they are, as a chained Ogg stream.",
                               valueName: "NAME=PATH[,shuffle][,format=opus|mp3][,bitrate=128|,passthrough]"))
    var channel: [String] = []

    @Option(help: ArgumentHelp("KiB a new radio listener gets at once (from a frame boundary).", valueName: "KIB"))
    var burstKb: Int = 64

    @Option(help: ArgumentHelp("Seconds a radio listener may stay behind the channel's ring (moved forward) before it is closed.",
                               valueName: "SECONDS"))
    var listenerLag: Double = 10

    @Option(help: ArgumentHelp("Password of user 'source' for live sources (PUT or SOURCE /radio/NAME) and /admin/metadata.",
                               valueName: "PASSWORD"))
    var sourcePassword: String?

    @Option(help: ArgumentHelp("File whose first line is the source password.", valueName: "FILE"))
    var sourcePasswordFile: String?

    @Option(help: ArgumentHelp("Seconds a silent source is kept, and a live channel without source keeps its listeners (without --fallback).",
                               valueName: "SECONDS"))
    var sourceTimeout: Double = 10

    @Option(help: ArgumentHelp("Live channel NAME plays channel OTHER while no source is connected (repeatable).",
                               valueName: "NAME=OTHER"))
    var fallback: [String] = []

    @Option(help: ArgumentHelp("Channel NAME plays the stream at URL (http://HOST[:PORT]/PATH of another streamd or an Icecast mount), titles included, reconnecting while it is away (repeatable).",
                               valueName: "NAME=URL"))
    var relay: [String] = []

    @Option(help: ArgumentHelp("Seconds one file's analysis may take (plus 60 s per GiB of file) before its worker is killed and the file skipped.",
                               valueName: "SECONDS"))
    var analyzeTimeout: Double = 10

    @Option(help: ArgumentHelp("The catalog database (default: $XDG_STATE_HOME/streamd/<hash of the folder>.db, else ~/.local/state/streamd/).",
                               valueName: "PATH"))
    var db: String?

    @Flag(name: .customLong("public"),
          help: "Let anonymous listeners browse and stream (read-only). Without accounts streamd refuses a non-loopback --host unless given this.")
    var publicAccess = false

    @Option(help: ArgumentHelp("A reverse proxy (its address, repeatable) whose X-Forwarded-Proto/-Host/-For count: TLS there makes the session cookie Secure and links https.",
                               valueName: "ADDR"))
    var trustedProxy: [String] = []

    @Option(help: ArgumentHelp("Radio channel NAME's listeners must log in (like `,private` on --channel; for live and relay channels). Repeatable.",
                               valueName: "NAME"))
    var privateChannel: [String] = []

    @Option(help: ArgumentHelp("Seconds between full rescans when inotify cannot watch the whole tree (no inotify, or its watch limit reached).",
                               valueName: "SECONDS"))
    var rescanInterval: Double = 300

    @Option(help: ArgumentHelp("Tracks at least this long get their exact seek index built in the background after each scan, so their first seek does not wait for it (0: only when first asked for).",
                               valueName: "SECONDS"))
    var indexAhead: Double = Catalog.defaultIndexAheadSeconds

    @Option(help: ArgumentHelp("Where completed transcodes (/media/...?format=opus|mp3) are kept (default: $XDG_CACHE_HOME/streamd/transcode, else ~/.cache/streamd/transcode).",
                               valueName: "DIR"))
    var transcodeCache: String?

    @Option(help: ArgumentHelp("Megabytes the transcode cache may hold; the least recently served go first.", valueName: "MB"))
    var transcodeCacheMb: Int = 1024

    @Option(help: ArgumentHelp("Transcodes encoded at once (default: the number of cores); a few more wait, beyond that 503.",
                               valueName: "N"))
    var transcodeJobs: Int?

    // Tuning and diagnostics, shown by --help-hidden only.

    @Option(help: ArgumentHelp("The program started as each analysis worker, with `analyze-worker` as its first argument (default: streamd itself); a wrapper can run the worker under nice, ulimit, a tracer or a fault drill.",
                               valueName: "PROGRAM", visibility: .hidden))
    var analyzeWorker: String?

    @Option(help: ArgumentHelp("The program started as each radio decode worker, with `decode-worker` as its first argument (default: streamd itself); see --analyze-worker.",
                               valueName: "PROGRAM", visibility: .hidden))
    var decodeWorker: String?

    @Option(help: ArgumentHelp("Seconds a waveform's decode worker may stay silent before it is killed and the track answered 422 (default 10).",
                               valueName: "SECONDS", visibility: .hidden))
    var waveformTimeout: Double?
    @Option(help: ArgumentHelp("Seconds a decode worker (radio channels, transcodes) may take for its next samples before it is killed (default 10).",
                               valueName: "SECONDS", visibility: .hidden))
    var decodeTimeout: Double?

    @Option(help: ArgumentHelp("The program started for each Subsonic cover resize, with `cover-worker` as its first argument (default: streamd itself); see --analyze-worker.",
                               valueName: "PROGRAM", visibility: .hidden))
    var coverWorker: String?
    @Option(help: ArgumentHelp("Seconds a cover resize (getCoverArt?size=) may take before its worker is killed and the original sent (default 10).",
                               valueName: "SECONDS", visibility: .hidden))
    var coverTimeout: Double?

    @Option(help: ArgumentHelp("Files the scan reads and writes to the database per chunk (default 2048).",
                               valueName: "FILES", visibility: .hidden))
    var scanChunk: Int?

    @Option(help: ArgumentHelp("Folders inotify may watch before the scanner falls back to periodic rescans, below the kernel's own limit.",
                               valueName: "FOLDERS", visibility: .hidden))
    var maxWatches: Int?
}

extension Serve {
    func validate() throws {
        try OptionCheck.range("--port", port, 0...65535)
        try OptionCheck.atLeast("--threads", threads, 1)
        try OptionCheck.range("--hls-cache-mb", hlsCacheMb, 0...65536)
        guard HLSLadder.parse(hlsLadder) != nil else {
            throw ValidationError("--hls-ladder must be bitrates in \(HLSLadder.kbpsRange) kbit/s separated by commas, or none")
        }
        for (name, seconds) in [("--write-timeout", writeTimeout), ("--head-timeout", headTimeout), ("--idle-timeout", idleTimeout)] {
            try OptionCheck.range(name, seconds, 0.1...86_400, unit: "seconds")
        }
        for spec in live {
            guard let eq = spec.firstIndex(of: "="), HLSLiveSource.isValidName(String(spec[..<eq])),
                  spec.index(after: eq) < spec.endIndex else {
                throw ValidationError("--live takes NAME=PATH with a NAME of letters, digits, '-' and '_'")
            }
        }
        if !live.isEmpty && !hls { throw ValidationError("--live needs HLS: drop --no-hls") }
        var names: Set<String> = []
        for spec in channel {
            do {
                let parsed = try ChannelSpec.parse(spec)
                guard names.insert(parsed.name).inserted else { throw ValidationError("--channel \(parsed.name) given twice") }
            } catch let error as ChannelSpec.ParseError {
                throw ValidationError(error.description)
            }
        }
        for pair in fallback {
            do {
                _ = try ChannelPair.parse(pair, option: "--fallback")
            } catch {
                throw ValidationError(error.description)
            }
        }
        if sourcePassword != nil && sourcePasswordFile != nil {
            throw ValidationError("give --source-password or --source-password-file, not both")
        }
        try OptionCheck.range("--source-timeout", sourceTimeout, 0.1...86_400, unit: "seconds")
        try OptionCheck.range("--burst-kb", burstKb, 0...4096)
        try OptionCheck.range("--listener-lag", listenerLag, 0...3600, unit: "seconds")
        try OptionCheck.range("--analyze-timeout", analyzeTimeout, 0.1...3600, unit: "seconds")
        try OptionCheck.range("--index-ahead", indexAhead, 0...604_800, unit: "seconds (a week)")
        try OptionCheck.range("--rescan-interval", rescanInterval, 0.5...86_400, unit: "seconds")
        try OptionCheck.notEmpty("--db", db, "a path")
        for name in privateChannel where !RadioChannel.isValidName(name) {
            throw ValidationError("--private-channel: '\(name)' is not a channel name")
        }
        try OptionCheck.notEmpty("--analyze-worker", analyzeWorker, "a program")
        try OptionCheck.notEmpty("--decode-worker", decodeWorker, "a program")
        try OptionCheck.notEmpty("--cover-worker", coverWorker, "a program")
        try OptionCheck.range("--cover-timeout", coverTimeout, 0.1...3600, message: "--cover-timeout must be between 0.1 and 3600 seconds")
        try OptionCheck.range("--waveform-timeout", waveformTimeout, 0.1...3600, unit: "seconds")
        try OptionCheck.range("--decode-timeout", decodeTimeout, 0.1...3600, unit: "seconds")
        try OptionCheck.range("--scan-chunk", scanChunk, 1...1_000_000)
        try OptionCheck.atLeast("--max-watches", maxWatches, 1)
        if quiet && verbose { throw ValidationError("--quiet and --verbose exclude each other") }
        try OptionCheck.range("--transcode-cache-mb", transcodeCacheMb, 0...1_048_576)
        try OptionCheck.range("--transcode-jobs", transcodeJobs, 1...1024)
        try OptionCheck.notEmpty("--transcode-cache", transcodeCache, "a folder")
    }

    func run() throws {
        // Before any thread starts: two arenas keep RSS under API load 6-8 MB lower than glibc's
        // default (one per busy thread), with no loss of requests/s measured (docs/BENCHMARKS.md).
        clinux_limit_malloc_arenas(2)
        let logger = makeLogger()
        let library = try openLibrary(logger: logger)
        let scanner = try makeScanner(library.catalog)
        let transcoder = try makeTranscoder(library.catalog)
        let hlsService = try makeHLS(library.catalog, transcoder: transcoder)
        let radio = try makeRadio(library.catalog, logger: logger)
        let access = try makeAccess(databasePath: library.databasePath)
        let framing: WholeFileFraming = contentLength ? .contentLength : .chunked
        let subsonic = try SubsonicService(catalog: library.catalog, auth: SubsonicAuth(accounts: SubsonicAccountsAdapter(access)),
                                           framing: framing,
                                           transcode: { request, absolute, file throws(HTTPRefusal) in
                                               try transcoder.respond(request, absolute: absolute, file: file)
                                           }, coverResizer: coverResizerSettings())
        let router = Router(resolver: library.catalog.resolver, catalog: library.catalog, hls: hlsService,
                            framing: framing, radio: radio, scanner: scanner, access: access,
                            waveforms: waveformSettings(), transcoder: transcoder, subsonic: subsonic)
        router.playlistFolder.logger = Logger(label: "streamd.library")
        let server = makeServer(router, logger: logger)
        let lifecycle = ServerLifecycle(server: server, scanner: scanner, radio: radio, hls: hlsService,
                                        store: library.store, logger: logger, waveforms: router.waveforms,
                                        transcoder: transcoder)
        // Signals are taken synchronously by this thread: blocked before any thread starts.
        var signals = Self.blockedSignals()
        let bound: Int
        do {
            bound = try lifecycle.start()
        } catch {
            throw exitLine("\(error)")
        }
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        // Unbuffered, so a parent process reading the pipe sees the line at once.
        FileHandle.standardOutput.write(Data("listening on http://\(shownHost):\(bound)/\n".utf8))
        logger.info("serving \((try? library.store.tracks.count()) ?? 0) tracks from \(library.catalog.resolver.root) (catalog \(library.databasePath)); scanning in the background")
        waitForSignals(&signals, lifecycle: lifecycle, scanner: scanner, logger: logger)
        // The page sessions' last uses since the last flush: a restart keeps them current.
        access.flushSessions()
    }
}

/// The steps of `Serve.run`, each building one part of the server from the options.
extension Serve {
    /// Sets up logging once for the process: every logger (one label per module: "streamd",
    /// "streamd.library", "streamd.radio", "streamd.http") writes to stderr at the level the flags
    /// say (--quiet: warnings, --verbose: debug, else info).
    func makeLogger() -> Logger {
        let level: Logger.Level = quiet ? .warning : verbose ? .debug : .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "streamd")
    }

    /// The folder, its catalog database and the catalog over it.
    func openLibrary(logger: Logger) throws -> (catalog: Catalog, store: LibraryStore, databasePath: String) {
        guard let resolver = PathResolver(folder: folder) else {
            throw exitLine("no such folder: \(folder)")
        }
        var analyzerSettings = IsolatedAnalyzer.Settings()
        analyzerSettings.timeoutSeconds = analyzeTimeout
        if let analyzeWorker { analyzerSettings.executable = analyzeWorker }
        let databasePath = db.map { ($0 as NSString).expandingTildeInPath }
            ?? LibraryStore.defaultPath(forFolder: resolver.root, environment: ProcessInfo.processInfo.environment)
        let store: LibraryStore
        do {
            store = try LibraryStore(path: databasePath, folder: resolver.root, logger: Logger(label: "streamd.library"))
        } catch {
            throw exitLine("--db \(databasePath): \(error)")
        }
        let catalog = Catalog(resolver: resolver, store: store, analyzer: IsolatedAnalyzer(settings: analyzerSettings))
        catalog.logger = Logger(label: "streamd.library")
        catalog.indexAheadSeconds = indexAhead > 0 ? indexAhead : nil
        if let scanChunk { catalog.chunkSize = scanChunk }
        // The database may sit inside the folder when asked to: the scan leaves it out.
        if let real = LibraryStore.realParentPath(databasePath), real.hasPrefix(resolver.root + "/") {
            catalog.excludedPrefix = real
        }
        return (catalog, store, databasePath)
    }

    /// Whether `--host` is a loopback address (only this machine can connect).
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }

    /// The accounts and the access policy (docs/DESIGN.md, "Access"): with no accounts, a
    /// loopback server runs open; any other address needs `--public` (anonymous read-only).
    func makeAccess(databasePath: String) throws -> AccessControl {
        let users: UserStore
        do {
            users = try UserStore(databasePath: databasePath, keyFile: UserStore.keyFilePath(forDatabase: databasePath))
        } catch {
            throw exitLine("accounts: \(error)")
        }
        var settings = AccessSettings()
        settings.publicAccess = publicAccess
        settings.loopbackOnly = Self.isLoopback(host)
        settings.trustedProxies = Set(trustedProxy)
        let access = AccessControl(users: users, settings: settings, logger: Logger(label: "streamd.access"))
        // The access check reads accounts from memory on the loops; this thread reloads them
        // when `streamd user` (another process) changes the database.
        do {
            try users.startWatching()
            try access.startSessionFlushing()
        } catch {
            throw exitLine("accounts: cannot start the thread that watches them: \(error)")
        }
        if !access.hasUsers() && !settings.loopbackOnly && !publicAccess {
            throw exitLine("--host \(host) is reachable from the network and no accounts exist: add one (`streamd user add NAME --db \(databasePath)`), or give --public for anonymous read-only access")
        }
        return access
    }

    /// The scanner that keeps the catalog current (started by the lifecycle).
    func makeScanner(_ catalog: Catalog) throws -> CatalogScanner {
        let scanner: CatalogScanner
        do {
            scanner = try CatalogScanner(catalog: catalog, rescanInterval: rescanInterval, maxWatches: maxWatches)
        } catch {
            throw exitLine("\(error)")
        }
        return scanner
    }

    /// The HLS routes and `--live` loops (started by the lifecycle); nil with `--no-hls`.
    func makeHLS(_ catalog: Catalog, transcoder: TranscodeService) throws -> HLSService? {
        var hlsService: HLSService?
        if hls {
            var sources: [HLSLiveSource] = []
            for spec in live {
                guard let eq = spec.firstIndex(of: "=") else { continue }
                let name = String(spec[..<eq]), path = String(spec[spec.index(after: eq)...])
                do {
                    sources.append(try HLSLiveSource(name: name, path: path, analyzer: catalog.analyzer,
                                                 logger: Logger(label: "streamd.hls")))
                } catch {
                    throw exitLine("--live \(name): \(path): \(error)")
                }
            }
            let ladder = HLSLadder(rungs: HLSLadder.parse(hlsLadder) ?? [], encoder: transcoder)
            hlsService = HLSService(catalog: catalog, cacheBytes: hlsCacheMb << 20, live: sources, ladder: ladder)
        }
        return hlsService
    }

    /// The transcoder behind `/media/...?format=`, its cache folder made.
    func makeTranscoder(_ catalog: Catalog) throws -> TranscodeService {
        let environment = ProcessInfo.processInfo.environment
        var settings = TranscodeSettings(cacheDirectory: transcodeCache.map { ($0 as NSString).expandingTildeInPath }
                                             ?? TranscodeSettings.defaultDirectory(environment: environment))
        settings.cacheBytes = transcodeCacheMb << 20
        if let transcodeJobs { settings.jobs = transcodeJobs }
        settings.queueLength = max(2, settings.jobs)
        settings.decodeWorker = decodeWorkerSettings(settings.decodeWorker, seconds: decodeTimeout)
        do {
            return try TranscodeService(settings: settings, catalog: catalog, logger: Logger(label: "streamd.transcode"))
        } catch {
            throw exitLine("--transcode-cache \(settings.cacheDirectory): \(error)")
        }
    }

    /// The radio channels, fallbacks and relays; nil when none is configured.
    func makeRadio(_ catalog: Catalog, logger: Logger) throws -> RadioService? {
        let radioLogger = Logger(label: "streamd.radio")
        var radio: RadioService?
        var password = sourcePassword
        if let path = sourcePasswordFile {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                  let line = text.split(whereSeparator: \.isNewline).first, !line.isEmpty else {
                throw exitLine("--source-password-file \(path): cannot read a password from it")
            }
            password = String(line)
        }
        if !channel.isEmpty || password != nil || !fallback.isEmpty || !relay.isEmpty {
            var settings = RadioSettings()
            settings.sourcePassword = password
            settings.sourceTimeoutSeconds = sourceTimeout
            settings.burstBytes = burstKb * 1024
            settings.ringBytes = max(settings.ringBytes, settings.burstBytes * 2)
            settings.listenerLagSeconds = listenerLag
            settings.decodeWorker = decodeWorkerSettings(settings.decodeWorker, seconds: decodeTimeout)
            let service = RadioService(settings: settings, logger: radioLogger)
            for text in channel {
                do {
                    let spec = try ChannelSpec.parse(text)
                    // The channel's files must be in the catalog before it plays: they are
                    // brought up to date now (the rest of the library is scanned after start).
                    catalog.refresh(path: spec.path)
                    let plan = try ChannelTracks.resolve(spec, catalog: catalog, logger: radioLogger)
                    try service.addPlaylist(name: spec.name, plan: plan, shuffle: spec.shuffle)
                    if spec.isPrivate { service.markPrivate(spec.name) }
                    let how = plan.transcodes ? ", transcoded to \(plan.format.codec == .ogg ? "Ogg Opus" : "MP3") \(plan.format.sampleRate) Hz \(plan.format.kbps) kbit/s" : ""
                    radioLogger.info("channel \(spec.name): \(plan.tracks.count) tracks at /radio/\(spec.name)\(how)")
                } catch {
                    throw exitLine("\(error)")
                }
            }
            for text in fallback {
                do {
                    let pair = try ChannelPair.parse(text, option: "--fallback")
                    try service.addFallback(name: pair.name, other: pair.other)
                } catch {
                    throw exitLine("\(error)")
                }
            }
            for text in relay {
                guard let eq = text.firstIndex(of: "="), RadioChannel.isValidName(String(text[..<eq])) else {
                    throw exitLine("--relay takes NAME=URL, got '\(text)'", status: 2)
                }
                do {
                    try service.addRelay(name: String(text[..<eq]), url: String(text[text.index(after: eq)...]))
                } catch {
                    throw exitLine("\(error)")
                }
            }
            for name in privateChannel { service.markPrivate(name) }
            radio = service
        }
        return radio
    }

    /// Where waveforms are decoded (the radio's decode workers, `--decode-worker`) and how long
    /// a silent one is given; they are kept beside the catalog database.
    func waveformSettings() -> WaveformSettings {
        var settings = WaveformSettings()
        settings.worker = decodeWorkerSettings(settings.worker, seconds: waveformTimeout)
        return settings
    }

    /// A decode worker's `settings` (transcodes, radio channels, waveforms) with the program
    /// `--decode-worker` names and, when given, the `seconds` it may stay silent.
    func decodeWorkerSettings(_ settings: DecodeWorker.Settings, seconds: Double?) -> DecodeWorker.Settings {
        var settings = settings
        if let decodeWorker { settings.executable = decodeWorker }
        if let seconds { settings.unitSeconds = seconds }
        return settings
    }

    /// How Subsonic cover resizes run (`--cover-worker`, `--cover-timeout`).
    func coverResizerSettings() -> CoverResizerSettings {
        var settings = CoverResizerSettings()
        if let coverWorker { settings.executable = coverWorker }
        if let coverTimeout { settings.timeoutSeconds = coverTimeout }
        return settings
    }

    /// The HTTP server over the router, configured from the options.
    func makeServer(_ router: Router, logger: Logger) -> HTTPServer {
        var config = HTTPServerConfiguration()
        config.host = host
        config.port = port
        if let threads { config.threads = threads }
        config.maxConnections = maxConnections
        config.writeTimeout = writeTimeout
        config.headTimeout = headTimeout
        config.idleTimeout = idleTimeout
        config.accessLog = !quiet
        // Of the 5 s a shutdown may take, responses under way get 3 to finish.
        config.shutdownGrace = 3
        let server = HTTPServer(configuration: config, logger: Logger(label: "streamd.http"), handler: router.handle)
        router.countConnections(of: server)
        return server
    }

    /// SIGINT, SIGTERM and SIGHUP, blocked in this thread (and the threads it starts), to be taken by `sigwait`.
    static func blockedSignals() -> sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        return signals
    }

    /// SIGHUP rescans the folder; SIGINT or SIGTERM stops everything and returns.
    func waitForSignals(_ signals: inout sigset_t, lifecycle: ServerLifecycle, scanner: CatalogScanner, logger: Logger) {
        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            if received == SIGHUP {
                logger.info("SIGHUP: rescanning \(scanner.catalog.resolver.root)")
                scanner.requestFullScan()
                continue
            }
            logger.info("shutting down")
            lifecycle.stop()
            return
        }
    }
}

/// `streamd package DIR --out OUT`: the HLS playlists and segments as static files.
struct Package: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every track's HLS playlists and segments, and an index.html, as static files any web server can serve.")

    @Argument(help: "The music folder to package.")
    var folder: String

    @Option(help: "The output folder (created when missing).")
    var out: String

    @Flag(help: "Only errors on stderr.")
    var quiet = false

    @Option(help: ArgumentHelp("The program started as each analysis worker (see `streamd serve --help-hidden`).",
                               valueName: "PROGRAM", visibility: .hidden))
    var analyzeWorker: String?
}

extension Package {
    func run() throws {
        guard let resolver = PathResolver(folder: folder) else {
            throw exitLine("no such folder: \(folder)")
        }
        let catalog: Catalog
        do {
            var settings = IsolatedAnalyzer.Settings()
            if let analyzeWorker, !analyzeWorker.isEmpty { settings.executable = analyzeWorker }
            catalog = try Catalog(resolver: resolver, analyzer: IsolatedAnalyzer(settings: settings))
        } catch {
            throw exitLine("package: \(error)")
        }
        LoggingSystem.bootstrap { _ in PrefixLogHandler(prefix: "streamd: ", logLevel: quiet ? .warning : .info) }
        // The catalog's warnings only (files skipped): its scan progress is the serve command's.
        catalog.logger = Logger(label: "streamd.library")
        catalog.logger.logLevel = .warning
        let logger = Logger(label: "streamd.hls")
        catalog.scan()
        do {
            let report = try HLSPackager.package(catalog: catalog, out: out, logger: logger)
            print("packaged \(report.tracks) tracks, \(report.segments) segments, \(report.bytes) bytes into \(out)")
            if report.skipped > 0 { print("skipped \(report.skipped) tracks (see stderr)") }
        } catch {
            throw exitLine("package: \(error)")
        }
    }
}

/// A worker program streamd starts as itself (through /proc/self/exe) with a hidden subcommand,
/// and talks to over pipes: its subcommand, its fault-drill option, and its entry point.
protocol WorkerProgram {
    /// The subcommand (`analyze-worker`, ...).
    static var subcommand: String { get }
    /// The fault-drill option (`--fault`).
    static var faultOption: String { get }
    /// What the hidden help says the worker does.
    static var abstract: String { get }
    /// The fault drills its option takes.
    static var faultHelp: String { get }
    /// Runs the worker with the drill `fault` (empty: none); returns the exit status.
    static func runWorker(fault: String) -> Int32
}

extension AnalyzerWorker: WorkerProgram {
    static let abstract = "Internal: analyze files named on stdin for a streamd server."
    static let faultHelp = "Fault drill: trap:NAME, hang:NAME, walktrap:NAME, walkhang:NAME, delay:MS (comma-separated)."
    static func runWorker(fault: String) -> Int32 { run(faultSpec: fault) }
}

extension DecodeWorker: WorkerProgram {
    static let abstract = "Internal: decode the track named on stdin for a streamd radio channel."
    static let faultHelp = "Fault drill: trap:NAME, hang:NAME, slow:NAME (waveforms; comma-separated)."
    static func runWorker(fault: String) -> Int32 { run(faultSpec: fault) }
}

extension CoverWorker: WorkerProgram {
    static let abstract = "Internal: resize the picture given on stdin for a streamd server."
    static let faultHelp = "Fault drill: trap, hang or garbage."
    static func runWorker(fault: String) -> Int32 { run(fault: fault) }
}

/// `streamd analyze-worker`, `decode-worker`, `cover-worker`: a worker's child process (hidden).
struct WorkerCommand<Worker: WorkerProgram>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Worker.subcommand, abstract: Worker.abstract, shouldDisplay: false)
    }

    @Option(name: .customLong(String(Worker.faultOption.dropFirst(2))),
            help: ArgumentHelp(Worker.faultHelp, valueName: "SPEC", visibility: .hidden))
    var fault = ""
}

extension WorkerCommand {
    func run() throws {
        let status = Worker.runWorker(fault: fault)
        if status != 0 { throw ExitCode(status) }
    }
}

/// How an option's value is checked: one line per option in `validate()`, the error naming the
/// option and what it takes.
enum OptionCheck {
    /// Throws "NAME must be LOW...HIGH[ UNIT]" (or `message`) unless `value` is nil or within
    /// `bounds` (NaN and infinities never are).
    static func range<Value: Comparable>(_ name: String, _ value: Value?, _ bounds: ClosedRange<Value>,
                                         unit: String = "", message: String? = nil) throws {
        guard let value, !bounds.contains(value) else { return }
        throw ValidationError(message ?? "\(name) must be \(shown(bounds.lowerBound))...\(shown(bounds.upperBound))"
                              + (unit.isEmpty ? "" : " \(unit)"))
    }

    /// Throws "NAME must be at least LOW" unless `value` is nil or at least `low`.
    static func atLeast<Value: Comparable>(_ name: String, _ value: Value?, _ low: Value) throws {
        guard let value, value < low else { return }
        throw ValidationError("\(name) must be at least \(shown(low))")
    }

    /// Throws "NAME needs WHAT" when `value` is given but empty.
    static func notEmpty(_ name: String, _ value: String?, _ what: String) throws {
        if let value, value.isEmpty { throw ValidationError("\(name) needs \(what)") }
    }

    /// A bound as the help text writes it: whole numbers without a decimal point (86400, not 86400.0).
    static func shown<Value>(_ bound: Value) -> String {
        let text = "\(bound)"
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }
}

/// A command that cannot go on says why in one line ("streamd: " and the cause, unbuffered on
/// stderr, whatever the log level) and exits with `status`: the command's answer, not a log line.
func exitLine(_ message: String, status: Int32 = 1) -> ExitCode {
    FileHandle.standardError.write(Data("streamd: \(message)\n".utf8))
    return ExitCode(status)
}
