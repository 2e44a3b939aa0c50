import Atomics
import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import Synchronization

/// A channel's stream as live HLS (RFC 8216): the chunks the channel publishes, cut at frame
/// boundaries into packed-audio segments (an ID3 PRIV timestamp, then the frames) of at most
/// `targetSeconds`, kept in a sliding window. The segments are the very frames HTTP listeners
/// get, so both hear the same program; the producer thread cuts them once, requests only read.
final class ChannelSegmenter: @unchecked Sendable {
    // @unchecked: all mutable state is behind `lock`.

    /// One finished segment.
    struct Segment: Sendable {
        let sequence: Int
        /// Exact duration of its frames, in seconds.
        let duration: Double
        /// The ID3 timestamp tag followed by the frames.
        let bytes: [UInt8]
        package let format: FrameFormat
        /// The format differs from the previous segment's (EXT-X-DISCONTINUITY before it).
        let discontinuity: Bool
        /// Wall-clock time of the first sample (seconds since 1970).
        let programDateTime: Double

        var fileExtension: String { format.codec == .mpeg ? "mp3" : "aac" }
        var contentType: String { format.codec == .mpeg ? "audio/mpeg" : "audio/aac" }
    }

    /// The longest segment (EXT-X-TARGETDURATION), as the VOD playlists use.
    static let targetSeconds = HLSTrackPlan.targetSeconds
    /// Segments listed in the playlist.
    let windowSize: Int
    /// Segments kept: a segment stays fetchable for as long again as the window after it left the
    /// playlist (RFC 8216 section 6.2.2), so a client that read an older playlist still gets it.
    var keptCount: Int { windowSize * 2 }
    /// Names this run of the channel in segment URLs (`?v=`): a channel that starts again counts
    /// its sequence from 0, and a cache in front must not serve the old run's segments for it.
    let token: String
    /// Playlist and segment requests answered (status pages; a cache in front shows here).
    let playlistRequests = ManagedAtomic<Int>(0)
    let segmentRequests = ManagedAtomic<Int>(0)

    private let lock = Mutex(())
    private var kept: [Segment] = []
    private var nextSequence = 0
    /// Discontinuities in segments no longer kept (EXT-X-DISCONTINUITY-SEQUENCE counts them).
    private var droppedDiscontinuities = 0
    private var finished = false
    // The segment being gathered.
    private var open: [UInt8] = []
    private var openSamples = 0
    private var openFormat: FrameFormat?
    private var openStartNanos: UInt64 = 0
    private var openDate = 0.0
    private var lastFormat: FrameFormat?
    /// Stream time of the frames taken so far.
    private var clock = ChannelClock()
    /// Wall-clock seconds at stream time 0; set again when the stream and the wall clock part by
    /// more than a second (a live source that paused).
    private var wallAtZero: Double?

    init(windowSize: Int = 6) {
        self.windowSize = max(3, windowSize)
        var generator = SystemRandomNumberGenerator()
        let random: UInt64 = generator.next()
        token = String(random & 0xFFFF_FFFF_FFFF, radix: 36)
    }

    // MARK: Producer side

    /// Takes a published chunk's frames (`wall`: seconds since 1970 now, when the chunk's last
    /// frame is due). A chunk without frame timing is left out.
    package func append(_ chunk: RadioChunk, wall: Double = Date().timeIntervalSince1970) {
        guard let format = chunk.format, format.sampleRate > 0, !chunk.frameSamples.isEmpty else { return }
        lock.withLock { _ in
            guard !finished else { return }
            let chunkSamples = chunk.frameSamples.reduce(0) { $0 + Int($1) }
            var end = clock
            end.advance(samples: chunkSamples, rate: format.sampleRate)
            let endSeconds = Double(end.nanos) / 1e9
            // Dates are the wall clock at stream time 0 plus stream time, so they stay evenly spaced.
            // The anchor moves when the stream falls behind the wall clock (a source paused), and
            // while the first segment gathers, when the stream runs ahead of it (the pre-roll: several
            // chunks published at once).
            if let anchor = wallAtZero {
                let ahead = anchor + endSeconds - wall
                if ahead < -1 {
                    wallAtZero = wall - endSeconds   // the open segment keeps its date: its first sample played before
                } else if ahead > 0.001 && nextSequence == 0 {
                    wallAtZero = wall - endSeconds
                    if !open.isEmpty { openDate = wall - endSeconds + Double(openStartNanos) / 1e9 }
                }
            } else {
                wallAtZero = wall - endSeconds
            }
            let limit = Self.targetSeconds * format.sampleRate
            for (i, start) in chunk.frameStarts.enumerated() {
                let frameStart = Int(start)
                let frameEnd = i + 1 < chunk.frameStarts.count ? Int(chunk.frameStarts[i + 1]) : chunk.count
                guard frameStart >= 0, frameStart < frameEnd, frameEnd <= chunk.count else { continue }
                let samples = Int(chunk.frameSamples[i])
                if !open.isEmpty, openFormat != format || openSamples + samples > limit { cut() }
                if open.isEmpty {
                    openFormat = format
                    openStartNanos = clock.nanos
                    openDate = (wallAtZero ?? wall) + Double(clock.nanos) / 1e9
                    openSamples = 0
                }
                open.append(contentsOf: UnsafeRawBufferPointer(start: chunk.base + frameStart, count: frameEnd - frameStart))
                openSamples += samples
                clock.advance(samples: samples, rate: format.sampleRate)
            }
        }
    }

    /// The stream ended: the segment being gathered is the last, and the playlist says so.
    func finish() {
        lock.withLock { _ in
            if !open.isEmpty { cut() }
            finished = true
        }
    }

    /// Closes the open segment (lock held).
    private func cut() {
        guard let format = openFormat, !open.isEmpty else { return }
        // 90 kHz ticks of the first sample's stream time (the 33-bit MPEG-2 clock wraps).
        let ticks = openStartNanos / 1_000_000_000 &* 90_000 &+ openStartNanos % 1_000_000_000 &* 9 / 100_000
        let segment = Segment(sequence: nextSequence, duration: Double(openSamples) / Double(format.sampleRate),
                              bytes: ID3Writer.transportStreamTimestampTag(ticks90k: ticks) + open, format: format,
                              discontinuity: lastFormat.map { $0 != format } ?? false, programDateTime: openDate)
        lastFormat = format
        nextSequence += 1
        kept.append(segment)
        if kept.count > keptCount {
            let dropped = kept.count - keptCount
            droppedDiscontinuities += kept.prefix(dropped).filter(\.discontinuity).count
            kept.removeFirst(dropped)
        }
        open.removeAll(keepingCapacity: true)
        openSamples = 0
    }

    // MARK: Request side

    /// The live playlist: the newest `windowSize` segments (EXT-X-ENDLIST once the stream ended);
    /// nil before the first segment is complete.
    func playlist() -> HLSMediaPlaylist? {
        return lock.withLock { _ in
            let window = kept.suffix(windowSize)
            guard let first = window.first else { return nil }
            let longest = window.map { Int($0.duration.rounded()) }.max() ?? 0
            var playlist = HLSMediaPlaylist(targetDuration: max(Self.targetSeconds, longest), endList: finished)
            playlist.mediaSequence = first.sequence
            playlist.discontinuitySequence = droppedDiscontinuities
                + kept.prefix(while: { $0.sequence < first.sequence }).filter(\.discontinuity).count
            playlist.segments = window.map {
                HLSSegmentEntry(duration: $0.duration, uri: "seg-\($0.sequence).\($0.fileExtension)?v=\(token)",
                                discontinuity: $0.discontinuity,
                                programDateTime: $0.programDateTime)
            }
            return playlist
        }
    }

    /// Segment `sequence` while it is kept.
    func segment(_ sequence: Int) -> Segment? {
        return lock.withLock { _ in
            guard let first = kept.first, sequence >= first.sequence, sequence - first.sequence < kept.count else { return nil }
            return kept[sequence - first.sequence]
        }
    }
}
