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
    private let catalog: Catalog
    private let logger: Logger

    struct State {
        var active: [String: TranscodeJob] = [:]
        var running = 0
        var queue: [TranscodeJob] = []
        var nextNumber = 1
        var stopping = false
        /// Encodes started, requests that joined one, cache hits, 503s: the log says them.
        var started = 0, joined = 0, hits = 0, refused = 0
    }
    let state = Lock(State())

    public init(settings: TranscodeSettings, catalog: Catalog, logger: Logger) throws {
        self.settings = settings
        self.catalog = catalog
        self.logger = logger
        cache = try TranscodeCache(directory: settings.cacheDirectory, capacity: settings.cacheBytes)
    }

    /// Encodes started so far (for tests and the status line).
    public var encodesStarted: Int { state.withLock { $0.started } }

    /// No encode starts from now on; the running ones stop (their workers killed within 250 ms).
    public func stop() { state.withLock { $0.stopping = true } }

    /// The response to `request` for the file at `absolute`; made on the blocking pool (it reads
    /// the catalog, may wait for a seek index, and opens files).
    public func respond(_ request: HTTPRequest, absolute: String, file: OpenFile) throws(HTTPRefusal) -> HTTPResponse {
        guard let formatText = request.queryValue("format"), let format = TranscodeFormat(rawValue: formatText) else {
            throw .badRequest("format must be raw, opus or mp3")
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
        if estimate && format != .mp3 { throw .badRequest("estimate=1 is available for format=mp3") }
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
        let key = "\(relative)|\(stamp.size)|\(stamp.mtimeNanos)|\(format.rawValue)|\(kbps)|\(gainMode)|\(startSample)"
        let cacheName = startSample == 0 ? TranscodeCache.name(key: key, ext: format.fileExtension) : nil
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
        let cover = CoverArt.picture(forTrack: track, relative: relative, in: catalog)
        if estimate {
            let length = Self.estimateMP3(samples: Int((duration * Double(track.sampleRate)).rounded(.up)), inputRate: track.sampleRate,
                                          kbps: kbps, tags: Self.tags(track), cover: cover)
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
           let point = index.points.last(where: { ($0.sample ?? Int.max) <= startSample }), let sample = point.sample {
            start.pointByte = point.byte
            start.pointSample = sample
        }
        let spec = TranscodeSpec(path: absolute, hints: TrackDecoder.Hints(audioStart: track.firstFrameOffset, audioEnd: stamp.size,
                                                                            encoderDelay: track.encoderDelay,
                                                                            encoderPadding: track.encoderPadding,
                                                                            totalSamples: track.totalSamples),
                                 channels: track.channels, sourceRate: track.sampleRate, format: format, kbps: kbps,
                                 gain: factor, start: start, tags: Self.tags(track), key: key,
                                 cachePath: cacheName.map(cache.path(of:)), cover: cover)
        let job = try admit(spec, relative: relative)
        let framing: TranscodeReader.Framing = estimated.map { .length($0) } ?? (request.minorVersion >= 1 ? .chunked : .closeDelimited)
        var response = HTTPResponse(status: 200, headers: headers)
        let rate = spec.outputRate(input: track.sampleRate)
        response.live = TranscodeReader(job: job, framing: framing, pace: pace, padding: { count in
            MP3Silence.fill(count, sampleRate: rate, channels: outputChannels)
        })
        return response
    }

    /// The job for `spec`: the one in progress, a new one started or queued; 503 when full.
    private func admit(_ spec: TranscodeSpec, relative: String) throws(HTTPRefusal) -> TranscodeJob {
        enum Decision { case joined(TranscodeJob), start(TranscodeJob), queued(TranscodeJob), full, stopping, failed(String) }
        let decision: Decision = state.withLock { s in
            if s.stopping { return .stopping }
            if let job = s.active[spec.key], job.shared.withLock({ !$0.state.isOver }) {
                s.joined += 1
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
                                       logger: logger, onEnd: { [weak self] job in self?.ended(job) })
            } catch {
                return .failed("\(error)")
            }
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
            job.shared.withLock { $0.state = .failed("\(error)") }
            ended(job)
        }
    }

    /// A job is over: its slot goes to the next queued job somebody still waits for.
    private func ended(_ job: TranscodeJob) {
        let (complete, size) = job.shared.withLock { ($0.state == .complete, $0.published) }
        if complete, let path = job.spec.cachePath {
            cache.added(String(path.split(separator: "/").last ?? ""), size: size)
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
            }
            return nil
        }
        if let next { launch(next, relative: next.spec.path) }
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
