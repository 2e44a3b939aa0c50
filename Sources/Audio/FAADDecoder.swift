internal import CFAAD
import StreamShared

/// libfaad2 wrapped once: AAC frames in (ADTS, or raw access units after an
/// AudioSpecificConfig), 32-bit float PCM out. Handles AAC-LC and HE-AAC v1/v2 (SBR/PS).
///
/// The output is the stream's own format, never libfaad2's guesses (docs/DESIGN.md, "AAC output
/// format"). Left to itself libfaad2 doubles the rate of every AAC-LC stream at or below 24 kHz
/// (in case SBR turns up later) and copies mono into two channels (in case PS does): an 8 kHz
/// mono file would come out as 16 kHz stereo. So it is told not to upsample
/// (`dontUpSampleImplicitSBR`), and its two copies of a mono channel are folded back into one
/// unless the frames really carry PS. SBR or PS that only the frames signal (implicit HE-AAC)
/// are real and show in the first frame's NeAACDecFrameInfo: that frame fixes `format` for the
/// rest of the stream, and a later change is an error rather than mislabelled audio.
public final class FAADDecoder {
    private var handle: NeAACDecHandle?
    /// The output format, fixed by the first frame decoded (nil before); kept across `reset()`.
    public private(set) var format: AudioFormat?
    private let config: [UInt8]?
    /// Channels the header or AudioSpecificConfig declares; 1 lets libfaad2's stereo copy be folded.
    private let declaredChannels: Int
    /// Frames that failed to decode since the last good one.
    private var failedInARow = 0
    static let maxFailedInARow = 32
    /// Mono samples folded from libfaad2's two copies.
    private var scratch: [Float] = []

    /// `audioSpecificConfig` for MP4 (NeAACDecInit2); nil for ADTS, where the first frame's
    /// header initialises the decoder (NeAACDecInit). `declaredChannels` is what the header or
    /// the config says (0 when it does not: a program config element in the frames).
    public init(audioSpecificConfig: [UInt8]? = nil, declaredChannels: Int) throws {
        config = audioSpecificConfig
        self.declaredChannels = declaredChannels
        try open()
    }

    deinit { if let handle { NeAACDecClose(handle) } }

    private func open() throws {
        if let handle { NeAACDecClose(handle) }
        handle = nil
        guard let h = NeAACDecOpen() else { throw DecoderError(message: "NeAACDecOpen failed") }
        handle = h
        if let settings = NeAACDecGetCurrentConfiguration(h) {
            settings.pointee.outputFormat = UInt8(FAAD_FMT_FLOAT)
            settings.pointee.downMatrix = 0
            // AAC-LC at 24 kHz or less stays at its rate; real SBR still doubles it.
            settings.pointee.dontUpSampleImplicitSBR = 1
            NeAACDecSetConfiguration(h, settings)
        }
        if var asc = config {
            var rate: UInt = 0
            var channels: UInt8 = 0
            let result = asc.withUnsafeMutableBufferPointer { buffer in
                NeAACDecInit2(h, buffer.baseAddress, UInt(buffer.count), &rate, &channels)
            }
            guard result == 0 else { throw DecoderError(message: "NeAACDecInit2 refused the AudioSpecificConfig") }
        }
        initialized = config != nil
    }

    /// Whether NeAACDecInit/NeAACDecInit2 has run since the last open.
    private var initialized = false

    /// After a seek: a fresh decoder state (the format stays what the stream's start fixed).
    public func reset() throws { try open() }

    /// Decodes one frame (an ADTS frame with its header, or one raw access unit) and passes its
    /// samples, in `format`, to `body`. The first frame after opening gives no samples (libfaad2
    /// keeps it back as its delay) but does fix the format.
    public func decode(frame: ArraySlice<UInt8>, _ body: (UnsafeBufferPointer<Float>, AudioFormat) -> Void) throws {
        guard let handle else { return }
        // libfaad2 declares its input `unsigned char *` but only reads it: the frame is passed
        // where it lies (no copy, no allocation per frame).
        try frame.withUnsafeBufferPointer { (bytes) throws -> Void in
            guard let base = bytes.baseAddress else { return }
            try decode(UnsafeMutablePointer(mutating: base), count: bytes.count, handle: handle, body)
        }
    }

    private func decode(_ bytes: UnsafeMutablePointer<UInt8>, count: Int, handle: NeAACDecHandle,
                        _ body: (UnsafeBufferPointer<Float>, AudioFormat) -> Void) throws {
        if !initialized {
            var rate: UInt = 0
            var channels: UInt8 = 0
            let used = NeAACDecInit(handle, bytes, UInt(count), &rate, &channels)
            guard used >= 0 else { throw DecoderError(message: "NeAACDecInit: not an AAC stream") }
            initialized = true
        }
        var info = NeAACDecFrameInfo()
        let output = NeAACDecDecode(handle, &info, bytes, UInt(count))
        // A damaged frame: skip it, as players do, rather than stop the stream; but a run of
        // them is a stream libfaad2 cannot play (e.g. SBR first appearing after the first
        // frame), which must not pass for a short, silent success.
        guard info.error == 0, info.channels > 0, info.samplerate > 0 else {
            failedInARow += 1
            if failedInARow >= Self.maxFailedInARow {
                let reason = NeAACDecGetErrorMessage(info.error).map { String(cString: $0) } ?? "error \(info.error)"
                throw DecoderError(message: "libfaad2: \(reason) (\(failedInARow) frames in a row)")
            }
            return
        }
        failedInARow = 0
        let produced = Int(info.channels)
        if format == nil {
            // libfaad2 built with PS support outputs a mono stream as two identical channels.
            let mono = declaredChannels == 1 && produced == 2 && info.ps == 0
            format = AudioFormat(sampleRate: Int(info.samplerate), channels: mono ? 1 : produced)
        }
        guard let format else { return }
        let fold = format.channels == 1 && produced == 2
        guard Int(info.samplerate) == format.sampleRate, produced == format.channels || fold else {
            throw DecoderError(message: "AAC output changed mid-stream from \(format.sampleRate) Hz \(format.channels) ch "
                               + "to \(info.samplerate) Hz \(produced) ch")
        }
        guard let output, info.samples > 0 else { return }
        let samples = UnsafeBufferPointer(start: output.assumingMemoryBound(to: Float.self), count: Int(info.samples))
        if fold {
            // The mean of the two copies is the mono sample, exactly (and a fair mono if PS starts late).
            let frames = samples.count / 2
            if scratch.count != frames { scratch = [Float](repeating: 0, count: frames) }
            scratch.withUnsafeMutableBufferPointer { mono in
                for i in 0..<frames { mono[i] = (samples[2 * i] + samples[2 * i + 1]) * 0.5 }
            }
            scratch.withUnsafeBufferPointer { body($0, format) }
        } else {
            body(samples, format)
        }
    }
}

/// AAC in ADTS: StreamShared's ADTS header and sync, then libfaad2.
public struct ADTSConverter: PacketConverter {
    private let decoder: FAADDecoder
    private var pending = PendingBytes()
    private let first: ADTSHeader

    public init(first: ADTSHeader) throws {
        decoder = try FAADDecoder(declaredChannels: first.audioSpecificConfig.channels)
        self.first = first
    }

    public mutating func restart(at offset: Int) throws {
        pending.reset()
        try decoder.reset()
    }

    public var decodedFormat: AudioFormat? { decoder.format }

    public mutating func append(_ bytes: [UInt8]) { pending.append(bytes) }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        while true {
            let rest = pending.unread
            if rest.count < 9 && !(isComplete && rest.count >= 7) { return false }
            if let header = try? ADTSHeader.parse(rest), header.isCompatible(with: first) {
                guard header.frameLength <= rest.count else { return false }
                let frame = rest.prefix(header.frameLength)
                pending.consume(header.frameLength)
                try decoder.decode(frame: frame) { samples, _ in body(samples) }
                return true
            }
            // Lost sync (junk, a damaged header): find the next confirmed frame.
            guard let skip = try ADTSSync.findFirstFrame(in: rest.dropFirst(), confirmations: 1, isComplete: isComplete) else {
                if isComplete { pending.consume(rest.count) }
                return false
            }
            pending.consume(1 + skip)
        }
    }
}

/// AAC in MP4: the sample table says where each access unit is; they are cut out of the
/// byte stream as it passes and decoded with the track's AudioSpecificConfig. A cursor walks
/// the tables, so no per-sample table is built.
public struct MP4Converter: PacketConverter {
    private let decoder: FAADDecoder
    private var window: MP4SampleWindow

    /// `declaredChannels`: what the AudioSpecificConfig says (`AudioSpecificConfig.channels`).
    public init(track: MP4AudioTrack, declaredChannels: Int) throws {
        decoder = try FAADDecoder(audioSpecificConfig: track.decoderSpecificInfo, declaredChannels: declaredChannels)
        window = MP4SampleWindow(track: track)
    }

    public mutating func restart(at offset: Int) throws {
        window.restart(at: offset)
        try decoder.reset()
    }

    public var decodedFormat: AudioFormat? { decoder.format }

    public mutating func append(_ bytes: [UInt8]) { window.append(bytes) }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        switch window.next() {
        case .ended, .needMore: return false
        case .skipped: return true
        case .sample(let bytes):
            try decoder.decode(frame: bytes) { pcm, _ in body(pcm) }
            return true
        }
    }
}

/// An MP4 track's samples as their bytes arrive: the sample tables say where the next sample
/// lies; its bytes are kept until it is whole, and what lies before it (other tracks, box
/// headers, samples already decoded) is dropped. Shared by the AAC and ALAC converters.
struct MP4SampleWindow {
    /// What `next()` found.
    enum Next {
        /// The next sample, whole.
        case sample(ArraySlice<UInt8>)
        /// A sample already passed (offsets that go back): skipped, ask again.
        case skipped
        /// The next sample is not whole yet, or the track has no more (`ended`).
        case needMore, ended
    }

    private let track: MP4AudioTrack
    private var cursor: MP4SampleCursor
    private var buffer: [UInt8] = []
    /// Stream offset of `buffer[0]`.
    private var bufferOffset = 0

    init(track: MP4AudioTrack) {
        self.track = track
        cursor = MP4SampleCursor(track: track)
    }

    /// The next bytes appended start at stream offset `offset` (a seek); the next sample is the
    /// first at or after it.
    mutating func restart(at offset: Int) {
        buffer.removeAll(keepingCapacity: true)
        bufferOffset = offset
        cursor = MP4SampleCursor(track: track, atOrAfter: offset)
    }

    mutating func append(_ bytes: [UInt8]) {
        if let next = cursor.peek() {
            let keepFrom = min(buffer.count, max(0, next.offset - bufferOffset))
            if keepFrom > 64 * 1024 {
                buffer.removeSubrange(0..<keepFrom)
                bufferOffset += keepFrom
            }
        }
        buffer += bytes
    }

    mutating func next() -> Next {
        guard let sample = cursor.peek() else { return .ended }
        let start = sample.offset - bufferOffset
        guard start >= 0 else {
            _ = cursor.next()          // already passed: cannot happen with increasing offsets, but never loop
            return .skipped
        }
        guard start + sample.size <= buffer.count else { return .needMore }
        _ = cursor.next()
        return .sample(buffer[start..<(start + sample.size)])
    }
}
