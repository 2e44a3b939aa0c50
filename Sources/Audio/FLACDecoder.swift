internal import CFLAC
import StreamShared

/// libFLAC's stream decoder, wrapped once: FLAC frames in (bytes fed by the caller, from any
/// frame start), interleaved Float PCM out, one frame per call.
///
/// libFLAC pulls its input through a read callback and cannot wait for bytes that have not
/// arrived: a frame is decoded only once the bytes buffered here hold a whole frame at worst
/// (`frameBound`), or the stream has ended. The decoder is opened on a STREAMINFO block built
/// from the probed one (the file's own metadata is never fed), so any frame start can follow
/// a `restart`. Samples become Float scaled by 2^-(bits-1): exact up to 24 bits (a Float's
/// significand), which the WAV writer turns back into the same integers.
public final class FLACDecoder {
    private var handle: UnsafeMutablePointer<FLAC__StreamDecoder>?
    public let streamInfo: FLACStreamInfo
    /// Bytes not yet given to libFLAC.
    private var pending = PendingBytes()
    /// Stream offset of the next byte given to libFLAC (its tell callback).
    private var deliveredOffset = 0
    /// True once the caller said no byte follows those buffered.
    private var inputEnded = false
    /// The read callback found nothing to give before the stream's end: the frame is larger than
    /// `frameBound` (a broken stream); the decoder is flushed and decoding goes on after it.
    private var starved = false
    /// The STREAMINFO block libFLAC is opened with, read before any audio.
    private var header: [UInt8]
    /// The last frame's samples, interleaved; its first sample number and its bit depth.
    public private(set) var samples: [Float] = []
    public private(set) var frameFirstSample = 0
    /// Frames libFLAC reported as damaged (lost sync, bad header, CRC mismatch) since opening.
    public private(set) var damagedFrames = 0
    /// Frames whose rate or bit depth is not STREAMINFO's (played at STREAMINFO's rate, each at
    /// its own depth), and the first of them described.
    public private(set) var mismatchedFrames = 0
    public private(set) var firstMismatch: String?
    /// Most bytes one frame of this stream can take (the stated maximum, or verbatim coding's size).
    public let frameBound: Int

    static let component = "flac"

    public init(streamInfo: FLACStreamInfo) throws {
        self.streamInfo = streamInfo
        frameBound = Self.frameBound(streamInfo)
        header = Array("fLaC".utf8) + [0x80, 0, 0, UInt8(FLACStreamInfo.length)] + Self.encode(streamInfo)
        guard let decoder = FLAC__stream_decoder_new() else { throw DecoderError(message: "flac: out of memory") }
        handle = decoder
        let context = Unmanaged.passUnretained(self).toOpaque()
        let status = FLAC__stream_decoder_init_stream(decoder, Self.readCallback, nil, Self.tellCallback, nil, nil,
                                                      Self.writeCallback, nil, Self.errorCallback, context)
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            throw DecoderError(message: "flac: decoder init failed (status \(status.rawValue))")
        }
        guard FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0, header.isEmpty else {
            throw DecoderError(message: "flac: the stream's STREAMINFO was refused (\(stateName))")
        }
    }

    deinit {
        if let handle { FLAC__stream_decoder_delete(handle) }
    }

    /// Most bytes one frame of a stream can take: STREAMINFO's maximum frame size, or a verbatim
    /// frame of its largest block (every channel one bit wider, as a side channel is), headers included.
    public static func frameBound(_ info: FLACStreamInfo) -> Int {
        let verbatim = max(info.maxBlockSize, 16) * info.channels * (info.bitsPerSample + 1) / 8 + 16 * info.channels + 32
        return max(info.maxFrameSize, verbatim)
    }

    /// The STREAMINFO body for `info` (RFC 9639 §8.2); the MD5 left zero, so none is checked.
    static func encode(_ info: FLACStreamInfo) -> [UInt8] {
        func be(_ value: Int, _ bytes: Int) -> [UInt8] { (0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        let packed = UInt64(info.sampleRate) << 44 | UInt64(info.channels - 1) << 41 | UInt64(info.bitsPerSample - 1) << 36
            | UInt64(info.totalSamples) & 0xF_FFFF_FFFF
        return be(info.minBlockSize, 2) + be(info.maxBlockSize, 2) + be(info.minFrameSize, 3) + be(info.maxFrameSize, 3)
            + (0..<8).reversed().map { UInt8(truncatingIfNeeded: packed >> (8 * UInt64($0))) } + [UInt8](repeating: 0, count: 16)
    }

    /// Forgets every buffered byte: the next bytes appended start at stream offset `offset`, a frame start or anywhere
    /// before one (libFLAC searches for the next frame's sync).
    public func restart(at offset: Int) {
        if let handle { FLAC__stream_decoder_flush(handle) }
        pending.reset()
        deliveredOffset = offset
        inputEnded = false
        starved = false
    }

    public func append(_ bytes: [UInt8]) { pending.append(bytes) }

    /// Decodes the next frame into `samples` when a whole one is buffered (or `isComplete`);
    /// false when more bytes are needed or the stream has ended. Throws when libFLAC gives up.
    public func decodeNext(isComplete: Bool) throws -> Bool {
        guard let handle else { return false }
        inputEnded = isComplete
        var position: UInt64 = 0
        let consumed = FLAC__stream_decoder_get_decode_position(handle, &position) != 0 ? Int(position) : deliveredOffset
        let buffered = deliveredOffset - consumed + pending.unread.count
        guard isComplete || buffered >= frameBound else { return false }
        if isComplete, buffered == 0 { return false }
        samples.removeAll(keepingCapacity: true)
        let ok = FLAC__stream_decoder_process_single(handle) != 0
        let state = FLAC__stream_decoder_get_state(handle)
        if starved {
            // A frame (or junk) longer than any frame of this stream: skipped, decoding resumes after it.
            starved = false
            FLAC__stream_decoder_flush(handle)
            damagedFrames += 1
            return !samples.isEmpty
        }
        guard ok else {
            if state == FLAC__STREAM_DECODER_END_OF_STREAM { return !samples.isEmpty }
            throw DecoderError(message: "flac: decoding failed (\(stateName))")
        }
        if state == FLAC__STREAM_DECODER_END_OF_STREAM { return !samples.isEmpty }
        // No frame after a lost sync: the caller asks again (its bytes were consumed).
        return true
    }

    private var stateName: String {
        guard let handle else { return "closed" }
        let state = FLAC__stream_decoder_get_state(handle)
        return String(cString: FLAC__stream_decoder_get_resolved_state_string(handle)) + " (\(state.rawValue))"
    }

    // MARK: Callbacks (client data: this decoder, unretained; libFLAC calls them only inside its calls made here)

    private static let readCallback: FLAC__StreamDecoderReadCallback = { _, buffer, bytes, context in
        guard let context, let buffer, let bytes else { return FLAC__STREAM_DECODER_READ_STATUS_ABORT }
        let decoder = Unmanaged<FLACDecoder>.fromOpaque(context).takeUnretainedValue()
        return decoder.read(into: buffer, capacity: bytes)
    }

    private func read(into buffer: UnsafeMutablePointer<FLAC__byte>, capacity: UnsafeMutablePointer<Int>) -> FLAC__StreamDecoderReadStatus {
        let wanted = capacity.pointee
        if !header.isEmpty {
            let n = min(wanted, header.count)
            header.withUnsafeBufferPointer { source in
                if let base = source.baseAddress { buffer.update(from: base, count: n) }
            }
            header.removeFirst(n)
            capacity.pointee = n
            return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
        }
        let unread = pending.unread
        guard !unread.isEmpty else {
            capacity.pointee = 0
            if inputEnded { return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM }
            starved = true
            return FLAC__STREAM_DECODER_READ_STATUS_ABORT
        }
        let n = min(wanted, unread.count)
        unread.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { buffer.update(from: base, count: n) }
        }
        pending.consume(n)
        deliveredOffset += n
        capacity.pointee = n
        return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
    }

    private static let tellCallback: FLAC__StreamDecoderTellCallback = { _, offset, context in
        guard let context, let offset else { return FLAC__STREAM_DECODER_TELL_STATUS_ERROR }
        let decoder = Unmanaged<FLACDecoder>.fromOpaque(context).takeUnretainedValue()
        offset.pointee = UInt64(decoder.deliveredOffset)
        return FLAC__STREAM_DECODER_TELL_STATUS_OK
    }

    private static let writeCallback: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, context in
        guard let context, let frame, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
        let decoder = Unmanaged<FLACDecoder>.fromOpaque(context).takeUnretainedValue()
        decoder.store(frame.pointee.header, buffer)
        return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
    }

    private func store(_ header: FLAC__FrameHeader, _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>) {
        let frames = Int(header.blocksize), channels = Int(header.channels)
        let bits = max(1, min(32, Int(header.bits_per_sample)))
        frameFirstSample = header.number_type == FLAC__FRAME_NUMBER_TYPE_SAMPLE_NUMBER
            ? Int(clamping: header.number.sample_number) : Int(header.number.frame_number) * streamInfo.maxBlockSize
        // Every frame must have the stream's channel count (libFLAC checks frames against
        // STREAMINFO); a frame that did not is dropped rather than mixed up.
        guard channels == streamInfo.channels else {
            damagedFrames += 1
            return
        }
        if Int(header.sample_rate) != streamInfo.sampleRate || bits != streamInfo.bitsPerSample {
            mismatchedFrames += 1
            if firstMismatch == nil {
                firstMismatch = "\(header.sample_rate) Hz \(bits) bits where STREAMINFO says \(streamInfo.sampleRate) Hz \(streamInfo.bitsPerSample) bits"
            }
        }
        let scale = 1 / Float(1 << UInt64(bits - 1))
        // The buffer of the frames before keeps its capacity (decodeNext emptied it).
        samples.append(contentsOf: repeatElement(0, count: frames * channels))
        samples.withUnsafeMutableBufferPointer { out in
            for channel in 0..<channels {
                guard let source = buffer[channel] else { continue }
                var at = channel
                for i in 0..<frames {
                    out[at] = Float(source[i]) * scale
                    at += channels
                }
            }
        }
    }

    private static let errorCallback: FLAC__StreamDecoderErrorCallback = { _, _, context in
        guard let context else { return }
        Unmanaged<FLACDecoder>.fromOpaque(context).takeUnretainedValue().damagedFrames += 1
    }
}

/// FLAC frames through `FLACDecoder` (libFLAC): one frame per unit. Bytes before
/// `audioStart` (the rest of a metadata block the probe did not need, like a large cover) are
/// dropped, so a sync code inside a picture is never offered to libFLAC.
public struct FLACConverter: PacketConverter {
    private let decoder: FLACDecoder
    private let audioStart: Int
    /// Stream offset of the next byte appended.
    private var appendOffset = 0

    public init(streamInfo: FLACStreamInfo, audioStart: Int = 0) throws {
        decoder = try FLACDecoder(streamInfo: streamInfo)
        self.audioStart = audioStart
    }

    /// The first sample (per channel) of the frame decoded last.
    public var lastFrameFirstSample: Int { decoder.frameFirstSample }
    /// Frames libFLAC reported as damaged.
    public var damagedFrames: Int { decoder.damagedFrames }

    public var damageReport: String? {
        var parts: [String] = []
        if decoder.damagedFrames > 0 {
            parts.append("\(decoder.damagedFrames) damaged frame(s) (lost sync, bad header, CRC mismatch or a channel count "
                         + "other than STREAMINFO's): skipped or played as silence, as flac -F does")
        }
        if decoder.mismatchedFrames > 0, let first = decoder.firstMismatch {
            parts.append("\(decoder.mismatchedFrames) frame(s) of another format (\(first)): played at STREAMINFO's rate")
        }
        return parts.isEmpty ? nil : "converter: flac: " + parts.joined(separator: "; ")
    }

    public mutating func restart(at offset: Int) throws {
        decoder.restart(at: max(offset, audioStart))
        appendOffset = offset
    }

    public mutating func append(_ bytes: [UInt8]) {
        let skip = min(bytes.count, max(0, audioStart - appendOffset))
        appendOffset += bytes.count
        if skip == 0 { decoder.append(bytes) } else if skip < bytes.count { decoder.append(Array(bytes[skip...])) }
    }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        guard try decoder.decodeNext(isComplete: isComplete) else { return false }
        if !decoder.samples.isEmpty { decoder.samples.withUnsafeBufferPointer(body) }
        return true
    }
}
