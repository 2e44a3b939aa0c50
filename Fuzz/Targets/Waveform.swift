import StreamShared

/// Waveforms (seed 001): the disk file (`WaveformFile.decode`) and the decode worker's messages
/// (`WaveformWire.parse`) on raw bytes, and the pyramid itself driven by the bytes (pairs in
/// uneven pieces, a small base bound so it folds, then slices of ranges and widths the bytes
/// pick). What is accepted stays consistent: a file reads back to the same bytes, a message
/// encodes back to itself, every level is half the one below, a slice holds at most `width`
/// pairs of min ≤ max.
enum WaveformTarget {
    static func run(_ bytes: [UInt8]) {
        if let decoded = try? WaveformFile.decode(bytes, maxBasePairs: 1 << 16) {
            require(decoded.pyramid.isComplete, "a file's pyramid is finished")
            var expected = bytes
            expected[6] = 0
            expected[7] = 0
            require(WaveformFile.encode(decoded.pyramid, identity: decoded.identity) == expected, "a file reads back to its bytes")
            checkLevels(decoded.pyramid)
        }
        if let message = try? WaveformWire.parse(bytes) {
            if case .failure = message {} else {
                require(WaveformWire.encode(message) == bytes, "a message encodes back to its bytes")
            }
        }
        drive(bytes)
    }

    /// Pairs from the bytes after the first 8 (two bytes a value, each pair put in order), taken
    /// in pieces the first byte sizes, with a base of at most 4 + byte 1 pairs; then slices.
    static func drive(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return }
        var pyramid = WaveformPyramid(sampleRate: 8000, maxBasePairs: 4 + Int(bytes[1]))
        let body = bytes.dropFirst(8)
        var values: [Int16] = []
        var index = body.startIndex
        while index + 3 < body.endIndex {
            let a = Int16(bitPattern: UInt16(body[index]) | UInt16(body[index + 1]) << 8)
            let b = Int16(bitPattern: UInt16(body[index + 2]) | UInt16(body[index + 3]) << 8)
            values += [min(a, b), max(a, b)]
            index += 4
        }
        let piece = 2 * (1 + Int(bytes[0]) % 64)
        var start = 0
        while start < values.count {
            let end = min(values.count, start + piece)
            pyramid.append(values[start..<end])
            start = end
            query(pyramid, bytes)
        }
        let frames = max(0, values.count / 2 * 256 - Int(bytes[2]) % 256)
        pyramid.finish(totalFrames: values.count == 0 ? 0 : frames)
        checkLevels(pyramid)
        query(pyramid, bytes)
    }

    static func query(_ pyramid: WaveformPyramid, _ bytes: [UInt8]) {
        let covered = max(1, pyramid.coveredFrames)
        let from = Int(bytes[3]) * covered / 256
        let to = from + 1 + Int(bytes[4]) * Int(bytes[5]) * covered / 65_025
        let width = 1 + (Int(bytes[6]) << 5 | Int(bytes[7])) % 8192
        let slice = pyramid.slice(from: from, to: to, width: width)
        require(slice.pairs.count % 2 == 0 && slice.pairs.count / 2 <= slice.spans && slice.spans <= width,
                "a slice holds at most width pairs")
        require(slice.level < pyramid.levels.count, "a slice reads an existing level")
        var i = 0
        while i + 1 < slice.pairs.count {
            require(slice.pairs[i] <= slice.pairs[i + 1], "a slice's pair has min above max")
            i += 2
        }
    }

    static func checkLevels(_ pyramid: WaveformPyramid) {
        for level in 1..<max(1, pyramid.levels.count) {
            require(pyramid.pairCount(level: level) == (pyramid.pairCount(level: level - 1) + 1) / 2,
                    "level \(level) is half of the one below")
        }
    }
}
