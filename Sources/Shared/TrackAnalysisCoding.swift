/// A compact binary form of `TrackAnalysis`, for handing an analysis from one process to
/// another (streamd's analyzer worker to the server). Little-endian integers, strings as a
/// 32-bit length and UTF-8; a seek point is 18 to 34 bytes (time, byte, optional sample and
/// link). Decoding is bounds-checked like any parser here: bytes that are not an analysis give a
/// `FormatError`, never a trap.
extension TrackAnalysis {
    /// Format version; bump it when a field is added (both ends are the same binary).
    static let codingVersion: UInt8 = 4
    private static let component = "analysis wire"

    /// The analysis as bytes; `TrackAnalysis(encoded:)` gives it back equal.
    public func encoded() -> [UInt8] {
        var out = AnalysisBytesWriter()
        out.bytes.reserveCapacity(256 + seekIndex.points.count * 16)
        out.u8(Self.codingVersion)
        out.string(container.rawValue)
        out.string(codec)
        for value in [sampleRate, channels] { out.int(value) }
        out.double(durationSeconds)
        for value in [bitrate, frames, firstFrameOffset, encoderDelay, encoderPadding, totalSamples] { out.int(value) }
        for text in [tags.title, tags.artist, tags.album, tags.track] { out.optionalString(text) }
        out.optionalInt(tags.coverArtBytes)
        for text in [tags.albumArtist, tags.disc, tags.date, tags.genre] { out.optionalString(text) }
        let gain = tags.replayGain
        for value in [gain?.trackGain, gain?.trackPeak, gain?.albumGain, gain?.albumPeak] { out.optionalDouble(value) }
        out.count(seekIndex.points.count)
        for point in seekIndex.points {
            out.double(point.t)
            out.int(point.byte)
            out.optionalInt(point.sample)
            out.optionalInt(point.link)
        }
        for value in [seekIndex.firstFrameOffset, seekIndex.audioEndOffset, seekIndex.encoderDelay, seekIndex.encoderPadding] {
            out.int(value)
        }
        out.double(seekIndex.durationSeconds)
        out.count(notes.count)
        for note in notes { out.string(note) }
        out.optionalBytes(audioSpecificConfig)
        out.optionalInt(bitsPerSample)
        return out.bytes
    }

    /// Decodes what `encoded()` wrote; throws on a wrong version, truncation or trailing bytes.
    public init(encoded bytes: ArraySlice<UInt8>) throws(FormatError) {
        var reader = AnalysisBytesReader(reader: ByteReader(bytes, component: Self.component))
        let version = try reader.reader.readU8()
        guard version == Self.codingVersion else {
            throw .unsupported(component: Self.component, reason: "version \(version), expected \(Self.codingVersion)")
        }
        let containerName = try reader.string()
        guard let container = Container(rawValue: containerName) else {
            throw .invalid(component: Self.component, reason: "unknown container '\(containerName)'", offset: reader.reader.offset)
        }
        let codec = try reader.string()
        let sampleRate = try reader.int(), channels = try reader.int()
        let duration = try reader.double()
        let bitrate = try reader.int(), frames = try reader.int(), firstFrame = try reader.int()
        let delay = try reader.int(), padding = try reader.int(), totalSamples = try reader.int()
        var tags = TrackTags(title: try reader.optionalString(), artist: try reader.optionalString(),
                             album: try reader.optionalString(), track: try reader.optionalString(),
                             coverArtBytes: try reader.optionalInt(), albumArtist: try reader.optionalString(),
                             disc: try reader.optionalString(), date: try reader.optionalString(),
                             genre: try reader.optionalString())
        let gain = ReplayGain(trackGain: try reader.optionalDouble(), trackPeak: try reader.optionalDouble(),
                              albumGain: try reader.optionalDouble(), albumPeak: try reader.optionalDouble())
        tags.replayGain = gain.isEmpty ? nil : gain
        let pointCount = try reader.count(itemBytes: 18)
        var points: [SeekPoint] = []
        points.reserveCapacity(pointCount)
        for _ in 0..<pointCount {
            points.append(SeekPoint(t: try reader.double(), byte: try reader.int(), sample: try reader.optionalInt(),
                                    link: try reader.optionalInt()))
        }
        let seekIndex = SeekIndex(points: points, firstFrameOffset: try reader.int(), audioEndOffset: try reader.int(),
                                  encoderDelay: try reader.int(), encoderPadding: try reader.int(),
                                  durationSeconds: try reader.double())
        let noteCount = try reader.count(itemBytes: 4)
        var notes: [String] = []
        for _ in 0..<noteCount { notes.append(try reader.string()) }
        let audioSpecificConfig = try reader.optionalBytes()
        let bitsPerSample = try reader.optionalInt()
        guard reader.reader.isAtEnd else {
            throw .invalid(component: Self.component, reason: "\(reader.reader.remaining) bytes after the analysis",
                           offset: reader.reader.offset)
        }
        self.init(container: container, codec: codec, sampleRate: sampleRate, channels: channels,
                  durationSeconds: duration, bitrate: bitrate, frames: frames, firstFrameOffset: firstFrame,
                  encoderDelay: delay, encoderPadding: padding, totalSamples: totalSamples, tags: tags,
                  seekIndex: seekIndex, notes: notes)
        self.audioSpecificConfig = audioSpecificConfig
        self.bitsPerSample = bitsPerSample
    }
}

/// Appends the wire's primitive values.
private struct AnalysisBytesWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func int(_ value: Int) { u64(UInt64(bitPattern: Int64(value))) }
    mutating func double(_ value: Double) { u64(value.bitPattern) }

    mutating func count(_ value: Int) {
        let n = UInt32(clamping: value)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: n >> UInt32(shift))) }
    }

    mutating func string(_ text: String) {
        let utf8 = Array(text.utf8)
        count(utf8.count)
        bytes += utf8
    }

    mutating func optionalString(_ text: String?) {
        guard let text else { return u8(0) }
        u8(1)
        string(text)
    }

    mutating func optionalInt(_ value: Int?) {
        guard let value else { return u8(0) }
        u8(1)
        int(value)
    }

    mutating func optionalDouble(_ value: Double?) {
        guard let value else { return u8(0) }
        u8(1)
        double(value)
    }

    mutating func optionalBytes(_ value: [UInt8]?) {
        guard let value else { return u8(0) }
        u8(1)
        count(value.count)
        bytes += value
    }
}

/// Reads the wire's primitive values through a bounds-checked `ByteReader`.
private struct AnalysisBytesReader {
    var reader: ByteReader

    mutating func int() throws(FormatError) -> Int { Int(Int64(bitPattern: try reader.readU64LE())) }
    mutating func double() throws(FormatError) -> Double { Double(bitPattern: try reader.readU64LE()) }

    /// An element count, refused when the bytes left cannot hold that many items.
    mutating func count(itemBytes: Int) throws(FormatError) -> Int {
        let n = Int(try reader.readU32LE())
        guard n <= reader.remaining / itemBytes else {
            throw .truncated(component: reader.component, offset: reader.offset, needed: n * itemBytes)
        }
        return n
    }

    mutating func string() throws(FormatError) -> String {
        let length = Int(try reader.readU32LE())
        return String(decoding: try reader.readBytes(length), as: UTF8.self)
    }

    mutating func optionalString() throws(FormatError) -> String? {
        try flag() ? try string() : nil
    }

    mutating func optionalInt() throws(FormatError) -> Int? {
        try flag() ? try int() : nil
    }

    mutating func optionalDouble() throws(FormatError) -> Double? {
        try flag() ? try double() : nil
    }

    mutating func optionalBytes() throws(FormatError) -> [UInt8]? {
        guard try flag() else { return nil }
        return Array(try reader.readBytes(try count(itemBytes: 1)))
    }

    private mutating func flag() throws(FormatError) -> Bool {
        switch try reader.readU8() {
        case 0: return false
        case 1: return true
        case let other: throw .invalid(component: reader.component, reason: "presence flag \(other)", offset: reader.offset - 1)
        }
    }
}
