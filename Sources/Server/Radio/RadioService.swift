import Atomics
import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import Synchronization
import Logging

/// The radio routes: channels under /radio/NAME, their status pages. Owns the channels and
/// their producers.
public final class RadioService: @unchecked Sendable {
    // @unchecked: `channels` and `producers` are guarded by `lock`; scratch buffers too.
    public let settings: RadioSettings
    private let lock = Lock(())
    private var channels: [String: RadioChannel] = [:]
    private var order: [String] = []
    private var producers: [PlaylistProducer] = []
    private var liveProducers: [String: LiveProducer] = [:]
    /// `--fallback NAME=OTHER`: channel NAME relays OTHER while no source is connected.
    private var fallbacks: [String: String] = [:]
    private var scratches: [LoopWaker: ListenerScratch] = [:]
    /// Channels whose listeners must log in (`,private`, `--private-channel`); the others are public.
    private let privateNames = Lock(Set<String>())
    /// Where the channels' trouble is logged ("streamd.radio").
    let logger: Logger
    /// Set by `stop`: decode workers' waits end at once (`DecodeWorker.Settings.isCancelled`).
    private let stopping = ManagedAtomic<Bool>(false)

    public init(settings: RadioSettings = RadioSettings(), logger: Logger = .silent("streamd.radio")) {
        self.settings = settings
        self.logger = logger
    }

    /// Makes channel `name`'s listeners log in (docs/DESIGN.md, "Access").
    public func markPrivate(_ name: String) {
        privateNames.withLock { _ = $0.insert(name) }
    }

    /// Whether the channel a `/radio/NAME[/...]` path names is private.
    public func isPrivate(path: Substring) -> Bool {
        let rest = path.hasPrefix("/radio/") ? path.dropFirst("/radio/".count) : path
        let name = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? rest
        var bare = name
        for suffix in [".m3u8", ".m3u", ".pls", ".xspf"] where bare.hasSuffix(suffix) { bare = bare.dropLast(suffix.count) }
        return privateNames.withLock { $0.contains(String(name)) || $0.contains(String(bare)) }
    }

    /// Adds a playlist channel and starts playing it. Throws when the channel transcodes and
    /// the encoder refuses its format.
    public func addPlaylist(name: String, plan: ChannelPlan, shuffle: Bool) throws(EncoderError) {
        var decodeWorker = settings.decodeWorker
        decodeWorker.isCancelled = { [stopping] in stopping.load(ordering: .relaxed) }
        if plan.format.codec == .ogg {
            addOggPlaylist(name: name, plan: plan, shuffle: shuffle,
                           links: plan.transcodes ? .opus(kbps: plan.format.kbps,
                                                          decoder: ChannelDecoder(channels: plan.format.channels,
                                                                                  isolation: .worker(decodeWorker)))
                                                  : .files)
            return
        }
        let channel = RadioChannel(name: name, ringCapacity: settings.ringBytes, format: plan.format)
        let producer = try PlaylistProducer(channel: channel, tracks: plan.tracks, shuffle: shuffle, format: plan.format,
                                            transcodes: plan.transcodes, isolation: .worker(decodeWorker),
                                            tickNanos: settings.tickNanos,
                                            preroll: settings.burstBytes, logger: logger)
        lock.withLock { _ in
            channels[name] = channel
            order.append(name)
            producers.append(producer)
        }
        producer.start()
    }

    /// Ogg channels of library files (pass-through, or encoded to Opus): each a persistent live
    /// producer fed the tracks' links as a chained stream by its `OggTrackFeeder`.
    private var oggFeeders: [(feeder: OggTrackFeeder, producer: LiveProducer)] = []

    /// A playlist channel of Ogg links, one per track: Ogg Opus or Vorbis tracks sent as they are
    /// (`ChannelTracks.oggPassthrough`) or any tracks encoded to Opus (`format=opus`), paced and
    /// joined as a live Ogg source is, with a burst for the first listeners as other playlist channels.
    private func addOggPlaylist(name: String, plan: ChannelPlan, shuffle: Bool, links: OggTrackFeeder.Links) {
        let channel = RadioChannel(name: name, ringCapacity: settings.ringBytes, format: plan.format)
        let producer = LiveProducer(channel: channel, fallback: nil, tickNanos: settings.tickNanos,
                                    sourceTimeout: settings.sourceTimeoutNanos, persistent: true, fedByPlaylist: true,
                                    preroll: settings.burstBytes) { _ in }
        let feeder = OggTrackFeeder(producer: producer, tracks: plan.tracks, shuffle: shuffle, links: links, logger: logger)
        // Both threads or neither: a channel whose thread cannot start is not made at all.
        do {
            try producer.start()
        } catch {
            logger.warning("radio \(name): \(error)")
            return
        }
        do {
            try feeder.start()
        } catch {
            logger.warning("radio \(name): \(error)")
            producer.stop()
            return
        }
        lock.withLock { _ in
            channels[name] = channel
            order.append(name)
            oggFeeders.append((feeder, producer))
        }
    }

    /// Declares that channel `name` relays channel `other` whenever it has no live source; the
    /// channel exists (relaying) from now on. `other` must be a channel already.
    public func addFallback(name: String, other: String) throws(ChannelTracks.Failure) {
        let (target, taken) = lock.withLock { _ in (channels[other], channels[name] != nil) }
        guard let target else { throw ChannelTracks.Failure(description: "--fallback \(name)=\(other): no channel named \(other)") }
        guard !taken else { throw ChannelTracks.Failure(description: "--fallback \(name)=\(other): \(name) is a playlist channel") }
        lock.withLock { _ in
            fallbacks[name] = other
        }
        _ = liveProducer(for: name, fallback: target)
    }

    /// The live producer of `name`, created (and started) when missing; nil when `name` is a
    /// playlist channel.
    private func liveProducer(for name: String, fallback: RadioChannel?, persistent: Bool = false) -> LiveProducer? {
        return lock.withLock { _ in
            if let producer = liveProducers[name] { return producer }
            guard channels[name] == nil else { return nil }
            let channel = RadioChannel(name: name, ringCapacity: settings.ringBytes, format: fallback?.format)
            let producer = LiveProducer(channel: channel, fallback: fallback, tickNanos: settings.tickNanos,
                                        sourceTimeout: settings.sourceTimeoutNanos, persistent: persistent) { [weak self] ended in
                self?.removeLive(ended)
            }
            // Started first: a channel whose thread cannot start is not made at all.
            do { try producer.start() } catch {
                logger.warning("radio \(name): \(error)")
                return nil
            }
            channels[name] = channel
            order.append(name)
            liveProducers[name] = producer
            return producer
        }
    }

    private func removeLive(_ producer: LiveProducer) {
        lock.withLock { _ in
            let name = producer.channel.name
            guard liveProducers[name] === producer else { return }
            liveProducers[name] = nil
            channels[name] = nil
            order.removeAll { $0 == name }
        }
    }

    private var relays: [RelaySource] = []

    /// `--relay NAME=URL`: channel NAME plays the stream at URL (another streamd or an Icecast
    /// mount, plain HTTP), reconnecting while it is away.
    public func addRelay(name: String, url: String) throws(ChannelTracks.Failure) {
        let parsed: HTTPURL
        do { parsed = try HTTPURL(url) } catch {
            throw ChannelTracks.Failure(description: "--relay \(name)=\(url): not an http://HOST[:PORT]/PATH URL (\(error))")
        }
        guard let producer = liveProducer(for: name, fallback: nil, persistent: true) else {
            throw ChannelTracks.Failure(description: "--relay \(name): \(name) is a playlist channel")
        }
        let relay = RelaySource(url: parsed, producer: producer, logger: logger)
        lock.withLock { _ in
            relays.append(relay)
        }
        relay.start()
    }

    /// Stops every thread the service started: relays (their upstream connections are shut, so
    /// a blocked read ends), playlist producers (a decode under way gives up, its worker killed
    /// and reaped) and live producers, waiting for each until `deadline` (monotonic ns; without
    /// one, for as long as they take). Returns the names of the threads still running then.
    @discardableResult
    public func stop(deadline: UInt64? = nil) -> [String] {
        stopping.store(true, ordering: .relaxed)
        let (running, live, relaying, feeding) = lock.withLock { _ in
            let taken = (producers, Array(liveProducers.values), relays, oggFeeders)
            producers = []
            liveProducers = [:]
            relays = []
            oggFeeders = []
            return taken
        }
        // Everything is asked first, so the threads wind down together, then each is waited for.
        for relay in relaying { relay.requestStop() }
        var left: [String] = []
        for relay in relaying where !relay.join(deadline: deadline) { left.append("relay \(relay.producer.channel.name)") }
        for producer in running where !producer.stop(deadline: deadline) { left.append("channel \(producer.channel.name)") }
        for producer in live where !producer.stop(deadline: deadline) { left.append("live channel \(producer.channel.name)") }
        for (feeder, producer) in feeding {
            if !feeder.stop(deadline: deadline) { left.append("Ogg feeder \(producer.channel.name)") }
            if !producer.stop(deadline: deadline) { left.append("channel \(producer.channel.name)") }
        }
        return left
    }

    public func channel(named name: String) -> RadioChannel? {
        return lock.withLock { _ in channels[name] }
    }

    public func allChannels() -> [RadioChannel] {
        return lock.withLock { _ in order.compactMap { channels[$0] } }
    }

    /// The scratch buffers of the loop behind `waker` (one per loop, shared by its listeners).
    func scratch(for waker: LoopWaker) -> ListenerScratch {
        return lock.withLock { _ in
            if let scratch = scratches[waker] { return scratch }
            let scratch = ListenerScratch()
            scratches[waker] = scratch
            return scratch
        }
    }

    // MARK: Routes

    /// `PUT /radio/NAME` or the legacy `SOURCE /radio/NAME`: a live source, Icecast style.
    /// 401 without the source password, 403 when the mount has a source (or is a playlist),
    /// 415 for a stream type that cannot be relayed.
    public func source(_ request: HTTPRequest, name: Substring) -> HTTPResponse {
        let name = String(name)
        guard RadioChannel.isValidName(name) else { return .error(404, "no such mount", close: true) }
        let source: SourceRequest
        do {
            source = try SourceRequest.parse(request, name: name, password: settings.sourcePassword)
        } catch {
            var response = HTTPResponse.error(error.status, error.message, close: true)
            if error == .unauthorized { response.headers.append(("WWW-Authenticate", "Basic realm=\"streamd\"")) }
            return response
        }
        let fallback = lock.withLock { _ in fallbacks[name].flatMap { channels[$0] } }
        let feed = SourceFeed()
        guard let producer = liveProducer(for: name, fallback: fallback),
              producer.attach(LiveProducer.AttachedSource(feed: feed, codec: source.codec, station: source.station,
                                                          kbps: source.kbps)) else {
            return .error(403, "mountpoint in use", close: true)
        }
        let framing: SourceExchange.Framing
        switch request.bodyFraming {
        case .none: framing = .untilClose     // Icecast sources stream until they close
        case .length(let n): framing = .length(n)
        case .chunked: framing = .chunked
        }
        // With Expect: 100-continue the client waits for the 100 before sending; the 200 ends
        // the exchange. Without it (SOURCE, older clients) the 200 comes at once, as Icecast does.
        let expects = request.header("Expect").map { $0.lowercased().trimmingCharacters(in: " \t") == "100-continue" } ?? false
        var response = HTTPResponse(status: expects ? 100 : 200)
        response.closeConnection = true
        response.takesRequestBody = true
        let final = expects ? Array("HTTP/1.1 200 OK\r\nServer: streamd\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8) : []
        response.live = SourceExchange(feed: feed, framing: framing, finalResponse: final,
                                       silenceLimit: settings.sourceTimeoutNanos)
        return response
    }

    /// Icecast's `/admin/metadata?mount=/radio/NAME&mode=updinfo&song=TITLE`, with the source's
    /// credentials or an admin account's (`byAdmin`, judged by the access check): the title
    /// listeners see in band from the next chunk on.
    public func adminMetadata(_ request: HTTPRequest, byAdmin: Bool = false) -> HTTPResponse {
        guard byAdmin || SourceRequest.isAuthorized(request, password: settings.sourcePassword) else {
            var response = HTTPResponse.error(401, "authentication required")
            response.headers.append(("WWW-Authenticate", "Basic realm=\"streamd\""))
            return response
        }
        func decoded(_ name: String) -> String? {
            request.queryValue(name).flatMap { PathResolver.percentDecode($0.replacingOccurrences(of: "+", with: " ")) }
        }
        guard decoded("mode") == "updinfo" else { return Self.iceResponse(400, "mode must be updinfo", ok: false) }
        guard let mount = decoded("mount") else { return Self.iceResponse(400, "missing mount", ok: false) }
        let name = mount.hasPrefix("/radio/") ? String(mount.dropFirst("/radio/".count)) : String(mount.drop { $0 == "/" })
        guard let song = decoded("song") else { return Self.iceResponse(400, "missing song", ok: false) }
        let producer = lock.withLock { _ in liveProducers[name] }
        guard let producer else { return Self.iceResponse(400, "Source does not exist", ok: false) }
        producer.setSourceTitle(String(song.prefix(1024)))
        return Self.iceResponse(200, "Metadata update successful", ok: true)
    }

    /// Icecast's XML answer to admin requests.
    static func iceResponse(_ status: Int, _ message: String, ok: Bool) -> HTTPResponse {
        let escaped = message.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        let xml = "<?xml version=\"1.0\"?>\n<iceresponse><message>\(escaped)</message><return>\(ok ? 1 : 0)</return></iceresponse>\n"
        return .bytes(status, Array(xml.utf8), contentType: "text/xml")
    }

    /// `GET /radio/NAME` (and HEAD): the stream, chunked for HTTP/1.1, close-delimited for 1.0,
    /// with ICY metadata when asked for.
    public func listen(_ request: HTTPRequest, name: Substring) -> HTTPResponse {
        if let slash = name.firstIndex(of: "/") {
            return hls(request, name: name[..<slash], file: name[name.index(after: slash)...])
        }
        guard let channel = channel(named: String(name)) else { return .error(404, "no channel named '\(name)'") }
        let snapshot = channel.snapshot()
        guard let format = snapshot.format, !snapshot.ended else {
            return .error(404, "channel '\(name)' has no source")
        }
        // Ogg carries its titles in its own comment headers (Icecast sends no ICY blocks in Ogg either).
        let wantsICY = format.codec != .ogg
            && (request.header("Icy-MetaData").map { $0.trimmingCharacters(in: " \t") == "1" } ?? false)
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

    /// `GET /radio/NAME/index.m3u8` and `/radio/NAME/seg-N.mp3|aac`: the channel as live HLS.
    /// The playlist may be cached for a second (a cache in front asks once a second at most);
    /// segments never change (their URL names the channel's run), so they are cached for good.
    func hls(_ request: HTTPRequest, name: Substring, file: Substring) -> HTTPResponse {
        guard let channel = channel(named: String(name)) else { return .error(404, "no channel named '\(name)'") }
        let segments = channel.segments
        if channel.snapshot().format?.codec == .ogg {
            return .error(415, "channel '\(name)' is Ogg: HLS packed audio carries MP3 and AAC only; listen at /radio/\(name)")
        }
        if file == "index.m3u8" {
            guard let playlist = segments.playlist() else {
                var response = HTTPResponse.error(503, "channel '\(name)' has no complete segment yet")
                response.headers.append(("Retry-After", "2"))
                return response
            }
            segments.playlistRequests.wrappingIncrement(ordering: .relaxed)
            let text = playlist.render()
            return HLSService.respond(request, Array(text.utf8), contentType: HLSService.playlistType,
                                      etag: "\"\(segments.token)-\(HLSTrackPlan.versionToken(text))\"", cacheControl: "max-age=1")
        }
        let fileName = String(file)
        guard let sequence = HLSService.segmentIndex(fileName, extension: "mp3") ?? HLSService.segmentIndex(fileName, extension: "aac"),
              let segment = segments.segment(sequence), fileName.hasSuffix("." + segment.fileExtension) else {
            return .error(404, "no such segment")
        }
        if let version = request.queryValue("v"), version != segments.token {
            return .error(404, "segment of an earlier run of the channel")
        }
        segments.segmentRequests.wrappingIncrement(ordering: .relaxed)
        return HLSService.respond(request, segment.bytes, contentType: segment.contentType,
                                  etag: "\"\(segments.token)-\(sequence)\"", cacheControl: HLSService.immutable)
    }
}
