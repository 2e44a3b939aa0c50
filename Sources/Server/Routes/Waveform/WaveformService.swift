import Foundation
import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamRadio
import Logging

/// How streamd computes and keeps track waveforms (`/api/waveform/<id>`).
public struct WaveformSettings: Sendable {
    /// The decode workers that read the tracks (`--decode-worker`, `--waveform-timeout`).
    public var worker = DecodeWorker.Settings()
    /// The folder of finished waveforms; nil: beside the catalog database (`<db>.waveforms`),
    /// none for an in-memory database.
    public var cacheDirectory: String?
    /// Bytes the folder may hold (least recently used files go first).
    public var diskBytes = 256 << 20
    /// Bytes of finished waveforms kept in memory (least recently used go first; those being
    /// built are kept until they finish).
    public var memoryBytes = 64 << 20
    /// Tracks kept in memory at most, whatever their size (a failure is small but not free).
    public var memoryEntries = 4096
    /// Builds at once (one decode worker each) and builds waiting (then 503).
    public var builders = max(1, ProcessInfo.processInfo.activeProcessorCount / 2)
    public var maxQueued = 64

    public init() {}
}

/// One version of one track's waveform: being built, finished, or failed. Shared by the
/// requests that read it and the builder thread that fills it.
final class WaveformEntry: Sendable {
    let trackID: Int
    /// The file version it is made from (a hash of the path and the catalog's stamp).
    let identity: UInt64
    let stamp: FileStamp
    let path: String
    let relativePath: String
    let hints: TrackDecoder.Hints
    /// What an answer says before the worker's first pairs (and the length until the end).
    let catalogRate: Int
    let catalogDuration: Double
    let state: Lock<State>

    struct State {
        /// nil until the worker's first pairs (or a load from disk).
        var pyramid: WaveformPyramid?
        /// Why the track cannot be decoded: answers are 422.
        var failure: String?
        var building: Bool
        /// Replaced by a newer version of the file: its build gives up.
        var discarded = false
    }

    init(track: Track, path: String, pyramid: WaveformPyramid?) {
        trackID = track.id
        identity = Self.identity(path: track.path, stamp: track.stamp)
        stamp = track.stamp
        self.path = path
        relativePath = track.path
        hints = TrackDecoder.Hints(audioStart: track.firstFrameOffset, audioEnd: track.stamp.size,
                                   encoderDelay: track.encoderDelay, encoderPadding: track.encoderPadding,
                                   totalSamples: track.totalSamples)
        catalogRate = track.sampleRate
        catalogDuration = track.durationSeconds
        state = Lock(State(pyramid: pyramid, building: pyramid == nil))
    }

    /// FNV-1a of the library path and the stamp's ETag: names the version on disk.
    static func identity(path: String, stamp: FileStamp) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in (path + "\n" + stamp.etag).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    var byteCount: Int { state.withLock { ($0.pyramid?.byteCount ?? 0) + 256 } }
    var isBuilding: Bool { state.withLock { $0.building } }
}

/// `/api/waveform/<track id>?from=&to=&width=`: a track's waveform pyramid
/// (`WaveformPyramid`), computed by a decode worker the first time it is asked for and shown
/// as it grows, kept in memory (least recently used out first) and on disk.
///
/// An answer from memory is made on the event loop (O(width), whatever the track's length)
/// while the catalog has not changed since the entry was checked against it; otherwise the
/// track is looked up (and its file version compared, its waveform perhaps read from disk) on
/// the blocking pool.
public final class WaveformService: Sendable {
    public static let pathPrefix = "/api/waveform/"
    /// The most pairs one answer may hold, and the default.
    static let maxWidth = 8192
    static let defaultWidth = 1000

    let catalog: Catalog
    let settings: WaveformSettings
    let disk: WaveformDiskCache?
    let logger: Logger
    private let table = Lock(Table())
    private let builder: WaveformBuilder

    private struct Slot {
        var entry: WaveformEntry
        var lastUse: UInt64
        /// The catalog generation at which the entry was known to match the track's file.
        var checkedGeneration: UInt64
        var bytes: Int
    }
    private struct Table {
        var slots: [Int: Slot] = [:]
        var tick: UInt64 = 0
        var bytes = 0
    }

    public init(catalog: Catalog, settings: WaveformSettings, logger: Logger = Logger(label: "streamd.library")) {
        self.catalog = catalog
        var settings = settings
        if settings.cacheDirectory == nil, catalog.store.path != ":memory:" {
            settings.cacheDirectory = catalog.store.path + ".waveforms"
        }
        self.disk = settings.cacheDirectory.map { WaveformDiskCache(directory: $0, maxBytes: settings.diskBytes) }
        self.logger = logger
        let builder = WaveformBuilder(maxThreads: settings.builders, maxQueued: settings.maxQueued)
        let stopped = settings.worker.isCancelled
        settings.worker.isCancelled = { [builder] in builder.isStopping || stopped() }
        self.builder = builder
        self.settings = settings
    }

    // MARK: Requests

    /// The parameters of one request.
    struct Query: Equatable {
        var from = 0.0
        var to: Double?
        var width = WaveformService.defaultWidth

        init(_ request: HTTPRequest) throws(HTTPRefusal) {
            if let text = request.queryValue("from") {
                guard let value = QueryValue.decimal(text, in: Router.seekTimeRange) else {
                    throw .badRequest("from must be a number of seconds in 0...\(Int(Router.seekTimeRange.upperBound))")
                }
                from = value
            }
            if let text = request.queryValue("to") {
                guard let value = QueryValue.decimal(text, in: Router.seekTimeRange) else {
                    throw .badRequest("to must be a number of seconds in 0...\(Int(Router.seekTimeRange.upperBound))")
                }
                to = value
            }
            if let text = request.queryValue("width") {
                guard let value = QueryValue.integer(text, in: 1...WaveformService.maxWidth) else {
                    throw .badRequest("width must be a whole number in 1...\(WaveformService.maxWidth)")
                }
                width = value
            }
            if let to, to <= from { throw .badRequest("to must be after from") }
        }
    }

    /// The answer to `GET /api/waveform/<id>` (`path` starts with `pathPrefix`).
    public func handle(_ request: HTTPRequest, path: Substring) throws(HTTPRefusal) -> HTTPResponse {
        guard let id = QueryValue.integer(String(path.dropFirst(Self.pathPrefix.count)), in: 0...Int(Int32.max)) else {
            throw .notFound("no such track: ids are whole numbers")
        }
        let query = try Query(request)
        let generation = catalog.store.generation
        let known = table.withLock { table -> WaveformEntry? in
            guard var slot = table.slots[id], slot.checkedGeneration == generation else { return nil }
            table.tick += 1
            slot.lastUse = table.tick
            table.slots[id] = slot
            return slot.entry
        }
        if let known { return answer(known, query, request) }
        return .offLoop { [self] () throws(HTTPRefusal) in
            let track: Track?
            do {
                track = try catalog.store.tracks.track(id: id)
            } catch {
                throw HTTPRefusal(503, "library database: \(error)")
            }
            guard let track else { throw .notFound("no such track") }
            return answer(try entry(for: track, generation: generation), query, request)
        }
    }

    /// The entry of the track's current version: the one in memory, else the one on disk,
    /// else a new one whose build is queued (one build per version, however many ask at once).
    func entry(for track: Track, generation: UInt64) throws(HTTPRefusal) -> WaveformEntry {
        let identity = WaveformEntry.identity(path: track.path, stamp: track.stamp)
        if let known = lookUp(track.id, identity: identity, generation: generation) { return known }
        let fresh = WaveformEntry(track: track, path: catalog.absolutePath(of: track),
                                  pyramid: disk?.load(trackID: track.id, identity: identity))
        let (entry, isNew) = table.withLock { table -> (WaveformEntry, Bool) in
            table.tick += 1
            if var slot = table.slots[track.id], slot.entry.identity == identity {
                slot.lastUse = table.tick
                slot.checkedGeneration = max(slot.checkedGeneration, generation)
                table.slots[track.id] = slot
                return (slot.entry, false)
            }
            if let old = table.slots[track.id] {
                old.entry.state.withLock { $0.discarded = true }
                table.bytes -= old.bytes
            }
            let bytes = fresh.byteCount
            table.slots[track.id] = Slot(entry: fresh, lastUse: table.tick, checkedGeneration: generation, bytes: bytes)
            table.bytes += bytes
            evict(&table)
            return (fresh, true)
        }
        guard isNew, entry.isBuilding else { return entry }
        guard builder.enqueue({ [self] in build(entry) }) else {
            table.withLock { table in
                if let slot = table.slots[track.id], slot.entry === entry {
                    table.slots[track.id] = nil
                    table.bytes -= slot.bytes
                }
            }
            throw HTTPRefusal(503, "too many waveforms are being computed: try again shortly", headers: [("Retry-After", "1")])
        }
        return entry
    }

    private func lookUp(_ id: Int, identity: UInt64, generation: UInt64) -> WaveformEntry? {
        table.withLock { table in
            guard var slot = table.slots[id], slot.entry.identity == identity else { return nil }
            table.tick += 1
            slot.lastUse = table.tick
            slot.checkedGeneration = max(slot.checkedGeneration, generation)
            table.slots[id] = slot
            return slot.entry
        }
    }

    /// Drops the least recently used entries not being built while over the memory bounds.
    private func evict(_ table: inout Table) {
        while table.bytes > settings.memoryBytes || table.slots.count > settings.memoryEntries {
            var oldest: (id: Int, use: UInt64)?
            for (id, slot) in table.slots where !slot.entry.isBuilding {
                if oldest == nil || slot.lastUse < oldest?.use ?? .max { oldest = (id, slot.lastUse) }
            }
            guard let oldest, let slot = table.slots.removeValue(forKey: oldest.id) else { return }
            table.bytes -= slot.bytes
        }
    }

    // MARK: Answers

    /// The JSON answer from the entry as it is now.
    func answer(_ entry: WaveformEntry, _ query: Query, _ request: HTTPRequest) -> HTTPResponse {
        let tag = JSONResponse.etag(of: Array("waveform \(entry.stamp.etag) \(request.target)".utf8))
        let complete = entry.state.withLock { $0.pyramid?.isComplete == true }
        if complete {
            switch Precondition.evaluate(request, etag: tag, lastModified: nil) {
            case .failed: return .error(412, "precondition failed")
            case .notModified: return HTTPResponse(status: 304, headers: [("ETag", tag), ("Cache-Control", "no-cache")])
            case .proceed: break
            }
        }
        let made = entry.state.withLock { state -> Result<WaveformAnswer, WaveformBuildError> in
            if let failure = state.failure { return .failure(WaveformBuildError(description: failure)) }
            return .success(WaveformAnswer(state.pyramid, entry: entry, query: query))
        }
        switch made {
        case .failure(let failure):
            return .error(422, "\(entry.relativePath): cannot be decoded: \(failure)")
        case .success(let answer):
            let body = answer.json(trackID: entry.trackID)
            if answer.complete {
                return .bytes(200, body, contentType: "application/json", extraHeaders: [("ETag", tag), ("Cache-Control", "no-cache")])
            }
            return .bytes(200, body, contentType: "application/json", extraHeaders: [("Cache-Control", "no-store")])
        }
    }

    // MARK: Building

    /// Computes the entry's waveform in a decode worker (on a builder thread), the pairs going
    /// into the entry as they come; then keeps it on disk, or records why it failed.
    func build(_ entry: WaveformEntry) {
        let started = Monotonic.now
        logger.info("waveform: computing \(entry.relativePath) (track \(entry.trackID)) in a decode worker")
        var run = WaveformWorkerRun(settings: settings.worker)
        do {
            let (rate, frames, last) = try run.run(path: entry.path, hints: entry.hints) { rate, pairs throws(WaveformBuildError) in
                let discarded = entry.state.withLock { state -> Bool in
                    if state.pyramid == nil { state.pyramid = WaveformPyramid(sampleRate: rate) }
                    state.pyramid?.append(pairs)
                    return state.discarded
                }
                if discarded { throw WaveformBuildError(description: "the file changed") }
            }
            let finished = entry.state.withLock { state -> WaveformPyramid? in
                if state.pyramid == nil { state.pyramid = WaveformPyramid(sampleRate: rate) }
                // The short last pair and the end together: no answer sees one without the other.
                state.pyramid?.append(last)
                state.pyramid?.finish(totalFrames: frames)
                state.building = false
                return state.pyramid
            }
            if let finished, let disk, let problem = disk.store(finished, trackID: entry.trackID, identity: entry.identity) {
                logger.warning("waveform: \(entry.relativePath): not kept on disk: \(problem)")
            }
            logger.info("waveform: \(entry.relativePath): \(String(format: "%.1f", Double(frames) / Double(max(1, rate)))) s of audio in \(String(format: "%.2f", started.elapsed)) s")
        } catch {
            entry.state.withLock { state in
                state.failure = error.description
                state.pyramid = nil
                state.building = false
            }
            logger.warning("waveform: \(entry.relativePath): \(error.description)")
        }
        let bytes = entry.byteCount
        table.withLock { table in
            guard var slot = table.slots[entry.trackID], slot.entry === entry else { return }
            table.bytes += bytes - slot.bytes
            slot.bytes = bytes
            table.slots[entry.trackID] = slot
            evict(&table)
        }
    }

    /// Stops the builds (their workers are killed) and joins the builder threads until
    /// `deadline`; false when one is still running then.
    public func stop(deadline: Monotonic) -> Bool {
        builder.stop(deadline: deadline)
    }
}

/// One answer's numbers, read from the pyramid under the entry's lock.
struct WaveformAnswer {
    var sampleRate: Int
    var duration: Double
    var from: Double
    var to: Double
    var complete: Bool
    var computedTo: Double
    var pairFrames: Int
    var pairs: [Int16]

    init(_ pyramid: WaveformPyramid?, entry: WaveformEntry, query: WaveformService.Query) {
        let rate = max(1, pyramid?.sampleRate ?? (entry.catalogRate > 0 ? entry.catalogRate : 44_100))
        sampleRate = rate
        complete = pyramid?.isComplete == true
        let covered = pyramid?.coveredFrames ?? 0
        // Until the end is known, the catalog's length (or what is decoded, if longer).
        let lengthFrames = pyramid?.totalFrames ?? max(covered, Int((entry.catalogDuration * Double(rate)).rounded()))
        duration = Double(lengthFrames) / Double(rate)
        computedTo = Double(covered) / Double(rate)
        from = min(query.from, duration)
        to = max(from, min(query.to ?? duration, duration))
        let fromFrame = min(lengthFrames, Int((from * Double(rate)).rounded()))
        let toFrame = min(lengthFrames, Int((to * Double(rate)).rounded()))
        if let pyramid {
            let slice = pyramid.slice(from: fromFrame, to: toFrame, width: query.width)
            pairFrames = slice.levelPairFrames
            pairs = slice.pairs
        } else {
            pairFrames = WaveformPyramid.rawPairFrames
            pairs = []
        }
    }

    /// The document: `{"track": "<id>", "sample_rate", "duration", "samples_per_pair", "from",
    /// "to", "complete", "computed_to", "data": [min0, max0, ...]}`, written into one buffer
    /// (at most 7 bytes a value), two digits at a time.
    func json(trackID: Int) -> [UInt8] {
        let head = Array("{\"track\":\"\(trackID)\",\"sample_rate\":\(sampleRate),\"duration\":\(Self.seconds(duration)),\"samples_per_pair\":\(pairFrames),\"from\":\(Self.seconds(from)),\"to\":\(Self.seconds(to)),\"complete\":\(complete),\"computed_to\":\(Self.seconds(complete ? duration : computedTo)),\"data\":[".utf8)
        let tail = Array("]}\n".utf8)
        return [UInt8](unsafeUninitializedCapacity: head.count + 7 * pairs.count + tail.count) { out, count in
            var at = 0
            for byte in head {
                out[at] = byte
                at += 1
            }
            Self.digitPairs.withUnsafeBufferPointer { digits in
                for (i, value) in pairs.enumerated() {
                    if i > 0 {
                        out[at] = UInt8(ascii: ",")
                        at += 1
                    }
                    at = Self.write(value, into: out, at: at, digits: digits)
                }
            }
            for byte in tail {
                out[at] = byte
                at += 1
            }
            count = at
        }
    }

    /// "00" to "99", for writing two digits at once.
    static let digitPairs: [UInt8] = {
        var table: [UInt8] = []
        for n in 0..<100 {
            table.append(UInt8(48 + n / 10))
            table.append(UInt8(48 + n % 10))
        }
        return table
    }()

    /// Writes `value` in decimal at `at`; returns the index after it.
    static func write(_ value: Int16, into out: UnsafeMutableBufferPointer<UInt8>, at start: Int,
                      digits: UnsafeBufferPointer<UInt8>) -> Int {
        var at = start
        if value < 0 {
            out[at] = UInt8(ascii: "-")
            at += 1
        }
        let magnitude = Int(value.magnitude)
        func two(_ n: Int) {
            out[at] = digits[2 * n]
            out[at + 1] = digits[2 * n + 1]
            at += 2
        }
        if magnitude < 10 {
            out[at] = UInt8(48 + magnitude)
            at += 1
        } else if magnitude < 100 {
            two(magnitude)
        } else if magnitude < 1000 {
            out[at] = UInt8(48 + magnitude / 100)
            at += 1
            two(magnitude % 100)
        } else if magnitude < 10_000 {
            two(magnitude / 100)
            two(magnitude % 100)
        } else {
            out[at] = UInt8(48 + magnitude / 10_000)
            at += 1
            two(magnitude / 100 % 100)
            two(magnitude % 100)
        }
        return at
    }

    /// Seconds to the microsecond, as JSON (Swift's shortest form of the rounded value).
    static func seconds(_ value: Double) -> String {
        let rounded = (value * 1e6).rounded() / 1e6
        return rounded.isFinite ? "\(rounded)" : "0"
    }
}
