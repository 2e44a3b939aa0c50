import Atomics
import Foundation
import StreamShared
import Synchronization

/// One live HLS stream (RFC 8216): the frames one producer feeds, in order, gathered at frame
/// boundaries into segments kept in a sliding window that requests only read. The segmenter of
/// both `streamd --live` loops and radio channels; each keeps its own source and feeds it here.
package final class LiveSegmenter: @unchecked Sendable {
    // @unchecked: all mutable state is behind `lock`; the request counters are atomic.

    /// How segments are written.
    package enum Form: Sendable, Equatable {
        /// Packed audio (section 3.4): an ID3 PRIV timestamp (90 kHz, 33 bits), then the frames.
        case packedAudio
        /// Fragmented MP4 (section 3.3): moof + mdat of the frames (AAC samples); the frames'
        /// sample counts are in the track's timescale, and `initSegment` is the EXT-X-MAP.
        case fragmentedMP4(initSegment: [UInt8])
    }

    /// What differs between the streams that use the segmenter.
    package struct Settings: Sendable {
        /// Segments listed in the playlist.
        package var windowSize = 6
        /// Segments kept fetchable, the window included: a segment stays for a while after it
        /// left the playlist (RFC 8216 section 6.2.2), so a client that read an older playlist
        /// still gets it. At least the window.
        package var keptCount = 12
        /// A frame that would make the open segment longer than this many seconds starts the
        /// next one; nil: only the producer's `endSegment()` and format changes cut.
        package var cutSeconds: Int? = HLSTrackPlan.targetSeconds
        /// The least EXT-X-TARGETDURATION declared (a longer segment in the window raises it).
        package var targetDuration = HLSTrackPlan.targetSeconds
        /// Segment URIs carry `?v=<token>`: a stream that starts again counts its sequence from
        /// 0, and a cache in front must not serve the old run's segments for the new one.
        package var versionedURIs = true
        package var form = Form.packedAudio

        package init() {}
    }

    /// One finished segment.
    package struct Segment: Sendable {
        package let sequence: Int
        /// Exact duration of its frames, in seconds.
        package let duration: Double
        /// What a client receives: the timestamp tag and the frames, or moof + mdat.
        package let bytes: [UInt8]
        package let format: FrameFormat
        /// EXT-X-DISCONTINUITY before it: another format than the segment before, or the
        /// producer said the encoding restarts here (a loop back to the start).
        package let discontinuity: Bool
        /// Wall-clock time of the first sample (seconds since 1970), when the producer gives one.
        package let programDateTime: Double?
        package let fileExtension: String
        package let contentType: String
    }

    package let settings: Settings
    /// Names this run of the stream in segment URLs (`?v=`) and ETags.
    package let token: String
    /// Playlist and segment requests answered (status pages; a cache in front shows here).
    package let playlistRequests = ManagedAtomic<Int>(0)
    package let segmentRequests = ManagedAtomic<Int>(0)

    private let lock = Lock(())
    private var kept: [Segment] = []
    private var nextSequence = 0
    /// Discontinuities in segments no longer kept (EXT-X-DISCONTINUITY-SEQUENCE counts them).
    private var droppedDiscontinuities = 0
    private var finished = false
    private var lastFormat: FrameFormat?
    /// The producer marked a discontinuity: the next segment opened carries it.
    private var discontinuityPending = false
    // The segment being gathered.
    private var open: [UInt8] = []
    private var openSamples = 0
    private var openEntries: [(duration: Int, size: Int)] = []
    private var openFormat: FrameFormat?
    private var openDiscontinuity = false
    private var openStartNanos: UInt64 = 0
    private var openStartSamples: UInt64 = 0
    private var openDate: Double?
    /// Stream time of the frames taken so far, and their count of samples (fMP4 decode times).
    private var clock = ChannelClock()
    private var streamSamples: UInt64 = 0
    /// Wall-clock seconds at stream time 0; set again when the stream and the wall clock part by
    /// more than a second (a live source that paused).
    private var wallAtZero: Double?

    package init(settings: Settings = Settings()) {
        var settings = settings
        settings.windowSize = max(3, settings.windowSize)
        settings.keptCount = max(settings.windowSize, settings.keptCount)
        self.settings = settings
        var generator = SystemRandomNumberGenerator()
        let random: UInt64 = generator.next()
        token = String(random & 0xFFFF_FFFF_FFFF, radix: 36)
    }

    /// EXT-X-MAP of the fMP4 form.
    package var initSegment: [UInt8]? {
        if case .fragmentedMP4(let initSegment) = settings.form { return initSegment }
        return nil
    }

    // MARK: Producer side

    /// Takes a run of whole frames of one format: frame `i` is `bytes[frameStarts[i]..<frameStarts[i + 1]]`
    /// (the last to the end) and holds `frameSamples[i]` samples at `format.sampleRate`.
    /// `wall` (seconds since 1970, when the run's last frame is due) dates the segments
    /// (EXT-X-PROGRAM-DATE-TIME); nil leaves them undated. A run without frame timing is left out.
    package func append<Starts: Collection, Samples: Collection>(
        _ bytes: UnsafeRawBufferPointer, frameStarts: Starts, frameSamples: Samples, format: FrameFormat, wall: Double?
    ) where Starts.Element: BinaryInteger, Samples.Element: BinaryInteger {
        guard format.sampleRate > 0, !frameSamples.isEmpty, !bytes.isEmpty else { return }
        lock.withLock { _ in
            guard !finished else { return }
            if let wall { anchor(wall: wall, runSamples: frameSamples.reduce(0) { $0 + Int($1) }, rate: format.sampleRate) }
            var previous: (start: Int, samples: Int)?
            for (start, samples) in zip(frameStarts, frameSamples) {
                if let frame = previous { take(bytes, frame.start..<Int(start), samples: frame.samples, format: format, wall: wall) }
                previous = (Int(start), Int(samples))
            }
            if let frame = previous { take(bytes, frame.start..<bytes.count, samples: frame.samples, format: format, wall: wall) }
        }
    }

    /// Closes the segment being gathered: the producer's plan cuts here.
    package func endSegment() {
        lock.withLock { _ in
            cut()
        }
    }

    /// The next segment starts with EXT-X-DISCONTINUITY (the encoding restarts: a loop back to
    /// the start of a track). Closes the segment being gathered.
    package func markDiscontinuity() {
        lock.withLock { _ in
            cut()
            discontinuityPending = nextSequence > 0
        }
    }

    /// The stream ended: the segment being gathered is the last, and the playlist says so.
    package func finish() {
        lock.withLock { _ in
            cut()
            finished = true
        }
    }

    /// Dates are the wall clock at stream time 0 plus stream time, so they stay evenly spaced.
    /// The anchor moves when the stream falls behind the wall clock (a source paused), and while
    /// the first segment gathers, when the stream runs ahead of it (the pre-roll: several runs
    /// published at once). Lock held.
    private func anchor(wall: Double, runSamples: Int, rate: Int) {
        var end = clock
        end.advance(samples: runSamples, rate: rate)
        let endSeconds = Double(end.nanos) / 1e9
        guard let anchor = wallAtZero else {
            wallAtZero = wall - endSeconds
            return
        }
        let ahead = anchor + endSeconds - wall
        if ahead < -1 {
            wallAtZero = wall - endSeconds   // the open segment keeps its date: its first sample played before
        } else if ahead > 0.001 && nextSequence == 0 {
            wallAtZero = wall - endSeconds
            if !open.isEmpty { openDate = wall - endSeconds + Double(openStartNanos) / 1e9 }
        }
    }

    /// Adds one frame to the open segment, cutting first where it must. Lock held.
    private func take(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, samples: Int, format: FrameFormat, wall: Double?) {
        guard range.lowerBound >= 0, range.lowerBound < range.upperBound, range.upperBound <= bytes.count else { return }
        if !open.isEmpty {
            let tooLong = settings.cutSeconds.map { openSamples + samples > $0 * format.sampleRate } ?? false
            if openFormat != format || tooLong { cut() }
        }
        if open.isEmpty {
            openFormat = format
            openDiscontinuity = discontinuityPending || (lastFormat.map { $0 != format } ?? false)
            discontinuityPending = false
            openStartNanos = clock.nanos
            openStartSamples = streamSamples
            openDate = wall.map { _ in (wallAtZero ?? 0) + Double(clock.nanos) / 1e9 }
            openSamples = 0
        }
        open.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range]))
        if case .fragmentedMP4 = settings.form { openEntries.append((samples, range.count)) }
        openSamples += samples
        clock.advance(samples: samples, rate: format.sampleRate)
        streamSamples &+= UInt64(max(0, samples))
    }

    /// Closes the open segment (lock held).
    private func cut() {
        guard let format = openFormat, !open.isEmpty else { return }
        let bytes: [UInt8], fileExtension: String, contentType: String
        switch settings.form {
        case .packedAudio:
            // 90 kHz ticks of the first sample's stream time (the 33-bit MPEG-2 clock wraps).
            let ticks = openStartNanos / 1_000_000_000 &* 90_000 &+ openStartNanos % 1_000_000_000 &* 9 / 100_000
            bytes = ID3Writer.transportStreamTimestampTag(ticks90k: ticks) + open
            fileExtension = format.codec == .mpeg ? "mp3" : "aac"
            contentType = format.codec == .mpeg ? "audio/mpeg" : "audio/aac"
        case .fragmentedMP4:
            bytes = FMP4Writer.mediaSegmentHeader(sequence: nextSequence + 1, trackID: 1, baseDecodeTime: openStartSamples,
                                                  samples: openEntries) + open
            fileExtension = "m4s"
            contentType = "audio/mp4"
        }
        let segment = Segment(sequence: nextSequence, duration: Double(openSamples) / Double(format.sampleRate), bytes: bytes,
                              format: format, discontinuity: openDiscontinuity, programDateTime: openDate,
                              fileExtension: fileExtension, contentType: contentType)
        lastFormat = format
        nextSequence += 1
        kept.append(segment)
        if kept.count > settings.keptCount {
            let dropped = kept.count - settings.keptCount
            droppedDiscontinuities += kept.prefix(dropped).filter(\.discontinuity).count
            kept.removeFirst(dropped)
        }
        open.removeAll(keepingCapacity: true)
        openEntries.removeAll(keepingCapacity: true)
        openSamples = 0
        openFormat = nil
    }

    // MARK: Request side

    /// The live playlist: the newest `windowSize` segments (EXT-X-ENDLIST once the stream ended);
    /// nil before the first segment is complete.
    package func playlist() -> HLSMediaPlaylist? {
        return lock.withLock { _ in
            let window = kept.suffix(settings.windowSize)
            guard let first = window.first else { return nil }
            let longest = window.map { Int($0.duration.rounded()) }.max() ?? 0
            var playlist = HLSMediaPlaylist(targetDuration: max(settings.targetDuration, longest), endList: finished)
            playlist.mediaSequence = first.sequence
            playlist.discontinuitySequence = droppedDiscontinuities
                + kept.prefix(while: { $0.sequence < first.sequence }).filter(\.discontinuity).count
            if initSegment != nil { playlist.mapURI = "init.mp4" }
            let query = settings.versionedURIs ? "?v=\(token)" : ""
            playlist.segments = window.map {
                HLSSegmentEntry(duration: $0.duration, uri: "seg-\($0.sequence).\($0.fileExtension)\(query)",
                                discontinuity: $0.discontinuity, programDateTime: $0.programDateTime)
            }
            return playlist
        }
    }

    /// Segment `sequence` while it is kept.
    package func segment(_ sequence: Int) -> Segment? {
        return lock.withLock { _ in
            guard let first = kept.first, sequence >= first.sequence, sequence - first.sequence < kept.count else { return nil }
            return kept[sequence - first.sequence]
        }
    }

    /// How many segments are complete (the next one's sequence number).
    package var completedCount: Int {
        return lock.withLock { _ in
            return nextSequence
        }
    }
}
