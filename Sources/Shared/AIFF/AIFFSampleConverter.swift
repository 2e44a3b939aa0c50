/// AIFF/AIFF-C sample bytes to the project's PCM (interleaved Float in -1...1): integers of any
/// width (left-justified, signed even at 8 bits, big-endian or `sowt` little-endian), 32/64-bit
/// floats, G.711 mu-law and A-law (through `G711`).
public struct AIFFSampleConverter: Sendable {
    public let format: AIFFFormat
    /// mu-law/A-law: the 256 linear values, scaled to -1...1 (built once).
    private let g711: [Float]

    public init(format: AIFFFormat) {
        self.format = format
        switch format.encoding {
        case .muLaw: g711 = (0...255).map { Float(G711.muLawToLinear(UInt8($0))) / 32768 }
        case .aLaw: g711 = (0...255).map { Float(G711.aLawToLinear(UInt8($0))) / 32768 }
        case .integer, .float: g711 = []
        }
    }

    /// Converts the whole frames at the start of `bytes`, appending their samples to `samples`;
    /// returns the frames converted (a partial frame at the end is left for the next call).
    @discardableResult
    public func convert(_ bytes: ArraySlice<UInt8>, appendingTo samples: inout [Float]) -> Int {
        let frames = bytes.count / max(1, format.blockAlign)
        let count = frames * format.channels
        let width = format.bytesPerSample
        samples.reserveCapacity(samples.count + count)
        let base = bytes.startIndex
        switch format.encoding {
        case .muLaw, .aLaw:
            for i in 0..<count { samples.append(g711[Int(bytes[base + i])]) }
        case .integer:
            // The sample's bits at the top of an Int64, so every width scales alike; the low bits
            // of a left-justified sample (20 bits in 3 bytes) are zero and change nothing.
            let scale = 1.0 / 9_223_372_036_854_775_808.0
            for i in 0..<count {
                let word = Self.word(bytes, at: base + i * width, width: width, littleEndian: format.littleEndian)
                let value = Int64(bitPattern: word << (64 - 8 * UInt64(width)))
                samples.append(Float(Double(value) * scale))
            }
        case .float where width == 4:
            for i in 0..<count {
                let word = Self.word(bytes, at: base + i * 4, width: 4, littleEndian: false)
                samples.append(Float(bitPattern: UInt32(truncatingIfNeeded: word)))
            }
        case .float:
            for i in 0..<count {
                samples.append(Float(Double(bitPattern: Self.word(bytes, at: base + i * 8, width: 8, littleEndian: false))))
            }
        }
        return frames
    }

    /// The `width` bytes at `i` as an unsigned number.
    @inline(__always)
    static func word(_ bytes: ArraySlice<UInt8>, at i: Int, width: Int, littleEndian: Bool) -> UInt64 {
        var v: UInt64 = 0
        if littleEndian {
            for k in stride(from: width - 1, through: 0, by: -1) { v = v << 8 | UInt64(bytes[i + k]) }
        } else {
            for k in 0..<width { v = v << 8 | UInt64(bytes[i + k]) }
        }
        return v
    }
}
