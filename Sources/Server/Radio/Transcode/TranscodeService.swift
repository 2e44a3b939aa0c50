#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary

/// How transcodes run and are kept (`--transcode-cache`, `--transcode-cache-mb`, `--transcode-jobs`).
public struct TranscodeSettings: Sendable {
    /// Where completed transcodes are kept.
    public var cacheDirectory: String
    public var cacheBytes = 1024 << 20
    /// Encodes at once; the rest wait in a queue of `queueLength`, beyond it: 503.
    public var jobs = max(1, ProcessInfo.processInfo.activeProcessorCount)
    public var queueLength = 4
    /// How decode workers are started (`--decode-worker`).
    public var decodeWorker = DecodeWorker.Settings()

    public init(cacheDirectory: String) { self.cacheDirectory = cacheDirectory }

    /// `$XDG_CACHE_HOME/streamd/transcode`, else `~/.cache/streamd/transcode`.
    public static func defaultDirectory(environment: [String: String]) -> String {
        if let base = environment["XDG_CACHE_HOME"], base.hasPrefix("/") { return base + "/streamd/transcode" }
        return (environment["HOME"] ?? NSTemporaryDirectory()) + "/.cache/streamd/transcode"
    }
}

/// `/media/<path>?format=opus|mp3`: transcodes on request. A request is answered from the cache
/// when the whole track was encoded before (a file: Content-Length, ETag, ranges); else it joins
/// the encode of the same key in progress, or starts one (`TranscodeJob`) when fewer than
/// `jobs` run, or waits in the queue; beyond that it is refused with 503 and Retry-After.
public final class TranscodeService: @unchecked Sendable {
    // @unchecked: immutable after init but for `state`, which is behind a lock.
    let settings: TranscodeSettings
    let cache: TranscodeCache
    /// The spools' reads, off the event loops.
    let spoolReads: TranscodeSpoolReads
    let catalog: Catalog
    private let logger: Logger

    struct State {
        var active: [String: TranscodeJob] = [:]
        var running = 0
        var queue: [TranscodeJob] = []
        var nextNumber = 1
        var stopping = false
        /// Encodes started, requests that joined one, cache hits and misses, 503s (`/api/status`).
        var started = 0, joined = 0, hits = 0, misses = 0, refused = 0
        /// Queued jobs dropped because their last reader left before they started.
        var droppedFromQueue = 0
    }
    let state = Lock(State())

    public init(settings: TranscodeSettings, catalog: Catalog, logger: Logger) throws {
        self.settings = settings
        self.catalog = catalog
        self.logger = logger
        cache = try TranscodeCache(directory: settings.cacheDirectory, capacity: settings.cacheBytes)
        spoolReads = try TranscodeSpoolReads()
    }

    deinit { spoolReads.shutdown(deadline: monotonicNanos()) }

    /// Encodes started so far (for tests and the status line).
    public var encodesStarted: Int { state.withLock { $0.started } }

    /// The counters `/api/status` shows (`transcodes_*`).
    public var counters: StatusDocument.Transcodes {
        state.withLock { s in
            StatusDocument.Transcodes(active: s.running, queued: s.queue.count, started: s.started, joined: s.joined,
                                      cacheHits: s.hits, cacheMisses: s.misses, refused: s.refused,
                                      droppedFromQueue: s.droppedFromQueue)
        }
    }

    /// No encode starts from now on (requests get 503); those running go on until `stop`.
    public func refuseNew() { state.withLock { $0.stopping = true } }

    /// No encode starts from now on; the running ones are told to stop, without waiting.
    public func stop() { _ = stop(deadline: Monotonic.now) }

    /// The server's stop hook (`ServerLifecycle.stop`): no encode starts from now on, queued ones
    /// are dropped and running ones are told to stop (each kills its decode worker and ends its
    /// readers' responses cut short); waits until `deadline` for their threads to end. Returns
    /// the numbers of the encodes still running then (named in the log by the caller).
    public func stop(deadline: Monotonic) -> [Int] {
        let (running, queued): ([TranscodeJob], [TranscodeJob]) = state.withLock { s in
            s.stopping = true
            let queued = s.queue
            s.queue.removeAll()
            for job in queued where s.active[job.spec.key] === job { s.active[job.spec.key] = nil }
            return (Array(s.active.values), queued)
        }
        for job in queued {
            job.shared.withLock { $0.state = .cancelled }
            job.requestStop()
        }
        for job in running { job.requestStop() }
        while state.withLock({ $0.running > 0 }), Monotonic.now < deadline { Monotonic.sleep(seconds: 0.005) }
        spoolReads.shutdown(deadline: deadline.nanoseconds)
        return state.withLock { s in s.active.values.map(\.number).sorted() }
    }

    /// The response to `request` for the file at `absolute`; made on the blocking pool (it reads
    /// the catalog, may wait for a seek index, and opens files).
    public func respond(_ request: HTTPRequest, absolute: String, file: OpenFile) throws(HTTPRefusal) -> HTTPResponse {
        guard let formatText = request.queryValue("format"), let format = TranscodeFormat(rawValue: formatText) else {
            throw .badRequest("format must be raw, opus, mp3 or wav")
        }
        var kbps = format.defaultKbps
        if let text = request.queryValue("bitrate") {
            guard let value = QueryValue.integer(text, in: format.kbpsRange) else {
                throw .badRequest("bitrate must be a whole number of kbit/s in \(format.kbpsRange.lowerBound)...\(format.kbpsRange.upperBound) for \(format.rawValue)")
            }
            kbps = value
        }
        var offset = 0.0
        if let text = request.queryValue("offset") {
            guard let value = QueryValue.decimal(text, in: 0...604_800) else { throw .badRequest("offset must be seconds in 0...604800") }
            offset = value
        }
        let gainMode = request.queryValue("gain") ?? "none"
        guard ["none", "track", "album"].contains(gainMode) else { throw .badRequest("gain must be track or album") }
        let estimate = request.queryValue("estimate") == "1"
        var pace: Int?
        if let text = request.queryValue("kbps") {
            guard let value = QueryValue.integer(text, in: FileResponder.kbpsRange) else {
                throw .badRequest("kbps must be a whole number in \(FileResponder.kbpsRange.lowerBound)...\(FileResponder.kbpsRange.upperBound)")
            }
            pace = value * 1000 / 8
        }
        if estimate && format == .wav { throw .badRequest("estimate=1 is available for format=mp3 and format=opus") }
        var wavRate: Int?
        if let text = request.queryValue("rate") {
            guard format == .wav, let value = QueryValue.integer(text, in: 8_000...384_000) else {
                throw .badRequest("rate must be a whole number of Hz in 8000...384000, with format=wav")
            }
            wavRate = value
        }
        guard let track = catalog.track(forAbsolutePath: absolute), let relative = catalog.resolver.relative(absolute) else {
            throw HTTPRefusal(404, "not a track of the library")
        }
        guard track.sampleRate > 0, track.channels > 0 else { throw HTTPRefusal(422, "the track has no sample rate") }
        let stamp = file.stamp
        var factor: Float = 1
        if gainMode != "none" {
            let gain = gainMode == "album" ? track.replayGain?.albumGain ?? track.replayGain?.trackGain : track.replayGain?.trackGain
            if let gain { factor = Float(pow(10, gain / 20)) }
        }
        let startSample = Int((offset * Double(track.sampleRate)).rounded())
        let duration = max(0, track.durationSeconds - Double(startSample) / Double(track.sampleRate))
        guard offset == 0 || duration > 0 else { throw HTTPRefusal(416, "offset is past the end of the track (\(track.durationSeconds) s)") }
        // An Opus estimate is an encode of its own (hard CBR, padded to the length said): never
        // joined by, nor cached for, other requests.
        let opusEstimate = estimate && format == .opus
        let key = "\(relative)|\(stamp.size)|\(stamp.mtimeNanos)|\(format.rawValue)|\(kbps)|\(gainMode)|\(startSample)\(wavRate.map { "|\($0)" } ?? "")"
            + (opusEstimate ? "|estimate" : "")
        let cacheName = startSample == 0 && format.isCached && !opusEstimate ? TranscodeCache.name(key: key, ext: format.fileExtension) : nil
        let durationHeader = ("X-Content-Duration", String(format: "%.3f", duration))
        if let cacheName, !estimate, let cached = cache.open(cacheName) {
            state.withLock { $0.hits += 1 }
            var response = FileResponder.respond(to: request, file: cached, contentType: format.contentType, framing: .contentLength)
            response.headers.append(durationHeader)
            return response
        }
        var headers: [(String, String)] = [("Content-Type", format.contentType), ("Accept-Ranges", "none"),
                                           ("Cache-Control", "no-cache"), durationHeader]
        let outputChannels = min(2, track.channels)
        var estimated: Int?
        var opusLength: (bytes: Int, holdPages: Int)?
        let cover = CoverArt.picture(forTrack: track, relative: relative, in: catalog)
        if estimate {
            let samples = Int((duration * Double(track.sampleRate)).rounded(.up))
            let length: Int
            if format == .opus {
                // The header pages as this encoder writes them (tags, the cover, and what else it carries).
                var header: [UInt8] = []
                do {
                    let probe = try OggOpusEncoder(channels: outputChannels, kbps: kbps, tags: Self.tags(track), cover: cover,
                                                   constantBitrate: true)
                    try probe.encode([][...], appendingTo: &header)
                } catch {
                    throw HTTPRefusal(500, "cannot start a transcode: \(error)")
                }
                let bound = Self.estimateOpus(samples: samples, inputRate: track.sampleRate, kbps: kbps, headerBytes: header.count)
                length = bound.bytes
                opusLength = (bound.bytes, bound.holdPages)
            } else {
                length = Self.estimateMP3(samples: samples, inputRate: track.sampleRate, kbps: kbps, tags: Self.tags(track), cover: cover)
            }
            estimated = length
            headers.append(("Content-Length", String(length)))
        } else if request.minorVersion >= 1 {
            headers.append(("Transfer-Encoding", "chunked"))
        }
        if request.method == "HEAD" {
            return HTTPResponse(status: 200, headers: headers)
        }
        var start = DecodeStart(sample: startSample)
        if startSample > 0, case .success(let index) = catalog.seekIndex(forAbsolutePath: absolute),
           let point = Self.startPoint(index.points, offset: Double(startSample) / Double(track.sampleRate), sampleRate: track.sampleRate) {
            start.pointByte = point.byte
            start.pointSample = point.sample
        }
        let spec = TranscodeSpec(path: absolute, hints: TrackDecoder.Hints(audioStart: track.firstFrameOffset, audioEnd: stamp.size,
                                                                            encoderDelay: track.encoderDelay,
                                                                            encoderPadding: track.encoderPadding,
                                                                            totalSamples: track.totalSamples),
                                 channels: track.channels, sourceRate: track.sampleRate, format: format, kbps: kbps,
                                 gain: factor, start: start, tags: Self.tags(track), key: key,
                                 cachePath: cacheName.map(cache.path(of:)), wavRate: wavRate, opusLength: opusLength, cover: cover,
                                 ring: format == .wav ? Self.pacedRing(rate: wavRate ?? track.sampleRate, channels: outputChannels) : nil)
        if cacheName != nil, !estimate { state.withLock { $0.misses += 1 } }
        let job = try admit(spec, relative: relative)
        let framing: TranscodeReader.Framing = estimated.map { .length($0) } ?? (request.minorVersion >= 1 ? .chunked : .closeDelimited)
        var response = HTTPResponse(status: 200, headers: headers)
        let rate = spec.outputRate(input: track.sampleRate)
        // MP3 is filled after its last frame by silent frames; Opus is made to the length by the job.
        response.live = TranscodeReader(job: job, reads: spoolReads, framing: framing, pace: pace, padding: { count in
            format == .mp3 ? MP3Silence.fill(count, sampleRate: rate, channels: outputChannels) : nil
        })
        return response
    }

    /// The job for `spec`: the one in progress, a new one started or queued; 503 when full.
    func admit(_ spec: TranscodeSpec, relative: String) throws(HTTPRefusal) -> TranscodeJob {
        enum Decision { case joined(TranscodeJob), start(TranscodeJob), queued(TranscodeJob), full, stopping, failed(String) }
        let decision: Decision = state.withLock { s in
            if s.stopping { return .stopping }
            // A paced job is its one reader's: its ring no longer holds the start for another.
            if let job = s.active[spec.key], job.ring == nil, job.shared.withLock({ !$0.state.isOver && !$0.stopRequested }) {
                s.joined += 1
                // Counted here, under the lock: the job cannot be dropped before the reader starts.
                job.addReader()
                return .joined(job)
            }
            guard s.running < settings.jobs || s.queue.count < settings.queueLength else {
                s.refused += 1
                return .full
            }
            let number = s.nextNumber
            s.nextNumber += 1
            let job: TranscodeJob
            do {
                job = try TranscodeJob(spec: spec, number: number, spoolDirectory: cache.directory, settings: settings.decodeWorker,
                                       logger: logger, onEnd: { [weak self] job, end in self?.ended(job, end) },
                                       onQueuedAbandoned: { [weak self] job in self?.dropQueued(job) })
            } catch {
                return .failed("\(error)")
            }
            job.addReader()
            s.active[spec.key] = job
            if s.running < settings.jobs {
                s.running += 1
                s.started += 1
                return .start(job)
            }
            s.queue.append(job)
            return .queued(job)
        }
        switch decision {
        case .joined(let job):
            logger.info("transcode \(job.number): joined by another request for \(relative)")
            return job
        case .start(let job):
            launch(job, relative: relative)
            return job
        case .queued(let job):
            logger.info("transcode \(job.number): queued \(relative)")
            return job
        case .full:
            throw HTTPRefusal(503, "transcoding at capacity: try again shortly", headers: [("Retry-After", "2")])
        case .stopping:
            throw HTTPRefusal(503, "shutting down")
        case .failed(let why):
            throw HTTPRefusal(500, "cannot start a transcode: \(why)")
        }
    }

    private func launch(_ job: TranscodeJob, relative: String) {
        logger.info("transcode \(job.number): encoding \(relative) to \(job.spec.format.rawValue) \(job.spec.kbps) kbit/s from sample \(job.spec.start.sample)")
        do {
            try NativeThread.detach(name: "transcode-\(job.number)") { job.run() }
        } catch {
            logger.warning("transcode \(job.number): \(error)")
            ended(job, .failed("\(error)"))
            job.shared.withLock { $0.state = .failed("\(error)") }
        }
    }

    /// The last reader of a queued job left: the job leaves the queue now, so its place is free
    /// for the next request (a job that started meanwhile stops by itself, having no reader).
    private func dropQueued(_ job: TranscodeJob) {
        let dropped: Bool = state.withLock { s in
            // Readers are counted under this lock (`admit`): one that joined since is seen here.
            guard job.shared.withLock({ $0.readers <= 0 && $0.state == .queued }),
                  let place = s.queue.firstIndex(where: { $0 === job }) else { return false }
            s.queue.remove(at: place)
            if s.active[job.spec.key] === job { s.active[job.spec.key] = nil }
            s.droppedFromQueue += 1
            job.shared.withLock { $0.state = .cancelled }
            return true
        }
        if dropped { logger.info("transcode \(job.number): dropped from the queue: no listener left") }
    }

    /// A job is over (`end`, not yet shown to its readers): its slot goes to the next queued job
    /// somebody still waits for.
    private func ended(_ job: TranscodeJob, _ end: TranscodeState) {
        if end == .complete, let path = job.spec.cachePath {
            cache.added(String(path.split(separator: "/").last ?? ""))
        }
        let next: TranscodeJob? = state.withLock { s in
            if s.active[job.spec.key] === job { s.active[job.spec.key] = nil }
            s.running -= 1
            while !s.queue.isEmpty {
                let candidate = s.queue.removeFirst()
                if candidate.shared.withLock({ $0.readers > 0 }) && !s.stopping {
                    s.running += 1
                    s.started += 1
                    return candidate
                }
                if s.active[candidate.spec.key] === candidate { s.active[candidate.spec.key] = nil }
                candidate.shared.withLock { $0.state = .cancelled }
                candidate.requestStop()
            }
            return nil
        }
        if let next { launch(next, relative: catalog.resolver.relative(next.spec.path) ?? next.spec.path) }
    }

    /// Where the decode worker starts for `offset` seconds (`TrackDecoder.start`): the index
    /// point with its sample as the container counts it. FLAC and AIFF points carry their exact
    /// sample and are taken up to the offset; Ogg (first link: a granule) and the points that carry
    /// only a time (MP3 and AAC frames, WAV: the untrimmed sample is the time by the rate) are
    /// taken a second early, so the decoder warms up (bit reservoir, Opus pre-roll) before the
    /// samples kept. nil: decode from the start.
    static func startPoint(_ points: [SeekPoint], offset: Double, sampleRate: Int) -> (byte: Int, sample: Int)? {
        let early = offset - 1
        let point = points.last { point in
            if let sample = point.sample, point.link == nil { return Double(sample) <= offset * Double(sampleRate) }
            if point.link != nil { return point.link == 0 && point.sample != nil && point.t <= early }
            return point.t <= early
        }
        guard let point else { return nil }
        return (point.byte, point.sample ?? Int((point.t * Double(sampleRate)).rounded()))
    }

    /// How far a paced (`wav`) encode may run ahead of its reader: 10 s of the 32-bit float
    /// output, within 1...8 MiB (44.1 kHz stereo: 3.5 MB, where the whole hour would be 1.3 GB).
    /// The page's player reads ahead of what it plays, so this is a lead over the network, not a wait.
    static func pacedRing(rate: Int, channels: Int) -> Int {
        min(8 << 20, max(1 << 20, 10 * rate * channels * 4))
    }

    /// The track's title, artist and album as Vorbis comment names.
    static func tags(_ track: Track) -> [(String, String)] {
        [("TITLE", track.title ?? ""), ("ARTIST", track.artist ?? ""), ("ALBUM", track.album ?? "")]
    }

    /// A length no MP3 encode of `samples` can exceed (CBR frames at their largest, the encoder's
    /// delay and flush, the tag), plus room enough that silence frames can always fill the rest.
    static func estimateMP3(samples: Int, inputRate: Int, kbps: Int, tags: [(String, String)], cover: EmbeddedPicture? = nil) -> Int {
        let spec = TranscodeSpec(path: "", hints: .init(), channels: 2, sourceRate: inputRate, format: .mp3, kbps: kbps, gain: 1,
                                 start: .init(), tags: [], key: "", cachePath: nil)
        let rate = spec.outputRate(input: inputRate)
        let samplesPerFrame = rate >= 32_000 ? 1152 : 576
        let output = Int((Double(samples) * Double(rate) / Double(inputRate)).rounded(.up)) + 1
        let frames = (output + 576 + 3 * samplesPerFrame) / samplesPerFrame + 2
        let frameBytes = samplesPerFrame / 8 * kbps * 1000 / rate + 1
        // The rest is filled with silent frames: `fillableFrom` more makes every rest fillable.
        return ID3v2Writer.tag(tags, cover: cover).count + frames * frameBytes + MP3Silence.fillableFrom
    }
}

extension TranscodeService {
    /// A length no hard-CBR Opus encode of `samples` at `inputRate` exceeds: 20 ms packets of
    /// `kbps` × 2.5 bytes (one more for rounding) for the samples resampled to 48 kHz, the
    /// pre-skip and the encoder's flush, with their lacing, a page header every 4 packets (the
    /// encoders page every 10) and the header pages `headerBytes`. Also how many pages the job
    /// holds back so their packets can take the padding that meets it (about 50 KB a page).
    static func estimateOpus(samples: Int, inputRate: Int, kbps: Int, headerBytes: Int) -> (bytes: Int, holdPages: Int) {
        let output = Int((Double(samples) * 48_000 / Double(max(1, inputRate))).rounded(.up)) + 1
        let packets = (output + 312 + 2 * 960) / 960 + 2
        let packetBytes = kbps * 1000 * 960 / (8 * 48_000) + 1
        let pages = packets / 4 + 4
        let bytes = headerBytes + packets * (packetBytes + packetBytes / 255 + 1) + pages * 27
        // What is left over when the encode is as the bound's model expects, less the pages' 27s.
        let slack = packets * (1 + 1) + (pages - packets / 10) * 27 + 3 * packetBytes
        return (bytes, 8 + slack / 40_000)
    }
}

/// Silent MPEG audio layer III frames (all-zero side information: no coded spectrum) of the
/// stream's MPEG version, rate and mode, to fill an estimated Content-Length exactly: as few
/// frames as possible (the largest bitrate first), so the silence added is short.
enum MP3Silence {
    /// Every count of bytes from here on is a mix of silent frames, at every MP3 rate (the
    /// largest count that is none: 5,111 bytes at 8 kHz, whose frames are 72...1,441 bytes).
    static let fillableFrom = 6 * 1024

    /// `count` bytes of whole silent frames for a stream at `sampleRate` with `channels`; nil when
    /// no mix of the version's frame lengths makes exactly `count` (some counts below `fillableFrom`).
    static func fill(_ count: Int, sampleRate: Int, channels: Int) -> [UInt8]? {
        guard count > 0 else { return [] }
        let version: (bits: UInt8, rates: [Int], kbps: [Int], factor: Int)
        switch sampleRate {
        case 32_000, 44_100, 48_000:
            version = (0b11, [44_100, 48_000, 32_000], [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320], 144)
        case 16_000, 22_050, 24_000:
            version = (0b10, [22_050, 24_000, 16_000], [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160], 72)
        case 8_000, 11_025, 12_000:
            version = (0b00, [11_025, 12_000, 8_000], [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160], 72)
        default: return nil
        }
        guard let rateIndex = version.rates.firstIndex(of: sampleRate) else { return nil }
        // Every frame this version allows: (bitrate index, padding bit) → its length.
        var kinds: [(index: Int, pad: Int, length: Int)] = []
        for (i, kbps) in version.kbps.enumerated() {
            let length = version.factor * kbps * 1000 / sampleRate
            kinds.append((i + 1, 0, length))
            kinds.append((i + 1, 1, length + 1))
        }
        guard let largest = kinds.max(by: { $0.length < $1.length }) else { return nil }
        // The largest frames down to a rest the small table below solves with the fewest frames:
        // every count above `fillableFrom` is a sum of this version's frame lengths.
        let table = fillableFrom + largest.length
        var picks: [(index: Int, pad: Int, length: Int)] = []
        var rest = count
        while rest > table {
            picks.append(largest)
            rest -= largest.length
        }
        // fewest[n]: the fewest frames that make n bytes, and the last frame of one such mix.
        var fewest = [Int](repeating: Int.max, count: rest + 1)
        var last = [Int](repeating: -1, count: rest + 1)
        fewest[0] = 0
        let lengths = kinds.map(\.length)
        if rest > 0 {
            for n in 1...rest {
                var best = Int.max, pick = -1
                for k in 0..<lengths.count {
                    let before = n - lengths[k]
                    if before >= 0, fewest[before] < best - 1 {
                        best = fewest[before] + 1
                        pick = k
                    }
                }
                fewest[n] = best
                last[n] = pick
            }
        }
        guard fewest[rest] != Int.max else { return nil }
        var n = rest
        while n > 0 {
            let kind = kinds[last[n]]
            picks.append(kind)
            n -= kind.length
        }
        let sideInfo = version.bits == 0b11 ? (channels == 1 ? 17 : 32) : (channels == 1 ? 9 : 17)
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for kind in picks {
            guard kind.length >= 4 + sideInfo else { return nil }
            out += [0xFF, 0xE0 | version.bits << 3 | 0b010 | 1, UInt8(kind.index) << 4 | UInt8(rateIndex) << 2 | UInt8(kind.pad) << 1,
                    channels == 1 ? 0xC0 : 0x40]
            out += [UInt8](repeating: 0, count: kind.length - 4)
        }
        return out
    }
}
