import StreamShared
import Logging

/// What the player needs to know of an HLS stream's time line.
public struct HLSTimeline: Sendable {
    /// The playlist grows (live or event): no duration, no seeking.
    public var isLive: Bool
    /// Start of each segment in seconds, from the sum of the EXTINF durations before it.
    public var segmentStarts: [Double]
    /// Sum of the EXTINF durations.
    public var duration: Double
    public var targetDuration: Int

    /// The index of the segment that holds `seconds` (the last one past the end).
    public func segment(containing seconds: Double) -> Int {
        var low = 0, high = segmentStarts.count
        while low < high {
            let mid = (low + high) / 2
            if segmentStarts[mid] <= seconds { low = mid + 1 } else { high = mid }
        }
        return max(0, low - 1)
    }
}

/// An HLS stream (RFC 8216) as a `ByteSource`: it loads the playlist (choosing a variant of a
/// master playlist), fetches the segments in order and writes them into the throttle as one
/// continuous elementary stream (see `HLSSegmentUnpacker`). A live playlist is reloaded at
/// the target-duration pace, joined three segments from its live edge and followed by media
/// sequence number. The throttle bounds what is prefetched: a segment is fetched only once
/// the previous one fits.
///
/// Seek positions are segment indexes, not bytes: `run(from:)` and `SourceControl.seek(to:)`
/// take the index of the segment to continue with (see `timeline`).
public final class HLSSource: ByteSource, SegmentedSource, @unchecked Sendable {
    // @unchecked: the playlist state lives on the network thread that runs the source; the
    // timeline and the VOD playlist are published behind `lock`; the seek measurements
    // (`measured`, `fmp4Track`, `probeFetcher`) belong to the decode thread alone.
    public let name: String
    public let options: HLSOptions
    private let http: HTTPSourceOptions
    /// Where "hls: …" diagnostics go (debug level), timed from this source's creation; nil: nowhere.
    public var logger: Logger?
    private let created = Monotonic.now
    private let lock = ConditionLock()
    private var _timeline: HLSTimeline?
    private var _failure: Error?
    /// Live playlist reloads so far.
    private var _reloads = 0
    /// The VOD playlist, for measuring segment starts from their timestamps (decode thread).
    private var _vod: HLSMediaPlaylist?
    /// Segment start timestamps measured so far, in seconds of the media's clock, and the
    /// fMP4 track timescale; touched only by the decode thread (seeks).
    private var measured: [Int: Double] = [:]
    private var fmp4Track: (timescale: Int, trackID: Int)?
    private var probeFetcher: HLSFetcher?

    public init(url: String, options: HLSOptions = HLSOptions(), http: HTTPSourceOptions = HTTPSourceOptions()) {
        self.name = url
        self.options = options
        self.http = http
    }

    /// True for a location that names an HLS playlist (`.m3u8`, also behind a query string).
    public static func isPlaylist(_ location: String) -> Bool {
        var path = location.split(separator: "?", maxSplits: 1).first.map(String.init) ?? location
        path = path.split(separator: "#", maxSplits: 1).first.map(String.init) ?? path
        let lower = path.lowercased()
        return lower.hasSuffix(".m3u8") || lower.hasSuffix(".m3u")
    }

    /// The time line, once the media playlist is loaded (waits up to `timeout`).
    public func timeline(timeout: Double = 0) -> HLSTimeline? {
        lock.withLock {
            let deadline = Monotonic.now.adding(seconds: timeout)
            while _timeline == nil && _failure == nil {
                if !lock.wait(until: deadline) { break }
            }
            return _timeline
        }
    }

    /// Playlist reloads of a live stream so far.
    public var reloads: Int { lock.withLock { _reloads } }

    public func readRange(_ range: Range<Int>) throws -> [UInt8] {
        throw SourceError.hls("an HLS stream has no byte ranges of its own to read")
    }

    public var hasByteRanges: Bool { false }
    /// Seeks go by segment index.
    public var segments: (any SegmentedSource)? { self }

    private func say(_ message: String) {
        logger?.debug("[\(JSONObjectWriter.number(Monotonic.now.milliseconds(since: created), decimals: 1)) ms] hls: \(message)")
    }

    private func publish(_ media: HLSMediaPlaylist) {
        var starts: [Double] = []
        starts.reserveCapacity(media.playlist.segments.count)
        var t = 0.0
        for segment in media.playlist.segments {
            starts.append(t)
            t += segment.duration
        }
        let timeline = HLSTimeline(isLive: media.playlist.isLive, segmentStarts: starts, duration: t,
                                   targetDuration: media.playlist.targetDuration)
        lock.withLock {
            _timeline = timeline
            if !media.playlist.isLive { _vod = media }
            lock.broadcast()
        }
    }

    /// Where segment `index` starts, in seconds after the first segment's start, from the
    /// timestamps the segments carry (TS PTS, the packed-audio ID3 timestamp, fMP4 tfdt); nil
    /// when they do not tell. EXTINF sums are only as exact as the playlist writes them (whole
    /// seconds before version 3): this reads the first bytes of segments 0 and `index` instead.
    /// Called from the decode thread when seeking.
    public func measuredStart(ofSegment index: Int) -> Double? {
        guard let media = lock.withLock({ _vod }), index >= 0, index < media.playlist.segments.count else { return nil }
        if index == 0 { return 0 }
        guard let origin = timestamp(ofSegment: 0, media: media), let start = timestamp(ofSegment: index, media: media) else {
            return nil
        }
        return start - origin
    }

    /// The media time (seconds) of segment `index`'s first sample, from its first 16 KiB.
    private func timestamp(ofSegment index: Int, media: HLSMediaPlaylist) -> Double? {
        if let known = measured[index] { return known }
        let fetcher = probeFetcher ?? HLSFetcher(options: http, origin: name)
        probeFetcher = fetcher
        let segment = media.playlist.segments[index]
        let url = HLSFetcher.resolve(segment.uri, against: media.base)
        let head = 16 * 1024
        let range = segment.byteRange.map { $0.lowerBound..<min($0.upperBound, $0.lowerBound + head) } ?? 0..<head
        guard let bytes = try? fetcher.get(url, range: range, limit: head).bytes, !bytes.isEmpty else { return nil }
        var seconds: Double?
        switch try? HLSSegmentUnpacker.kind(of: bytes[...], label: url) {
        case .transportStream:
            var demuxer = TSDemuxer()
            let whole = bytes.count / TSDemuxer.packetSize * TSDemuxer.packetSize
            seconds = (try? demuxer.demux(bytes[0..<whole]))?.firstPTS.map { Double($0) / 90_000 }
        case .packedAudio:
            seconds = (try? PackedAudioTag.parse(bytes[...]))??.timestamp.map { Double($0) / 90_000 }
        case .fragmentedMP4:
            guard let track = fmp4Track(segment.map, media: media, fetcher: fetcher), track.timescale > 0 else { return nil }
            seconds = Self.firstDecodeTime(bytes, trackID: track.trackID).map { Double($0) / Double(track.timescale) }
        case nil:
            return nil
        }
        if let seconds { measured[index] = seconds }
        return seconds
    }

    /// The audio track's timescale (tfdt counts in it) and ID, from the init section.
    private func fmp4Track(_ map: M3U8Map?, media: HLSMediaPlaylist, fetcher: HLSFetcher) -> (timescale: Int, trackID: Int)? {
        if let fmp4Track { return fmp4Track }
        guard let map,
              let bytes = try? fetcher.get(HLSFetcher.resolve(map.uri, against: media.base), range: map.byteRange,
                                           limit: options.maxSegmentBytes).bytes,
              let moov = (try? MP4TopLevel.scan(prefix: bytes[...], fileSize: bytes.count))?.0.moovRange,
              let track = (try? MP4Movie.parse(moov: bytes[moov]))?.audio else { return nil }
        fmp4Track = (track.timescale, track.trackID)
        return fmp4Track
    }

    /// baseMediaDecodeTime of the first moof's traf for `trackID` in the bytes.
    static func firstDecodeTime(_ bytes: [UInt8], trackID: Int) -> Int? {
        var offset = 0
        while let header = try? MP4BoxHeader.parse(bytes[...], at: offset), let size = header.size, size >= header.headerSize {
            // A 64-bit size may be anything: compared with what is left, never added first.
            guard size <= bytes.count - offset else { return nil }
            if header.type == "moof" {
                return (try? MP4Fragment.parse(moof: bytes[offset..<(offset + size)], at: offset, trackID: trackID,
                                               defaults: nil))?.baseMediaDecodeTime
            }
            offset += size
        }
        return nil
    }

    public func run(into throttle: Throttle, from start: Int, control: SourceControl) {
        var generation = throttle.currentGeneration
        let fetcher = HLSFetcher(options: http, origin: name)
        let loader = HLSPlaylistLoader(options: options, fetcher: fetcher, log: { [weak self] in self?.say($0) })
        var counted = 0
        func countBytes() {
            control.countBytes(fetcher.bytesRead - counted)
            counted = fetcher.bytesRead
        }
        func fail(_ error: Error) {
            say("\(error)")
            lock.withLock {
                _failure = error
                lock.broadcast()
            }
            throttle.finish(error: error, generation: generation)
        }

        var retryStarted: Monotonic?
        var backoff = 0.1
        var loaded: HLSMediaPlaylist?
        while loaded == nil && !control.isStopped {
            do {
                loaded = try loader.load(name)
            } catch {
                if let failure = error as? SourceError, Self.isTransient(failure),
                   retry(&retryStarted, &backoff, failure, control: control) { continue }
                fail(error)
                while !control.isStopped { control.waitForCommand(timeout: 1) }
                return
            }
        }
        guard var media = loaded else { return }
        retryStarted = nil
        countBytes()
        publish(media)
        let playlist = media.playlist
        say("\(playlist.isLive ? "live" : "VOD") media playlist \(media.location): \(playlist.segments.count) segments, "
            + "target \(playlist.targetDuration) s, sequence \(playlist.mediaSequence)")

        // The media sequence number of the next segment to fetch.
        var next: Int
        if playlist.isLive {
            // RFC 8216 6.3.3: start no closer to the live edge than three target durations.
            next = playlist.mediaSequence + max(0, playlist.segments.count - 3)
        } else {
            next = playlist.mediaSequence + min(max(0, start), playlist.segments.count)
        }
        var unpacker = HLSSegmentUnpacker()
        var writtenMap: M3U8Map?
        var previousSequence: Int?
        var lastLoad = Monotonic.now
        var lastChanged = true
        /// When a live playlist last grew: one that stops growing is given up on.
        var lastGrowth = Monotonic.now

        while !control.isStopped {
            if let target = control.takeSeek() {
                generation = throttle.currentGeneration
                if !media.playlist.isLive {
                    next = media.playlist.mediaSequence + min(max(0, target), media.playlist.segments.count)
                }
                // The init section already went out: the converter keeps the track it described.
                unpacker.reset()
                previousSequence = nil
                continue
            }
            let index = next - media.playlist.mediaSequence
            if index < 0 {
                // A live window that slid past us while we were behind: skip to its start.
                say("segments \(next)..<\(media.playlist.mediaSequence) left the live window; skipping them")
                next = media.playlist.mediaSequence
                continue
            }
            if index > media.playlist.segments.count && media.playlist.isLive {
                // Ahead of the playlist: its numbering went back (a restarted server). Rejoin at the edge.
                let rejoin = media.playlist.mediaSequence + max(0, media.playlist.segments.count - 3)
                say("media sequence went back (expected \(next), the window is \(media.playlist.mediaSequence)..<"
                    + "\(media.playlist.mediaSequence + media.playlist.segments.count)); rejoining at \(rejoin)")
                next = rejoin
                unpacker.reset()
                continue
            }
            if index < media.playlist.segments.count {
                let segment = media.playlist.segments[index]
                do {
                    try play(segment, index: index, media: media, fetcher: fetcher, unpacker: &unpacker,
                             writtenMap: &writtenMap, continuous: previousSequence == segment.sequence - 1,
                             throttle: throttle, generation: generation, control: control)
                    countBytes()
                    previousSequence = segment.sequence
                    next += 1
                    retryStarted = nil
                    backoff = 0.1
                } catch SegmentInterrupted.byCommand {
                    continue
                } catch let error as SourceError {
                    if Self.isTransient(error), retry(&retryStarted, &backoff, error, control: control) { continue }
                    if case .httpStatus(404, _) = error, media.playlist.isLive {
                        // Gone from the server's window already: carry on with the next one.
                        say("\(error); skipping the segment")
                        next += 1
                        continue
                    }
                    fail(error)
                    while !control.isStopped && !control.hasSeek { control.waitForCommand(timeout: 1) }
                } catch {
                    fail(error)
                    while !control.isStopped && !control.hasSeek { control.waitForCommand(timeout: 1) }
                }
                continue
            }
            guard media.playlist.isLive else {
                throttle.finish(generation: generation)
                control.waitForCommand(timeout: 1)
                continue
            }
            // Live: reload a target duration after the last load began (half that when it had
            // not changed), RFC 8216 6.3.4.
            let target = Double(max(1, media.playlist.targetDuration))
            let stale = max(3 * target, http.stallTimeout)
            if lastGrowth.elapsed > stale {
                fail(SourceError.network("\(media.location): the live playlist has not grown for \(Int(stale)) s"))
                while !control.isStopped { control.waitForCommand(timeout: 1) }
                continue
            }
            let pace = target * (lastChanged ? 1 : 0.5)
            let wait = pace - lastLoad.elapsed
            if wait > 0 {
                control.waitForCommand(timeout: min(wait, 0.25))
                continue
            }
            let began = Monotonic.now
            do {
                let fresh = try loader.reload(media)
                countBytes()
                let before = media.playlist.segments.last?.sequence
                lastChanged = fresh.playlist.segments.last?.sequence != before || fresh.playlist.endList != media.playlist.endList
                media = fresh
                lastLoad = began
                if lastChanged { lastGrowth = began }
                retryStarted = nil
                backoff = 0.1
                lock.withLock { _reloads += 1 }
                say("reload: sequence \(fresh.playlist.mediaSequence)..<\(fresh.playlist.mediaSequence + fresh.playlist.segments.count)"
                    + (fresh.playlist.endList ? ", ended" : "") + (lastChanged ? "" : " (unchanged)"))
                if fresh.playlist.endList { publish(fresh) }
            } catch let error as SourceError {
                if Self.isTransient(error), retry(&retryStarted, &backoff, error, control: control) { continue }
                fail(error)
                while !control.isStopped { control.waitForCommand(timeout: 1) }
            } catch {
                fail(error)
                while !control.isStopped { control.waitForCommand(timeout: 1) }
            }
        }
    }

    /// Failures worth retrying: the network, and server errors (5xx) that a CDN or a busy origin gives.
    static func isTransient(_ error: SourceError) -> Bool {
        switch error {
        case .network: return true
        case .httpStatus(let status, _): return status >= 500
        default: return false
        }
    }

    /// Waits before retrying a network failure; false once `retryFor` has passed without progress.
    private func retry(_ started: inout Monotonic?, _ backoff: inout Double, _ error: SourceError, control: SourceControl) -> Bool {
        let first = started ?? Monotonic.now
        started = first
        guard first.elapsed < http.retryFor else { return false }
        say("\(error); retrying in \(backoff) s")
        control.countReconnect()
        control.waitForCommand(timeout: backoff)
        backoff = min(5, backoff * 2)
        return true
    }

    private enum SegmentInterrupted: Error { case byCommand }

    /// Fetches one segment (and its init section when that changed), unpacks it and writes it
    /// into the throttle, waiting for room.
    private func play(_ segment: M3U8Segment, index: Int, media: HLSMediaPlaylist, fetcher: HLSFetcher,
                      unpacker: inout HLSSegmentUnpacker, writtenMap: inout M3U8Map?, continuous: Bool,
                      throttle: Throttle, generation: Int, control: SourceControl) throws {
        let url = HLSFetcher.resolve(segment.uri, against: media.base)
        let label = "segment \(segment.sequence) (\(url))"
        if segment.discontinuity || !continuous { unpacker.reset() }
        if let map = segment.map, map != writtenMap {
            let mapURL = HLSFetcher.resolve(map.uri, against: media.base)
            let body = try fetcher.get(mapURL, range: map.byteRange, limit: options.maxSegmentBytes)
            let initSection = try unpacker.unpackInit(body.bytes, label: "init section \(mapURL)")
            try write(initSection, throttle: throttle, generation: generation, control: control)
            writtenMap = map
        }
        let body = try fetcher.get(url, range: segment.byteRange, limit: options.maxSegmentBytes)
        let (stream, timestamp) = try unpacker.unpack(body.bytes, label: label)
        say("\(label): \(body.bytes.count) bytes, \(unpacker.kind?.rawValue ?? "?") → \(stream.count) bytes"
            + (timestamp.map { ", starts at \(Double($0) / 90_000) s" } ?? "") + (segment.discontinuity ? ", discontinuity" : ""))
        try write(stream, throttle: throttle, generation: generation, control: control)
    }

    /// Writes all of `bytes`, waiting while the throttle is full (from full until it drains
    /// below its low watermark, as the HTTP source does); a seek or stop interrupts.
    private func write(_ bytes: [UInt8], throttle: Throttle, generation: Int, control: SourceControl) throws {
        var offset = 0
        while offset < bytes.count {
            if control.isStopped || control.hasSeek { throw SegmentInterrupted.byCommand }
            let written = bytes[offset...].withUnsafeBytes { throttle.write($0, generation: generation) }
            offset += written
            if written == 0 || throttle.freeSpace == 0 {
                control.countPause()
                while throttle.fill >= throttle.lowWatermark && !control.isStopped && !control.hasSeek {
                    control.waitForCommand(timeout: 0.01)
                }
            }
        }
    }
}
