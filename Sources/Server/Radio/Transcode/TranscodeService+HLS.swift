#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StreamAudio
import StreamShared
import StreamLibrary
import StreamHTTP
import StreamHLS

/// HLS renditions (`--hls-ladder`): whole-track encodes made and cached like `/media/…?format=`
/// transcodes, under keys of their own (MP3 at 48 kHz without the bit reservoir, Opus after a
/// lead of silence: see `HLSRendition`), so they never stand in for a `/media/` transcode.
extension TranscodeService: HLSRenditionEncoder {
    /// What encoding `rendition` of the track at `absolute` means, and where its file is kept.
    private func renditionSpec(absolute: String, file: OpenFile, rendition: HLSRendition) throws(HTTPRefusal)
        -> (spec: TranscodeSpec, cacheName: String, relative: String) {
        guard let track = catalog.track(forAbsolutePath: absolute), let relative = catalog.resolver.relative(absolute) else {
            throw HTTPRefusal(404, "not a track of the library")
        }
        guard track.sampleRate > 0, track.channels > 0 else { throw HTTPRefusal(422, "the track has no sample rate") }
        let format: TranscodeFormat = rendition.codec == .opus ? .opus : .mp3
        let stamp = file.stamp
        let key = "\(relative)|\(stamp.size)|\(stamp.mtimeNanos)|\(format.rawValue)|\(rendition.kbps)|hls"
        let cacheName = TranscodeCache.name(key: key, ext: format.fileExtension)
        var spec = TranscodeSpec(path: absolute, hints: TrackDecoder.Hints(audioStart: track.firstFrameOffset, audioEnd: stamp.size,
                                                                            encoderDelay: track.encoderDelay,
                                                                            encoderPadding: track.encoderPadding,
                                                                            totalSamples: track.totalSamples),
                                 channels: track.channels, sourceRate: track.sampleRate, format: format, kbps: rendition.kbps,
                                 gain: 1, start: DecodeStart(sample: 0), tags: Self.tags(track), key: key,
                                 cachePath: cache.path(of: cacheName))
        spec.fixedRate = HLSRendition.sampleRate
        if rendition.codec == .opus { spec.leadingSilence = HLSRendition.opusLead } else { spec.reservoir = false }
        return (spec, cacheName, relative)
    }

    public func cachedRendition(absolute: String, file: OpenFile, rendition: HLSRendition) -> OpenFile? {
        guard let made = try? renditionSpec(absolute: absolute, file: file, rendition: rendition) else { return nil }
        return cache.open(made.cacheName)
    }

    public func renditionEncode(absolute: String, file: OpenFile, rendition: HLSRendition) throws(HTTPRefusal) -> RenditionEncode {
        let (spec, cacheName, relative) = try renditionSpec(absolute: absolute, file: file, rendition: rendition)
        if let cached = cache.open(cacheName) {
            state.withLock { $0.hits += 1 }
            return .complete(cached)
        }
        // Nobody reads a rendition's encode through a reader, so it must not wait in the queue (a
        // queued job is dropped when it has no reader): with every slot taken, 503 at once.
        let full = state.withLock { s in s.active[spec.key] == nil && s.running >= settings.jobs }
        if full { throw HTTPRefusal(503, "transcoding at capacity: try again shortly", headers: [("Retry-After", "2")]) }
        // The request counts as a reader that never leaves: the encode runs to its end, whoever waits.
        let job = try admit(spec, relative: relative)
        return try progress(of: job, cacheName: cacheName, folder: rendition.folder)
    }

    /// Where `job` stands now: complete (its cache file), under way (its spool), or a 503.
    private func progress(of job: TranscodeJob, cacheName: String, folder: String) throws(HTTPRefusal) -> RenditionEncode {
        let (state, published, growingAnswered) = job.shared.withLock { ($0.state, $0.published, $0.growingAnswered) }
        switch state {
        case .complete:
            // The spool was renamed into the cache before the state said so.
            if let made = try? OpenFile(path: cache.path(of: cacheName)) { return .complete(made) }
            throw HTTPRefusal(503, "the \(folder) encode was evicted: try again", headers: [("Retry-After", "1")])
        case .failed(let why):
            // A worker that crashed or hung costs this encode; the next request starts another.
            throw HTTPRefusal(503, "the \(folder) encode failed: \(why)", headers: [("Retry-After", "2")])
        case .cancelled:
            throw HTTPRefusal(503, "the \(folder) encode stopped: try again", headers: [("Retry-After", "1")])
        case .queued, .running:
            // The spool as it grows: its own descriptor, so a rename into the cache changes nothing for it.
            let copy = dup(job.fd)
            guard copy >= 0 else { throw HTTPRefusal(500, "cannot read the \(folder) encode: errno \(errno)") }
            let spool: OpenFile
            do {
                spool = try OpenFile(adopting: copy)
            } catch {
                throw HTTPRefusal(500, "cannot read the \(folder) encode: \(error)")
            }
            return .encoding(RenditionProgress(spool: spool, published: min(published, spool.size),
                                               notify: { [job] bytes, wake in job.notify(whenPublished: bytes, wake) },
                                               current: { [self, job] () throws(HTTPRefusal) in
                                                   try progress(of: job, cacheName: cacheName, folder: folder)
                                               },
                                               growingAnswered: growingAnswered,
                                               markGrowingAnswered: { [job] in job.shared.withLock { $0.growingAnswered = true } }))
        }
    }
}
