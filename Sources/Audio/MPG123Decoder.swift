internal import CMPG123
import StreamShared

/// Errors from libmpg123.
public struct DecoderError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { "converter: \(message)" }
}

/// libmpg123 through its feed API, wrapped once: whole MPEG frames in, 32-bit float PCM out.
///
/// Float is what the rest of the pipeline carries, so mpg123's synthesis writes the samples in
/// their final format and nothing converts them again. Its float samples are its 16-bit ones
/// before rounding (the same sums scaled by 2^-15), so rounding half to even gives back exactly
/// what `mpg123 -w` writes. mpg123's own gapless handling is off: the pipeline trims encoder
/// delay and padding itself, so that playing from the start and after a seek use the same arithmetic.
public final class MPG123Decoder {
    private var handle: OpaquePointer?
    public private(set) var format: AudioFormat?
    /// Where mpg123 synthesises a frame when the caller offers no room of its own: allocated
    /// once, `mpg123_outblock` bytes as it is before the format is known (its upper bound).
    private let scratch: UnsafeMutableRawBufferPointer

    private static let initialized: Bool = mpg123_init() == MPG123_OK.rawValue

    public init() throws {
        guard Self.initialized else { throw DecoderError(message: "mpg123_init failed") }
        var error: Int32 = 0
        guard let h = mpg123_new(nil, &error) else {
            throw DecoderError(message: "mpg123_new: \(String(cString: mpg123_plain_strerror(error)))")
        }
        handle = h
        mpg123_param2(h, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_GAPLESS.rawValue), 0)
        mpg123_param2(h, Int32(MPG123_ADD_FLAGS.rawValue), Int(MPG123_QUIET.rawValue), 0)
        // Native rates and channel counts, always 32-bit float.
        mpg123_format_none(h)
        var rates: UnsafePointer<Int>?
        var count = 0
        mpg123_rates(&rates, &count)
        if let rates {
            for i in 0..<count {
                mpg123_format(h, rates[i], Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue), Int32(MPG123_ENC_FLOAT_32.rawValue))
            }
        }
        scratch = .allocate(byteCount: max(mpg123_outblock(h), 1152 * 2 * MemoryLayout<Float>.size), alignment: 16)
        try reopen()
    }

    deinit {
        if let handle {
            mpg123_close(handle)
            mpg123_delete(handle)
        }
        scratch.deallocate()
    }

    /// Starts a fresh stream (after a seek): forgets buffered bytes and the bit reservoir.
    public func reopen() throws {
        guard let handle else { return }
        mpg123_close(handle)
        guard mpg123_open_feed(handle) == MPG123_OK.rawValue else {
            throw DecoderError(message: "mpg123_open_feed: \(String(cString: mpg123_strerror(handle)))")
        }
    }

    /// Decodes one whole frame; `body` receives the interleaved samples it produced (valid until
    /// the next call). They are synthesised straight into `destination` when it is given and
    /// holds a whole frame of the stream's format (`mpg123_outblock`: the player offers the
    /// output ring's free space, so the samples are written once, where the output thread reads
    /// them), else into the decoder's own buffer (the first frame, before the format is known).
    public func decode(frame: ArraySlice<UInt8>, into destination: UnsafeMutableBufferPointer<Float>? = nil,
                _ body: (UnsafeBufferPointer<Float>) -> Void) throws {
        guard let handle else { return }
        // mpg123_replace_buffer only points the decoder at the memory (no allocation, no copy).
        if let destination, destination.count * MemoryLayout<Float>.size >= mpg123_outblock(handle),
           let base = destination.baseAddress {
            mpg123_replace_buffer(handle, base, destination.count * MemoryLayout<Float>.size)
        } else {
            mpg123_replace_buffer(handle, scratch.baseAddress, scratch.count)
        }
        let fed = frame.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.baseAddress else { return MPG123_OK.rawValue }
            return mpg123_feed(handle, base.assumingMemoryBound(to: UInt8.self), raw.count)
        }
        guard fed == MPG123_OK.rawValue else {
            throw DecoderError(message: "mpg123_feed: \(String(cString: mpg123_strerror(handle)))")
        }
        while true {
            var number: off_t = 0
            var audio: UnsafeMutablePointer<UInt8>?
            var bytes = 0
            let result = mpg123_decode_frame(handle, &number, &audio, &bytes)
            if result == MPG123_NEW_FORMAT.rawValue {
                var rate = 0
                var channels: Int32 = 0
                var encoding: Int32 = 0
                mpg123_getformat(handle, &rate, &channels, &encoding)
                format = AudioFormat(sampleRate: rate, channels: Int(channels))
                continue
            }
            if result == MPG123_NEED_MORE.rawValue { return }
            guard result == MPG123_OK.rawValue else {
                // A damaged frame: mpg123 resyncs on the next one; nothing to output here.
                if result == MPG123_ERR.rawValue { return }
                return
            }
            guard let audio, format != nil, bytes > 0 else { continue }
            let count = bytes / MemoryLayout<Float>.size
            audio.withMemoryRebound(to: Float.self, capacity: count) { samples in
                body(UnsafeBufferPointer(start: samples, count: count))
            }
        }
    }
}
