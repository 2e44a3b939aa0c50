/// What a `moov` box says about the movie: its first audio track, tags and gapless information.
public struct MP4Movie: Sendable, Equatable {
    /// mvhd timescale and duration (in those ticks).
    public var movieTimescale: Int
    public var movieDuration: Int
    /// The first 'soun' track; nil when the movie has none.
    public var audio: MP4AudioTrack?
    /// moov/udta/meta/ilst (or moov/meta/ilst): ©nam, ©ART, ©alb, trkn, covr.
    public var tags: TrackTags
    /// Encoder delay and padding, and where they came from (see `GaplessSource` for the units).
    public var gapless: GaplessInfo?
    public var gaplessSource: GaplessSource?
    /// True when `mvex` is present: samples live in moof fragments, not in the moov sample tables.
    public var isFragmented: Bool
    /// mvex/trex entries: per-track defaults for fragments.
    public var trackExtends: [MP4TrackExtends] = []
    /// mvex/mehd fragment_duration (movie-timescale ticks of the whole fragmented movie), when given.
    public var fragmentDuration: Int?

    /// The trex defaults of the audio track, if the movie is fragmented and has them.
    public var audioTrackExtends: MP4TrackExtends? {
        guard let id = audio?.trackID else { return nil }
        return trackExtends.first { $0.trackID == id }
    }

    /// Where `gapless` was read from.
    public enum GaplessSource: Sendable, Equatable {
        /// The iTunSMPB comment: counts of output PCM samples.
        case iTunSMPB
        /// The edit list: media-timescale ticks, which for AAC is normally the output sample rate.
        case editList
    }

    public init(movieTimescale: Int = 0, movieDuration: Int = 0, audio: MP4AudioTrack? = nil, tags: TrackTags = TrackTags(),
                gapless: GaplessInfo? = nil, gaplessSource: GaplessSource? = nil, isFragmented: Bool = false) {
        self.movieTimescale = movieTimescale
        self.movieDuration = movieDuration
        self.audio = audio
        self.tags = tags
        self.gapless = gapless
        self.gaplessSource = gaplessSource
        self.isFragmented = isFragmented
    }

    static let component = "mp4"

    /// Parses a whole moov box; `moov` starts at the box header.
    ///
    /// Throws `truncated` only when the moov box itself is not all there (more bytes would help);
    /// a box or table inside it that reads past its end is `invalid`.
    public static func parse(moov: ArraySlice<UInt8>) throws -> MP4Movie {
        let root = try MP4Box.root(moov, component: component)
        guard root.type == "moov" else {
            throw FormatError.invalid(component: component, reason: "expected a moov box, found '\(root.type)'", offset: 0)
        }
        do {
            return try parseContents(root)
        } catch let error as FormatError {
            // Every byte of moov is present, so a read past the end of an inner box means a field lies.
            if case let .truncated(component, offset, needed) = error {
                throw FormatError.invalid(component: component,
                                          reason: "a box's contents end early (needed \(needed) more bytes)", offset: offset)
            }
            throw error
        }
    }

    private static func parseContents(_ moov: MP4Box) throws -> MP4Movie {
        var movie = MP4Movie()
        var smpb: GaplessInfo?
        // mvhd comes first in every real file, but the edit list needs its timescale: read it up front.
        if let mvhd = try moov.child("mvhd") {
            var (version, _, r) = try mvhd.fullBox()
            try r.skip(version == 1 ? 16 : 8)                        // creation and modification times
            movie.movieTimescale = Int(try r.readU32BE())
            movie.movieDuration = version == 1 ? try int64(&r, in: mvhd) : Int(try r.readU32BE())
        }
        var children = try moov.children()
        while let child = try children.next() {
            switch child.type {
            case "trak":
                if movie.audio == nil {
                    movie.audio = try parseTrack(child, movieTimescale: movie.movieTimescale)
                }
            case "mvex":
                movie.isFragmented = true
                var boxes = try child.children()
                while let box = try boxes.next() {
                    switch box.type {
                    case "trex":
                        guard movie.trackExtends.count < 1_000 else { throw box.invalid("more than 1000 trex boxes") }
                        movie.trackExtends.append(try MP4TrackExtends.parse(box))
                    case "mehd":
                        var (version, _, r) = try box.fullBox()
                        let ticks = version == 1 ? try int64(&r, in: box) : Int(try r.readU32BE())
                        // Turned into output samples by the player: past a week it is a lie, not a length.
                        if movie.movieTimescale > 0 {
                            try Checked.seconds(ticks: ticks, timescale: movie.movieTimescale, component, "mehd.fragment_duration")
                        }
                        movie.fragmentDuration = ticks
                    default:
                        break
                    }
                }
            case "udta":
                if let meta = try child.child("meta") {
                    let parsed = try MP4Meta.parse(meta)
                    movie.tags = movie.tags.merged(with: parsed.tags)
                    smpb = smpb ?? parsed.gapless
                }
            case "meta":
                let parsed = try MP4Meta.parse(child)
                movie.tags = movie.tags.merged(with: parsed.tags)
                smpb = smpb ?? parsed.gapless
            default:
                break
            }
        }
        if let smpb {
            movie.gapless = smpb
            movie.gaplessSource = .iTunSMPB
        } else if let audio = movie.audio, let fromEdits = gaplessFromEditList(audio) {
            movie.gapless = fromEdits
            movie.gaplessSource = .editList
        }
        return movie
    }

    /// `gapless` in output samples at `outputSampleRate`: an edit list counts media ticks (the
    /// core rate with SBR, so half the output rate), iTunSMPB already counts output samples.
    /// Whether `padding` can be a fragmented movie's encoder padding: that is under two frames. An
    /// edit list that ends earlier was written for the moov's own samples only (fragments
    /// followed), so the fragments decide the length and nothing is trimmed. The analyzer and the
    /// player both apply this rule.
    public static func isFragmentPadding(_ padding: Int, samplesPerFrame: Int) -> Bool {
        padding <= 2 * samplesPerFrame
    }

    public func gapless(outputSampleRate: Int) -> GaplessInfo? {
        guard let gapless else { return nil }
        guard gaplessSource == .editList, let timescale = audio?.timescale, timescale > 0, timescale != outputSampleRate else {
            return gapless
        }
        // Parsing bounds both counts to a week of ticks, so these products fit; a hand-built
        // movie past that gets no trim rather than a trap.
        let scale = Double(outputSampleRate) / Double(timescale)
        guard let delay = try? Checked.int(Double(gapless.encoderDelay) * scale, Self.component, "elst.media_time"),
              let padding = try? Checked.int(Double(gapless.encoderPadding) * scale, Self.component, "elst.segment_duration")
        else { return nil }
        return GaplessInfo(encoderDelay: delay, encoderPadding: padding)
    }

    /// The trim an edit list implies: the first non-empty edit's media time is the priming
    /// (encoder delay); what the samples hold beyond the edit's end is the padding. Only a
    /// plain edit at normal rate says this; anything fancier is left to the caller.
    static func gaplessFromEditList(_ track: MP4AudioTrack) -> GaplessInfo? {
        guard let edit = track.firstMediaEdit, edit.rate == 1, edit.mediaTime >= 0 else { return nil }
        let total = track.totalTicks
        var padding = 0
        if edit.segmentDuration > 0, track.movieTimescale > 0, track.timescale > 0 {
            let kept = Double(edit.segmentDuration) / Double(track.movieTimescale) * Double(track.timescale)
            guard kept.isFinite, kept < 0x1p62 else { return nil }
            padding = max(0, total - edit.mediaTime - Int(kept.rounded()))
        }
        return GaplessInfo(encoderDelay: edit.mediaTime, encoderPadding: padding)
    }

    /// Reads a 64-bit field that the format says is unsigned but that must fit an `Int`.
    static func int64(_ r: inout ByteReader, in box: MP4Box) throws -> Int {
        let v = try r.readU64BE()
        guard v <= UInt64(Int.max) else { throw box.invalid("64-bit value \(v) is too large") }
        return Int(v)
    }

    /// An audio track, or nil for any other kind (video, text, hint).
    private static func parseTrack(_ trak: MP4Box, movieTimescale: Int) throws -> MP4AudioTrack? {
        guard let mdia = try trak.child("mdia"), let hdlr = try mdia.child("hdlr") else { return nil }
        var (_, _, h) = try hdlr.fullBox()
        try h.skip(4)                                                // pre_defined
        guard MP4BoxHeader.fourCC(try h.readBytes(4)) == "soun" else { return nil }

        var track = MP4AudioTrack(movieTimescale: movieTimescale)
        if let tkhd = try trak.child("tkhd") {
            var (version, _, r) = try tkhd.fullBox()
            try r.skip(version == 1 ? 16 : 8)
            track.trackID = Int(try r.readU32BE())
        }
        if let edts = try trak.child("edts"), let elst = try edts.child("elst") {
            track.editList = try parseEditList(elst)
        }
        guard let mdhd = try mdia.child("mdhd") else { throw trak.invalid("audio track without mdhd") }
        var (version, _, m) = try mdhd.fullBox()
        try m.skip(version == 1 ? 16 : 8)
        track.timescale = Int(try m.readU32BE())
        track.duration = version == 1 ? try int64(&m, in: mdhd) : Int(try m.readU32BE())
        guard track.timescale > 0 else { throw mdhd.invalid("timescale 0") }

        guard let minf = try mdia.child("minf"), let stbl = try minf.child("stbl") else {
            throw trak.invalid("audio track without a sample table")
        }
        try parseSampleTable(stbl, into: &track)
        try checkTimes(track, in: trak)
        return track
    }

    /// Refuses sample and edit times past `InputLimits.maxDurationSeconds`: readers turn them
    /// into output samples (ticks × rate / timescale), and a lying table must not overflow them.
    private static func checkTimes(_ track: MP4AudioTrack, in trak: MP4Box) throws {
        try Checked.seconds(ticks: track.totalTicks, timescale: track.timescale, component, "stts.sample_delta")
        for edit in track.editList {
            if !edit.isEmpty {
                try Checked.seconds(ticks: edit.mediaTime, timescale: track.timescale, component, "elst.media_time")
            }
            if track.movieTimescale > 0 {
                try Checked.seconds(ticks: edit.segmentDuration, timescale: track.movieTimescale, component,
                                    "elst.segment_duration")
            }
        }
    }

    static func parseEditList(_ elst: MP4Box) throws -> [MP4AudioTrack.Edit] {
        var (version, _, r) = try elst.fullBox()
        let count = Int(try r.readU32BE())
        let wide = version == 1
        try elst.checkCount(count, entrySize: wide ? 20 : 12, available: r.remaining)
        var edits: [MP4AudioTrack.Edit] = []
        edits.reserveCapacity(count)
        for _ in 0..<count {
            let duration = wide ? try int64(&r, in: elst) : Int(try r.readU32BE())
            let mediaTime = wide ? Int(Int64(bitPattern: try r.readU64BE())) : Int(Int32(bitPattern: try r.readU32BE()))
            let rateInteger = Int16(bitPattern: try r.readU16BE())
            let rateFraction = try r.readU16BE()
            guard mediaTime >= -1 else { throw elst.invalid("media time \(mediaTime)") }
            edits.append(.init(segmentDuration: duration, mediaTime: mediaTime,
                               rate: Double(rateInteger) + Double(rateFraction) / 65536))
        }
        return edits
    }

    private static func parseSampleTable(_ stbl: MP4Box, into track: inout MP4AudioTrack) throws {
        var sawSizes = false
        var boxes = try stbl.children()
        while let box = try boxes.next() {
            switch box.type {
            case "stsd":
                guard let entry = try MP4SampleEntry.parseFirst(stsd: box) else { continue }
                track.codec = entry.codec
                track.channels = entry.channels
                track.sampleRate = entry.sampleRate
                track.bitsPerSample = entry.bitsPerSample
                if let esds = entry.esds {
                    track.objectTypeIndication = esds.objectTypeIndication
                    track.streamType = esds.streamType
                    track.bufferSize = esds.bufferSize
                    track.maxBitrate = esds.maxBitrate
                    track.avgBitrate = esds.avgBitrate
                    track.decoderSpecificInfo = esds.decoderSpecificInfo
                } else {
                    track.decoderSpecificInfo = entry.codecConfig
                }
            case "stts":
                track.timeToSample = try parseTimeToSample(box)
            case "stsc":
                track.sampleToChunk = try parseSampleToChunk(box)
            case "stsz", "stz2":
                guard !sawSizes else { throw box.invalid("second sample size table") }
                sawSizes = true
                (track.sampleCount, track.sampleSizes) = try box.type == "stsz" ? parseSampleSizes(box)
                    : parseCompactSampleSizes(box)
            case "stco", "co64":
                track.chunkOffsets = try parseChunkOffsets(box)
            default:
                break
            }
        }
    }

    static func parseTimeToSample(_ box: MP4Box) throws -> [MP4AudioTrack.TimeToSample] {
        var (_, _, r) = try box.fullBox()
        let count = Int(try r.readU32BE())
        try box.checkCount(count, entrySize: 8, available: r.remaining)
        var runs: [MP4AudioTrack.TimeToSample] = []
        runs.reserveCapacity(count)
        var total = 0
        for _ in 0..<count {
            let run = MP4AudioTrack.TimeToSample(count: Int(try r.readU32BE()), delta: Int(try r.readU32BE()))
            // Refusing a total that overflows here keeps every later time computation exact.
            let (ticks, o1) = run.count.multipliedReportingOverflow(by: run.delta)
            let (sum, o2) = total.addingReportingOverflow(ticks)
            guard !o1, !o2 else { throw box.invalid("total duration overflows") }
            total = sum
            runs.append(run)
        }
        return runs
    }

    static func parseSampleToChunk(_ box: MP4Box) throws -> [MP4AudioTrack.SampleToChunk] {
        var (_, _, r) = try box.fullBox()
        let count = Int(try r.readU32BE())
        try box.checkCount(count, entrySize: 12, available: r.remaining)
        var runs: [MP4AudioTrack.SampleToChunk] = []
        runs.reserveCapacity(count)
        for _ in 0..<count {
            let run = MP4AudioTrack.SampleToChunk(firstChunk: Int(try r.readU32BE()), samplesPerChunk: Int(try r.readU32BE()),
                                                  sampleDescriptionIndex: Int(try r.readU32BE()))
            // Chunk runs must start at 1 and go up, or no sample can be found.
            guard run.firstChunk >= 1, run.firstChunk > (runs.last?.firstChunk ?? 0) else {
                throw box.invalid("first chunk \(run.firstChunk) out of order")
            }
            runs.append(run)
        }
        return runs
    }

    static func parseSampleSizes(_ box: MP4Box) throws -> (Int, MP4AudioTrack.SampleSizes) {
        var (_, _, r) = try box.fullBox()
        let constant = Int(try r.readU32BE())
        let count = Int(try r.readU32BE())
        if constant != 0 { return (count, .constant(constant)) }
        try box.checkCount(count, entrySize: 4, available: r.remaining)
        var sizes: [UInt32] = []
        sizes.reserveCapacity(count)
        for _ in 0..<count { sizes.append(try r.readU32BE()) }
        return (count, .table(sizes))
    }

    /// stz2: sizes packed in 4-, 8- or 16-bit fields (4-bit: high nibble first).
    static func parseCompactSampleSizes(_ box: MP4Box) throws -> (Int, MP4AudioTrack.SampleSizes) {
        var (_, _, r) = try box.fullBox()
        try r.skip(3)                                                // reserved
        let fieldSize = Int(try r.readU8())
        let count = Int(try r.readU32BE())
        guard [4, 8, 16].contains(fieldSize) else { throw box.invalid("field size \(fieldSize)") }
        // Two 4-bit entries share a byte: compare in half-bytes so no product can overflow.
        guard count <= r.remaining * 8 / fieldSize else {
            throw box.invalid("entry count \(count) exceeds box size")
        }
        let bytes = try r.readBytes((count * fieldSize + 7) / 8)
        var sizes: [UInt32] = []
        sizes.reserveCapacity(count)
        let s = bytes.startIndex
        for i in 0..<count {
            switch fieldSize {
            case 4: sizes.append(UInt32(i % 2 == 0 ? bytes[s + i / 2] >> 4 : bytes[s + i / 2] & 0x0F))
            case 8: sizes.append(UInt32(bytes[s + i]))
            default: sizes.append(UInt32(bytes[s + 2 * i]) << 8 | UInt32(bytes[s + 2 * i + 1]))
            }
        }
        return (count, .table(sizes))
    }

    static func parseChunkOffsets(_ box: MP4Box) throws -> [Int] {
        var (_, _, r) = try box.fullBox()
        let count = Int(try r.readU32BE())
        let wide = box.type == "co64"
        try box.checkCount(count, entrySize: wide ? 8 : 4, available: r.remaining)
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for _ in 0..<count {
            offsets.append(wide ? try int64(&r, in: box) : Int(try r.readU32BE()))
        }
        return offsets
    }
}
