import ArgumentParser
import Foundation
import Logging
import StreamServer

/// streamd: hosts a music folder over HTTP.
@main
struct Streamd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "streamd",
        abstract: "Serve a music folder over HTTP: files with Range support, a catalog, seek indexes and a web player.")

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

    @Flag(help: "No access log.")
    var quiet = false
}

extension Streamd {
    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        if let threads, threads < 1 { throw ValidationError("--threads must be at least 1") }
    }

    func run() throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        var logger = Logger(label: "streamd")
        logger.logLevel = quiet ? .warning : .info
        guard let resolver = PathResolver(folder: folder) else {
            FileHandle.standardError.write(Data("streamd: no such folder: \(folder)\n".utf8))
            throw ExitCode(1)
        }
        let catalog = Catalog(resolver: resolver)
        let warnLogger = logger
        catalog.warn = { warnLogger.warning("\($0)") }
        catalog.scan()
        let router = Router(resolver: resolver, catalog: catalog)

        var config = HTTPServerConfiguration()
        config.host = host
        config.port = port
        if let threads { config.threads = threads }
        config.maxConnections = maxConnections
        config.accessLog = !quiet
        let server = HTTPServer(configuration: config, logger: logger, handler: router.handle)

        // Signals are taken synchronously by this thread: block them before the loops start.
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let bound: Int
        do {
            bound = try server.start()
        } catch {
            FileHandle.standardError.write(Data("streamd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        // Unbuffered, so a parent process reading the pipe sees the line at once.
        FileHandle.standardOutput.write(Data("listening on http://\(shownHost):\(bound)/\n".utf8))
        logger.info("serving \(catalog.tracks().count) tracks from \(resolver.root)")

        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            if received == SIGHUP {
                logger.info("SIGHUP: rescanning \(resolver.root)")
                catalog.scan()
                continue
            }
            logger.info("shutting down")
            server.shutdown()
            return
        }
    }
}
