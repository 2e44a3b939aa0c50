import StreamShared

/// The converter stage as the player drives it: stream bytes in, interleaved Float PCM out,
/// one unit at a time (an MPEG frame, or a block of WAV samples).
public protocol PacketConverter {
    /// Forgets buffered bytes: the next bytes start at stream offset `offset` (a seek).
    mutating func restart(at offset: Int) throws
    /// A seek: the next bytes start at `offset`, and the caller counts the next sample handed
    /// out as `sample`. Converters whose units place themselves (Ogg) align to it; the others
    /// only restart.
    mutating func restart(at offset: Int, sample: Int) throws
    mutating func append(_ bytes: [UInt8])
    /// Converts the next fully buffered unit, passing its samples to `body`; false when more
    /// bytes are needed (or, with `isComplete`, when the stream holds no further unit).
    mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool
    /// The format the decoder produces, once a unit has been decoded (AAC: SBR and PS can only
    /// be known that way); nil when the stream's header says it all.
    var decodedFormat: AudioFormat? { get }
    /// Asked before each unit for memory the decoder may write that unit's samples into (the
    /// output ring's free space); a converter whose decoder cannot write into caller memory
    /// ignores it. nil, or a destination too small, means the decoder's own buffer.
    var destination: (() -> UnsafeMutableBufferPointer<Float>?)? { get set }
    /// A line for the user when the decoder skipped or silenced damaged units; nil when none.
    var damageReport: String? { get }
    /// The title the stream's own comments give (an Ogg link's OpusTags or Vorbis comment, the
    /// latest link read); nil when it gives none.
    var streamTitle: String? { get }
}

extension PacketConverter {
    public mutating func restart(at offset: Int, sample: Int) throws { try restart(at: offset) }
    public var decodedFormat: AudioFormat? { nil }
    public var damageReport: String? { nil }
    public var streamTitle: String? { nil }
    public var destination: (() -> UnsafeMutableBufferPointer<Float>?)? {
        get { nil }
        set {}
    }
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

/// MPEG audio: StreamShared's frame reader, then libmpg123, whose float samples go to `body`
/// as they are (no copy, no conversion).
public struct MP3Converter: PacketConverter {
    private var reader = MP3FrameReader()
    private let decoder: MPG123Decoder
    public var destination: (() -> UnsafeMutableBufferPointer<Float>?)?

    public init() throws { decoder = try MPG123Decoder() }

    public mutating func restart(at offset: Int) throws {
        reader.restart(at: offset)
        try decoder.reopen()
    }

    public mutating func append(_ bytes: [UInt8]) { reader.append(bytes) }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        guard let frame = try reader.next(isComplete: isComplete) else { return false }
        try decoder.decode(frame: frame.bytes, into: destination?(), body)
        return true
    }
}

/// PCM in RIFF/WAVE: no decoder, just sample conversion (8/16/24/32/64-bit integers, also with
/// fewer valid bits than the container, 32/64-bit floats, G.711 mu-law and A-law, either byte order).
public struct WAVConverter: PacketConverter {
    public let format: WAVFormat
    /// Frames per unit handed out.
    let framesPerUnit = 4096
    private var pending = PendingBytes()
    private var scratch: [Float] = []
    /// mu-law/A-law: the 256 linear values, scaled to -1...1 (built once).
    private let g711: [Float]

    public init(format: WAVFormat) {
        self.format = format
        switch format.kind {
        case .muLaw: g711 = (0...255).map { Float(G711.muLawToLinear(UInt8($0))) / 32768 }
        case .aLaw: g711 = (0...255).map { Float(G711.aLawToLinear(UInt8($0))) / 32768 }
        case .integer, .float: g711 = []
        }
    }

    public mutating func restart(at offset: Int) throws { pending.reset() }

    public mutating func append(_ bytes: [UInt8]) { pending.append(bytes) }

    public mutating func convertNext(isComplete: Bool, _ body: (UnsafeBufferPointer<Float>) -> Void) throws -> Bool {
        let unread = pending.unread
        let available = unread.count / format.blockAlign
        guard available >= framesPerUnit || (isComplete && available > 0) else { return false }
        let frames = min(framesPerUnit, available)
        let width = format.bytesPerSample
        let count = frames * format.channels
        if scratch.count != count { scratch = [Float](repeating: 0, count: count) }
        let kind = format.kind, bigEndian = format.bigEndian
        unread.withUnsafeBytes { raw in
            scratch.withUnsafeMutableBufferPointer { out in
                switch kind {
                case .muLaw, .aLaw:
                    for i in 0..<count { out[i] = g711[Int(raw[i])] }
                case .integer where width == 1:
                    for i in 0..<count { out[i] = (Float(raw[i]) - 128) / 128 }
                case .integer:
                    // The sample's bits at the top of an Int64, so any container width scales alike.
                    let scale = 1.0 / 9_223_372_036_854_775_808.0
                    for i in 0..<count {
                        let v = Self.word(raw, at: i * width, width: width, bigEndian: bigEndian) << (64 - 8 * UInt64(width))
                        out[i] = width <= 2 ? Float(Int64(bitPattern: v) >> 48) / 32768
                                            : Float(Double(Int64(bitPattern: v)) * scale)
                    }
                case .float where width == 4:
                    for i in 0..<count {
                        out[i] = Float(bitPattern: UInt32(truncatingIfNeeded: Self.word(raw, at: i * 4, width: 4, bigEndian: bigEndian)))
                    }
                case .float:
                    for i in 0..<count {
                        out[i] = Float(Double(bitPattern: Self.word(raw, at: i * 8, width: 8, bigEndian: bigEndian)))
                    }
                }
            }
        }
        pending.consume(frames * format.blockAlign)
        scratch.withUnsafeBufferPointer(body)
        return true
    }

    /// The `width` bytes at `i` as an unsigned number, in the file's byte order.
    @inline(__always)
    static func word(_ raw: UnsafeRawBufferPointer, at i: Int, width: Int, bigEndian: Bool) -> UInt64 {
        var v: UInt64 = 0
        if bigEndian {
            for k in 0..<width { v = v << 8 | UInt64(raw[i + k]) }
        } else {
            for k in stride(from: width - 1, through: 0, by: -1) { v = v << 8 | UInt64(raw[i + k]) }
        }
        return v
    }
}
