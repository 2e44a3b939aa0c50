import StreamShared

/// The converter stage as the player drives it: stream bytes in, interleaved Float PCM out,
/// one unit at a time (an MPEG frame, or a block of WAV samples).
protocol PacketConverter {
    /// Forgets buffered bytes: the next bytes start at stream offset `offset` (a seek).
    mutating func restart(at offset: Int) throws
    mutating func append(_ bytes: [UInt8])
    /// Converts the next fully buffered unit, passing its samples to `body`; false when more
    /// bytes are needed (or, with `isComplete`, when the stream holds no further unit).
    mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool
    /// The format the decoder produces, once a unit has been decoded (AAC: SBR and PS can only
    /// be known that way); nil when the stream's header says it all.
    var decodedFormat: AudioFormat? { get }
}

extension PacketConverter {
    var decodedFormat: AudioFormat? { nil }
}

/// Bytes waiting to be converted; used bytes are dropped on the next append.
struct PendingBytes {
    private var bytes: [UInt8] = []
    private var consumed = 0

    /// The bytes not yet used.
    var unread: ArraySlice<UInt8> { bytes[consumed...] }

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        consumed = 0
    }

    mutating func append(_ new: [UInt8]) {
        if consumed > 0 {
            bytes.removeSubrange(0..<consumed)
            consumed = 0
        }
        bytes += new
    }

    /// Marks `n` more bytes as used.
    mutating func consume(_ n: Int) { consumed = min(bytes.count, consumed + n) }
}

/// MPEG audio: StreamShared's frame reader, then libmpg123.
struct MP3Converter: PacketConverter {
    private var reader = MP3FrameReader()
    private let decoder: MPG123Decoder
    private var scratch: [Float] = []

    init() throws { decoder = try MPG123Decoder() }

    mutating func restart(at offset: Int) throws {
        reader.restart(at: offset)
        try decoder.reopen()
    }

    mutating func append(_ bytes: [UInt8]) { reader.append(bytes) }

    mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        guard let frame = try reader.next(isComplete: isComplete) else { return false }
        // Take the scratch buffer out of `self` so it is uniquely owned: no copy-on-write per frame.
        var out: [Float] = []
        swap(&out, &scratch)
        defer { swap(&out, &scratch) }
        try decoder.decode(frame: frame.bytes) { samples, _ in
            if out.count != samples.count { out = [Float](repeating: 0, count: samples.count) }
            let scale: Float = 1.0 / 32768      // exact: 16-bit samples come back bit for bit
            out.withUnsafeMutableBufferPointer { target in
                for i in 0..<samples.count { target[i] = Float(samples[i]) * scale }
            }
            out.withUnsafeBufferPointer(body)
        }
        return true
    }
}

/// PCM in RIFF/WAVE: no decoder, just sample conversion (8/16/24/32-bit integers, 32/64-bit floats).
struct WAVConverter: PacketConverter {
    let format: WAVFormat
    /// Frames per unit handed out.
    let framesPerUnit = 4096
    private var pending = PendingBytes()
    private var scratch: [Float] = []

    init(format: WAVFormat) { self.format = format }

    mutating func restart(at offset: Int) throws { pending.reset() }

    mutating func append(_ bytes: [UInt8]) { pending.append(bytes) }

    mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        let unread = pending.unread
        let available = unread.count / format.blockAlign
        guard available >= framesPerUnit || (isComplete && available > 0) else { return false }
        let frames = min(framesPerUnit, available)
        let bytesPerSample = format.bitsPerSample / 8
        let count = frames * format.channels
        scratch.removeAll(keepingCapacity: true)
        scratch.reserveCapacity(count)
        unread.withUnsafeBytes { raw in
            for i in 0..<count {
                scratch.append(Self.sample(raw, at: i * bytesPerSample, bits: format.bitsPerSample, float: format.kind == .float))
            }
        }
        pending.consume(frames * format.blockAlign)
        scratch.withUnsafeBufferPointer(body)
        return true
    }

    /// One little-endian sample as Float in -1...1 (16-bit values survive the round trip exactly).
    @inline(__always)
    static func sample(_ raw: UnsafeRawBufferPointer, at i: Int, bits: Int, float: Bool) -> Float {
        switch (bits, float) {
        case (8, false): return (Float(raw[i]) - 128) / 128
        case (16, false): return Float(Int16(bitPattern: UInt16(raw[i]) | UInt16(raw[i + 1]) << 8)) / 32768
        case (24, false):
            let v = Int32(bitPattern: UInt32(raw[i]) << 8 | UInt32(raw[i + 1]) << 16 | UInt32(raw[i + 2]) << 24) >> 8
            return Float(v) / 8_388_608
        case (32, false):
            let v = Int32(bitPattern: UInt32(raw[i]) | UInt32(raw[i + 1]) << 8 | UInt32(raw[i + 2]) << 16 | UInt32(raw[i + 3]) << 24)
            return Float(Double(v) / 2_147_483_648)
        case (32, true):
            return Float(bitPattern: UInt32(raw[i]) | UInt32(raw[i + 1]) << 8 | UInt32(raw[i + 2]) << 16 | UInt32(raw[i + 3]) << 24)
        default:
            var bitsValue: UInt64 = 0
            for k in 0..<8 { bitsValue |= UInt64(raw[i + k]) << (8 * UInt64(k)) }
            return Float(Double(bitPattern: bitsValue))
        }
    }
}
