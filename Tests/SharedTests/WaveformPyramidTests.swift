import Testing
@testable import StreamShared

/// The waveform's reduction and pyramid (seed 001): min/max pairs exact on crafted signals,
/// every level the min/max of two pairs of the one below, a slice of any range the envelope of
/// exactly the frames it covers, the same answer while building as once finished, folding of
/// very long tracks, and the disk and worker encodings with their checks.
@Suite struct WaveformPyramidTests {
    /// A deterministic generator (SplitMix64) for signals and queries.
    struct Numbers {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func sample() -> Int16 { Int16(truncatingIfNeeded: Int(next() % 65_536) - 32_768) }
    }

    /// Mono 16-bit frames whose values are known: bursts of random values of growing size,
    /// silence between them.
    static func signal(frames: Int, seed: UInt64) -> [Int16] {
        var numbers = Numbers(state: seed)
        return (0..<frames).map { i in
            let block = i / 3000
            guard block % 3 != 1 else { return 0 }
            let scale = 1 + block % 7
            return Int16(clamping: Int(numbers.sample()) * scale / 7)
        }
    }

    /// The frames' min and max over `range` (clamped to the signal).
    static func envelope(_ signal: [Int16], _ range: Range<Int>) -> (Int16, Int16)? {
        let clamped = max(0, range.lowerBound)..<min(signal.count, range.upperBound)
        guard !clamped.isEmpty else { return nil }
        return (signal[clamped].min() ?? 0, signal[clamped].max() ?? 0)
    }

    /// Raw pairs of `signal` through the reducer, fed in uneven pieces.
    static func reduce(_ signal: [Int16], channels: Int = 1, pieces: Int = 7) -> [Int16] {
        var reducer = WaveformReducer()
        var pairs: [Int16] = []
        let floats = signal.flatMap { value in [Float](repeating: Float(value) / 32768, count: channels) }
        var start = 0, piece = 1
        while start < floats.count {
            let end = min(floats.count, start + channels * (piece * 97 % 1500 + 1))
            floats[start..<end].withUnsafeBufferPointer { reducer.add($0, channels: channels, into: &pairs) }
            start = end
            piece = piece % pieces + 1
        }
        reducer.finish(into: &pairs)
        #expect(reducer.frames == signal.count, "frames taken in")
        return pairs
    }

    static func pyramid(_ signal: [Int16], maxBasePairs: Int = WaveformPyramid.defaultMaxBasePairs) -> WaveformPyramid {
        var pyramid = WaveformPyramid(sampleRate: 44_100, maxBasePairs: maxBasePairs)
        pyramid.append(reduce(signal))
        pyramid.finish(totalFrames: signal.count)
        return pyramid
    }

    // MARK: Reducer

    @Test func reducer_pairsAreTheExactMinAndMaxOf256Frames() {
        let signal = Self.signal(frames: 10_000, seed: 1)
        let pairs = Self.reduce(signal)
        #expect(pairs.count == 2 * 40, "ceil(10000 / 256) pairs")
        for pair in 0..<pairs.count / 2 {
            let expected = Self.envelope(signal, pair * 256..<(pair + 1) * 256)
            #expect(pairs[2 * pair] == expected?.0 && pairs[2 * pair + 1] == expected?.1,
                    "pair \(pair): \(pairs[2 * pair]), \(pairs[2 * pair + 1]) against \(String(describing: expected))")
        }
    }

    @Test func reducer_takesThePeakOverAllChannels() {
        // Left a ramp up, right a ramp down: each pair spans both channels' extremes.
        var reducer = WaveformReducer()
        var pairs: [Int16] = []
        var samples: [Float] = []
        for i in 0..<512 {
            samples.append(Float(i) / 1024)
            samples.append(-Float(i) / 2048)
        }
        samples.withUnsafeBufferPointer { reducer.add($0, channels: 2, into: &pairs) }
        reducer.finish(into: &pairs)
        #expect(pairs == [-4080, 8160, -8176, 16352], "\(pairs)")
    }

    @Test func reducer_scalesClampsAndSkipsNaN() {
        #expect(WaveformReducer.level(1.0) == 32767, "full scale positive clamps to 32767")
        #expect(WaveformReducer.level(-1.0) == -32768)
        #expect(WaveformReducer.level(.infinity) == 32767 && WaveformReducer.level(-.infinity) == -32768)
        #expect(WaveformReducer.level(Float(8_388_607) / 8_388_608) == 32767, "24-bit full scale")
        #expect(WaveformReducer.level(Float(-1_234_567) / 8_388_608) == -4823, "24-bit rounded to the nearest 16-bit step")
        var reducer = WaveformReducer()
        var pairs: [Int16] = []
        let samples: [Float] = [.nan, 0.25, .nan, -0.5, .nan]
        samples.withUnsafeBufferPointer { reducer.add($0, channels: 1, into: &pairs) }
        let onlyNaN: [Float] = [Float](repeating: .nan, count: 256)
        onlyNaN.withUnsafeBufferPointer { reducer.add($0, channels: 1, into: &pairs) }
        reducer.finish(into: &pairs)
        #expect(pairs == [-16384, 8192, 0, 0], "NaN left out, a pair of only NaN is silence: \(pairs)")
    }

    // MARK: Levels

    @Test func levels_eachPairIsTheMinAndMaxOfTwoBelow() {
        for frames in [0, 1, 255, 256, 257, 256 * 64, 256 * 1000 + 17, 333_333] {
            let signal = Self.signal(frames: frames, seed: UInt64(frames))
            let pyramid = Self.pyramid(signal)
            #expect(pyramid.levels[0] == Self.reduce(signal), "\(frames) frames: the base is the raw pairs")
            for level in 1..<max(1, pyramid.levels.count) {
                let below = pyramid.levels[level - 1], here = pyramid.levels[level]
                #expect(here.count / 2 == (below.count / 2 + 1) / 2, "\(frames) frames: level \(level) has half the pairs")
                for i in 0..<here.count / 2 {
                    let right = min(2 * i + 1, below.count / 2 - 1)
                    #expect(here[2 * i] == min(below[4 * i], below[2 * right]) && here[2 * i + 1] == max(below[4 * i + 1], below[2 * right + 1]),
                            "\(frames) frames: level \(level) pair \(i)")
                }
            }
            #expect(pyramid.pairCount(level: pyramid.levels.count - 1) <= 1, "\(frames) frames: one pair at the top")
            if let top = pyramid.levels.last, top.count == 2 {
                #expect(top[0] == signal.min() && top[1] == signal.max(), "the top pair is the whole track's envelope")
            }
        }
    }

    @Test func slice_isTheEnvelopeOfTheFramesEachSpanCovers() {
        let signal = Self.signal(frames: 160_000, seed: 7)
        let pyramid = Self.pyramid(signal)
        var numbers = Numbers(state: 99)
        for query in 0..<40 {
            let from = numbers.below(signal.count)
            let to = query % 5 == 0 ? signal.count : min(signal.count, from + 1 + numbers.below(signal.count))
            let width = [1, 2, 3, 10, 100, 1000, 8192][query % 7]
            let slice = pyramid.slice(from: from, to: to, width: width)
            let frames = slice.levelPairFrames
            let length = to - from
            #expect(slice.pairs.count / 2 == slice.spans && slice.spans <= width, "query \(query): at most width pairs, all given")
            // The coarsest level with at least `width` pairs over the range (or the base).
            #expect(slice.level == 0 || length / frames >= width, "query \(query): the level has enough pairs")
            #expect(slice.level + 1 >= pyramid.levels.count || length / (2 * frames) < width, "query \(query): no coarser level does")
            for span in 0..<slice.spans {
                let start = from + span * length / slice.spans, end = from + (span + 1) * length / slice.spans
                // The level's pairs that overlap the span: whole pairs of `frames` frames.
                let covered = (start / frames * frames)..<((end + frames - 1) / frames * frames)
                let expected = Self.envelope(signal, covered)
                #expect(slice.pairs[2 * span] == expected?.0 && slice.pairs[2 * span + 1] == expected?.1,
                        "query \(query) (\(from)..<\(to) width \(width)) span \(span)")
            }
        }
    }

    @Test func slice_costIsBoundedByWidthNotLength() {
        // A whole-track slice of a long track reads at most a few level pairs per span.
        let signal = Self.signal(frames: 2_000_000, seed: 3)
        let pyramid = Self.pyramid(signal)
        let slice = pyramid.slice(from: 0, to: signal.count, width: 1000)
        #expect(slice.spans == 1000)
        #expect(signal.count / slice.levelPairFrames < 2 * 1000, "a level with fewer than 2 pairs per span: \(slice.levelPairFrames)")
    }

    @Test func building_answersAsTheFinishedPyramidOfWhatIsDecoded() {
        let signal = Self.signal(frames: 300_000, seed: 11)
        let raw = Self.reduce(signal)
        let end = Self.pyramid(signal).slice(from: 0, to: signal.count, width: 500)
        var building = WaveformPyramid(sampleRate: 44_100)
        var taken = 0
        var numbers = Numbers(state: 5)
        while taken < raw.count / 2 {
            let step = min(raw.count / 2 - taken, 1 + numbers.below(300))
            building.append(raw[(2 * taken)..<(2 * (taken + step))])
            taken += step
            #expect(!building.isComplete && building.coveredFrames == taken * 256)
            // What a finished pyramid of the same frames says, span for span, over the part decoded.
            var finished = WaveformPyramid(sampleRate: 44_100)
            finished.append(raw[0..<(2 * taken)])
            finished.finish(totalFrames: taken * 256)
            for width in [2, 7, 64, 1000] {
                let partial = building.slice(from: 0, to: taken * 256, width: width)
                let whole = finished.slice(from: 0, to: taken * 256, width: width)
                #expect(partial == whole, "\(taken) pairs, width \(width)")
            }
            // Over a range longer than what is decoded: only the whole spans decoded so far, each
            // as it will be once the rest arrives.
            let ahead = building.slice(from: 0, to: signal.count, width: 500)
            guard ahead.level == end.level else { continue }
            #expect(ahead.spans == end.spans)
            var whole = 0
            while whole < end.spans && (whole + 1) * signal.count / end.spans <= taken * 256 { whole += 1 }
            #expect(ahead.pairs.count / 2 == whole, "\(taken) pairs: every whole span decoded is given")
            for span in 0..<ahead.pairs.count / 2 {
                // A span whose level pairs are all whole already has its final value.
                guard ((span + 1) * signal.count / end.spans - 1) / ahead.levelPairFrames < building.pairCount(level: ahead.level) else { continue }
                #expect(ahead.pairs[2 * span] == end.pairs[2 * span] && ahead.pairs[2 * span + 1] == end.pairs[2 * span + 1],
                        "\(taken) pairs: span \(span) as it will be")
            }
        }
    }

    @Test func fold_keepsTheBaseBoundedAndExact() {
        let signal = Self.signal(frames: 256 * 1000 + 100, seed: 13)
        let pyramid = Self.pyramid(signal, maxBasePairs: 100)
        #expect(pyramid.folds == 4, "1001 raw pairs in at most 100: 16 raw pairs a base pair")
        #expect(pyramid.basePairFrames == 4096 && pyramid.pairCount(level: 0) == 63)
        for pair in 0..<pyramid.pairCount(level: 0) {
            let expected = Self.envelope(signal, pair * 4096..<(pair + 1) * 4096)
            #expect(pyramid.levels[0][2 * pair] == expected?.0 && pyramid.levels[0][2 * pair + 1] == expected?.1, "base pair \(pair)")
        }
        let slice = pyramid.slice(from: 0, to: signal.count, width: 8192)
        #expect(slice.levelPairFrames == 4096 && slice.spans == 63, "zoomed in past the base: its pairs")
    }

    // MARK: Encodings

    @Test func file_roundTripsAndRefusesDamage() throws {
        let signal = Self.signal(frames: 123_457, seed: 17)
        let pyramid = Self.pyramid(signal)
        let bytes = try #require(WaveformFile.encode(pyramid, identity: 0xABCD))
        #expect(bytes.count == 32 + 4 * 483)
        let (decoded, identity) = try WaveformFile.decode(bytes)
        #expect(decoded == pyramid && identity == 0xABCD)
        #expect(WaveformFile.encode(WaveformPyramid(sampleRate: 8000), identity: 1) == nil, "unfinished: not written")

        #expect(throws: FormatError.self) { try WaveformFile.decode(Array(bytes.dropLast())) }
        #expect(throws: FormatError.self) { try WaveformFile.decode(Array(bytes.prefix(31))) }
        var foreign = bytes
        foreign[0] = UInt8(ascii: "X")
        #expect(throws: FormatError.self) { try WaveformFile.decode(foreign) }
        var lying = bytes
        lying[22] ^= 0x40    // total frames no longer match the pair count
        #expect(throws: FormatError.self) { try WaveformFile.decode(lying) }
        var inverted = bytes
        inverted[32] = 0xFF; inverted[33] = 0x7F   // the first pair's min above its max
        #expect(throws: FormatError.self) { try WaveformFile.decode(inverted) }
        var huge = bytes
        huge[5] = 200    // folds
        #expect(throws: FormatError.self) { try WaveformFile.decode(huge) }
        let folded = Self.pyramid(signal, maxBasePairs: 50)
        let (again, _) = try WaveformFile.decode(try #require(WaveformFile.encode(folded, identity: 2)), maxBasePairs: 50)
        #expect(again.levels == folded.levels && again.basePairFrames == folded.basePairFrames)
    }

    @Test func wire_roundTripsAndRefusesNonsense() throws {
        let messages: [WaveformWire.Message] = [.pairs(rate: 48_000, [-5, 7, 0, 0]), .end(rate: 48_000, frames: 300, last: [-1, 1]),
                                                .end(rate: 44_100, frames: 512, last: []), .failure("flac: lost sync")]
        for message in messages {
            #expect(try WaveformWire.parse(WaveformWire.encode(message)) == message)
        }
        let refused: [[UInt8]] = [
            [],
            [3, 0x44, 0xAC, 0, 0, 1, 0, 0],                 // half a pair
            [3, 0x44, 0xAC, 0, 0],                          // no pair
            [3, 0, 0, 0, 0, 0, 0, 0, 0],                    // 0 Hz
            [3, 0x44, 0xAC, 0, 0, 5, 0, 1, 0],              // min 5 above max 1
            [4, 0x44, 0xAC, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 9],   // 256 frames: no short last pair, yet a byte
            [4, 0x44, 0xAC, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],      // 1 frame: its short last pair is missing
            [9, 0x44, 0xAC, 0, 0],                          // unknown kind
        ]
        for bytes in refused {
            #expect(throws: FormatError.self, "\(bytes)") { try WaveformWire.parse(bytes) }
        }
    }
}
