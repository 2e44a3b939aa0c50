import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
@testable import StreamShared

/// The one live HLS segmenter: a radio channel's published chunks cut into packed-audio segments
/// at frame boundaries, a sliding window, discontinuities on a format change, dates and
/// timestamps; a `--live` loop's planned segments, cut where the producer says, discontinuities
/// where it restarts, fMP4 fragments.
@Suite struct LiveSegmenterTests {
    static let stereo44 = FrameFormat(codec: .mpeg, sampleRate: 44_100, channels: 2)

    /// A segmenter as a radio channel has it: cut at 6 s, `window` listed, as many again kept.
    static func channelSegmenter(window: Int = 6) -> LiveSegmenter {
        var settings = LiveSegmenter.Settings()
        settings.windowSize = window
        settings.keptCount = window * 2
        return LiveSegmenter(settings: settings)
    }

    /// A chunk of `frames` frames of `frameBytes` bytes (each frame's bytes are its global index,
    /// so order and content can be checked) and 1152 samples each.
    static func chunk(firstFrame: Int, frames: Int, frameBytes: Int = 100, format: FrameFormat? = stereo44,
                      timed: Bool = true) -> RadioChunk {
        var bytes: [UInt8] = []
        for f in firstFrame..<(firstFrame + frames) { bytes += [UInt8](repeating: UInt8(truncatingIfNeeded: f), count: frameBytes) }
        return RadioChunk(start: firstFrame * frameBytes, bytes: bytes[...],
                          frameStarts: (0..<frames).map { Int32($0 * frameBytes) },
                          frameSamples: timed ? [UInt16](repeating: 1152, count: frames) : [], format: format,
                          title: ICYBlock(title: ""), publishedAt: 0)
    }

    /// Feeds `seconds` of 44.1 kHz frames in chunks of 10 frames, the wall clock keeping pace.
    static func feed(_ segmenter: LiveSegmenter, seconds: Double, from frame: inout Int, wall: inout Double,
                     format: FrameFormat = stereo44) {
        let frameSeconds = 1152.0 / Double(format.sampleRate)
        let frames = Int(seconds / frameSeconds)
        var done = 0
        while done < frames {
            let n = min(10, frames - done)
            wall += Double(n) * frameSeconds
            segmenter.append(chunk(firstFrame: frame, frames: n, format: format), wall: wall)
            frame += n
            done += n
        }
    }

    @Test func segments_areWholeFramesInOrder_upToTheTarget_withTheirTimestamp() throws {
        let segmenter = Self.channelSegmenter()
        var frame = 0, wall = 1_000_000.0
        Self.feed(segmenter, seconds: 20, from: &frame, wall: &wall)
        let playlist = try #require(segmenter.playlist())
        #expect(playlist.segments.count == 3, "20 s make three whole segments of at most 6 s")
        var nextFrame = 0
        for (i, entry) in playlist.segments.enumerated() {
            #expect(entry.duration <= 6.0 && entry.duration > 6.0 - 1152.0 / 44_100, "segment \(i): \(entry.duration) s")
            #expect(entry.uri == "seg-\(i).mp3?v=\(segmenter.token)")
            let segment = try #require(segmenter.segment(i))
            let tag = try #require(try PackedAudioTag.parse(segment.bytes[...]))
            #expect(tag.timestamp == UInt64(nextFrame * 1152 * 90_000 / 44_100), "segment \(i) starts at frame \(nextFrame)")
            let frames = segment.bytes[tag.size...]
            #expect(frames.count % 100 == 0)
            for (k, byte) in frames.enumerated() where k % 100 == 0 {
                #expect(byte == UInt8(truncatingIfNeeded: nextFrame + k / 100), "frame order in segment \(i)")
            }
            nextFrame += frames.count / 100
        }
        #expect(playlist.targetDuration == 6 && !playlist.endList && playlist.mediaSequence == 0)
    }

    @Test func window_slides_andSegmentsStayFetchableForAWindowMore() throws {
        let segmenter = Self.channelSegmenter(window: 6)
        var frame = 0, wall = 0.0
        Self.feed(segmenter, seconds: 30 * 6.0 + 1, from: &frame, wall: &wall)
        let playlist = try #require(segmenter.playlist())
        #expect(playlist.segments.count == 6)
        let last = playlist.mediaSequence + playlist.segments.count - 1
        #expect(playlist.mediaSequence == last - 5)
        #expect(segmenter.segment(last - 11) != nil, "kept a window after leaving the playlist")
        #expect(segmenter.segment(last - 12) == nil, "older segments are gone")
        #expect(segmenter.segment(last + 1) == nil, "no segment from the future")
        #expect(segmenter.segment(-1) == nil)
    }

    @Test func formatChange_cutsAndMarksADiscontinuity_countedOnceItLeaves() throws {
        let segmenter = Self.channelSegmenter(window: 3)
        var frame = 0, wall = 0.0
        Self.feed(segmenter, seconds: 8, from: &frame, wall: &wall)
        let other = FrameFormat(codec: .mpeg, sampleRate: 48_000, channels: 2)
        Self.feed(segmenter, seconds: 13, from: &frame, wall: &wall, format: other)
        var playlist = try #require(segmenter.playlist())
        let changed = try #require(playlist.segments.firstIndex { $0.discontinuity })
        let before = try #require(segmenter.segment(playlist.mediaSequence + changed - 1))
        let after = try #require(segmenter.segment(playlist.mediaSequence + changed))
        #expect(before.format == Self.stereo44 && before.duration < 2.1, "cut at the change, not at 6 s")
        #expect(after.format == other)
        #expect(playlist.render().contains("#EXT-X-DISCONTINUITY\n"))
        #expect(playlist.discontinuitySequence == 0)
        // Once the discontinuity has left the window, the sequence counts it.
        Self.feed(segmenter, seconds: 30, from: &frame, wall: &wall, format: other)
        playlist = try #require(segmenter.playlist())
        #expect(!playlist.segments.contains { $0.discontinuity })
        #expect(playlist.discontinuitySequence == 1)
    }

    @Test func aacSegments_areNamedAndTypedAsAAC() throws {
        let segmenter = Self.channelSegmenter()
        var frame = 0, wall = 0.0
        Self.feed(segmenter, seconds: 7, from: &frame, wall: &wall, format: FrameFormat(codec: .adts, sampleRate: 44_100, channels: 2))
        let segment = try #require(segmenter.segment(0))
        #expect(segment.fileExtension == "aac" && segment.contentType == "audio/aac")
        #expect(try #require(segmenter.playlist()).segments.first?.uri.hasPrefix("seg-0.aac?v=") == true)
    }

    @Test func programDateTimes_followTheStream_andReanchorAfterAPause() throws {
        let segmenter = Self.channelSegmenter()
        var frame = 0, wall = 1_000.0
        Self.feed(segmenter, seconds: 13, from: &frame, wall: &wall)
        wall += 30   // a live source paused for 30 s
        Self.feed(segmenter, seconds: 13, from: &frame, wall: &wall)
        let playlist = try #require(segmenter.playlist())
        let dates = playlist.segments.compactMap(\.programDateTime)
        #expect(dates.count == playlist.segments.count)
        #expect(abs(dates[0] - 1_000) < 0.001, "the first sample played when the first chunk began")
        #expect(abs(dates[1] - dates[0] - playlist.segments[0].duration) < 0.001, "dates spaced by the durations")
        #expect(dates.count == 4 && dates[3] - dates[2] > 30, "after the pause the dates follow the wall clock again: \(dates)")
    }

    @Test func programDates_countThePrerollPublishedAtOnce() throws {
        let segmenter = Self.channelSegmenter()
        // A pre-roll of 4 s in three chunks at the same moment (tracks change), then real time.
        var frame = 0
        for frames in [40, 80, 34] {
            segmenter.append(Self.chunk(firstFrame: frame, frames: frames), wall: 500)
            frame += frames
        }
        var wall = 500.0
        Self.feed(segmenter, seconds: 20, from: &frame, wall: &wall)
        let playlist = try #require(segmenter.playlist())
        let dates = playlist.segments.compactMap(\.programDateTime)
        #expect(abs(dates[0] - (500 - 154 * 1152 / 44_100.0)) < 0.001, "the pre-roll's first sample played 4 s before it was published")
        for i in 1..<dates.count {
            #expect(abs(dates[i] - dates[i - 1] - playlist.segments[i - 1].duration) < 0.001, "\(dates)")
        }
    }

    @Test func finish_closesTheLastSegment_andEndsThePlaylist() throws {
        let segmenter = Self.channelSegmenter()
        var frame = 0, wall = 0.0
        Self.feed(segmenter, seconds: 8, from: &frame, wall: &wall)
        segmenter.finish()
        let playlist = try #require(segmenter.playlist())
        #expect(playlist.endList && playlist.segments.count == 2)
        #expect(playlist.render().hasSuffix("#EXT-X-ENDLIST\n"))
        Self.feed(segmenter, seconds: 8, from: &frame, wall: &wall)
        #expect(try #require(segmenter.playlist()).segments.count == 2, "nothing is added after the end")
    }

    @Test func chunksWithoutTiming_areLeftOut() {
        let segmenter = Self.channelSegmenter()
        for i in 0..<100 { segmenter.append(Self.chunk(firstFrame: i * 10, frames: 10, timed: false), wall: Double(i)) }
        for i in 0..<100 { segmenter.append(Self.chunk(firstFrame: i * 10, frames: 10, format: nil), wall: Double(i)) }
        #expect(segmenter.playlist() == nil)
        #expect(segmenter.segment(0) == nil)
    }

    // MARK: A --live loop's form

    /// A segmenter as a `--live` loop has it: the producer cuts, 5 listed, 20 kept, no `?v=`.
    static func loopSegmenter(form: LiveSegmenter.Form = .packedAudio) -> LiveSegmenter {
        var settings = LiveSegmenter.Settings()
        settings.windowSize = 5
        settings.keptCount = 20
        settings.cutSeconds = nil
        settings.versionedURIs = false
        settings.form = form
        return LiveSegmenter(settings: settings)
    }

    /// Feeds one planned segment of `frames` frames of 100 bytes and 1152 samples, then cuts.
    static func feedPlanned(_ segmenter: LiveSegmenter, frames: Int, from frame: inout Int) {
        let run = chunk(firstFrame: frame, frames: frames)
        segmenter.append(UnsafeRawBufferPointer(start: run.base, count: run.count), frameStarts: run.frameStarts,
                         frameSamples: run.frameSamples, format: stereo44, wall: nil)
        segmenter.endSegment()
        frame += frames
    }

    @Test func plannedCuts_areKept_evenPastTheTarget_andURIsCarryNoToken() throws {
        let segmenter = Self.loopSegmenter()
        var frame = 0
        // 7.0 s, then 2.1 s: the producer's cuts stand, and the target rises to the longest.
        Self.feedPlanned(segmenter, frames: 268, from: &frame)
        Self.feedPlanned(segmenter, frames: 80, from: &frame)
        let playlist = try #require(segmenter.playlist())
        #expect(playlist.segments.map(\.uri) == ["seg-0.mp3", "seg-1.mp3"])
        #expect(abs(playlist.segments[0].duration - 268 * 1152 / 44_100.0) < 1e-9)
        #expect(playlist.targetDuration == 7, "EXT-X-TARGETDURATION covers the 7 s segment")
        #expect(playlist.segments.allSatisfy { $0.programDateTime == nil }, "undated without a wall clock")
        let second = try #require(segmenter.segment(1))
        let tag = try #require(try PackedAudioTag.parse(second.bytes[...]))
        #expect(tag.timestamp == UInt64(268 * 1152 * 90_000 / 44_100), "timestamps run on from the first segment")
        #expect(second.bytes.count == tag.size + 80 * 100)
    }

    @Test func markedDiscontinuities_areFlagged_andCountedOnceTheyLeave() throws {
        let segmenter = Self.loopSegmenter()
        var frame = 0
        // Loops of three segments: a discontinuity at every return to the start.
        for sequence in 0..<30 {
            if sequence % 3 == 0 { segmenter.markDiscontinuity() }
            Self.feedPlanned(segmenter, frames: 100, from: &frame)
        }
        let playlist = try #require(segmenter.playlist())
        #expect(playlist.mediaSequence == 25 && playlist.segments.count == 5)
        #expect(playlist.segments.map(\.discontinuity) == [false, false, true, false, false], "sequence 27 starts a loop")
        #expect(playlist.discontinuitySequence == 8, "loops began at 3, 6, ..., 24 before the window")
        #expect(try #require(segmenter.segment(0 + 10)).sequence == 10, "20 segments stay fetchable")
        #expect(segmenter.segment(9) == nil)
        #expect(segmenter.segment(30) == nil, "no segment from the future")
        #expect(segmenter.completedCount == 30)
        #expect(try #require(segmenter.segment(0 + 10)).discontinuity == false)
    }

    @Test func fmp4Form_writesFragmentsWithRunningDecodeTimesAndSequenceNumbers() throws {
        let initSegment: [UInt8] = [0, 0, 0, 8, 0x66, 0x74, 0x79, 0x70]
        let segmenter = Self.loopSegmenter(form: .fragmentedMP4(initSegment: initSegment))
        let format = FrameFormat(codec: .adts, sampleRate: 44_100, channels: 2)
        var ticks = 0
        for sizes in [[300, 310, 320], [330, 340]] {
            let bytes = sizes.enumerated().flatMap { [UInt8](repeating: UInt8($0.offset), count: $0.element) }
            var starts: [Int] = [], at = 0
            for size in sizes { starts.append(at); at += size }
            bytes.withUnsafeBytes {
                segmenter.append($0, frameStarts: starts, frameSamples: [Int](repeating: 1024, count: sizes.count), format: format,
                                 wall: nil)
            }
            segmenter.endSegment()
            let segment = try #require(segmenter.segment(segmenter.completedCount - 1))
            #expect(segment.fileExtension == "m4s" && segment.contentType == "audio/mp4")
            let fragment = try MP4Fragment.parse(moof: segment.bytes[...], at: 0, trackID: 1, defaults: nil)
            #expect(fragment.sequenceNumber == segment.sequence + 1, "mfhd counts from 1")
            #expect(fragment.baseMediaDecodeTime == ticks, "tfdt is the stream's time in timescale ticks")
            #expect(fragment.samples.map(\.size) == sizes && fragment.samples.allSatisfy { $0.duration == 1024 })
            #expect(Array(segment.bytes.suffix(bytes.count)) == bytes, "the samples follow the moof and mdat header")
            ticks += 1024 * sizes.count
        }
        #expect(segmenter.initSegment == initSegment)
        let playlist = try #require(segmenter.playlist())
        #expect(playlist.mapURI == "init.mp4" && playlist.segments.map(\.uri) == ["seg-0.m4s", "seg-1.m4s"])
    }
}
