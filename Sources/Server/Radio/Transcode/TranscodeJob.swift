#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import StreamAudio
import StreamShared
import StreamHTTP

/// The formats `/media/<path>?format=` encodes to (`raw`, the file as it is, is not a transcode).
/// `wav` is the decoded PCM itself (`WaveFloatEncoder`, for the page's Web Audio player): no
/// bitrate, and not kept in the cache (several times an encode's size; decoding again is cheap).
public enum TranscodeFormat: String, Sendable, CaseIterable {
    case opus, mp3, wav

    public var contentType: String {
        switch self { case .opus: "audio/ogg; codecs=opus"; case .mp3: "audio/mpeg"; case .wav: "audio/wav" }
    }
    public var fileExtension: String { rawValue }
    /// The bitrate when none is asked for (what peers default to: Opus 128k, MP3 192k).
    public var defaultKbps: Int {
        switch self { case .opus: 128; case .mp3: 192; case .wav: 0 }
    }
    /// The bitrates the encoder takes.
    public var kbpsRange: ClosedRange<Int> {
        switch self { case .opus: 6...510; case .mp3: 8...320; case .wav: 0...0 }
    }
    /// Whether a whole-track result goes into the transcode cache.
    public var isCached: Bool { self != .wav }
}

/// One transcode: what to decode, how, and into what.
struct TranscodeSpec: Sendable {
    /// The file, and what the analysis says of it.
    var path: String
    var hints: TrackDecoder.Hints
    /// The track's channels as listed (the output has at most 2).
    var channels: Int
    var sourceRate: Int
    var format: TranscodeFormat
    var kbps: Int
    /// The linear factor of the ReplayGain baked in (1: none).
    var gain: Float
    var start: DecodeStart
    /// Title, artist, album as Vorbis comment names.
    var tags: [(String, String)]
    /// The cache key; also the job table's.
    var key: String
    /// Where the completed file goes (nil: not kept, a transcode from an offset).
    var cachePath: String?
    /// The rate `wav` is resampled to (`&rate=`: the page's AudioContext rate); nil: the source's.
    var wavRate: Int? = nil
    /// An HLS rendition's settings (see `HLSRendition`): the encoder's rate, silence encoded
    /// before the track, and whether MP3 frames may borrow bytes from earlier ones.
    var fixedRate: Int?
    var leadingSilence = 0
    var reservoir = true
    /// Opus with `estimate=1`: the exact length to make (hard CBR, padded inside the last
    /// `holdPages` pages: `OggOpusTail`).
    var opusLength: (bytes: Int, holdPages: Int)? = nil
    /// The cover the file carries (OpusTags' METADATA_BLOCK_PICTURE, an ID3v2 APIC frame).
    var cover: EmbeddedPicture? = nil
    /// A paced spool (`wav`, never cached): a ring file of this many bytes, which the encode
    /// never runs further ahead of its reader than (nil: the whole encode, as fast as it goes).
    var ring: Int? = nil

    var outputChannels: Int { min(2, max(1, channels)) }

    /// The encoder's rate: Opus 48 kHz; MP3 the source's when MP3 has it, else 48 kHz or 44.1 kHz.
    func outputRate(input: Int) -> Int {
        if let fixedRate { return fixedRate }
        switch format {
        case .opus: return OggOpusEncoder.sampleRate
        case .wav: return wavRate ?? input
        case .mp3:
            if LAMEEncoder.sampleRates.contains(input) { return input }
            return input % 8_000 == 0 || input > 48_000 ? 48_000 : 44_100
        }
    }
}

/// How an encode ended (or that it goes on).
enum TranscodeState: Equatable {
    case queued, running, complete, failed(String), cancelled
    var isOver: Bool { self == .complete || self == .cancelled || { if case .failed = self { return true }; return false }() }
}

/// One encode in progress and its readers: a thread takes samples from a decode worker
/// (`IsolatedTrackPCM`: a decoder crash costs this encode only), applies the gain, resamples with
/// libsoxr, encodes (libopus or libmp3lame) and appends the bytes to a spool file, which every
/// reader (`TranscodeReader`, on the event loops) reads from its own offset. Identical requests
/// join the one job. When the last reader goes before the end, the encode stops. A complete
/// encode of a whole track becomes a cache file (MP3: its Xing/Info + LAME frame written over
/// the placeholder first, with the exact frame count, delay and padding). A paced job
/// (`spec.ring`: `wav`, which is never cached and ~1.3 GB an hour) writes into a ring file and
/// waits while it is a ring ahead of its one reader, so neither the disk nor the worker's
/// output runs ahead of the listener by more than the ring.
final class TranscodeJob: @unchecked Sendable {
    // @unchecked: `spec`, `fd`, `number` are immutable; everything else is behind `state`.
    let spec: TranscodeSpec
    let number: Int
    /// The spool: written by the job thread, read (pread) by the readers' loops.
    let fd: Int32
    /// The paced spool's size (`spec.ring`): byte `n` of the stream is at `n % ring`.
    var ring: Int? { spec.ring }
    /// Signalled when a paced job's reader moves on or leaves: the job may have room again.
    private let room = ConditionLock()
    private let spoolPath: String
    private let settings: DecodeWorker.Settings
    private let logger: Logger
    /// Called once, on the job thread, when the encode is over and before its readers see the
    /// end (so a reader that saw it finds the job's slot free and a complete file in the cache).
    private let onEnd: @Sendable (TranscodeJob, TranscodeState) -> Void
    /// Called when the last reader of a job still queued leaves (the service drops the job).
    private let onQueuedAbandoned: @Sendable (TranscodeJob) -> Void

    struct Shared {
        var state = TranscodeState.queued
        /// Bytes of the spool readers may send.
        var published = 0
        /// Bytes of the spool a streaming reader leaves out (MP3: the placeholder tag frame).
        var skip: Range<Int>?
        /// Readers that hold the job, and the loops to wake for them.
        var readers = 0
        var everRead = false
        var wakers: [ObjectIdentifier: LoopWaker] = [:]
        /// How far each reader has read (a paced job: the ring is free behind the slowest).
        var positions: [ObjectIdentifier: Int] = [:]
        var format: (rate: Int, channels: Int)?
        /// The server is stopping: the encode ends as if abandoned.
        var stopRequested = false
        /// Where the spool's last Ogg page starts (Opus, once complete): an estimated length's
        /// padding goes into it (`OggOpusPadding`).
        var lastPageStart: Int?
        /// Parked requests (an HLS variant's segment not yet encoded): each is called once, when
        /// `published` reaches its count or the encode is over.
        var watchers: [(bytes: Int, wake: @Sendable () -> Void)] = []
        /// An HLS variant's EVENT playlist of this encode has been answered: `HLSService` holds
        /// its reloads no more.
        var growingAnswered = false
    }
    let shared = Lock(Shared())

    init(spec: TranscodeSpec, number: Int, spoolDirectory: String, settings: DecodeWorker.Settings, logger: Logger,
         onEnd: @escaping @Sendable (TranscodeJob, TranscodeState) -> Void,
         onQueuedAbandoned: @escaping @Sendable (TranscodeJob) -> Void = { _ in }) throws(SystemError) {
        self.spec = spec
        self.number = number
        self.settings = settings
        self.logger = logger
        self.onEnd = onEnd
        self.onQueuedAbandoned = onQueuedAbandoned
        let path = spoolDirectory + "/.partial-\(getpid())-\(number)"
        spoolPath = path
        fd = try syscallChecked("open") { open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        // A transcode that is not kept needs no name: the open descriptors hold it.
        if spec.cachePath == nil { unlink(path) }
    }

    deinit {
        close(fd)
        if shared.withLock({ $0.state != .complete }) || spec.cachePath == nil { unlink(spoolPath) }
    }

    // MARK: readers

    func addReader() { shared.withLock { $0.readers += 1; $0.everRead = true } }

    func setWaker(_ waker: LoopWaker, for reader: AnyObject) {
        shared.withLock { $0.wakers[ObjectIdentifier(reader)] = waker }
    }

    /// A reader left (its connection closed): with none left, an encode not over stops, and a
    /// job still queued is dropped from the queue at once (its place goes to the next request).
    func removeReader(_ reader: AnyObject) {
        let queuedAndIdle = shared.withLock {
            $0.readers -= 1
            $0.wakers[ObjectIdentifier(reader)] = nil
            $0.positions[ObjectIdentifier(reader)] = nil
            return $0.readers <= 0 && $0.state == .queued
        }
        signalRoom()
        if queuedAndIdle { onQueuedAbandoned(self) }
    }

    /// `reader` has read the spool up to `position` (a paced job may write on behind it).
    func readerMoved(_ reader: AnyObject, to position: Int) {
        guard ring != nil else { return }
        shared.withLock { $0.positions[ObjectIdentifier(reader)] = position }
        signalRoom()
    }

    /// A fault drill (`STREAMD_FAULT_SPOOL_READ_DELAY`, seconds in 0...60, for the tests): every
    /// spool read waits this long first, as a read from a slow or stalled disk would.
    static let faultReadDelay: Double = {
        guard let text = getenv("STREAMD_FAULT_SPOOL_READ_DELAY"), let value = Double(String(cString: text)),
              (0...60).contains(value) else { return 0 }
        return value
    }()

    private func signalRoom() {
        guard ring != nil else { return }
        room.withLock { room.signal() }
    }

    /// Up to `count` bytes of the spool from stream byte `position` (a paced spool: up to the
    /// ring's end, the rest at its start in the next read); empty when the read fails. Runs on
    /// `TranscodeSpoolReads`' threads, never on a loop (the disk may wait).
    func readSpool(at position: Int, count: Int) -> [UInt8] {
        if Self.faultReadDelay > 0 { Monotonic.sleep(seconds: Self.faultReadDelay) }
        var offset = position, wanted = count
        if let ring {
            offset = position % ring
            wanted = min(count, ring - offset)
        }
        guard wanted > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: wanted)
        var done = 0
        while done < wanted {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress.map { $0 + done }, wanted - done, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            done += n
        }
        bytes.removeSubrange(done...)
        return bytes
    }

    /// The server is stopping: the encode stops at its next step (its worker killed within the
    /// worker's cancel poll); readers see it cut short.
    func requestStop() {
        shared.withLock { $0.stopRequested = true }
        signalRoom()
        wakeReaders()
    }

    /// True when nobody reads the encode any more (nor a request that is on its way), or the
    /// server is stopping.
    private var abandoned: Bool { shared.withLock { ($0.readers <= 0 && $0.everRead) || $0.stopRequested } }

    private func wakeReaders() {
        let (wakers, due) = shared.withLock { s in
            let over = s.state.isOver || s.stopRequested
            let published = s.published
            let due = s.watchers.filter { over || published >= $0.bytes }
            if !due.isEmpty { s.watchers.removeAll { over || published >= $0.bytes } }
            return (Set(s.wakers.values), due)
        }
        for waker in wakers { waker.wake() }
        for watcher in due { watcher.wake() }
    }

    /// Calls `wake` once, from any thread, when `bytes` of the spool are published or the encode
    /// is over (at once when that is so already). It holds no reader: the encode goes on to its end.
    func notify(whenPublished bytes: Int, _ wake: @escaping @Sendable () -> Void) {
        let now = shared.withLock { s in
            if s.state.isOver || s.stopRequested || s.published >= bytes { return true }
            s.watchers.append((bytes, wake))
            return false
        }
        if now { wake() }
    }

    // MARK: the encode

    /// Runs the encode on the calling thread (the job's own), to its end.
    func run() {
        let started = monotonicNanos()
        shared.withLock { $0.state = .running }
        let end: TranscodeState
        do {
            end = try encode()
        } catch {
            // A worker's wait given up because the readers left is a stop, not a failure.
            end = abandoned ? .cancelled : .failed("\(error)")
        }
        if end == .complete, let cachePath = spec.cachePath {
            if rename(spoolPath, cachePath) != 0 {
                logger.warning("transcode: cannot keep \(cachePath): \(String(cString: strerror(errno)))")
            }
        }
        onEnd(self, end)
        shared.withLock { $0.state = end }
        let seconds = Double(monotonicNanos() - started) / 1e9
        switch end {
        case .failed(let why): logger.warning("transcode \(number): \(spec.path): \(why)")
        case .cancelled:
            let why = shared.withLock { $0.stopRequested } ? "the server is stopping" : "no listener left"
            logger.info("transcode \(number): stopped \(spec.path): \(why)")
        default: logger.info("transcode \(number): done \(spec.path) in \(String(format: "%.2f", seconds)) s")
        }
        wakeReaders()
    }

    /// Decode, gain, resample and encode, into the spool: the job's data path, step by step.
    private func encode() throws -> TranscodeState {
        var workerSettings = settings
        let previous = settings.isCancelled
        workerSettings.isCancelled = { [weak self] in previous() || (self?.abandoned ?? true) }
        if abandoned { return .cancelled }
        let pcm = try IsolatedTrackPCM(path: spec.path, hints: spec.hints, channels: spec.outputChannels,
                                       settings: workerSettings, start: spec.start)
        var encoder: ResamplingEncoder?
        var samples: [Float] = []
        var output = PendingOutput(spec: spec)
        var lastWake: UInt64 = 0
        var unpublished = 0
        while true {
            if abandoned { return .cancelled }
            samples.removeAll(keepingCapacity: true)
            guard let rate = try pcm.next(into: &samples) else { break }
            if encoder == nil { encoder = try makeEncoder(inputRate: rate, appendingTo: &output.bytes) }
            guard let encoder else { break }
            if spec.gain != 1 {
                let gain = spec.gain
                for i in samples.indices { samples[i] *= gain }
            }
            // A rate that changes mid-track (a chained Ogg) is resampled too, the filter's tail first.
            try encoder.encode(&samples, rate: rate, appendingTo: &output.bytes)
            guard try writeToSpool(&output) else { continue }
            unpublished += 1
            let now = monotonicNanos()
            if now - lastWake > 20_000_000 || unpublished > 16 {
                publish(output.written)
                lastWake = now
                unpublished = 0
            }
        }
        guard let encoder else { throw EncoderError(message: "the track has no samples from its start") }
        try finish(encoder, &output)
        // The readers are woken by `run` once the state says complete.
        let written = output.written
        shared.withLock { $0.published = written }
        return .complete
    }

    /// The encoded bytes on their way to the spool, and what the format holds back.
    private struct PendingOutput {
        /// The encoder's output not yet written (MP3: starting with the ID3v2 tag).
        var bytes: [UInt8]
        /// Bytes written to the spool.
        var written = 0
        /// The MP3's ID3v2 tag, before the placeholder tag frame.
        let tagBytes: Int
        /// The placeholder frame's length once its header is whole (a cached MP3 only).
        var infoFrameLength: Int?
        /// Opus with an estimated length: the last pages held back for the padding.
        var tail: OggOpusTail?
        var released: [UInt8] = []

        init(spec: TranscodeSpec) {
            // MP3 files start with an ID3v2 tag (title, artist, album).
            bytes = spec.format == .mp3 ? ID3v2Writer.tag(spec.tags, cover: spec.cover) : []
            tagBytes = bytes.count
            tail = spec.opusLength.map { OggOpusTail(holdPages: $0.holdPages) }
        }
    }

    /// The encoder for the first samples' rate, with the rendition's leading silence in `bytes`.
    private func makeEncoder(inputRate: Int, appendingTo bytes: inout [UInt8]) throws -> ResamplingEncoder {
        let outputRate = spec.outputRate(input: inputRate)
        let made: ResamplingEncoder
        switch spec.format {
        case .opus:
            made = ResamplingEncoder(try OggOpusEncoder(channels: spec.outputChannels, kbps: spec.kbps, tags: spec.tags,
                                                        cover: spec.cover, constantBitrate: spec.opusLength != nil))
        case .mp3:
            made = ResamplingEncoder(try LAMEEncoder(sampleRate: outputRate, channels: spec.outputChannels, kbps: spec.kbps,
                                                     quality: ChannelTranscoder.quality, infoFrame: spec.cachePath != nil,
                                                     reservoir: spec.reservoir))
        case .wav:
            made = ResamplingEncoder(try WaveFloatEncoder(sampleRate: outputRate, channels: spec.outputChannels))
        }
        if spec.leadingSilence > 0 {
            // Silence at the encoder's own rate, ahead of the resampler.
            try made.encoder.encode([Float](repeating: 0, count: spec.leadingSilence * spec.outputChannels)[...], appendingTo: &bytes)
        }
        shared.withLock { $0.format = (outputRate, spec.outputChannels) }
        return made
    }

    /// Writes what may go out of `output` now; false while nothing may (a cached MP3 until its
    /// placeholder frame's length is known: streaming readers leave that frame out).
    private func writeToSpool(_ output: inout PendingOutput) throws -> Bool {
        if spec.format == .mp3, spec.cachePath != nil, output.infoFrameLength == nil {
            guard output.bytes.count >= output.tagBytes + 4,
                  let length = Self.mpegFrameLength(output.bytes[output.tagBytes...]) else { return false }
            output.infoFrameLength = length
            let skip = output.tagBytes..<(output.tagBytes + length)
            shared.withLock { $0.skip = skip }
        }
        if output.tail != nil {
            // The last pages wait: the padding that meets the estimate goes into them.
            try output.tail?.take(&output.bytes, release: &output.released)
            try append(&output.released, at: &output.written)
        } else if ring != nil {
            try appendPaced(&output.bytes, at: &output.written)
        } else {
            try append(&output.bytes, at: &output.written)
        }
        return true
    }

    /// The end of the encode: the encoder's last bytes, an estimated Opus length's padding, and
    /// a cached MP3's final LAME frame over its placeholder.
    private func finish(_ encoder: ResamplingEncoder, _ output: inout PendingOutput) throws {
        try encoder.finish(appendingTo: &output.bytes)
        if var last = output.tail, let target = spec.opusLength?.bytes {
            try last.take(&output.bytes, release: &output.released)
            let missing = target - output.written - output.released.count - last.heldBytes
            let added = try last.finish(padding: missing, release: &output.released)
            if missing < 0 || added < missing {
                logger.warning("transcode \(number): the estimated length \(target) is \(missing < 0 ? "short by \(-missing)" : "\(missing - added) bytes more than the padding room") bytes")
            }
        }
        try append(&output.released, at: &output.written)
        if ring != nil { try appendPaced(&output.bytes, at: &output.written) } else { try append(&output.bytes, at: &output.written) }
        if spec.format == .mp3, spec.cachePath != nil, let lame = encoder.encoder as? LAMEEncoder, let frame = lame.infoFrame() {
            guard frame.count == output.infoFrameLength else {
                throw EncoderError(message: "the LAME tag frame (\(frame.count) bytes) does not fit its placeholder")
            }
            let n = frame.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(output.tagBytes)) }
            guard n == frame.count else { throw SystemError(call: "pwrite", errno: errno) }
        }
    }

    /// Lets the readers (and parked requests) have the spool's first `written` bytes.
    private func publish(_ written: Int) {
        shared.withLock { $0.published = written }
        wakeReaders()
    }

    /// Writes `bytes` at the spool's end and empties it.
    private func append(_ bytes: inout [UInt8], at written: inout Int) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw SystemError(call: "write", errno: errno) }
            done += n
        }
        written += bytes.count
        bytes.removeAll(keepingCapacity: true)
    }

    /// Writes `bytes` into the paced spool's ring behind the slowest reader, waiting (readers
    /// woken with what is written so far) while the ring is full; throws when no reader is left.
    private func appendPaced(_ bytes: inout [UInt8], at written: inout Int) throws {
        guard let ring else { return try append(&bytes, at: &written) }
        var done = 0
        while done < bytes.count {
            let free = try roomInRing(written: written, ring: ring)
            let count = min(free, bytes.count - done, ring - written % ring)
            var put = 0
            while put < count {
                let n = bytes[(done + put)...].withUnsafeBytes { pwrite(fd, $0.baseAddress, count - put, off_t(written % ring + put)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw SystemError(call: "pwrite", errno: errno) }
                put += n
            }
            done += count
            written += count
        }
        bytes.removeAll(keepingCapacity: true)
    }

    /// Bytes the ring may take after `written` (at least 1): it waits while the slowest reader
    /// (one counted but not started yet is at 0) is a whole ring behind.
    private func roomInRing(written: Int, ring: Int) throws -> Int {
        room.lock()
        defer { room.unlock() }
        var published = false
        while true {
            let (slowest, over) = shared.withLock { s in
                (s.readers > s.positions.count ? 0 : s.positions.values.min() ?? 0,
                 (s.readers <= 0 && s.everRead) || s.stopRequested)
            }
            if over { throw EncoderError(message: "no reader left") }
            if slowest + ring > written { return slowest + ring - written }
            if !published {
                // The reader is to move on: it must see all that is written.
                shared.withLock { $0.published = written }
                wakeReaders()
                published = true
            }
            // Signalled when the reader moves or leaves; the time-out is only a safety net.
            room.wait(seconds: 1)
        }
    }

    /// The length of the MPEG audio frame at the start of `bytes`, if its header is whole.
    static func mpegFrameLength(_ bytes: ArraySlice<UInt8>) -> Int? {
        var splitter = AudioFrameSplitter(codec: .mpeg)
        guard let step = try? splitter.next(in: bytes, isComplete: true), case .frame(let frame) = step else { return nil }
        return frame.length
    }
}

/// A small ID3v2.4 tag (UTF-8 text frames, and the cover as an APIC frame) for the head of an MP3 transcode.
enum ID3v2Writer {
    /// Vorbis comment names → ID3v2.4 frame ids.
    static let frames = ["TITLE": "TIT2", "ARTIST": "TPE1", "ALBUM": "TALB"]

    static func tag(_ tags: [(String, String)], cover: EmbeddedPicture? = nil) -> [UInt8] {
        var body: [UInt8] = []
        for (name, value) in tags where !value.isEmpty {
            guard let id = frames[name] else { continue }
            let text = [0x03] + Array(value.utf8.prefix(4096))
            body += Array(id.utf8) + synchsafe(text.count) + [0, 0] + text
        }
        if let cover {
            // APIC (ID3v2.4 §4.14): encoding (UTF-8), MIME type and its NUL, picture type 3 (front
            // cover), an empty description and its NUL, then the image bytes as they are.
            let mime = Array(cover.mimeType.utf8.filter { $0 >= 0x20 && $0 < 0x7F }.prefix(64))
            let content = [0x03] + mime + [0, 3, 0] + cover.data
            body += Array("APIC".utf8) + synchsafe(content.count) + [0, 0] + content
        }
        guard !body.isEmpty else { return [] }
        return Array("ID3".utf8) + [4, 0, 0] + synchsafe(body.count) + body
    }

    static func synchsafe(_ value: Int) -> [UInt8] {
        [UInt8((value >> 21) & 0x7F), UInt8((value >> 14) & 0x7F), UInt8((value >> 7) & 0x7F), UInt8(value & 0x7F)]
    }
}
