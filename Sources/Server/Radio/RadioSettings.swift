import StreamHTTP
import StreamLibrary
import StreamHLS
/// Radio settings from the command line.
public struct RadioSettings: Sendable {
    /// Bytes a new listener gets at once, from a frame boundary (`--burst-kb`).
    public var burstBytes = 64 * 1024
    /// Bytes of recent stream each channel keeps.
    public var ringBytes = 512 * 1024
    /// `icy-metaint` for listeners that ask for ICY metadata (Icecast's default).
    public var metaint = 16_000
    /// Seconds a listener may stay behind the ring before it is closed (`--listener-lag`).
    public var listenerLagSeconds = 10.0
    /// How often a playlist channel publishes what has become due.
    public var tickNanos: UInt64 = 250_000_000
    /// The password of user `source` for live sources and metadata updates; nil refuses sources.
    public var sourcePassword: String?
    /// How a transcoding channel's decoder workers are started and bounded.
    public var decodeWorker = DecodeWorker.Settings()
    /// Seconds a silent source is kept, and a channel without source before its listeners are closed.
    public var sourceTimeoutSeconds = 10.0

    var sourceTimeoutNanos: UInt64 { UInt64(max(0.1, min(sourceTimeoutSeconds, 86_400)) * 1e9) }

    public init() {}
}
