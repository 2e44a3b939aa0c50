import Glibc
import StreamShared

/// Which ReplayGain value `--replaygain` plays by.
public enum ReplayGainMode: String, Sendable, CaseIterable {
    /// No ReplayGain: the file plays at its own level.
    case off
    /// Each track at the reference level.
    case track
    /// The album's gain, so the loudness steps between its tracks stay as mastered.
    case album
    /// Album gain while consecutive tracks share an album, else track gain.
    case auto
}

/// `--replaygain`, `--preamp` and clip prevention, and the gain they give a track.
public struct ReplayGainSettings: Sendable, Equatable {
    public var mode: ReplayGainMode
    /// Added to the tag's gain, in dB (-15...15).
    public var preampDB: Double
    /// Lower the gain so that the tag's peak times the gain stays at or below full scale.
    public var preventClipping: Bool

    public init(mode: ReplayGainMode = .off, preampDB: Double = 0, preventClipping: Bool = true) {
        self.mode = mode
        self.preampDB = preampDB
        self.preventClipping = preventClipping
    }

    /// What a track gets: the linear factor and which tag value it came from.
    public struct Decision: Sendable, Equatable {
        public var factor: Float
        /// "track" or "album"; nil when the track plays at unity (off, or no tag).
        public var source: String?
        /// The gain in dB that was asked for (tag + preamp), before clip prevention.
        public var requestedDB: Double?
        /// True when the peak lowered the factor below the requested gain.
        public var clipLimited: Bool
    }

    /// The gain for a track with these tag values. `sameAlbumAsNeighbours` is what `auto`
    /// decides by (the queue knows; a single track counts as its own album). A track without
    /// the value asked for falls back to the other one (album ↔ track); without either it
    /// plays at unity, preamp not applied: the preamp shifts the reference level, and an
    /// untagged track has no known level to shift.
    public func decision(trackGain: Double?, trackPeak: Double?, albumGain: Double?, albumPeak: Double?,
                         sameAlbumAsNeighbours: Bool = true) -> Decision {
        let unity = Decision(factor: 1, source: nil, requestedDB: nil, clipLimited: false)
        let preferAlbum: Bool
        switch mode {
        case .off: return unity
        case .track: preferAlbum = false
        case .album: preferAlbum = true
        case .auto: preferAlbum = sameAlbumAsNeighbours
        }
        let album = albumGain.map { (gain: $0, peak: albumPeak ?? trackPeak, source: "album") }
        let track = trackGain.map { (gain: $0, peak: trackPeak ?? albumPeak, source: "track") }
        guard let chosen = preferAlbum ? (album ?? track) : (track ?? album),
              chosen.gain.isFinite, preampDB.isFinite else { return unity }
        let requested = chosen.gain + preampDB
        var factor = Self.linear(dB: requested)
        var limited = false
        if preventClipping, let peak = chosen.peak, peak.isFinite, peak > 0, factor * peak > 1 {
            factor = 1 / peak
            limited = true
        }
        return Decision(factor: Float(factor), source: chosen.source, requestedDB: requested, clipLimited: limited)
    }

    /// 10^(dB/20), with the exponent bounded so no tag can ask for more than ±60 dB.
    static func linear(dB: Double) -> Double {
        pow(10, min(60, max(-60, dB)) / 20)
    }
}
