/// Sample rates by MPEG-4 sampling-frequency index (ISO 14496-3 table 1.18).
let aacSampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

/// One ADTS frame header (ISO 13818-7 / 14496-3 1.A.2).
public struct ADTSHeader: Sendable, Equatable {
    /// The ID bit: MPEG-2 (true) or MPEG-4 (false) AAC; the payload is the same.
    public var isMPEG2: Bool
    /// True when a CRC follows the fixed header (protection_absent is 0).
    public var hasCRC: Bool
    /// Audio object type: profile + 1 (1 Main, 2 LC, 3 SSR, 4 LTP).
    public var objectType: Int
    public var sampleRateIndex: Int
    public var sampleRate: Int
    public var channelConfiguration: Int
    /// Whole frame length, header included.
    public var frameLength: Int
    /// 7, or 9 with a CRC.
    public var headerLength: Int
    public var bufferFullness: Int
    /// Raw data blocks in the frame (number_of_raw_data_blocks_in_frame + 1).
    public var rawDataBlocks: Int
    /// PCM samples per channel the frame decodes to.
    public var samplesPerFrame: Int { 1024 * rawDataBlocks }

    static let component = "adts"

    /// Reads a header from the start of `bytes`: nil when fewer than 7 bytes (9 with CRC) are
    /// there; throws on a bad sync, layer, reserved sample rate or impossible frame length.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> ADTSHeader? {
        guard bytes.count >= 7 else { return nil }
        let s = bytes.startIndex
        let b0 = bytes[s], b1 = bytes[s + 1], b2 = bytes[s + 2], b3 = bytes[s + 3]
        let b4 = bytes[s + 4], b5 = bytes[s + 5], b6 = bytes[s + 6]
        guard b0 == 0xFF, b1 & 0xF0 == 0xF0 else {
            throw FormatError.invalid(component: component, reason: "no ADTS sync word", offset: 0)
        }
        guard b1 & 0x06 == 0 else {
            throw FormatError.invalid(component: component, reason: "layer is not 0", offset: 1)
        }
        let hasCRC = b1 & 0x01 == 0
        let headerLength = hasCRC ? 9 : 7
        guard bytes.count >= headerLength else { return nil }
        let profile = Int(b2 >> 6)
        let rateIndex = Int(b2 >> 2 & 0x0F)
        guard rateIndex < aacSampleRates.count else {
            throw FormatError.invalid(component: component, reason: "reserved sample-rate index \(rateIndex)", offset: 2)
        }
        let channels = Int(b2 & 0x01) << 2 | Int(b3 >> 6)
        let frameLength = Int(b3 & 0x03) << 11 | Int(b4) << 3 | Int(b5 >> 5)
        guard frameLength >= headerLength else {
            throw FormatError.invalid(component: component, reason: "frame length \(frameLength) shorter than its header", offset: 3)
        }
        let fullness = Int(b5 & 0x1F) << 6 | Int(b6 >> 2)
        return ADTSHeader(isMPEG2: b1 & 0x08 != 0, hasCRC: hasCRC, objectType: profile + 1, sampleRateIndex: rateIndex,
                          sampleRate: aacSampleRates[rateIndex], channelConfiguration: channels, frameLength: frameLength,
                          headerLength: headerLength, bufferFullness: fullness, rawDataBlocks: Int(b6 & 0x03) + 1)
    }

    /// True when `other` can belong to the same stream (the rule used to confirm a sync).
    public func isCompatible(with other: ADTSHeader) -> Bool {
        objectType == other.objectType && sampleRateIndex == other.sampleRateIndex
            && channelConfiguration == other.channelConfiguration
    }

    /// The AudioSpecificConfig this header implies (what an MP4-style decoder init wants).
    public var audioSpecificConfig: AudioSpecificConfig {
        AudioSpecificConfig(objectType: objectType, sampleRate: sampleRate, sampleRateIndex: sampleRateIndex,
                            channelConfiguration: channelConfiguration, frameLengthFlag: false)
    }
}

/// Finds the first real ADTS frame in bytes that may start with junk.
public enum ADTSSync {
    /// Offset (from the start of `bytes`) of the first frame followed by `confirmations` more
    /// frames of the same stream, so a stray 0xFFF in junk is not taken for audio. nil when the
    /// bytes end before a frame can be confirmed; throws `.notAudio` when `limit` bytes hold none.
    public static func findFirstFrame(in bytes: ArraySlice<UInt8>, confirmations: Int = 2, limit: Int? = nil,
                                      isComplete: Bool = false) throws -> Int? {
        var index = bytes.startIndex
        let searchEnd = limit.map { min(bytes.endIndex, bytes.startIndex + $0) } ?? bytes.endIndex
        candidates: while index + 7 <= bytes.endIndex && index < searchEnd {
            guard bytes[index] == 0xFF, bytes[index + 1] & 0xF6 == 0xF0,
                  let header = try? ADTSHeader.parse(bytes[index...]) else {
                index += 1
                continue
            }
            var next = index + header.frameLength
            for _ in 0..<confirmations {
                if next == bytes.endIndex && isComplete { break }
                guard next + 7 <= bytes.endIndex else {
                    if isComplete { index += 1; continue candidates }
                    return nil
                }
                guard let following = try? ADTSHeader.parse(bytes[next...]), following.isCompatible(with: header) else {
                    index += 1
                    continue candidates
                }
                next += following.frameLength
            }
            return index - bytes.startIndex
        }
        if let limit, bytes.count >= limit {
            throw FormatError.notAudio(reason: "no ADTS frame in the first \(limit) bytes")
        }
        return nil
    }
}
