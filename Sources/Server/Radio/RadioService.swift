import Foundation
import StreamShared

/// The radio routes: channels under /radio/NAME, their status pages. Owns the channels and
/// their producers.
public final class RadioService: @unchecked Sendable {
    // @unchecked: `channels` and `producers` are guarded by `lock`; scratch buffers too.
    public let settings: RadioSettings
    private let lock = NSLock()
    private var channels: [String: RadioChannel] = [:]
    private var order: [String] = []
    private var producers: [PlaylistProducer] = []
    private var scratches: [LoopWaker: ListenerScratch] = [:]
    let warn: @Sendable (String) -> Void

    public init(settings: RadioSettings = RadioSettings(), warn: @escaping @Sendable (String) -> Void = { _ in }) {
        self.settings = settings
        self.warn = warn
    }

    /// Adds a playlist channel and starts playing it.
    public func addPlaylist(name: String, tracks: [ChannelTrack], format: ChannelFormat, shuffle: Bool) {
        let channel = RadioChannel(name: name, ringCapacity: settings.ringBytes, format: format)
        let producer = PlaylistProducer(channel: channel, tracks: tracks, shuffle: shuffle, tickNanos: settings.tickNanos,
                                        preroll: settings.burstBytes, warn: warn)
        lock.lock()
        channels[name] = channel
        order.append(name)
        producers.append(producer)
        lock.unlock()
        producer.start()
    }

    /// Stops every producer (tests, shutdown).
    public func stop() {
        lock.lock()
        let running = producers
        producers = []
        lock.unlock()
        for producer in running { producer.stop() }
    }

    public func channel(named name: String) -> RadioChannel? {
        lock.lock()
        defer { lock.unlock() }
        return channels[name]
    }

    public func allChannels() -> [RadioChannel] {
        lock.lock()
        defer { lock.unlock() }
        return order.compactMap { channels[$0] }
    }

    /// The scratch buffers of the loop behind `waker` (one per loop, shared by its listeners).
    func scratch(for waker: LoopWaker) -> ListenerScratch {
        lock.lock()
        defer { lock.unlock() }
        if let scratch = scratches[waker] { return scratch }
        let scratch = ListenerScratch()
        scratches[waker] = scratch
        return scratch
    }

    // MARK: Routes

    /// `GET /radio/NAME` (and HEAD): the stream, chunked for HTTP/1.1, close-delimited for 1.0,
    /// with ICY metadata when asked for.
    public func listen(_ request: HTTPRequest, name: Substring) -> HTTPResponse {
        guard let channel = channel(named: String(name)) else { return .error(404, "no channel named '\(name)'") }
        let snapshot = channel.snapshot()
        guard let format = snapshot.format, !snapshot.ended else {
            return .error(404, "channel '\(name)' has no source")
        }
        let wantsICY = request.header("Icy-MetaData").map { $0.trimmingCharacters(in: " \t") == "1" } ?? false
        var headers: [(String, String)] = [
            ("Content-Type", format.contentType),
            ("Cache-Control", "no-cache, no-store"),
            ("icy-name", snapshot.station.name),
            ("icy-br", String(format.kbps)),
            ("icy-pub", "0"),
            ("ice-audio-info", "samplerate=\(format.sampleRate);channels=\(format.channels);bitrate=\(format.kbps)"),
        ]
        if let genre = snapshot.station.genre { headers.append(("icy-genre", genre)) }
        if let url = snapshot.station.url { headers.append(("icy-url", url)) }
        if let description = snapshot.station.description { headers.append(("icy-description", description)) }
        if wantsICY { headers.append(("icy-metaint", String(settings.metaint))) }
        let chunked = request.minorVersion >= 1
        if chunked { headers.append(("Transfer-Encoding", "chunked")) }
        var response = HTTPResponse(status: 200, headers: headers)
        // HTTP/1.0: the end of the stream is the end of the connection.
        if !chunked { response.closeConnection = true }
        let options = ListenerOptions(chunked: chunked, metaint: wantsICY ? settings.metaint : nil,
                                      burst: settings.burstBytes,
                                      lagLimit: UInt64(max(0, min(settings.listenerLagSeconds, 86_400)) * 1e9))
        response.live = RadioListener(channel: channel, options: options) { [weak self] waker in
            self?.scratch(for: waker) ?? ListenerScratch()
        }
        return response
    }
}
