/// ReplayGain values a file carries: gains in dB, peaks as linear sample amplitude (1 = full
/// scale). Read from ID3v2 TXXX frames, APE items and iTunes freeform atoms, whose keys are the
/// same four names in any case.
public struct ReplayGain: Sendable, Equatable, Codable {
    public var trackGain: Double?
    public var trackPeak: Double?
    public var albumGain: Double?
    public var albumPeak: Double?

    public init(trackGain: Double? = nil, trackPeak: Double? = nil, albumGain: Double? = nil, albumPeak: Double? = nil) {
        self.trackGain = trackGain
        self.trackPeak = trackPeak
        self.albumGain = albumGain
        self.albumPeak = albumPeak
    }

    public var isEmpty: Bool { trackGain == nil && trackPeak == nil && albumGain == nil && albumPeak == nil }

    /// True for the keys this reads ("replaygain_track_gain", "REPLAYGAIN_ALBUM_PEAK", …).
    static func isKey(_ key: String) -> Bool { field(key) != nil }

    private enum Field { case trackGain, trackPeak, albumGain, albumPeak }

    private static func field(_ key: String) -> Field? {
        // Every key is 21 bytes: other fields (most of a tag) are passed over without a copy.
        guard key.utf8.count == 21 else { return nil }
        if VorbisComment.sameName(key, "REPLAYGAIN_TRACK_GAIN") { return .trackGain }
        if VorbisComment.sameName(key, "REPLAYGAIN_TRACK_PEAK") { return .trackPeak }
        if VorbisComment.sameName(key, "REPLAYGAIN_ALBUM_GAIN") { return .albumGain }
        if VorbisComment.sameName(key, "REPLAYGAIN_ALBUM_PEAK") { return .albumPeak }
        return nil
    }

    /// Sets the value `key` names from its text ("-6.54 dB", "+2.10 LU", "0.988831"). The first
    /// value of each kind wins; unknown keys, text that is not a number, and numbers outside
    /// sane bounds (gains ±60 dB, peaks 0...100) are ignored, so a bad tag costs only itself.
    public mutating func set(key: String, value: String) {
        guard let field = Self.field(key), let number = Self.number(value) else { return }
        switch field {
        case .trackGain where abs(number) <= 60: trackGain = trackGain ?? number
        case .albumGain where abs(number) <= 60: albumGain = albumGain ?? number
        case .trackPeak where (0...100).contains(number): trackPeak = trackPeak ?? number
        case .albumPeak where (0...100).contains(number): albumPeak = albumPeak ?? number
        default: break
        }
    }

    /// The value from a list of items (APE), keys in any case.
    init(items: [APEItem]) {
        for item in items { set(key: item.key, value: item.value) }
    }

    /// "-6.54 dB" → -6.54: a decimal number, optionally followed by a unit (dB or LU), with
    /// spaces and NULs around it. nil for anything else (hex, exponents, inf, nan, long text).
    static func number(_ text: String) -> Double? {
        var s = Substring(text)
        while let c = s.first, c == " " || c == "\0" || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\0" || c == "\t" { s.removeLast() }
        let upper = s.uppercased()
        if upper.hasSuffix("DB") || upper.hasSuffix("LU") { s = s.dropLast(2) }
        while s.last == " " { s.removeLast() }
        guard !s.isEmpty, s.count <= 24,
              s.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+") }),
              let value = Double(s), value.isFinite else { return nil }
        return value
    }

    /// Field by field, `first` wins; nil when both are nil.
    static func merged(_ first: ReplayGain?, _ second: ReplayGain?) -> ReplayGain? {
        guard let first else { return second }
        guard let second else { return first }
        return ReplayGain(trackGain: first.trackGain ?? second.trackGain, trackPeak: first.trackPeak ?? second.trackPeak,
                          albumGain: first.albumGain ?? second.albumGain, albumPeak: first.albumPeak ?? second.albumPeak)
    }
}
