import StreamShared
import Logging

/// One live response's body on its way from the transport to the throttle: with `icy-metaint`,
/// the metadata blocks are taken out (and checked, `ICYStreamReader`) and their titles posted to
/// the player at the stream offset where they take effect; without, the bytes pass as they are.
/// The transport gives it the body as it arrives (after any chunked framing) and needs nothing
/// else from it, so it sits on top of any HTTP client.
final class LiveBody {
    private var reader: ICYStreamReader?
    private let state: LiveStreamState
    /// Milliseconds without audio before this response's first byte (a reconnect), logged once.
    private var pendingGap: Monotonic?
    private let logger: Logger?

    /// `droppedAt`: when the previous connection's last byte arrived, for the gap after a reconnect.
    init(info: LiveStreamInfo, state: LiveStreamState, droppedAt: Monotonic?, logger: Logger?) throws(ICYStreamError) {
        reader = try info.metaint.map { metaint throws(ICYStreamError) in try ICYStreamReader(metaint: metaint) }
        self.state = state
        self.logger = logger
        pendingGap = droppedAt
        state.begin(info)
    }

    /// Writes the audio of `bytes` to `throttle` (which the caller made sure has room for all of
    /// them) and posts the titles; returns the audio bytes written.
    func write(_ bytes: UnsafeRawBufferPointer, to throttle: Throttle, generation: Int) throws(ICYStreamError) -> Int {
        guard var icy = reader else {
            noteFirstAudio(bytes.count)
            return throttle.write(bytes, generation: generation)
        }
        var written = 0
        let slice = Array(bytes)[...]
        try icy.feed(slice, audio: { audio in
            noteFirstAudio(audio.count)
            written += audio.withUnsafeBytes { throttle.write($0, generation: generation) }
        }, update: { update in
            state.post(update, at: throttle.availableRange.upperBound)
        })
        reader = icy
        return written
    }

    private func noteFirstAudio(_ count: Int) {
        guard count > 0, let dropped = pendingGap else { return }
        pendingGap = nil
        let gap = dropped.elapsed * 1000
        state.recordGap(milliseconds: gap)
        logger?.debug("source: rejoined the live stream: \(Int(gap.rounded())) ms without audio")
    }
}
