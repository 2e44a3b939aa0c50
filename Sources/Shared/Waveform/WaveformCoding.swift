/// A finished waveform as streamd keeps it on disk: a 32-byte header, then the base level's
/// pairs (the coarser levels are rebuilt on load, a few milliseconds for an hour of audio).
///
/// Header (little-endian): "SDWF", version 1, folds (u8), 2 bytes zero, sample rate (u32),
/// the identity of the file version it was made from (u64, the caller's hash), total frames
/// (u64), base pairs (u32); then each pair as min, max (i16). Everything is checked on the way
/// in: a damaged or foreign file is a thrown `FormatError`, never a wrong pyramid of the wrong size.
public enum WaveformFile {
    static let magic = Array("SDWF".utf8)
    static let version: UInt8 = 1
    public static let headerSize = 32
    /// The most folds a file may say (a base pair of 256 << 24 frames is over a day at 192 kHz).
    static let maxFolds = 24

    /// The bytes of a finished `pyramid` made from the file version `identity`; nil while it is
    /// still being built.
    public static func encode(_ pyramid: WaveformPyramid, identity: UInt64) -> [UInt8]? {
        guard let total = pyramid.totalFrames else { return nil }
        let base = pyramid.levels[0]
        var out: [UInt8] = []
        out.reserveCapacity(headerSize + base.count * 2)
        out += magic
        out += [version, UInt8(pyramid.folds), 0, 0]
        appendLE(&out, UInt64(pyramid.sampleRate), bytes: 4)
        appendLE(&out, identity, bytes: 8)
        appendLE(&out, UInt64(total), bytes: 8)
        appendLE(&out, UInt64(base.count / 2), bytes: 4)
        appendPairs(&out, base)
        return out
    }

    /// The pyramid in `bytes` and the identity it was made from; throws `FormatError` for
    /// anything that is not a whole, consistent waveform file.
    public static func decode(_ bytes: [UInt8], maxBasePairs: Int = WaveformPyramid.defaultMaxBasePairs)
        throws(FormatError) -> (pyramid: WaveformPyramid, identity: UInt64) {
        var reader = ByteReader(bytes, component: "waveform file")
        guard Array(try reader.readBytes(4)) == magic else {
            throw .invalid(component: "waveform file", reason: "not a waveform file", offset: 0)
        }
        let fileVersion = try reader.readU8()
        guard fileVersion == version else {
            throw .unsupported(component: "waveform file", reason: "version \(fileVersion)")
        }
        let folds = Int(try reader.readU8())
        guard folds <= maxFolds else { throw .outOfRange(component: "waveform file", field: "folds", value: String(folds)) }
        try reader.skip(2)
        let rate = Int(try reader.readU32LE())
        guard WaveformWire.rates.contains(rate) else {
            throw .outOfRange(component: "waveform file", field: "sample rate", value: String(rate))
        }
        let identity = try reader.readU64LE()
        let total = try reader.readU64LE()
        let count = Int(try reader.readU32LE())
        let pairFrames = UInt64(WaveformPyramid.rawPairFrames) << UInt64(folds)
        guard count <= maxBasePairs, total <= UInt64(count) * pairFrames,
              total > UInt64(max(0, count - 1)) * pairFrames || (count == 0 && total == 0) else {
            throw .invalid(component: "waveform file", reason: "\(count) pairs for \(total) frames", offset: 24)
        }
        guard reader.remaining == count * 4 else {
            throw .invalid(component: "waveform file", reason: "\(reader.remaining) bytes of pairs for \(count) pairs", offset: headerSize)
        }
        let base = loadPairs(bytes, at: reader.offset, count: count)
        if let bad = firstInvertedPair(base) {
            throw .invalid(component: "waveform file", reason: "pair \(bad): min above max", offset: reader.offset + 4 * bad)
        }
        let pyramid = WaveformPyramid(sampleRate: rate, folds: folds, base: base, totalFrames: Int(total),
                                      maxBasePairs: maxBasePairs)
        return (pyramid, identity)
    }

    /// `count` pairs of little-endian int16 from `bytes` at `offset` (the caller checked the length).
    static func loadPairs(_ bytes: [UInt8], at offset: Int, count: Int) -> [Int16] {
        [Int16](unsafeUninitializedCapacity: 2 * count) { values, initialized in
            bytes.withUnsafeBytes { raw in
                for i in 0..<(2 * count) {
                    values[i] = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 2 * i, as: Int16.self))
                }
            }
            initialized = 2 * count
        }
    }

    /// Appends `values` as little-endian int16.
    static func appendPairs(_ out: inout [UInt8], _ values: [Int16]) {
        for value in values {
            let bits = UInt16(bitPattern: value)
            out.append(UInt8(truncatingIfNeeded: bits))
            out.append(UInt8(truncatingIfNeeded: bits >> 8))
        }
    }

    /// The index of the first pair whose min is above its max, if any.
    static func firstInvertedPair(_ pairs: [Int16]) -> Int? {
        var i = 0
        while i + 1 < pairs.count {
            if pairs[i] > pairs[i + 1] { return i / 2 }
            i += 2
        }
        return nil
    }

    static func appendLE(_ out: inout [UInt8], _ value: UInt64, bytes: Int) {
        for i in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * i))) }
    }
}

extension WaveformPyramid {
    /// A finished pyramid from its base level (a waveform file's): `base` holds min, max pairs
    /// of `rawPairFrames << folds` frames each.
    init(sampleRate: Int, folds: Int, base: [Int16], totalFrames: Int, maxBasePairs: Int) {
        self.init(sampleRate: sampleRate, maxBasePairs: maxBasePairs)
        setFolds(folds)
        var i = 0
        while i + 1 < base.count {
            appendBase(low: base[i], high: base[i + 1])
            i += 2
        }
        finish(totalFrames: totalFrames)
    }
}

/// What a decode worker sends back for a waveform (`streamd decode-worker`, waveform request):
/// `AnalyzerProtocol` frames whose payload is one of these messages. Checked on the way in,
/// since a worker that a decoder bug corrupted may write anything before it dies.
public enum WaveformWire {
    /// Kinds of message (the decode worker's `failure`, 2, is shared).
    static let pairsKind: UInt8 = 3
    static let endKind: UInt8 = 4
    static let failureKind: UInt8 = 2
    /// The most pairs one message may carry.
    public static let maxPairsPerMessage = 1 << 16
    /// Rates a decoder can give (the WAV parser's limit).
    public static let rates = 1...1_536_000

    public enum Message: Equatable, Sendable {
        /// Raw pairs (`WaveformReducer.pairFrames` frames each, the track's last maybe fewer),
        /// min, max interleaved, at `rate`.
        case pairs(rate: Int, [Int16])
        /// The end of the track: its length in frames, and its last pair (min, max) when that
        /// one spans fewer than `pairFrames` frames (empty otherwise). It comes with the end, so
        /// the pairs before it always span whole pairs: an unfinished pyramid never counts
        /// frames the track does not have.
        case end(rate: Int, frames: Int, last: [Int16])
        /// The decoder's own refusal (a typed error), as text.
        case failure(String)
    }

    public static func encode(_ message: Message) -> [UInt8] {
        var out: [UInt8] = []
        switch message {
        case .pairs(let rate, let pairs):
            out.reserveCapacity(5 + pairs.count * 2)
            out.append(pairsKind)
            WaveformFile.appendLE(&out, UInt64(rate), bytes: 4)
            WaveformFile.appendPairs(&out, pairs)
        case .end(let rate, let frames, let last):
            out.append(endKind)
            WaveformFile.appendLE(&out, UInt64(rate), bytes: 4)
            WaveformFile.appendLE(&out, UInt64(max(0, frames)), bytes: 8)
            WaveformFile.appendPairs(&out, Array(last.prefix(2)))
        case .failure(let text):
            out = [failureKind] + Array(text.utf8)
        }
        return out
    }

    /// The message in `payload`; throws `FormatError` for anything else.
    public static func parse(_ payload: [UInt8]) throws(FormatError) -> Message {
        var reader = ByteReader(payload, component: "waveform message")
        let kind = try reader.readU8()
        if kind == failureKind { return .failure(String(decoding: reader.rest, as: UTF8.self)) }
        let rate = Int(try reader.readU32LE())
        guard rates.contains(rate) else {
            throw .outOfRange(component: "waveform message", field: "sample rate", value: String(rate))
        }
        switch kind {
        case pairsKind:
            let count = reader.remaining / 4
            guard reader.remaining % 4 == 0, (1...maxPairsPerMessage).contains(count) else {
                throw .invalid(component: "waveform message", reason: "\(reader.remaining) bytes of pairs", offset: 5)
            }
            let pairs = WaveformFile.loadPairs(payload, at: reader.offset, count: count)
            if let bad = WaveformFile.firstInvertedPair(pairs) {
                throw .invalid(component: "waveform message", reason: "pair \(bad): min above max", offset: reader.offset + 4 * bad)
            }
            return .pairs(rate: rate, pairs)
        case endKind:
            let frames = try reader.readU64LE()
            let partial = frames % UInt64(WaveformPyramid.rawPairFrames) != 0
            guard reader.remaining == (partial ? 4 : 0), frames <= UInt64(Int32.max) * UInt64(WaveformPyramid.rawPairFrames) else {
                throw .invalid(component: "waveform message", reason: "end of \(frames) frames with \(reader.remaining) bytes", offset: 5)
            }
            let last = WaveformFile.loadPairs(payload, at: reader.offset, count: partial ? 1 : 0)
            if WaveformFile.firstInvertedPair(last) != nil {
                throw .invalid(component: "waveform message", reason: "last pair: min above max", offset: reader.offset)
            }
            return .end(rate: rate, frames: Int(frames), last: last)
        default:
            throw .invalid(component: "waveform message", reason: "kind \(kind)", offset: 0)
        }
    }
}
