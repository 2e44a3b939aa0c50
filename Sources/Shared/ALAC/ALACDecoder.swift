/// Apple Lossless (ALAC) packets to integer PCM, in pure Swift: the element loop (SCE/CPE/LFE,
/// DSE and FIL skipped, END), adaptive Golomb-Rice residuals with zero runs, the adaptive FIR
/// predictor, stereo decorrelation, shifted low bytes, and escape (uncompressed) elements.
/// Samples come out interleaved in element order, as Int32 values of `config.bitDepth` bits
/// (a 20-bit sample lies in -2^19..<2^19). One packet in, one packet out; state-free between
/// packets, so any packet can be decoded after a seek.
public struct ALACDecoder: Sendable {
    public let config: ALACSpecificConfig
    /// Per-channel scratch: residuals, then predicted samples; and the shifted-out low bytes.
    private var residuals: [[Int32]]
    private var predicted: [[Int32]]
    private var lowBytes: [UInt32]

    static let component = "alac"
    /// Element tags (3 bits).
    enum Tag: UInt32 {
        case singleChannel = 0, channelPair = 1, coupling = 2, lowFrequency = 3, dataStream = 4, programConfig = 5,
             fill = 6, end = 7
    }

    /// Throws when the cookie asks for what no ALAC stream can hold (Rice limit 0).
    public init(config: ALACSpecificConfig) throws {
        guard config.riceLimit >= 1 else {
            throw FormatError.invalid(component: Self.component, reason: "Rice limit kb 0", offset: 0)
        }
        self.config = config
        residuals = [[Int32]](repeating: [Int32](repeating: 0, count: config.frameLength), count: 2)
        predicted = [[Int32]](repeating: [Int32](repeating: 0, count: config.frameLength), count: 2)
        lowBytes = [UInt32](repeating: 0, count: config.frameLength * 2)
    }

    /// Decodes one packet, replacing `samples` with its interleaved samples
    /// (frames × `config.numChannels`); returns the frames decoded.
    @discardableResult
    public mutating func decode(packet: ArraySlice<UInt8>, into samples: inout [Int32]) throws -> Int {
        var bits = ALACBitReader(packet)
        let channels = config.numChannels
        var channel = 0
        var frames: Int?
        samples.removeAll(keepingCapacity: true)
        while bits.remaining >= 3 {
            let raw = try bits.read(3)
            guard let tag = Tag(rawValue: raw) else { break }
            switch tag {
            case .singleChannel, .lowFrequency, .channelPair:
                let count = tag == .channelPair ? 2 : 1
                guard channel + count <= channels else {
                    throw FormatError.invalid(component: Self.component, reason: "more elements than the \(channels) channels",
                                              offset: bits.byteOffset)
                }
                let n = try decodeElement(&bits, pair: count == 2, frames: frames)
                if frames == nil {
                    frames = n
                    samples = [Int32](repeating: 0, count: n * channels)
                }
                interleave(count: count, frames: n, at: channel, into: &samples)
                channel += count
            case .dataStream:
                try bits.skip(4)                                     // element instance tag
                let aligned = try bits.read(1) == 1
                var count = Int(try bits.read(8))
                if count == 255 { count += Int(try bits.read(8)) }
                if aligned { bits.alignToByte() }
                try bits.skip(count * 8)
            case .fill:
                var count = Int(try bits.read(4))
                if count == 15 { count += Int(try bits.read(8)) - 1 }
                try bits.skip(count * 8)
            case .end:
                guard channel == channels else {
                    throw FormatError.invalid(component: Self.component, reason: "\(channel) of \(channels) channels in the packet",
                                              offset: bits.byteOffset)
                }
                return frames ?? 0
            case .coupling, .programConfig:
                throw FormatError.unsupported(component: Self.component, reason: "element type \(raw)")
            }
        }
        throw FormatError.invalid(component: Self.component, reason: "packet without an END element", offset: bits.byteOffset)
    }

    /// One SCE/LFE (`pair` false) or CPE element into `predicted[0...1]`; returns its frames.
    private mutating func decodeElement(_ bits: inout ALACBitReader, pair: Bool, frames: Int?) throws -> Int {
        try bits.skip(4)                                             // element instance tag
        guard try bits.read(12) == 0 else {
            throw FormatError.invalid(component: Self.component, reason: "nonzero unused header bits", offset: bits.byteOffset)
        }
        let partial = try bits.read(1) == 1
        let shiftedBytes = Int(try bits.read(2))
        let escape = try bits.read(1) == 1
        guard shiftedBytes < 3 else {
            throw FormatError.invalid(component: Self.component, reason: "3 shifted bytes", offset: bits.byteOffset)
        }
        let count = pair ? 2 : 1
        var n = config.frameLength
        if partial {
            n = Int(try bits.read(32))
            guard (1...config.frameLength).contains(n) else {
                throw FormatError.outOfRange(component: Self.component, field: "numSamples", value: "\(n) of \(config.frameLength)")
            }
        }
        if let frames, frames != n {
            throw FormatError.invalid(component: Self.component, reason: "elements of \(frames) and \(n) frames",
                                      offset: bits.byteOffset)
        }
        var mixBits = 0, mixWeight: Int32 = 0
        var shift = shiftedBytes * 8
        if !escape {
            // The decorrelated second channel of a pair needs one bit more.
            let chanBits = config.bitDepth - shift + count - 1
            guard chanBits <= 32 else {
                throw FormatError.unsupported(component: Self.component, reason: "\(chanBits)-bit residuals")
            }
            mixBits = Int(try bits.read(8))
            mixWeight = Int32(Int8(bitPattern: UInt8(try bits.read(8))))
            var modes = [Int](repeating: 0, count: count), quant = modes, historyFactor = modes
            var coefficients = [[Int32]](repeating: [], count: count)
            for c in 0..<count {
                let modeByte = try bits.read(8)
                modes[c] = Int(modeByte >> 4)
                quant[c] = Int(modeByte & 15)
                let orderByte = try bits.read(8)
                historyFactor[c] = Int(orderByte >> 5)
                let order = Int(orderByte & 31)
                coefficients[c] = try (0..<order).map { _ in Int32(Int16(bitPattern: UInt16(try bits.read(16)))) }
                guard modes[c] == 0 || modes[c] == 15 else {
                    throw FormatError.unsupported(component: Self.component, reason: "prediction mode \(modes[c])")
                }
            }
            // The shifted low bytes follow the residuals' header; read them after the residuals.
            var lowBits = bits
            if shift > 0 { try bits.skip(shift * count * n) }
            for c in 0..<count {
                try decodeResiduals(&bits, channel: c, frames: n, chanBits: chanBits,
                                    historyMult: config.riceHistoryMult * historyFactor[c] / 4)
                if modes[c] == 15 {
                    // Mode 15: a first pass of the fixed first-order predictor over the residuals.
                    residuals[c].withUnsafeMutableBufferPointer { r in
                        Self.firstOrder(r, frames: n, chanBits: chanBits)
                    }
                }
                predict(channel: c, frames: n, coefficients: coefficients[c], quant: quant[c], chanBits: chanBits)
            }
            if shift > 0 {
                for i in 0..<(n * count) { lowBytes[i] = try lowBits.read(shift) }
            }
        } else {
            // Uncompressed: every sample at the full bit depth, channels interleaved.
            let width = config.bitDepth
            for i in 0..<n {
                for c in 0..<count {
                    let raw = try bits.read(width)
                    predicted[c][i] = width == 32 ? Int32(bitPattern: raw) : Int32(bitPattern: raw << (32 - width)) >> (32 - width)
                }
            }
            shift = 0
        }
        if pair, mixWeight != 0 {
            for i in 0..<n {
                let u = predicted[0][i], v = predicted[1][i]
                let left = u &+ v &- ((mixWeight &* v) >> Int32(min(mixBits, 31)))
                predicted[0][i] = left
                predicted[1][i] = left &- v
            }
        }
        if shift > 0 {
            for c in 0..<count {
                for i in 0..<n {
                    predicted[c][i] = predicted[c][i] << Int32(shift) | Int32(bitPattern: lowBytes[i * count + c])
                }
            }
        }
        return n
    }

    /// Adaptive Golomb-Rice residuals of one channel into `residuals[channel]`, with the zero
    /// runs the history falling under 128 announces.
    private mutating func decodeResiduals(_ bits: inout ALACBitReader, channel: Int, frames: Int, chanBits: Int,
                                          historyMult: Int) throws {
        let limit = config.riceLimit
        var history = UInt32(config.riceInitialHistory)
        var signModifier: UInt32 = 0
        var i = 0
        while i < frames {
            let k = min(Self.log2(history >> 9 &+ 3), limit)
            let x = try bits.rice(k: k, escapeBits: chanBits) &+ signModifier
            signModifier = 0
            residuals[channel][i] = Int32(bitPattern: (x >> 1) ^ (0 &- (x & 1)))
            i += 1
            if x > 0xFFFF {
                history = 0xFFFF
            } else {
                history = history &+ x &* UInt32(historyMult) &- ((history &* UInt32(historyMult)) >> 9)
            }
            if history < 128, i < frames {
                // The reference decoder's leading-zero count: 32 for a history of 0.
                let k = min(history.leadingZeroBitCount - 24 + Int((history + 16) >> 6), limit)
                let run = Int(try bits.rice(k: k, escapeBits: 16))
                guard run <= frames - i else {
                    throw FormatError.invalid(component: Self.component, reason: "zero run of \(run) past \(frames) frames",
                                              offset: bits.byteOffset)
                }
                for j in i..<(i + run) { residuals[channel][j] = 0 }
                i += run
                if run < 0xFFFF { signModifier = 1 }
                history = 0
            }
        }
    }

    /// floor(log2(x)) for x >= 1.
    @inline(__always)
    static func log2(_ x: UInt32) -> Int { 31 - x.leadingZeroBitCount }

    /// Sign-extends the low `bits` bits of `value`.
    @inline(__always)
    static func signExtend(_ value: Int32, _ bits: Int) -> Int32 {
        let shift = Int32(32 - bits)
        return (value << shift) >> shift
    }

    /// The first-order pass of prediction mode 15, in place.
    static func firstOrder(_ r: UnsafeMutableBufferPointer<Int32>, frames: Int, chanBits: Int) {
        guard frames > 1 else { return }
        for j in 1..<frames { r[j] = signExtend(r[j] &+ r[j - 1], chanBits) }
    }

    /// The adaptive FIR predictor: residuals[channel] → predicted[channel], adapting its
    /// coefficients by the sign of each residual.
    private mutating func predict(channel: Int, frames n: Int, coefficients: [Int32], quant: Int, chanBits: Int) {
        var coefs = coefficients
        let order = coefs.count
        let round: Int32 = quant > 0 ? 1 << Int32(quant - 1) : 0
        let quantShift = Int32(quant)
        residuals[channel].withUnsafeBufferPointer { r in
            predicted[channel].withUnsafeMutableBufferPointer { out in
                out[0] = r[0]
                guard n > 1 else { return }
                if order == 0 {
                    for j in 1..<n { out[j] = r[j] }
                    return
                }
                if order == 31 {
                    for j in 1..<n { out[j] = Self.signExtend(r[j] &+ out[j - 1], chanBits) }
                    return
                }
                let warm = min(order, n - 1)
                for j in 1...warm { out[j] = Self.signExtend(r[j] &+ out[j - 1], chanBits) }
                guard n > order + 1 else { return }
                for j in (order + 1)..<n {
                    let top = out[j - order - 1]
                    var sum: Int32 = 0
                    for k in 0..<order { sum = sum &+ coefs[k] &* (out[j - 1 - k] &- top) }
                    var error = r[j]
                    out[j] = Self.signExtend(error &+ top &+ ((sum &+ round) >> quantShift), chanBits)
                    // Adapt: oldest tap first, until the residual's sign is used up.
                    if error > 0 {
                        var k = order - 1
                        while k >= 0 {
                            let d = top &- out[j - 1 - k]
                            let sign: Int32 = d > 0 ? 1 : d < 0 ? -1 : 0
                            coefs[k] &-= sign
                            error &-= Int32(order - k) &* ((sign &* d) >> quantShift)
                            if error <= 0 { break }
                            k -= 1
                        }
                    } else if error < 0 {
                        var k = order - 1
                        while k >= 0 {
                            let d = top &- out[j - 1 - k]
                            let sign: Int32 = d > 0 ? 1 : d < 0 ? -1 : 0
                            coefs[k] &+= sign
                            error &-= Int32(order - k) &* ((0 &- sign &* d) >> quantShift)
                            if error >= 0 { break }
                            k -= 1
                        }
                    }
                }
            }
        }
    }

    /// Writes `count` channels of `predicted` into the interleaved output from `channel` on,
    /// cut to the bit depth as the reference decoder's output stores are (only a damaged packet
    /// decorrelates to more bits than that).
    private func interleave(count: Int, frames: Int, at channel: Int, into samples: inout [Int32]) {
        let stride = config.numChannels
        let depth = config.bitDepth
        for c in 0..<count {
            predicted[c].withUnsafeBufferPointer { p in
                samples.withUnsafeMutableBufferPointer { out in
                    var o = channel + c
                    for i in 0..<frames {
                        out[o] = depth < 32 ? Self.signExtend(p[i], depth) : p[i]
                        o += stride
                    }
                }
            }
        }
    }
}

/// MSB-first bit reader over one packet, with the Rice code ALAC uses.
struct ALACBitReader {
    let bytes: ArraySlice<UInt8>
    private(set) var position = 0

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var remaining: Int { bytes.count * 8 - position }
    var byteOffset: Int { position / 8 }

    /// The next 32 bits from the cursor, zeros past the end (never consumed).
    @inline(__always)
    func peek32() -> UInt32 {
        let start = bytes.startIndex + position >> 3
        var word: UInt64 = 0
        for k in 0..<5 {
            let i = start + k
            word = word << 8 | UInt64(i < bytes.endIndex ? bytes[i] : 0)
        }
        return UInt32(truncatingIfNeeded: word >> (8 - UInt64(position & 7)))
    }

    mutating func read(_ n: Int) throws -> UInt32 {
        guard n <= remaining else {
            throw FormatError.truncated(component: ALACDecoder.component, offset: byteOffset, needed: (n + 7) / 8)
        }
        guard n > 0 else { return 0 }
        let value = peek32() >> (32 - UInt32(n))
        position += n
        return value
    }

    mutating func skip(_ n: Int) throws {
        guard n >= 0, n <= remaining else {
            throw FormatError.truncated(component: ALACDecoder.component, offset: byteOffset, needed: (max(n, 0) + 7) / 8)
        }
        position += n
    }

    mutating func alignToByte() { position = min(bytes.count * 8, (position + 7) & ~7) }

    /// One Rice value: a unary prefix of up to 8 ones ended by a zero, then k bits (the value
    /// 2^k − 1 per prefix one); 9 ones escape to `escapeBits` bits read plainly.
    mutating func rice(k: Int, escapeBits: Int) throws -> UInt32 {
        let ones = min((~peek32()).leadingZeroBitCount, 9)
        if ones == 9 {
            try skip(9)
            return try read(escapeBits)
        }
        try skip(ones + 1)
        guard k > 1 else { return UInt32(ones) }
        let m = (UInt32(1) << UInt32(k)) - 1
        // k bits when they hold 2 or more, else only k − 1 of them belong to this value.
        let extra = peek32() >> (32 - UInt32(k))
        if extra > 1 {
            try skip(k)
            return UInt32(ones) &* m &+ extra &- 1
        }
        try skip(k - 1)
        return UInt32(ones) &* m
    }
}
