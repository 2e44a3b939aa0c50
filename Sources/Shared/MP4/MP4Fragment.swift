/// moov/mvex/trex: the defaults a track's fragments fall back on (ISO 14496-12 §8.8.3).
public struct MP4TrackExtends: Sendable, Equatable {
    public var trackID: Int
    public var defaultSampleDescriptionIndex: Int
    public var defaultSampleDuration: Int
    public var defaultSampleSize: Int
    public var defaultSampleFlags: Int

    public init(trackID: Int, defaultSampleDescriptionIndex: Int = 1, defaultSampleDuration: Int = 0,
                defaultSampleSize: Int = 0, defaultSampleFlags: Int = 0) {
        self.trackID = trackID
        self.defaultSampleDescriptionIndex = defaultSampleDescriptionIndex
        self.defaultSampleDuration = defaultSampleDuration
        self.defaultSampleSize = defaultSampleSize
        self.defaultSampleFlags = defaultSampleFlags
    }

    static func parse(_ trex: MP4Box) throws -> MP4TrackExtends {
        var (_, _, r) = try trex.fullBox()
        return MP4TrackExtends(trackID: Int(try r.readU32BE()), defaultSampleDescriptionIndex: Int(try r.readU32BE()),
                               defaultSampleDuration: Int(try r.readU32BE()), defaultSampleSize: Int(try r.readU32BE()),
                               defaultSampleFlags: Int(try r.readU32BE()))
    }
}

/// One sample of a movie fragment: where its bytes are in the file and how long it lasts.
public struct MP4FragmentSample: Sendable, Equatable {
    /// Absolute byte offset (from the start of the file or stream).
    public var offset: Int
    public var size: Int
    /// Duration in media-timescale ticks.
    public var duration: Int

    public init(offset: Int, size: Int, duration: Int) {
        self.offset = offset
        self.size = size
        self.duration = duration
    }
}

/// A movie fragment (moof) reduced to one track's samples (ISO 14496-12 §8.8.4–8.8.12).
public struct MP4Fragment: Sendable, Equatable {
    /// mfhd sequence_number.
    public var sequenceNumber: Int
    /// tfdt baseMediaDecodeTime (media-timescale ticks) of the first sample; nil without tfdt.
    public var baseMediaDecodeTime: Int?
    /// The track's samples in decode order, from every traf of that track and every trun.
    public var samples: [MP4FragmentSample]

    public init(sequenceNumber: Int = 0, baseMediaDecodeTime: Int? = nil, samples: [MP4FragmentSample] = []) {
        self.sequenceNumber = sequenceNumber
        self.baseMediaDecodeTime = baseMediaDecodeTime
        self.samples = samples
    }

    /// Total duration of the samples, in media ticks.
    public var duration: Int { samples.reduce(0) { satAdd($0, $1.duration) } }
    /// First byte after the last sample (where the fragment's data ends), or nil without samples.
    public var dataEnd: Int? { samples.map { satAdd($0.offset, $0.size) }.max() }

    static let component = "mp4"
    /// Most samples taken from one moof. A trun without per-sample fields costs 0 bytes a sample,
    /// so its count alone cannot bound the allocation; real audio fragments hold a few hundred.
    public static let maxSamples = 1 << 18

    /// Parses a whole moof box that starts at `moofOffset` in the file, keeping the samples of
    /// track `trackID` (with `defaults` from its trex). A moof that is not all there is `truncated`;
    /// a field that lies (a count beyond its box, offsets that overflow) is `invalid`.
    public static func parse(moof bytes: ArraySlice<UInt8>, at moofOffset: Int, trackID: Int,
                             defaults: MP4TrackExtends?) throws -> MP4Fragment {
        let root = try MP4Box.root(bytes, component: component)
        guard root.type == "moof" else {
            throw FormatError.invalid(component: component, reason: "expected a moof box, found '\(root.type)'", offset: moofOffset)
        }
        let moofSize = root.header.size ?? bytes.count
        do {
            return try parseContents(root, moofOffset: moofOffset, moofSize: moofSize, trackID: trackID, defaults: defaults)
        } catch let error as FormatError {
            if case let .truncated(component, offset, needed) = error {
                throw FormatError.invalid(component: component,
                                          reason: "a box's contents end early (needed \(needed) more bytes)", offset: offset)
            }
            throw error
        }
    }

    private static func parseContents(_ moof: MP4Box, moofOffset: Int, moofSize: Int, trackID: Int,
                                      defaults: MP4TrackExtends?) throws -> MP4Fragment {
        var fragment = MP4Fragment()
        // Without base-data-offset or default-base-is-moof, a traf's data starts where the
        // previous traf's data ended (the first one at the moof): §8.8.7.1.
        var previousDataEnd = moofOffset
        var children = try moof.children()
        while let child = try children.next() {
            switch child.type {
            case "mfhd":
                var (_, _, r) = try child.fullBox()
                fragment.sequenceNumber = Int(try r.readU32BE())
            case "traf":
                var traf = try TrackFragment.parse(child, moofOffset: moofOffset, previousDataEnd: previousDataEnd,
                                                   defaults: defaults, budget: maxSamples - fragment.samples.count)
                previousDataEnd = traf.dataEnd
                guard traf.trackID == trackID else { continue }
                if fragment.samples.isEmpty, fragment.baseMediaDecodeTime == nil {
                    fragment.baseMediaDecodeTime = traf.baseMediaDecodeTime
                }
                fragment.samples.append(contentsOf: traf.samples)
                traf.samples = []
            default:
                break
            }
        }
        return fragment
    }

    /// One traf: its header fields and samples.
    private struct TrackFragment {
        var trackID = 0
        var baseMediaDecodeTime: Int?
        var samples: [MP4FragmentSample] = []
        var dataEnd = 0

        // tfhd flags
        static let baseDataOffsetPresent: UInt32 = 0x000001
        static let sampleDescriptionIndexPresent: UInt32 = 0x000002
        static let defaultDurationPresent: UInt32 = 0x000008
        static let defaultSizePresent: UInt32 = 0x000010
        static let defaultFlagsPresent: UInt32 = 0x000020
        static let defaultBaseIsMoof: UInt32 = 0x020000
        // trun flags
        static let dataOffsetPresent: UInt32 = 0x000001
        static let firstSampleFlagsPresent: UInt32 = 0x000004
        static let durationPresent: UInt32 = 0x000100
        static let sizePresent: UInt32 = 0x000200
        static let flagsPresent: UInt32 = 0x000400
        static let compositionOffsetPresent: UInt32 = 0x000800

        static func parse(_ traf: MP4Box, moofOffset: Int, previousDataEnd: Int, defaults: MP4TrackExtends?,
                          budget: Int) throws -> TrackFragment {
            guard let tfhd = try traf.child("tfhd") else { throw traf.invalid("track fragment without tfhd") }
            var result = TrackFragment()
            var (_, flags, h) = try tfhd.fullBox()
            result.trackID = Int(try h.readU32BE())
            let applies = defaults?.trackID == result.trackID
            var base = flags & defaultBaseIsMoof != 0 ? moofOffset : previousDataEnd
            if flags & baseDataOffsetPresent != 0 { base = try MP4Movie.int64(&h, in: tfhd) }
            if flags & sampleDescriptionIndexPresent != 0 { try h.skip(4) }
            var defaultDuration = applies ? defaults?.defaultSampleDuration ?? 0 : 0
            var defaultSize = applies ? defaults?.defaultSampleSize ?? 0 : 0
            if flags & defaultDurationPresent != 0 { defaultDuration = Int(try h.readU32BE()) }
            if flags & defaultSizePresent != 0 { defaultSize = Int(try h.readU32BE()) }
            if flags & defaultFlagsPresent != 0 { try h.skip(4) }

            // A trun without a data offset continues where the previous one ended.
            var cursor = base
            var children = try traf.children()
            while let child = try children.next() {
                switch child.type {
                case "tfdt":
                    var (version, _, r) = try child.fullBox()
                    result.baseMediaDecodeTime = version == 1 ? try MP4Movie.int64(&r, in: child) : Int(try r.readU32BE())
                case "trun":
                    var (_, runFlags, r) = try child.fullBox()
                    let count = Int(try r.readU32BE())
                    if runFlags & dataOffsetPresent != 0 {
                        let (start, overflow) = base.addingReportingOverflow(Int(Int32(bitPattern: try r.readU32BE())))
                        guard !overflow, start >= 0 else { throw child.invalid("data offset outside the file") }
                        cursor = start
                    }
                    if runFlags & firstSampleFlagsPresent != 0 { try r.skip(4) }
                    let fields = [durationPresent, sizePresent, flagsPresent, compositionOffsetPresent]
                        .filter { runFlags & $0 != 0 }.count
                    if fields > 0 {
                        try child.checkCount(count, entrySize: 4 * fields, available: r.remaining)
                    }
                    guard count <= budget - result.samples.count else {
                        throw child.invalid("\(count) samples: more than \(MP4Fragment.maxSamples) in one fragment")
                    }
                    result.samples.reserveCapacity(result.samples.count + count)
                    for _ in 0..<count {
                        let duration = runFlags & durationPresent != 0 ? Int(try r.readU32BE()) : defaultDuration
                        let size = runFlags & sizePresent != 0 ? Int(try r.readU32BE()) : defaultSize
                        if runFlags & flagsPresent != 0 { try r.skip(4) }
                        if runFlags & compositionOffsetPresent != 0 { try r.skip(4) }
                        let (next, overflow) = cursor.addingReportingOverflow(size)
                        guard !overflow else { throw child.invalid("sample offsets overflow") }
                        result.samples.append(MP4FragmentSample(offset: cursor, size: size, duration: duration))
                        cursor = next
                    }
                default:
                    break
                }
            }
            result.dataEnd = cursor
            return result
        }
    }
}

/// mfra/tfra: the random-access table a fragmented file may carry at its end (§8.8.10–8.8.11),
/// mapping presentation times to the moof that holds them.
public struct MP4RandomAccess: Sendable, Equatable {
    /// One tfra entry: a sync sample's time (media ticks) and the offset of its moof.
    public struct Entry: Sendable, Equatable {
        public var time: Int
        public var moofOffset: Int
        public init(time: Int, moofOffset: Int) {
            self.time = time
            self.moofOffset = moofOffset
        }
    }

    public var trackID: Int
    /// Entries in increasing time.
    public var entries: [Entry]

    public init(trackID: Int, entries: [Entry]) {
        self.trackID = trackID
        self.entries = entries
    }

    static let component = "mp4"

    /// The size of the mfra box, from the mfro box that ends the file (its last 16 bytes);
    /// nil when those bytes are not an mfro box.
    public static func mfraSize(fromLast16 bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count == 16, let header = try? MP4BoxHeader.parse(bytes, at: 0),
              header.type == "mfro", header.size == 16 else { return nil }
        var r = ByteReader(bytes.dropFirst(12), component: component)
        guard let size = try? r.readU32BE(), size >= 16 else { return nil }
        return Int(size)
    }

    /// The tfra table of track `trackID` in a whole mfra box; nil when the box has none for it.
    public static func parse(mfra bytes: ArraySlice<UInt8>, trackID: Int) throws -> MP4RandomAccess? {
        let root = try MP4Box.root(bytes, component: component)
        guard root.type == "mfra" else {
            throw FormatError.invalid(component: component, reason: "expected an mfra box, found '\(root.type)'", offset: 0)
        }
        var children = try root.children()
        while let tfra = try children.next() {
            guard tfra.type == "tfra" else { continue }
            var (version, _, r) = try tfra.fullBox()
            guard Int(try r.readU32BE()) == trackID else { continue }
            let sizes = try r.readU32BE()
            // traf, trun and sample numbers take 1–4 bytes each, as the low 6 bits say.
            let skipPerEntry = Int((sizes >> 4) & 3) + Int((sizes >> 2) & 3) + Int(sizes & 3) + 3
            let count = Int(try r.readU32BE())
            let wide = version == 1
            try tfra.checkCount(count, entrySize: (wide ? 16 : 8) + skipPerEntry, available: r.remaining)
            var entries: [Entry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let time = wide ? try MP4Movie.int64(&r, in: tfra) : Int(try r.readU32BE())
                let offset = wide ? try MP4Movie.int64(&r, in: tfra) : Int(try r.readU32BE())
                try r.skip(skipPerEntry)
                guard time >= (entries.last?.time ?? 0) else { throw tfra.invalid("times out of order") }
                entries.append(Entry(time: time, moofOffset: offset))
            }
            return MP4RandomAccess(trackID: trackID, entries: entries)
        }
        return nil
    }

    /// The last entry at or before `time` (media ticks), or the first entry.
    public func entry(atOrBefore time: Int) -> Entry? {
        var best = entries.first
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].time <= time {
                best = entries[mid]
                low = mid + 1
            } else {
                high = mid
            }
        }
        return best
    }
}
