import StreamAudio
/// An equalizer setting: RBJ biquad bands (the 10-band graphic EQ is ten peaking bands at the
/// ISO octave centres) and a preamp. Parsed from `--eq PRESET|31:+3,1k:-2,…`.
public struct EQSettings: Sendable, Equatable, CustomStringConvertible {
    /// The shape of one band (RBJ Audio EQ Cookbook filters).
    public enum Kind: String, Sendable {
        case peaking, lowShelf, highShelf
    }

    /// One band: its shape, centre (or corner) frequency in Hz, gain in dB and Q.
    public struct Band: Sendable, Equatable {
        public var kind: Kind
        public var frequency: Double
        public var gainDB: Double
        public var q: Double
        public init(_ kind: Kind = .peaking, frequency: Double, gainDB: Double, q: Double = EQSettings.octaveQ) {
            self.kind = kind
            self.frequency = frequency
            self.gainDB = gainDB
            self.q = q
        }
    }

    public var bands: [Band]
    /// Gain before the bands, in dB (a negative preamp leaves headroom for boosts).
    public var preampDB: Double

    public init(bands: [Band] = [], preampDB: Double = 0) {
        self.bands = bands
        self.preampDB = preampDB
    }

    /// Q of a one-octave peaking band (bandwidth 1 octave: √2).
    public static let octaveQ = 2.0.squareRoot()
    /// The graphic EQ's ten centres, 31 Hz to 16 kHz.
    public static let graphicFrequencies: [Double] = [31, 62, 125, 250, 500, 1000, 2000, 4000, 8000, 16000]
    public static let flat = EQSettings()

    /// Ten peaking bands at the graphic centres with these gains (dB).
    public static func graphic(_ gains: [Double], preampDB: Double = 0) -> EQSettings {
        EQSettings(bands: zip(graphicFrequencies, gains).map { Band(frequency: $0, gainDB: $1) }, preampDB: preampDB)
    }

    /// Named 10-band presets (gains in dB from 31 Hz to 16 kHz).
    public static let presets: [(name: String, gains: [Double])] = [
        ("flat", [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ("bass", [6, 5, 4, 2, 0, 0, 0, 0, 0, 0]),
        ("treble", [0, 0, 0, 0, 0, 0, 2, 4, 5, 6]),
        ("loudness", [5, 4, 2, 0, -1, 0, 1, 3, 4, 4]),
        ("vocal", [-2, -2, -1, 1, 3, 4, 3, 1, 0, -1]),
        ("speech", [-6, -4, -2, 0, 2, 3, 3, 2, 0, -2]),
        ("rock", [4, 3, 2, 0, -1, -1, 1, 2, 3, 4]),
        ("pop", [-1, 1, 3, 4, 3, 0, -1, -1, 0, 1]),
        ("jazz", [3, 2, 1, 2, -1, -1, 0, 1, 2, 3]),
        ("classical", [0, 0, 0, 0, 0, 0, -2, -3, -3, -4]),
    ]

    /// No band changes anything and the preamp is 0 dB: the EQ can be bypassed.
    public var isFlat: Bool { preampDB == 0 && bands.allSatisfy { $0.gainDB == 0 } }

    public var description: String {
        if isFlat { return "flat" }
        var items = bands.filter { $0.gainDB != 0 }.map { band -> String in
            let prefix = band.kind == .lowShelf ? "ls" : band.kind == .highShelf ? "hs" : ""
            let f = band.frequency >= 1000 ? "\(Self.short(band.frequency / 1000))k" : Self.short(band.frequency)
            return "\(prefix)\(f):\(band.gainDB > 0 ? "+" : "")\(Self.short(band.gainDB))"
        }
        if preampDB != 0 { items.insert("preamp:\(Self.short(preampDB))", at: 0) }
        return items.joined(separator: ",")
    }

    private static func short(_ x: Double) -> String {
        x == x.rounded() ? String(Int(x)) : printfFormat("%.2g", x)
    }

    /// Parses `PRESET`, or a comma list of presets, `[ls|hs]FREQ:GAIN[:Q]` bands (FREQ in Hz,
    /// `k` for kHz; GAIN in dB) and `preamp:GAIN`. A band at a graphic centre replaces it.
    public static func parse(_ text: String) throws(DSPError) -> EQSettings {
        var settings = EQSettings()
        let items = text.split(separator: ",").map { trimmingWhitespace($0).lowercased() }
        guard !items.isEmpty else { throw DSPError("empty --eq") }
        for item in items {
            if let preset = presets.first(where: { $0.name == item }) {
                for (f, g) in zip(graphicFrequencies, preset.gains) { settings.set(Band(frequency: f, gainDB: g)) }
                continue
            }
            let parts = item.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2 || parts.count == 3 else {
                throw DSPError("--eq: '\(item)' is neither a preset (\(presets.map(\.name).joined(separator: ", "))) nor FREQ:GAIN[:Q]")
            }
            guard let gain = Double(parts[1].replacing("db", with: "")), gain.isFinite, abs(gain) <= 24 else {
                throw DSPError("--eq: gain '\(parts[1])' must be a number of dB within -24...24")
            }
            if parts[0] == "preamp" {
                guard parts.count == 2 else { throw DSPError("--eq: preamp takes no Q") }
                settings.preampDB = gain
                continue
            }
            var name = Substring(parts[0])
            var kind = Kind.peaking
            if name.hasPrefix("ls") { kind = .lowShelf; name = name.dropFirst(2) }
            else if name.hasPrefix("hs") { kind = .highShelf; name = name.dropFirst(2) }
            if name.hasSuffix("hz") { name = name.dropLast(2) }
            var scale = 1.0
            if name.hasSuffix("k") { scale = 1000; name = name.dropLast() }
            guard let value = Double(name), value.isFinite, (10...24_000).contains(value * scale) else {
                throw DSPError("--eq: frequency '\(parts[0])' must be within 10 Hz...24 kHz")
            }
            var q = kind == .peaking ? octaveQ : 1 / 2.0.squareRoot()
            if parts.count == 3 {
                guard let value = Double(parts[2]), value.isFinite, (0.1...20).contains(value) else {
                    throw DSPError("--eq: Q '\(parts[2])' must be within 0.1...20")
                }
                q = value
            }
            settings.set(Band(kind, frequency: value * scale, gainDB: gain, q: q))
        }
        return settings
    }

    /// Adds a band, replacing one of the same kind at the same frequency.
    public mutating func set(_ band: Band) {
        if let i = bands.firstIndex(where: { $0.kind == band.kind && $0.frequency == band.frequency }) {
            bands[i] = band
        } else {
            bands.append(band)
        }
    }
}
