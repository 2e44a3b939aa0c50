import Glibc
import StreamShared

/// `--crossfade SECONDS`: one track's last seconds played over the next one's first, with
/// equal-power gains (cos and sin of a quarter turn, so the summed power of two uncorrelated
/// tracks stays level). Works on the decode side of a queue's shared output: each track holds
/// back its newest `seconds` of output; at its end they become the tail the next track mixes its
/// start with. The queue plays the tail as it is instead when the two tracks are of one album
/// (they join gaplessly) or when the formats differ.
final class CrossfadeLink {
    let seconds: Double
    /// The track playing now: its newest samples, held back.
    private var holdback = TailHoldback(capacity: 0)
    private var format: AudioFormat?
    /// The track before's tail, still to be mixed in, and how far it has been.
    private var tail: [Float] = []
    private var tailFormat: AudioFormat?
    private var mixed = 0
    private var scratch: [Float] = []

    init(seconds: Double) { self.seconds = min(max(0, seconds), PlayerOptions.maxCrossfadeSeconds) }

    /// A track's first samples are coming in `format`: a tail in another format is played as it
    /// is first (through `play`, before the track's mark in the ring).
    func begin(format: AudioFormat, play: (UnsafeBufferPointer<Float>) -> Void) {
        if let tailFormat, tailFormat != format { playTail(play) }
        self.format = format
        holdback = TailHoldback(capacity: Int(seconds * Double(format.sampleRate)) * format.channels)
    }

    /// The track's samples: mixed with what is left of the tail, then held back; what leaves
    /// the holdback goes to `play`.
    func push(_ samples: UnsafeBufferPointer<Float>, play: (UnsafeBufferPointer<Float>) -> Void) {
        var rest = samples
        if mixed < tail.count, let format {
            let n = min(samples.count, tail.count - mixed)
            let channels = format.channels
            let tailFrames = Double(tail.count / channels)
            scratch.removeAll(keepingCapacity: true)
            scratch.reserveCapacity(n)
            var i = 0
            while i < n {
                let t = (Double((mixed + i) / channels) + 0.5) / tailFrames * Double.pi / 2
                let fadeOut = Float(cos(t)), fadeIn = Float(sin(t))
                for c in 0..<channels where i + c < n {
                    scratch.append(tail[mixed + i + c] * fadeOut + samples[i + c] * fadeIn)
                }
                i += channels
            }
            mixed += n
            scratch.withUnsafeBufferPointer { holdback.push($0, release: play) }
            rest = UnsafeBufferPointer(rebasing: samples[n...])
            if mixed >= tail.count { clearTail() }
        }
        if !rest.isEmpty { holdback.push(rest, release: play) }
    }

    /// The track ended: a tail it did not outlast plays out fading, and its own held-back end
    /// becomes the tail for the next track.
    func endTrack(play: (UnsafeBufferPointer<Float>) -> Void) {
        if mixed < tail.count, let format {
            let channels = format.channels
            let tailFrames = Double(tail.count / channels)
            var out: [Float] = []
            out.reserveCapacity(tail.count - mixed)
            for k in mixed..<tail.count {
                let t = (Double(k / channels) + 0.5) / tailFrames * Double.pi / 2
                out.append(tail[k] * Float(cos(t)))
            }
            out.withUnsafeBufferPointer { holdback.push($0, release: play) }
        }
        var held: [Float] = []
        held.reserveCapacity(holdback.count)
        holdback.releaseAll { held.append(contentsOf: $0) }
        tail = held
        tailFormat = format
        mixed = 0
        holdback = TailHoldback(capacity: 0)
    }

    /// Plays the pending tail as it is (the next track is of the same album, or the queue ended).
    func playTail(_ play: (UnsafeBufferPointer<Float>) -> Void) {
        if mixed < tail.count { tail.withUnsafeBufferPointer { play(UnsafeBufferPointer(rebasing: $0[mixed...])) } }
        clearTail()
    }

    /// Plays the pending tail into a queue's output loop.
    func playTail(into loop: OutputLoop?) {
        guard let loop else { clearTail(); return }
        playTail { loop.push($0) }
    }

    /// Forgets what is held (a track left with n/p/q, a seek).
    func reset() {
        clearTail()
        holdback = TailHoldback(capacity: holdback.capacity)
    }

    private func clearTail() {
        tail = []
        tailFormat = nil
        mixed = 0
    }
}
