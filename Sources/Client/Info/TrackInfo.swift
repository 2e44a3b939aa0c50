import StreamShared
import StreamAudio

/// `streamplay --info`: the facts about a track as one JSON object.
public enum TrackInfo {
    /// Analyzes a local file.
    public static func analyze(path: String) throws -> TrackAnalysis {
        let file = try LocalFile(path: path)
        return try playedFormat(of: try TrackAnalyzer.analyze(file), in: file)
    }

    /// Analyzes a track over HTTP through Range requests, fetching only what it needs: the
    /// first bytes, the tail (trailing tags), the moov box; raw ADTS still needs every frame.
    /// Returns the analysis and how many bytes were downloaded.
    public static func analyze(url: String) throws -> (TrackAnalysis, bytesRead: Int) {
        let bytes = try HTTPBytes(source: HTTPSource(url: url))
        let analysis = try playedFormat(of: try TrackAnalyzer.analyze(bytes, scanFrames: false), in: bytes)
        return (analysis, bytes.bytesRead)
    }

    /// AAC: the analysis restated in the format libfaad2 really outputs, which the first frame
    /// tells (SBR and PS signalled only inside the frames, implicit HE-AAC, double the rate or
    /// make mono stereo; no header says so). One frame is read and decoded (at most 8 KiB).
    static func playedFormat(of analysis: TrackAnalysis, in source: some RandomAccessBytes) throws -> TrackAnalysis {
        guard analysis.codec == "aac" else { return analysis }
        let frame = try source.read(at: analysis.firstFrameOffset, count: 8192)
        let decoder = try FAADDecoder(audioSpecificConfig: analysis.audioSpecificConfig, declaredChannels: analysis.channels)
        try decoder.decode(frame: frame[...]) { _, _ in }
        guard let format = decoder.format else { return analysis }
        return analysis.played(as: format)
    }

    /// The `--info` JSON object, fields in the documented order.
    public static func json(_ a: TrackAnalysis) -> String {
        var w = JSONObjectWriter()
        w.add("container", a.container.rawValue)
        w.add("codec", a.codec)
        w.add("sample_rate", a.sampleRate)
        w.add("channels", a.channels)
        // Lossless and PCM only (FLAC, AIFF, ALAC, WAV): a lossy codec has no bit depth of its own.
        w.add("bits_per_sample", a.bitsPerSample)
        w.add("duration_s", a.durationSeconds)
        w.add("bitrate", a.bitrate)
        w.add("frames", a.frames)
        w.add("first_frame_offset", a.firstFrameOffset)
        w.add("encoder_delay", a.encoderDelay)
        w.add("encoder_padding", a.encoderPadding)
        w.add("title", a.tags.title)
        w.add("artist", a.tags.artist)
        w.add("album", a.tags.album)
        w.add("track", a.tags.track)
        w.add("cover_art_bytes", a.tags.coverArtBytes)
        w.addRaw("replaygain", a.tags.replayGain.map(replayGainJSON) ?? "null")
        w.add("total_samples", a.totalSamples)
        if !a.notes.isEmpty {
            w.addRaw("notes", "[" + a.notes.map(JSONObjectWriter.quote).joined(separator: ",") + "]")
        }
        return w.text
    }
}

/// `{"track_gain":-6.54,"track_peak":0.98,"album_gain":…,"album_peak":…}`, gains in dB,
/// peaks linear; a value the file lacks is null.
func replayGainJSON(_ gain: ReplayGain) -> String {
    var w = JSONObjectWriter()
    w.add("track_gain", gain.trackGain, decimals: 2)
    w.add("track_peak", gain.trackPeak)
    w.add("album_gain", gain.albumGain, decimals: 2)
    w.add("album_peak", gain.albumPeak)
    return w.text
}

extension TrackAnalysis {
    /// The same track stated at the rate and channels a decoder outputs: sample counts follow
    /// the rate, the duration stays; a note says why the header's format was not kept.
    func played(as format: AudioFormat) -> TrackAnalysis {
        guard format.sampleRate != sampleRate || format.channels != channels, sampleRate > 0 else { return self }
        var restated = self
        let ratio = Double(format.sampleRate) / Double(sampleRate)
        func scaled(_ samples: Int) -> Int { Int((Double(samples) * ratio).rounded()) }
        restated.sampleRate = format.sampleRate
        restated.channels = format.channels
        restated.totalSamples = scaled(totalSamples)
        restated.encoderDelay = scaled(encoderDelay)
        restated.encoderPadding = scaled(encoderPadding)
        restated.seekIndex.encoderDelay = scaled(seekIndex.encoderDelay)
        restated.seekIndex.encoderPadding = scaled(seekIndex.encoderPadding)
        restated.notes.append("the frames carry \(format.sampleRate > sampleRate ? "SBR" : "PS") (implicit HE-AAC): "
                              + "\(format.sampleRate) Hz \(format.channels) ch played, the header says \(sampleRate) Hz \(channels) ch")
        return restated
    }
}

/// Random access to an HTTP resource through Range requests, with a one-window cache whose
/// read-ahead grows (4 KiB to 64 KiB) while reads go forward in order and shrinks after a
/// jump, so a scan is a few large requests and scattered reads (an MP4's moof boxes, the
/// tail's tags) cost a few kilobytes each.
final class HTTPBytes: RandomAccessBytes {
    private let source: HTTPSource
    let size: Int
    private var cachedStart = -1
    private var cached: [UInt8] = []
    private var readAhead = HTTPBytes.minimumReadAhead
    /// Bytes fetched so far.
    private(set) var bytesRead = 0
    static let block = 64 * 1024
    static let minimumReadAhead = 4 * 1024

    init(source: HTTPSource) throws {
        self.source = source
        // A one-byte range tells the size (Content-Range: bytes 0-0/SIZE).
        size = try source.resourceSize()
    }

    func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, offset < size, count > 0 else { return [] }
        if count > Self.block {
            let whole = try source.readRange(offset..<min(size, offset + count))
            bytesRead += whole.count
            return whole
        }
        let cachedEnd = cachedStart + cached.count
        if cachedStart < 0 || offset < cachedStart || offset >= cachedEnd {
            let sequential = cachedStart >= 0 && offset >= cachedEnd && offset - cachedEnd < readAhead
            readAhead = sequential ? min(Self.block, readAhead * 4) : Self.minimumReadAhead
            cached = try source.readRange(offset..<min(size, offset + max(count, readAhead)))
            bytesRead += cached.count
            cachedStart = offset
            guard !cached.isEmpty else { throw SourceError.network("\(source.name): empty answer to a Range request") }
        }
        let from = offset - cachedStart
        var out = Array(cached[min(cached.count, from)..<min(cached.count, from + count)])
        if out.count < count && offset + out.count < size {
            out += try read(at: offset + out.count, count: count - out.count)
        }
        return out
    }
}
