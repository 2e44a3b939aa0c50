import Logging
import Synchronization

/// The lines a component logs, kept for a test to look at (one logger, every level).
final class CapturedLog: Sendable {
    private let box = Mutex<[String]>([])

    /// A logger whose every message lands in `lines`.
    var logger: Logger {
        Logger(label: "test") { [self] _ in Handler(log: self) }
    }

    /// The messages so far, oldest first.
    var lines: [String] { box.withLock { $0 } }

    fileprivate func add(_ line: String) { box.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) { log.add("\(event.message)") }
    }
}
