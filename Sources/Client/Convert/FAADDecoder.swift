internal import CFAAD
import StreamShared

/// libfaad2 wrapped once: AAC frames in (ADTS, or raw access units after an
/// AudioSpecificConfig), 32-bit float PCM out. Handles AAC-LC and HE-AAC v1/v2 (SBR/PS).
final class FAADDecoder {
    private var handle: NeAACDecHandle?
    private(set) var format: AudioFormat?
    private let config: [UInt8]?

    /// `audioSpecificConfig` for MP4 (NeAACDecInit2); nil for ADTS, where the first frame's
    /// header initialises the decoder (NeAACDecInit).
    init(audioSpecificConfig: [UInt8]? = nil) throws {
        config = audioSpecificConfig
        try open()
    }

    deinit { if let handle { NeAACDecClose(handle) } }

    private func open() throws {
        if let handle { NeAACDecClose(handle) }
        guard let h = NeAACDecOpen() else { throw DecoderError(message: "NeAACDecOpen failed") }
        handle = h
        if let settings = NeAACDecGetCurrentConfiguration(h) {
            settings.pointee.outputFormat = UInt8(FAAD_FMT_FLOAT)
            settings.pointee.downMatrix = 0
            NeAACDecSetConfiguration(h, settings)
        }
        format = nil
        if var asc = config {
            var rate: UInt = 0
            var channels: UInt8 = 0
            let result = asc.withUnsafeMutableBufferPointer { buffer in
                NeAACDecInit2(h, buffer.baseAddress, UInt(buffer.count), &rate, &channels)
            }
            guard result == 0 else { throw DecoderError(message: "NeAACDecInit2 refused the AudioSpecificConfig") }
        }
    }

    /// After a seek: a fresh decoder state.
    func reset() throws { try open() }

    /// Decodes one frame (an ADTS frame with its header, or one raw access unit).
    func decode(frame: ArraySlice<UInt8>, _ body: (UnsafeBufferPointer<Float>, AudioFormat) -> Void) throws {
        guard let handle else { return }
        var bytes = Array(frame)
        if format == nil && config == nil {
            var rate: UInt = 0
            var channels: UInt8 = 0
            let used = bytes.withUnsafeMutableBufferPointer { buffer in
                NeAACDecInit(handle, buffer.baseAddress, UInt(buffer.count), &rate, &channels)
            }
            guard used >= 0 else { throw DecoderError(message: "NeAACDecInit: not an AAC stream") }
        }
        var info = NeAACDecFrameInfo()
        let output = bytes.withUnsafeMutableBufferPointer { buffer in
            NeAACDecDecode(handle, &info, buffer.baseAddress, UInt(buffer.count))
        }
        if info.error != 0 {
            // A damaged frame: skip it, as players do, rather than stop the stream.
            return
        }
        guard let output, info.samples > 0, info.channels > 0 else { return }
        let current = AudioFormat(sampleRate: Int(info.samplerate), channels: Int(info.channels))
        format = current
        let samples = output.assumingMemoryBound(to: Float.self)
        body(UnsafeBufferPointer(start: samples, count: Int(info.samples)), current)
    }
}

/// AAC in ADTS: StreamShared's ADTS header and sync, then libfaad2.
struct ADTSConverter: PacketConverter {
    private let decoder: FAADDecoder
    private var pending = PendingBytes()
    private let first: ADTSHeader

    init(first: ADTSHeader) throws {
        decoder = try FAADDecoder()
        self.first = first
    }

    mutating func restart(at offset: Int) throws {
        pending.reset()
        try decoder.reset()
    }

    mutating func append(_ bytes: [UInt8]) { pending.append(bytes) }

    mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
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
struct MP4Converter: PacketConverter {
    private let decoder: FAADDecoder
    private let track: MP4AudioTrack
    private var cursor: MP4SampleCursor
    private var buffer: [UInt8] = []
    /// Stream offset of `buffer[0]`.
    private var bufferOffset = 0

    init(track: MP4AudioTrack) throws {
        decoder = try FAADDecoder(audioSpecificConfig: track.decoderSpecificInfo)
        self.track = track
        cursor = MP4SampleCursor(track: track)
    }

    mutating func restart(at offset: Int) throws {
        buffer.removeAll(keepingCapacity: true)
        bufferOffset = offset
        cursor = MP4SampleCursor(track: track, atOrAfter: offset)
        try decoder.reset()
    }

    mutating func append(_ bytes: [UInt8]) {
        // Drop what lies before the next sample (other tracks, box headers, consumed samples).
        if let next = cursor.peek() {
            let keepFrom = min(buffer.count, max(0, next.offset - bufferOffset))
            if keepFrom > 64 * 1024 {
                buffer.removeSubrange(0..<keepFrom)
                bufferOffset += keepFrom
            }
        }
        buffer += bytes
    }

    mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        guard let sample = cursor.peek() else { return false }
        let start = sample.offset - bufferOffset
        guard start >= 0 else {
            _ = cursor.next()          // already passed: cannot happen with increasing offsets, but never loop
            return true
        }
        guard start + sample.size <= buffer.count else { return false }
        _ = cursor.next()
        try decoder.decode(frame: buffer[start..<(start + sample.size)]) { pcm, _ in body(pcm) }
        return true
    }
}
