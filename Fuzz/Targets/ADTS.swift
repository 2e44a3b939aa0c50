@testable import StreamShared

/// ADTS headers and sync, and AudioSpecificConfig (from the header and as raw esds bytes).
enum ADTSTarget {
    static func run(_ bytes: [UInt8]) {
        let slice = bytes[...]
        if let header = try? ADTSHeader.parse(slice) {
            _ = header.audioSpecificConfig
        }
        _ = try? ADTSSync.findFirstFrame(in: slice, confirmations: 1, limit: 64 * 1024, isComplete: true)
        _ = try? ADTSSync.findFirstFrame(in: slice, confirmations: 2, isComplete: false)
        // The same bytes as an AudioSpecificConfig, as an esds box hands it over.
        _ = try? AudioSpecificConfig.parse(slice)
        _ = try? AudioSpecificConfig.parse(slice.prefix(8))
    }
}
