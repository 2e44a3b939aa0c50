import StreamShared
import StreamAudio

extension Player {
    /// A frame-exact seek table: (frame index, byte offset) pairs in order.
    typealias FrameTable = [(frame: Int, byte: Int)]

    /// Index and byte offset of an exact unit start at or before `unit`. WAV: arithmetic.
    /// MP3 uses, in order: streamd's `/api/index` (exact), a local scan for files (exact),
    /// then the Xing TOC or CBR arithmetic (approximate, refined to the next frame sync).
    func locateUnit(atOrBefore unit: Int, plan: StreamPlan) throws -> (unit: Int, byte: Int) {
        if let located = try locateLosslessUnit(atOrBefore: unit, plan: plan) { return located }
        if let wav = plan.wav {
            let last = plan.trimmedLength.map { max(0, $0 - 1) } ?? unit
            let frame = min(unit, last)
            return (frame, plan.audioStart + frame * wav.format.blockAlign)
        }
        if let ogg = plan.ogg { return try locateOggPage(atOrBefore: unit, plan: plan, ogg: ogg) }
        if let segments = source.segments {
            return try locateSegment(atOrBefore: unit, plan: plan, segments: segments)
        }
        if plan.fragmented != nil {
            return try locateFragment(atOrBefore: unit, plan: plan)
        }
        if let track = plan.mp4 {
            // The sample table is the index: exact for every sample.
            let sample = min(unit, max(0, track.sampleCount - 1))
            return (sample, track.sampleLocation(sample)?.offset ?? plan.audioStart)
        }
        let frame = unit
        let seconds = Double(frame * plan.samplesPerUnit) / Double(plan.format.sampleRate)
        if url.contains("://") {
            frameTable = loadFrameTable(plan, around: seconds)
        } else if frameTable == nil {
            frameTable = loadFrameTable(plan, around: nil)
        }
        if let table = frameTable, let firstEntry = table.first, firstEntry.frame <= frame {
            var best = table[0]
            for entry in table where entry.frame <= frame { best = entry }
            return (best.frame, best.byte)
        }
        guard let header = plan.mpegHeader else { return (0, plan.audioStart) }
        let spf = header.samplesPerFrame
        if let toc = plan.stream.vbrHeader?.xingTOC, let total = plan.totalUnits, total > 0,
           let bytes = plan.stream.vbrHeader?.byteCount {
            let percent = min(99, max(0, frame * 100 / total))
            let byte = plan.audioStart + Int(toc[percent]) * bytes / 256
            return (percent * total / 100, byte)
        }
        let frameBytes = Double(spf / 8 * header.bitrate) / Double(header.sampleRate)
        return (frame, plan.audioStart + Int(Double(frame) * frameBytes))
    }

    /// HLS seeks by segment: the last segment that starts at or before `unit`, as (its first
    /// unit, its index). Segment starts come from the EXTINF durations, which ffmpeg and
    /// streamd write to the microsecond, so they round to the exact frame.
    private func locateSegment(atOrBefore unit: Int, plan: StreamPlan, segments: any SegmentedSource) throws -> (unit: Int, byte: Int) {
        guard let timeline = segments.timeline(timeout: 10) else {
            throw PlaybackError(message: "player: the HLS playlist did not load", exitCode: 3)
        }
        guard !timeline.isLive else { throw PlaybackError(message: "player: a live HLS stream cannot seek", exitCode: 1) }
        let unitsPerSecond = Double(plan.format.sampleRate) / Double(max(1, plan.samplesPerUnit))
        func firstUnit(_ index: Int) -> Int { Int((timeline.segmentStarts[index] * unitsPerSecond).rounded()) }
        var low = 0, high = timeline.segmentStarts.count
        while low < high {
            let mid = (low + high) / 2
            if firstUnit(mid) <= unit { low = mid + 1 } else { high = mid }
        }
        var index = max(0, low - 1)
        guard !timeline.segmentStarts.isEmpty else { return (0, 0) }
        // The segments' own timestamps are exact where EXTINF may be rounded: measure the chosen
        // segment's start, and step back while it begins after the unit wanted.
        for _ in 0..<4 {
            // Timestamps come from the segments (a tfdt may say anything): out of range, EXTINF decides.
            guard let seconds = segments.measuredStart(ofSegment: index),
                  let measured = try? Checked.int(seconds * unitsPerSecond, "hls", "segment timestamp") else { break }
            if measured <= unit || index == 0 {
                if measured != firstUnit(index) {
                    log("parser", "segment \(index) starts at unit \(measured) by its timestamps (EXTINF says \(firstUnit(index)))")
                }
                return (max(0, measured), index)
            }
            index -= 1
        }
        return (firstUnit(index), index)
    }

    private func loadFrameTable(_ plan: StreamPlan, around seconds: Double?) -> FrameTable? {
        let spf = Double(plan.samplesPerUnit)
        let rate = Double(plan.format.sampleRate)
        // Points may come from the network: one whose time is not a sane time ends the table.
        func table(_ points: [SeekPoint]) -> FrameTable {
            var result: FrameTable = []
            for point in points {
                guard let seconds = try? Checked.duration(point.t, "seek index", "points.t"),
                      let frame = try? Checked.int(seconds * rate / spf, "seek index", "points.t") else {
                    log("parser", "seek index point at t=\(point.t) is out of range: table cut there")
                    break
                }
                result.append((frame, point.byte))
            }
            return result
        }
        if !url.contains("://") {
            guard let file = try? LocalFile(path: url), let analysis = try? TrackAnalyzer.analyze(file) else { return nil }
            return table(analysis.seekIndex.points)
        }
        let fallback = plan.stream.vbrHeader?.xingTOC != nil ? "Xing TOC" : "CBR arithmetic"
        return serverSeekIndex(around: seconds, fallback: fallback).map { table($0.points) }
    }

    /// streamd's exact seek index (it publishes /api/index/<path> beside /media/<path>), the
    /// points around `seconds`; nil when the URL is not streamd's or the index is missing or
    /// refused, which is logged with the `fallback` used instead.
    func serverSeekIndex(around seconds: Double?, fallback: String) -> SeekIndexDocument? {
        guard !TranscodeRequest.isTranscode(url),
              let indexURL = APIRoutes.seekIndexURL(forMediaURL: url, around: seconds) else { return nil }
        guard let body = try? HTTPSource(url: indexURL, options: options.http).fetch(limit: 16 << 20) else {
            log("parser", "no seek index at \(indexURL); seeking by \(fallback)")
            return nil
        }
        do {
            let index = try SeekIndexDocument.decode(body)
            log("parser", "seek index from \(indexURL): \(index.points.count) points")
            return index
        } catch {
            log("parser", "seek index at \(indexURL) refused (\(error)); seeking by \(fallback)")
            return nil
        }
    }

    /// Fragmented MP4: the moof that holds `unit` (decoding restarts at a moof). The index comes
    /// from streamd's `/api/index` or a local scan (one point per fragment), else from the
    /// file's own mfra/tfra table fetched with Range requests.
    private func locateFragment(atOrBefore unit: Int, plan: StreamPlan) throws -> (unit: Int, byte: Int) {
        let seconds = Double(unit * plan.samplesPerUnit) / Double(plan.format.sampleRate)
        if frameTable == nil || url.contains("://") {
            frameTable = loadFrameTable(plan, around: url.contains("://") ? seconds : nil) ?? randomAccessTable(plan)
        }
        guard let table = frameTable, let first = table.first else {
            throw PlaybackError(message: "parser: cannot seek in this fragmented MP4: no mfra table and no server index",
                                exitCode: 1)
        }
        var best = first
        for entry in table where entry.frame <= unit { best = entry }
        return (best.frame, best.byte)
    }

    /// The mfra box at the end of a fragmented file (its size is in the closing mfro box), read
    /// with two Range requests; nil (and a log line saying why) when there is none.
    func fragmentRandomAccess(trackID: Int) -> MP4RandomAccess? {
        if let cached = fragmentIndex { return cached }
        let table = readFragmentRandomAccess(trackID: trackID)
        fragmentIndex = .some(table)
        return table
    }

    private func readFragmentRandomAccess(trackID: Int) -> MP4RandomAccess? {
        do {
            let size = try control.totalSize ?? source.resourceSize()
            guard size >= 16 else { return nil }
            let tail = try source.readRange((size - 16)..<size)
            guard let mfraSize = MP4RandomAccess.mfraSize(fromLast16: tail[...]), mfraSize <= min(size, 64 << 20) else {
                log("parser", "no mfra table at the end of the file")
                return nil
            }
            let mfra = try source.readRange((size - mfraSize)..<size)
            guard let found = try MP4RandomAccess.parse(mfra: mfra[...], trackID: trackID), !found.entries.isEmpty else {
                log("parser", "the mfra table has no entries for track \(trackID)")
                return nil
            }
            return found
        } catch {
            log("parser", "no mfra table: \(error)")
            return nil
        }
    }

    /// A fragmented file's length in media ticks without reading every fragment: the mfra
    /// table's last entry, plus the duration of the fragment it points at.
    func fragmentedLength(track: MP4AudioTrack, defaults: MP4TrackExtends?) -> Int? {
        guard let last = fragmentRandomAccess(trackID: track.trackID)?.entries.last,
              let head = try? source.readRange(last.moofOffset..<(last.moofOffset + 16)),
              let header = try? MP4BoxHeader.parse(head[...], at: 0), header.type == "moof",
              let size = header.size, size <= FragmentedMP4Converter.maxMoofBytes,
              let moof = try? source.readRange(last.moofOffset..<(last.moofOffset + size)),
              let fragment = try? MP4Fragment.parse(moof: moof[...], at: last.moofOffset, trackID: track.trackID,
                                                    defaults: defaults) else { return nil }
        let start = fragment.baseMediaDecodeTime ?? last.time
        let (end, overflow) = start.addingReportingOverflow(fragment.duration)
        return overflow ? nil : end
    }

    private func randomAccessTable(_ plan: StreamPlan) -> FrameTable? {
        guard let track = plan.mp4, track.timescale > 0, let table = fragmentRandomAccess(trackID: track.trackID) else { return nil }
        log("parser", "seek table from mfra: \(table.entries.count) fragments")
        let rate = plan.format.sampleRate, spu = max(1, plan.samplesPerUnit)
        var frames: FrameTable = []
        for entry in table.entries {
            do {
                let samples = try Checked.samples(ticks: entry.time, timescale: track.timescale, rate: rate, "mp4", "tfra.time")
                frames.append((samples / spu, entry.moofOffset))
            } catch {
                log("parser", "seek table from mfra cut at entry \(frames.count): \(error)")
                break
            }
        }
        return frames
    }
}
