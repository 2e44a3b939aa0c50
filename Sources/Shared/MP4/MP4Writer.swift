/// Builds ISO BMFF boxes (ISO/IEC 14496-12) into a byte array; sizes are patched in when a box closes.
public struct MP4BoxWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// A box of `type`; `body` writes its payload.
    public mutating func box(_ type: String, _ body: (inout MP4BoxWriter) -> Void) {
        let start = bytes.count
        u32(0)
        fourCC(type)
        body(&self)
        let size = UInt32(truncatingIfNeeded: bytes.count - start)
        bytes[start] = UInt8(size >> 24)
        bytes[start + 1] = UInt8((size >> 16) & 0xFF)
        bytes[start + 2] = UInt8((size >> 8) & 0xFF)
        bytes[start + 3] = UInt8(size & 0xFF)
    }

    /// A full box: version and 24-bit flags before the payload.
    public mutating func fullBox(_ type: String, version: UInt8 = 0, flags: UInt32 = 0, _ body: (inout MP4BoxWriter) -> Void) {
        box(type) { w in
            w.u8(version)
            w.u8(UInt8((flags >> 16) & 0xFF))
            w.u16(UInt16(flags & 0xFFFF))
            body(&w)
        }
    }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { bytes += [UInt8(v >> 8), UInt8(v & 0xFF)] }
    public mutating func u24(_ v: UInt32) { bytes += [UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    public mutating func u32(_ v: UInt32) {
        bytes += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }
    public mutating func u64(_ v: UInt64) {
        u32(UInt32(truncatingIfNeeded: v >> 32))
        u32(UInt32(truncatingIfNeeded: v))
    }
    public mutating func zeros(_ count: Int) { bytes += [UInt8](repeating: 0, count: max(0, count)) }
    public mutating func append(_ data: [UInt8]) { bytes += data }
    /// Four ASCII characters (padded with spaces, so a short type still takes four bytes).
    public mutating func fourCC(_ code: String) {
        var chars = Array(code.utf8.prefix(4))
        while chars.count < 4 { chars.append(0x20) }
        bytes += chars
    }
}

/// The codec an fMP4 audio track carries, with what its sample entry needs.
public enum FMP4AudioCodec: Sendable, Equatable {
    /// AAC: `mp4a` with an `esds` built from `FMP4AudioTrackInfo.audioSpecificConfig`.
    case aac
    /// FLAC ("Encapsulation of FLAC in ISO-BMFF"): `fLaC` with a `dfLa` holding the STREAMINFO
    /// block (its 34 bytes) as the only metadata block; one FLAC frame per sample.
    case flac(streamInfo: [UInt8], bitsPerSample: Int)
    /// Opus ("Encapsulation of Opus in ISO Base Media File Format"): `Opus` with a `dOps` made
    /// from the OpusHead; one Opus packet per sample at timescale 48000.
    case opus(OpusHead)
}

/// The audio track an fMP4 stream carries (what the init segment describes).
public struct FMP4AudioTrackInfo: Sendable, Equatable {
    /// The sample entry's codec (AAC unless said otherwise).
    public var codec: FMP4AudioCodec = .aac
    /// An edit list of one edit: the media time presentation starts at (Opus pre-skip) and the
    /// presented duration in timescale ticks (0: to the end of the fragments).
    public var edit: (mediaTime: Int, duration: Int)?
    /// The audio pre-roll as an 'roll' sample group (Opus: -(80 ms in packets)); nil for none.
    public var rollDistance: Int?
    public var trackID: Int
    /// Media timescale (ticks per second) of sample durations and tfdt.
    public var timescale: Int
    public var channels: Int
    public var sampleRate: Int
    /// The AudioSpecificConfig for esds.
    public var audioSpecificConfig: [UInt8]
    public var avgBitrate: Int
    public var maxBitrate: Int
    /// Largest sample in bytes (esds bufferSizeDB).
    public var bufferSize: Int

    public init(trackID: Int = 1, timescale: Int, channels: Int, sampleRate: Int, audioSpecificConfig: [UInt8],
                avgBitrate: Int = 0, maxBitrate: Int = 0, bufferSize: Int = 0) {
        self.trackID = trackID
        self.timescale = timescale
        self.channels = channels
        self.sampleRate = sampleRate
        self.audioSpecificConfig = audioSpecificConfig
        self.avgBitrate = avgBitrate
        self.maxBitrate = maxBitrate
        self.bufferSize = bufferSize
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.codec == b.codec && a.edit?.mediaTime == b.edit?.mediaTime && a.edit?.duration == b.edit?.duration
            && a.rollDistance == b.rollDistance && a.trackID == b.trackID && a.timescale == b.timescale
            && a.channels == b.channels && a.sampleRate == b.sampleRate && a.audioSpecificConfig == b.audioSpecificConfig
            && a.avgBitrate == b.avgBitrate && a.maxBitrate == b.maxBitrate && a.bufferSize == b.bufferSize
    }
}

/// Writes fragmented MP4 for HLS (RFC 8216 section 3.3): an init segment (ftyp + moov with mvex,
/// empty sample tables) and media segments (moof + mdat) of AAC, FLAC or Opus samples copied as they are.
public enum FMP4Writer {
    private static let matrix: [UInt32] = [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000]

    /// ftyp + moov for one audio track.
    public static func initSegment(_ track: FMP4AudioTrackInfo) -> [UInt8] {
        var w = MP4BoxWriter()
        let trackID = UInt32(truncatingIfNeeded: track.trackID)
        let timescale = UInt32(truncatingIfNeeded: track.timescale)
        w.box("ftyp") { w in
            w.fourCC("iso6")
            w.u32(0)
            for brand in ["iso6", "mp41", "cmfc"] { w.fourCC(brand) }
        }
        w.box("moov") { w in
            w.fullBox("mvhd") { w in
                w.u32(0); w.u32(0)                   // creation, modification time
                w.u32(timescale)
                w.u32(0)                             // duration: unknown, it is in the fragments
                w.u32(0x0001_0000)                   // rate 1.0
                w.u16(0x0100)                        // volume 1.0
                w.zeros(10)
                matrix.forEach { w.u32($0) }
                w.zeros(24)                          // pre_defined
                w.u32(trackID &+ 1)                  // next_track_ID
            }
            w.box("trak") { w in
                w.fullBox("tkhd", flags: 0x000003) { w in   // enabled, in movie
                    w.u32(0); w.u32(0)
                    w.u32(trackID)
                    w.u32(0)
                    w.u32(0)                         // duration
                    w.zeros(8)
                    w.u16(0); w.u16(1)               // layer, alternate_group
                    w.u16(0x0100)                    // volume
                    w.u16(0)
                    matrix.forEach { w.u32($0) }
                    w.u32(0); w.u32(0)               // width, height
                }
                if let edit = track.edit {
                    // Media before `mediaTime` (Opus pre-skip) is decoded but not presented.
                    w.box("edts") { w in
                        w.fullBox("elst") { w in
                            w.u32(1)
                            w.u32(UInt32(clamping: max(0, edit.duration)))
                            w.u32(UInt32(clamping: max(0, edit.mediaTime)))
                            w.u16(1); w.u16(0)       // media_rate 1.0
                        }
                    }
                }
                w.box("mdia") { w in
                    w.fullBox("mdhd") { w in
                        w.u32(0); w.u32(0)
                        w.u32(timescale)
                        w.u32(0)
                        w.u16(0x55C4)                // language "und", packed ISO 639-2/T
                        w.u16(0)
                    }
                    w.fullBox("hdlr") { w in
                        w.u32(0)
                        w.fourCC("soun")
                        w.zeros(12)
                        w.append(Array("SoundHandler".utf8) + [0])
                    }
                    w.box("minf") { w in
                        w.fullBox("smhd") { w in w.u16(0); w.u16(0) }
                        w.box("dinf") { w in
                            w.fullBox("dref") { w in
                                w.u32(1)
                                w.fullBox("url ", flags: 1) { _ in }   // media in the same file
                            }
                        }
                        w.box("stbl") { w in
                            w.fullBox("stsd") { w in
                                w.u32(1)
                                switch track.codec {
                                case .aac: mp4aEntry(track, into: &w)
                                case .flac(let streamInfo, let bits): flacEntry(track, streamInfo: streamInfo, bits: bits, into: &w)
                                case .opus(let head): opusEntry(track, head: head, into: &w)
                                }
                            }
                            w.fullBox("stts") { w in w.u32(0) }
                            w.fullBox("stsc") { w in w.u32(0) }
                            w.fullBox("stsz") { w in w.u32(0); w.u32(0) }
                            w.fullBox("stco") { w in w.u32(0) }
                            if let roll = track.rollDistance {
                                // One AudioRollRecoveryEntry; every fragment maps its samples to it (sbgp).
                                w.fullBox("sgpd", version: 1) { w in
                                    w.fourCC("roll")
                                    w.u32(2)             // default_length
                                    w.u32(1)
                                    w.u16(UInt16(bitPattern: Int16(clamping: roll)))
                                }
                            }
                        }
                    }
                }
            }
            w.box("mvex") { w in
                w.fullBox("trex") { w in
                    w.u32(trackID)
                    w.u32(1)                         // default_sample_description_index
                    w.u32(0); w.u32(0)               // default duration and size: every trun gives them
                    w.u32(0)                         // default flags: sync samples
                }
            }
        }
        return w.bytes
    }

    private static func mp4aEntry(_ track: FMP4AudioTrackInfo, into w: inout MP4BoxWriter) {
        w.box("mp4a") { w in
            w.zeros(6)
            w.u16(1)                                 // data_reference_index
            w.zeros(8)
            w.u16(UInt16(clamping: track.channels))
            w.u16(16)
            w.u16(0); w.u16(0)
            // 16.16 fixed point; rates above 65535 Hz do not fit, the AudioSpecificConfig is authoritative.
            w.u32(track.sampleRate <= 0xFFFF ? UInt32(track.sampleRate) << 16 : 0)
            w.fullBox("esds") { w in
                w.append(esDescriptor(track))
            }
        }
    }

    /// The AudioSampleEntry fields every codec shares (ISO/IEC 14496-12 section 12.2.3).
    private static func audioSampleEntryFields(channels: Int, bits: Int, sampleRate: Int, into w: inout MP4BoxWriter) {
        w.zeros(6)
        w.u16(1)                                     // data_reference_index
        w.zeros(8)
        w.u16(UInt16(clamping: channels))
        w.u16(UInt16(clamping: bits))
        w.u16(0); w.u16(0)
        // 16.16 fixed point; rates above 65535 Hz do not fit and are 0 (the codec box says the rate).
        w.u32(sampleRate > 0 && sampleRate <= 0xFFFF ? UInt32(sampleRate) << 16 : 0)
    }

    private static func flacEntry(_ track: FMP4AudioTrackInfo, streamInfo: [UInt8], bits: Int, into w: inout MP4BoxWriter) {
        w.box("fLaC") { w in
            audioSampleEntryFields(channels: track.channels, bits: bits, sampleRate: track.sampleRate, into: &w)
            w.fullBox("dfLa") { w in
                // One metadata block, STREAMINFO (type 0), flagged as the last.
                w.u8(0x80)
                w.u24(UInt32(streamInfo.count))
                w.append(streamInfo)
            }
        }
    }

    private static func opusEntry(_ track: FMP4AudioTrackInfo, head: OpusHead, into w: inout MP4BoxWriter) {
        w.box("Opus") { w in
            audioSampleEntryFields(channels: head.channels, bits: 16, sampleRate: 48_000, into: &w)
            // dOps: OpusHead's fields without its magic, big-endian (Opus in ISOBMFF section 4.3.2).
            w.box("dOps") { w in
                w.u8(0)                              // Version
                w.u8(UInt8(clamping: head.channels))
                w.u16(UInt16(clamping: head.preSkip))
                w.u32(UInt32(clamping: head.inputSampleRate))
                w.u16(UInt16(bitPattern: head.outputGainQ78))
                w.u8(head.mappingFamily)
                if head.mappingFamily != 0 {
                    w.u8(UInt8(clamping: head.streamCount))
                    w.u8(UInt8(clamping: head.coupledCount))
                    w.append(head.channelMapping)
                }
            }
        }
    }

    /// The ES_Descriptor (ISO/IEC 14496-1 section 7.2.6.5) for AAC: object type 0x40, audio stream.
    static func esDescriptor(_ track: FMP4AudioTrackInfo) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
            var length: [UInt8] = []
            var n = body.count
            // Expandable size: 7 bits per byte, high bit set on all but the last.
            repeat {
                length.insert(UInt8(n & 0x7F), at: 0)
                n >>= 7
            } while n > 0
            for i in 0..<(length.count - 1) { length[i] |= 0x80 }
            return [tag] + length + body
        }
        func be32(_ v: Int) -> [UInt8] {
            let u = UInt32(clamping: max(0, v))
            return [UInt8(u >> 24), UInt8((u >> 16) & 0xFF), UInt8((u >> 8) & 0xFF), UInt8(u & 0xFF)]
        }
        let buffer = UInt32(clamping: max(0, min(track.bufferSize, 0xFF_FFFF)))
        let config: [UInt8] = [0x40, (5 << 2) | 1, UInt8(buffer >> 16), UInt8((buffer >> 8) & 0xFF), UInt8(buffer & 0xFF)]
            + be32(track.maxBitrate) + be32(track.avgBitrate) + descriptor(0x05, track.audioSpecificConfig)
        return descriptor(0x03, [0, 0, 0] + descriptor(0x04, config) + descriptor(0x06, [0x02]))
    }

    /// Size of the moof + mdat header for `sampleCount` samples (what precedes the sample bytes).
    public static func mediaHeaderSize(sampleCount: Int, sampleGroup: Bool = false) -> Int {
        88 + 8 * sampleCount + 8 + (sampleGroup ? sampleToGroupSize : 0)
    }

    /// Size of a traf's sbgp of one run.
    static let sampleToGroupSize = 28

    /// moof + mdat header for one fragment; the samples' bytes follow it, in order.
    /// - Parameters:
    ///   - sequence: mfhd sequence number (starts at 1 and grows by one per fragment).
    ///   - baseDecodeTime: tfdt, the decode time of the first sample in timescale ticks.
    ///   - samples: duration (ticks) and size (bytes) of each sample.
    ///   - rollGroup: map every sample to the init segment's 'roll' group (Opus pre-roll).
    public static func mediaSegmentHeader(sequence: Int, trackID: Int, baseDecodeTime: UInt64,
                                          samples: [(duration: Int, size: Int)], rollGroup: Bool = false) -> [UInt8] {
        let dataBytes = samples.reduce(0) { $0 + $1.size }
        let moofSize = 88 + 8 * samples.count + (rollGroup ? sampleToGroupSize : 0)
        var w = MP4BoxWriter()
        w.box("moof") { w in
            w.fullBox("mfhd") { w in w.u32(UInt32(truncatingIfNeeded: sequence)) }
            w.box("traf") { w in
                // default-base-is-moof: data offsets count from this moof (CMAF, RFC 8216 section 3.3).
                w.fullBox("tfhd", flags: 0x02_0000) { w in w.u32(UInt32(truncatingIfNeeded: trackID)) }
                w.fullBox("tfdt", version: 1) { w in w.u64(baseDecodeTime) }
                // data-offset, sample-duration and sample-size present.
                w.fullBox("trun", flags: 0x00_0301) { w in
                    w.u32(UInt32(truncatingIfNeeded: samples.count))
                    w.u32(UInt32(truncatingIfNeeded: moofSize + 8))
                    for sample in samples {
                        w.u32(UInt32(truncatingIfNeeded: sample.duration))
                        w.u32(UInt32(truncatingIfNeeded: sample.size))
                    }
                }
                if rollGroup {
                    w.fullBox("sbgp") { w in
                        w.fourCC("roll")
                        w.u32(1)
                        w.u32(UInt32(truncatingIfNeeded: samples.count))
                        w.u32(1)                     // the first entry of the init segment's sgpd
                    }
                }
            }
        }
        w.u32(UInt32(truncatingIfNeeded: 8 + dataBytes))
        w.fourCC("mdat")
        return w.bytes
    }
}
