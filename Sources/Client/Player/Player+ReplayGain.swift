import Glibc
import StreamShared

extension Player {
    /// The ReplayGain values of the track: from the tags in front of the audio or the MP4 moov,
    /// else (MP3/ADTS, whose APE tags sit after the audio) from the file's tail, read with one
    /// range request only when `--replaygain` is on and the front tags have none.
    func replayGainValues(_ plan: StreamPlan) -> ReplayGain? {
        if let front = plan.tags.replayGain { return front }
        guard options.replayGain.mode != .off, canReadRanges,
              plan.stream.container == .mp3 || plan.stream.container == .adts else { return nil }
        do {
            let size: Int
            if let known = control.totalSize { size = known } else { size = try source.resourceSize() }
            let length = min(64 * 1024, max(0, size - plan.audioStart))
            guard length > 0 else { return nil }
            let tail = try source.readRange((size - length)..<size)
            return try TrailingTags.scan(tail: tail[...], fileSize: size).tags?.replayGain
        } catch {
            // The tail is optional for playing: without it the track plays at its own level.
            log("replaygain", "no tail tags: \(error)")
            return nil
        }
    }

    /// `--replaygain auto`: a first or single track is its own album; later ones share the album
    /// of the track before when both name the same one.
    static func sameAlbum(_ album: String?, after previous: String??) -> Bool {
        switch previous {
        case .none: return true
        case .some(let before): return before != nil && before == album
        }
    }

    /// Sets the chain's ReplayGain stage for the track and logs what was chosen.
    func applyReplayGain(_ plan: StreamPlan, to dsp: DSPChain) {
        let settings = options.replayGain
        guard settings.mode != .off else { return }
        let values = replayGainValues(plan)
        let decision = settings.decision(trackGain: values?.trackGain, trackPeak: values?.trackPeak,
                                         albumGain: values?.albumGain, albumPeak: values?.albumPeak,
                                         sameAlbumAsNeighbours: Self.sameAlbum(plan.tags.album, after: commands.withLock { _ in replayGainPreviousAlbum }))
        dsp.replayGain.set(factor: decision.factor)
        commands.withLock { _ in statsStorage.replayGainDB = decision.source == nil ? nil : 20 * log10(Double(decision.factor)) }
        if let source = decision.source, let requested = decision.requestedDB {
            log("replaygain", "\(source) gain \(JSONObjectWriter.number(requested, decimals: 2)) dB"
                + (decision.clipLimited ? ", lowered to \(JSONObjectWriter.number(20 * log10(Double(decision.factor)), decimals: 2)) dB by the peak" : ""))
        } else {
            log("replaygain", "no ReplayGain tags: played at its own level")
        }
    }
}
