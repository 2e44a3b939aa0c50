@testable import StreamShared

/// AIFF/AIFF-C chunks (COMM, SSND, FVER, text, ID3) on the whole input and on a prefix, and the
/// sample converter on the frames the header promises.
enum AIFFTarget {
    static func run(_ bytes: [UInt8]) {
        for prefix in [bytes[...], bytes.prefix(bytes.count / 2)] {
            guard let info = try? AIFF.parse(prefix) else { continue }
            let format = info.format
            require(format.sampleRate.isFinite && format.sampleRate >= 1, "rate \(format.sampleRate)")
            require((1...64).contains(format.channels), "channels \(format.channels)")
            require(info.declaredDuration <= InputLimits.maxDurationSeconds, "duration \(info.declaredDuration)")
            let frames = info.frameCount(fileSize: prefix.count)
            require(frames >= 0 && frames <= format.declaredFrames, "frames \(frames)")
            require(info.dataOffset >= 0 && info.dataOffset + frames * format.blockAlign <= prefix.count || frames == 0,
                    "samples past the input")
            guard frames > 0 else { continue }
            let start = prefix.startIndex + info.dataOffset
            var samples: [Float] = []
            let converted = AIFFSampleConverter(format: format)
                .convert(prefix[start..<(start + min(frames, 4096) * format.blockAlign)], appendingTo: &samples)
            require(converted == min(frames, 4096) && samples.count == converted * format.channels, "converted \(converted)")
            if format.encoding != .float {
                require(samples.allSatisfy { abs($0) <= 1 }, "sample out of range")
            }
        }
    }
}
