@testable import StreamShared

/// RIFF/WAVE chunks up to data, on the whole input and on a prefix.
enum WAVTarget {
    static func run(_ bytes: [UInt8]) {
        for prefix in [bytes[...], bytes.prefix(bytes.count / 2)] {
            guard let info = try? WAV.parse(prefix: prefix) else { continue }
            _ = info.frameCount(fileSize: bytes.count)
            _ = info.frameCount(fileSize: nil)
        }
    }
}
