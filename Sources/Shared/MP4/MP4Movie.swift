/// The first audio track of an MP4 movie, with the sample tables a player needs to decode and seek.
public struct MP4AudioTrack: Sendable, Equatable {
    public var trackID: Int
    /// mdhd timescale (ticks per second) and duration in those ticks.
    public var timescale: Int
    public var duration: Int
    /// The sample entry type: "mp4a", "alac", "Opus", ...
    public var codec: String
    /// From the esds DecoderConfigDescriptor (0x40 MPEG-4 audio, 0x69/0x6B MP3).
    public var objectTypeIndication: Int?
    public var channels: Int
    public var sampleRate: Int
    /// The AudioSpecificConfig bytes from esds (empty when absent).
    public var decoderSpecificInfo: [UInt8]
    public var avgBitrate: Int?
    public var maxBitrate: Int?
    /// stsz/stz2: one size for all samples, or one per sample.
    public var constantSampleSize: Int
    public var sampleSizes: [UInt32]
    public var sampleCount: Int
    /// stts runs: `count` samples of `delta` ticks each.
    public var timeToSample: [Run]
    /// stsc entries: from `firstChunk` (1-based) on, chunks hold `samplesPerChunk` samples.
    public var sampleToChunk: [ChunkRun]
    /// stco/co64 chunk offsets.
    public var chunkOffsets: [Int]
    /// elst: the first edit's media time (ticks), when there is one (-1 = empty edit).
    public var editMediaTime: Int?
    /// elst: the first non-empty edit's duration in movie-timescale ticks.
    public var editDuration: Int?

    /// A run of samples with the same duration.
    public struct Run: Sendable, Equatable {
        public var count: Int
        public var delta: Int
    }

    /// A run of chunks with the same number of samples.
    public struct ChunkRun: Sendable, Equatable {
        public var firstChunk: Int
        public var samplesPerChunk: Int
    }

    /// Size in bytes of sample `n` (0-based).
    public func size(ofSample n: Int) -> Int? {
        guard n >= 0, n < sampleCount else { return nil }
        return constantSampleSize > 0 ? constantSampleSize : Int(sampleSizes[n])
    }

    /// Byte offset and size of sample `n` (0-based), from stsc, stco and stsz.
    public func sampleLocation(_ n: Int) -> (offset: Int, size: Int)? {
        guard let size = size(ofSample: n) else { return nil }
        var sampleBase = 0          // first sample of the current stsc run
        for (i, run) in sampleToChunk.enumerated() {
            let nextFirst = i + 1 < sampleToChunk.count ? sampleToChunk[i + 1].firstChunk : chunkOffsets.count + 1
            let chunks = nextFirst - run.firstChunk
            guard run.samplesPerChunk > 0, chunks > 0 else { continue }
            let samplesInRun = chunks * run.samplesPerChunk
            if n < sampleBase + samplesInRun {
                let chunk = run.firstChunk - 1 + (n - sampleBase) / run.samplesPerChunk
                guard chunk >= 0, chunk < chunkOffsets.count else { return nil }
                let firstInChunk = sampleBase + (n - sampleBase) / run.samplesPerChunk * run.samplesPerChunk
                var offset = chunkOffsets[chunk]
                for s in firstInChunk..<n { offset += self.size(ofSample: s) ?? 0 }
                return (offset, size)
            }
            sampleBase += samplesInRun
        }
        return nil
    }

    /// Decode time of sample `n` in timescale ticks.
    public func decodeTime(ofSample n: Int) -> Int? {
        guard n >= 0, n <= sampleCount else { return nil }
        var time = 0, seen = 0
        for run in timeToSample {
            if n < seen + run.count { return time + (n - seen) * run.delta }
            time += run.count * run.delta
            seen += run.count
        }
        return n == seen ? time : nil
    }

    /// Total of all sample durations, in ticks.
    public var totalTicks: Int { timeToSample.reduce(0) { $0 + $1.count * $1.delta } }

    /// The sample that contains time `seconds`.
    public func sampleIndex(atSeconds seconds: Double) -> Int? {
        guard timescale > 0, sampleCount > 0 else { return nil }
        let target = Int(seconds * Double(timescale))
        var time = 0, seen = 0
        for run in timeToSample where run.count > 0 {
            if run.delta > 0, target < time + run.count * run.delta {
                return min(sampleCount - 1, seen + max(0, target - time) / run.delta)
            }
            time += run.count * run.delta
            seen += run.count
        }
        return sampleCount - 1
    }
}

/// What a `moov` box says about the movie: its audio track, tags and gapless information.
public struct MP4Movie: Sendable, Equatable {
    public var movieTimescale: Int
    public var audio: MP4AudioTrack?
    public var tags: TrackTags
    /// From iTunSMPB, when present.
    public var gapless: GaplessInfo?
    /// True when `mvex` is present: samples live in moof fragments.
    public var isFragmented: Bool

    static let component = "mp4"

    /// Parses a whole moov box; `moov` starts at the box header.
    public static func parse(moov: ArraySlice<UInt8>) throws -> MP4Movie {
        let bytes = moov.startIndex == 0 ? moov : ArraySlice(Array(moov))
        guard let header = try MP4BoxHeader.parse(bytes, at: 0), header.type == "moov" else {
            throw FormatError.invalid(component: component, reason: "not a moov box", offset: 0)
        }
        let size = header.size ?? bytes.count
        guard size <= bytes.count else {
            throw FormatError.truncated(component: component, offset: bytes.count, needed: size - bytes.count)
        }
        var movie = MP4Movie(movieTimescale: 0, audio: nil, tags: TrackTags(), gapless: nil, isFragmented: false)
        var children = MP4BoxIterator(bytes[header.headerSize..<size])
        while let (child, payload) = try children.next() {
            switch child.type {
            case "mvhd":
                var r = ByteReader(payload, component: component)
                let version = try r.readU8()
                try r.skip(3 + (version == 1 ? 16 : 8))
                movie.movieTimescale = Int(try r.readU32BE())
            case "trak":
                if movie.audio == nil, let track = try parseTrack(payload) { movie.audio = track }
            case "mvex":
                movie.isFragmented = true
            case "udta":
                try parseUserData(payload, into: &movie)
            default: break
            }
        }
        return movie
    }

    private static func parseTrack(_ trak: ArraySlice<UInt8>) throws -> MP4AudioTrack? {
        guard let mdia = try MP4BoxIterator.first("mdia", in: trak) else { return nil }
        guard let hdlr = try MP4BoxIterator.first("hdlr", in: mdia) else { return nil }
        var h = ByteReader(hdlr, component: component)
        try h.skip(8)
        guard try h.readFourCC() == "soun" else { return nil }
        var track = MP4AudioTrack(trackID: 0, timescale: 0, duration: 0, codec: "", objectTypeIndication: nil, channels: 0,
                                  sampleRate: 0, decoderSpecificInfo: [], avgBitrate: nil, maxBitrate: nil,
                                  constantSampleSize: 0, sampleSizes: [], sampleCount: 0, timeToSample: [],
                                  sampleToChunk: [], chunkOffsets: [], editMediaTime: nil, editDuration: nil)
        if let tkhd = try MP4BoxIterator.first("tkhd", in: trak) {
            var r = ByteReader(tkhd, component: component)
            let version = try r.readU8()
            try r.skip(3 + (version == 1 ? 16 : 8))
            track.trackID = Int(try r.readU32BE())
        }
        if let edts = try MP4BoxIterator.first("edts", in: trak), let elst = try MP4BoxIterator.first("elst", in: edts) {
            var r = ByteReader(elst, component: component)
            let version = try r.readU8()
            try r.skip(3)
            let entries = Int(try r.readU32BE())
            let entrySize = version == 1 ? 20 : 12
            try checkCount(entries, entrySize: entrySize, available: r.remaining, box: "elst")
            for _ in 0..<entries {
                let duration = version == 1 ? Int(clamping: try r.readU64BE()) : Int(try r.readU32BE())
                let mediaTime = version == 1 ? Int(Int64(bitPattern: try r.readU64BE())) : Int(Int32(bitPattern: try r.readU32BE()))
                try r.skip(4)
                if mediaTime >= 0 {
                    track.editMediaTime = mediaTime
                    track.editDuration = duration
                    break
                }
            }
        }
        guard let mdhd = try MP4BoxIterator.first("mdhd", in: mdia) else {
            throw FormatError.invalid(component: component, reason: "audio track without mdhd", offset: 0)
        }
        var m = ByteReader(mdhd, component: component)
        let version = try m.readU8()
        try m.skip(3 + (version == 1 ? 16 : 8))
        track.timescale = Int(try m.readU32BE())
        track.duration = version == 1 ? Int(clamping: try m.readU64BE()) : Int(try m.readU32BE())
        guard track.timescale > 0 else {
            throw FormatError.invalid(component: component, reason: "mdhd timescale 0", offset: 0)
        }
        guard let minf = try MP4BoxIterator.first("minf", in: mdia),
              let stbl = try MP4BoxIterator.first("stbl", in: minf) else {
            throw FormatError.invalid(component: component, reason: "audio track without sample table", offset: 0)
        }
        var boxes = MP4BoxIterator(stbl)
        while let (box, payload) = try boxes.next() {
            var r = ByteReader(payload, component: component)
            switch box.type {
            case "stsd": try parseSampleDescription(payload, into: &track)
            case "stts":
                try r.skip(4)
                let entries = Int(try r.readU32BE())
                try checkCount(entries, entrySize: 8, available: r.remaining, box: "stts")
                track.timeToSample.reserveCapacity(entries)
                for _ in 0..<entries {
                    track.timeToSample.append(.init(count: Int(try r.readU32BE()), delta: Int(try r.readU32BE())))
                }
            case "stsc":
                try r.skip(4)
                let entries = Int(try r.readU32BE())
                try checkCount(entries, entrySize: 12, available: r.remaining, box: "stsc")
                track.sampleToChunk.reserveCapacity(entries)
                for _ in 0..<entries {
                    let first = Int(try r.readU32BE())
                    let perChunk = Int(try r.readU32BE())
                    try r.skip(4)
                    track.sampleToChunk.append(.init(firstChunk: first, samplesPerChunk: perChunk))
                }
            case "stsz":
                try r.skip(4)
                track.constantSampleSize = Int(try r.readU32BE())
                track.sampleCount = Int(try r.readU32BE())
                if track.constantSampleSize == 0 {
                    try checkCount(track.sampleCount, entrySize: 4, available: r.remaining, box: "stsz")
                    track.sampleSizes.reserveCapacity(track.sampleCount)
                    for _ in 0..<track.sampleCount { track.sampleSizes.append(try r.readU32BE()) }
                }
            case "stz2":
                try r.skip(4 + 3)
                let fieldSize = Int(try r.readU8())
                track.sampleCount = Int(try r.readU32BE())
                guard [4, 8, 16].contains(fieldSize) else {
                    throw FormatError.invalid(component: component, reason: "stz2 field size \(fieldSize)", offset: 0)
                }
                let needed = (track.sampleCount * fieldSize + 7) / 8
                guard track.sampleCount <= r.remaining * 2, needed <= r.remaining else {
                    throw FormatError.invalid(component: component,
                                              reason: "stz2 sample count \(track.sampleCount) exceeds box size", offset: 0)
                }
                var bits = BitReader(try r.readBytes(needed), component: component)
                track.sampleSizes.reserveCapacity(track.sampleCount)
                for _ in 0..<track.sampleCount { track.sampleSizes.append(try bits.read(fieldSize)) }
            case "stco", "co64":
                try r.skip(4)
                let entries = Int(try r.readU32BE())
                let wide = box.type == "co64"
                try checkCount(entries, entrySize: wide ? 8 : 4, available: r.remaining, box: box.type)
                track.chunkOffsets.reserveCapacity(entries)
                for _ in 0..<entries {
                    track.chunkOffsets.append(wide ? Int(clamping: try r.readU64BE()) : Int(try r.readU32BE()))
                }
            default: break
            }
        }
        return track
    }

    /// Refuses a table whose entry count does not fit in the bytes present (a lying count
    /// must not lead to a huge allocation).
    static func checkCount(_ count: Int, entrySize: Int, available: Int, box: String) throws {
        guard count >= 0, count <= available / entrySize else {
            throw FormatError.invalid(component: component, reason: "\(box) entry count \(count) exceeds box size", offset: 0)
        }
    }

    private static func parseSampleDescription(_ stsd: ArraySlice<UInt8>, into track: inout MP4AudioTrack) throws {
        var r = ByteReader(stsd, component: component)
        try r.skip(4)
        guard try r.readU32BE() >= 1 else { return }
        var entries = MP4BoxIterator(r.rest)
        guard let (entry, payload) = try entries.next() else { return }
        track.codec = entry.type
        var e = ByteReader(payload, component: component)
        try e.skip(6 + 2)                  // reserved, data reference index
        let version = try e.readU16BE()    // QuickTime sound description version
        try e.skip(6)
        track.channels = Int(try e.readU16BE())
        try e.skip(2 + 4)                  // sample size, pre-defined, reserved
        track.sampleRate = Int(try e.readU32BE() >> 16)
        switch version {
        case 1: try e.skip(16)
        case 2: try e.skip(36)
        default: break
        }
        var children = MP4BoxIterator(e.rest)
        while let (child, childPayload) = try children.next() {
            if child.type == "esds" { try parseESDS(childPayload, into: &track) }
        }
    }

    /// esds: ES_Descriptor (tag 3) → DecoderConfigDescriptor (tag 4) → DecoderSpecificInfo (tag 5).
    private static func parseESDS(_ esds: ArraySlice<UInt8>, into track: inout MP4AudioTrack) throws {
        var r = ByteReader(esds, component: component)
        try r.skip(4)
        func descriptor(_ r: inout ByteReader) throws -> (tag: UInt8, body: ByteReader) {
            let tag = try r.readU8()
            var length = 0
            for _ in 0..<4 {
                let b = try r.readU8()
                length = length << 7 | Int(b & 0x7F)
                if b & 0x80 == 0 { break }
            }
            return (tag, try r.subReader(length))
        }
        var (tag, es) = try descriptor(&r)
        guard tag == 3 else { return }
        try es.skip(2)
        let flags = try es.readU8()
        if flags & 0x80 != 0 { try es.skip(2) }                       // dependsOn_ES_ID
        if flags & 0x40 != 0 { try es.skip(Int(try es.readU8())) }    // URL
        if flags & 0x20 != 0 { try es.skip(2) }                       // OCR_ES_ID
        while es.remaining > 2 {
            var config: ByteReader
            (tag, config) = try descriptor(&es)
            guard tag == 4 else { continue }
            track.objectTypeIndication = Int(try config.readU8())
            try config.skip(1 + 3)                                    // stream type, buffer size
            track.maxBitrate = Int(try config.readU32BE())
            track.avgBitrate = Int(try config.readU32BE())
            while config.remaining > 2 {
                let (innerTag, info) = try descriptor(&config)
                if innerTag == 5 { track.decoderSpecificInfo = Array(info.rest) }
            }
            return
        }
    }

    /// udta/meta/ilst: iTunes tags and the iTunSMPB gapless comment.
    private static func parseUserData(_ udta: ArraySlice<UInt8>, into movie: inout MP4Movie) throws {
        guard var meta = try MP4BoxIterator.first("meta", in: udta) else { return }
        // ISO meta is a full box (4 bytes of version/flags); QuickTime's is not. Tell them apart
        // by whether a box header follows directly.
        let startsWithBox = (try? MP4BoxHeader.parse(meta, at: 0))??.type == "hdlr"
        if !startsWithBox { meta = meta.dropFirst(4) }
        guard let ilst = try MP4BoxIterator.first("ilst", in: meta) else { return }
        var items = MP4BoxIterator(ilst)
        while let (item, payload) = try items.next() {
            var name: String?
            var value: ArraySlice<UInt8>?
            var parts = MP4BoxIterator(payload)
            while let (part, partPayload) = try parts.next() {
                switch part.type {
                case "name" where partPayload.count >= 4: name = String(decoding: partPayload.dropFirst(4), as: UTF8.self)
                case "data" where partPayload.count >= 8: value = partPayload.dropFirst(8)
                default: break
                }
            }
            guard let value else { continue }
            let text = String(decoding: value, as: UTF8.self)
            switch item.type {
            case "?nam": movie.tags.title = movie.tags.title ?? text
            case "?ART": movie.tags.artist = movie.tags.artist ?? text
            case "?alb": movie.tags.album = movie.tags.album ?? text
            case "trkn" where value.count >= 4:
                let b = Array(value)
                movie.tags.track = String(Int(b[2]) << 8 | Int(b[3]))
            case "covr": movie.tags.coverArtBytes = value.count
            case "----" where name == "iTunSMPB": movie.gapless = parseITunSMPB(text)
            default: break
            }
        }
    }

    /// " 00000000 00000840 000003C0 0000000000F34A00 …": delay and padding are fields 2 and 3 (hex).
    static func parseITunSMPB(_ text: String) -> GaplessInfo? {
        let fields = text.split(separator: " ")
        guard fields.count >= 3, let delay = Int(fields[1], radix: 16), let padding = Int(fields[2], radix: 16),
              delay >= 0, padding >= 0 else { return nil }
        return GaplessInfo(encoderDelay: delay, encoderPadding: padding)
    }
}
