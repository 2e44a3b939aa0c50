import Foundation
import StreamShared
import StreamHLS

/// A channel's stream as live HLS: every published chunk goes to the channel's `LiveSegmenter`
/// (packed audio, segments of at most 6 s cut at frame boundaries, a window of 6 kept for one
/// window more, `?v=` run tokens, program dates), so HTTP listeners and HLS clients hear the
/// same frames; the producer thread cuts them once, requests only read.
extension LiveSegmenter {
    /// Takes a published chunk's frames (`wall`: seconds since 1970 now, when the chunk's last
    /// frame is due). A chunk without frame timing is left out.
    func append(_ chunk: RadioChunk, wall: Double = Date().timeIntervalSince1970) {
        guard let format = chunk.format else { return }
        append(UnsafeRawBufferPointer(start: chunk.base, count: chunk.count), frameStarts: chunk.frameStarts,
               frameSamples: chunk.frameSamples, format: format, wall: wall)
    }
}
