#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// The stderr log handler of `streamd package` and streamplay: each line is the program's
/// prefix ("streamd: ", "streamplay: ") and the message, written unbuffered in one write, as
/// these programs always wrote their lines (no time stamp: they run once, in a terminal or a
/// script). `streamd serve` keeps swift-log's own stderr format (time, level, label).
public struct PrefixLogHandler: LogHandler {
    public let prefix: String
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]

    public init(prefix: String, logLevel: Logger.Level) {
        self.prefix = prefix
        self.logLevel = logLevel
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var line = prefix + "\(event.message)\n"
        line.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return }
            var done = 0
            while done < bytes.count {
                let n = write(2, base + done, bytes.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }   // a closed stderr drops the line
                done += n
            }
        }
    }
}
