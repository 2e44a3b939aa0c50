import Glibc
import Testing
import StreamClient
import StreamShared

/// What `--replaygain` and `--preamp` make of a track's tag values, and the chain stage that
/// applies it.
@Suite struct ReplayGainTests {
    static func dB(_ factor: Float) -> Double { 20 * log10(Double(factor)) }

    @Test func off_isUnity_whateverTheTags() {
        let d = ReplayGainSettings(mode: .off, preampDB: 6).decision(trackGain: -8, trackPeak: 0.5, albumGain: -9, albumPeak: 0.6)
        #expect(d.factor == 1)
        #expect(d.source == nil)
    }

    @Test func track_usesTrackGain_plusPreamp() {
        let d = ReplayGainSettings(mode: .track, preampDB: 2).decision(trackGain: -8, trackPeak: 0.2, albumGain: -9, albumPeak: 0.3)
        #expect(d.source == "track")
        #expect(abs(Self.dB(d.factor) - -6) < 1e-5)
        #expect(!d.clipLimited)
    }

    @Test func album_usesAlbumGain_fallsBackToTrack() {
        let s = ReplayGainSettings(mode: .album)
        let both = s.decision(trackGain: -8, trackPeak: 0.2, albumGain: -9, albumPeak: 0.3)
        #expect(both.source == "album")
        #expect(abs(Self.dB(both.factor) - -9) < 1e-5)
        let trackOnly = s.decision(trackGain: -8, trackPeak: 0.2, albumGain: nil, albumPeak: nil)
        #expect(trackOnly.source == "track")
        #expect(abs(Self.dB(trackOnly.factor) - -8) < 1e-5)
    }

    @Test func auto_followsTheAlbumContext() {
        let s = ReplayGainSettings(mode: .auto)
        #expect(s.decision(trackGain: -8, trackPeak: 0.2, albumGain: -9, albumPeak: 0.3, sameAlbumAsNeighbours: true).source == "album")
        #expect(s.decision(trackGain: -8, trackPeak: 0.2, albumGain: -9, albumPeak: 0.3, sameAlbumAsNeighbours: false).source == "track")
    }

    @Test func untagged_playsAtUnity_preampNotApplied() {
        let d = ReplayGainSettings(mode: .track, preampDB: 6).decision(trackGain: nil, trackPeak: 0.9, albumGain: nil, albumPeak: nil)
        #expect(d.factor == 1)
        #expect(d.source == nil)
    }

    @Test func peak_limitsABoost_soPeaksStayAtFullScale() {
        // +12 dB asked on a peak of 0.5: only +6.02 dB (factor 2) keeps the peak at 1.
        let d = ReplayGainSettings(mode: .track).decision(trackGain: 12, trackPeak: 0.5, albumGain: nil, albumPeak: nil)
        #expect(d.clipLimited)
        #expect(abs(d.factor - 2) < 1e-6)
        #expect(d.requestedDB == 12)
    }

    @Test func clipPrevention_off_keepsTheWholeGain() {
        let d = ReplayGainSettings(mode: .track, preventClipping: false).decision(trackGain: 12, trackPeak: 0.5, albumGain: nil, albumPeak: nil)
        #expect(!d.clipLimited)
        #expect(abs(Self.dB(d.factor) - 12) < 1e-5)
    }

    @Test func albumGain_usesTrackPeak_whenAlbumPeakIsMissing() {
        let d = ReplayGainSettings(mode: .album).decision(trackGain: 1, trackPeak: 0.25, albumGain: 20, albumPeak: nil)
        #expect(d.clipLimited)
        #expect(abs(d.factor - 4) < 1e-6)
    }

    @Test func stage_atUnity_isBypassed_bitExact() throws {
        let chain = DSPChain()
        try chain.configure(input: AudioFormat(sampleRate: 44_100, channels: 2))
        chain.replayGain.set(factor: 1)
        #expect(chain.isBypassed)
        var buffer: [Float] = [0.1, -0.2, 0.3, 0.123456789]
        let before = buffer
        chain.process(&buffer)
        #expect(buffer == before)
    }

    @Test func stage_scalesEverySample() throws {
        let chain = DSPChain()
        try chain.configure(input: AudioFormat(sampleRate: 44_100, channels: 2))
        chain.replayGain.set(factor: 0.5)
        #expect(!chain.isBypassed)
        var buffer: [Float] = [0.5, -1, 0.25, 0]
        chain.process(&buffer)
        #expect(buffer == [0.25, -0.5, 0.125, 0])
        #expect(chain.latencySourceFrames == 0)
        #expect(chain.sourceFramesPerOutputFrame == 1)
    }

    @Test func stage_refusesNonsenseFactors() {
        let stage = ReplayGainStage()
        for bad: Float in [0, -1, .nan, .infinity] {
            stage.set(factor: bad)
            #expect(stage.factor == 1, "\(bad)")
        }
    }
}
