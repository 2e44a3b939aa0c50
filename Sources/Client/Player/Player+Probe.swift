import StreamShared
import StreamAudio

extension Player {
    /// Reads from the throttle until Probe can tell what the stream is.
    func probeStream() throws -> ProbedStream {
        var ended = false
        while true {
            if commands.withLock({ _ in stopRequested }) { throw PlaybackError(message: "player: stopped", exitCode: 0) }
            if !probePrefix.isEmpty || ended {
                let outcome: Probe.Result
                do {
                    outcome = try Probe.probe(probePrefix[...], isComplete: ended)
                } catch let error as FormatError {
                    throw PlaybackError(message: error.isTruncation ? "parser: truncated stream (\(error))" : "\(error)",
                                        exitCode: 1)
                }
                switch outcome {
                case .audio(let stream):
                    return stream
                case .needMore(let atLeast):
                    if ended {
                        throw PlaybackError(message: "parser: truncated stream (\(probePrefix.count) bytes)", exitCode: 1)
                    }
                    if atLeast > 64 * 1024 * 1024 {
                        throw PlaybackError(message: "parser: needs \(atLeast) bytes before the audio", exitCode: 1)
                    }
                }
            }
            switch throttle.read(max: 64 * 1024, timeout: 0.05) {
            case .bytes(let bytes, _): probePrefix += bytes
            case .end:
                if probePrefix.isEmpty { throw PlaybackError(message: "parser: not an audio stream (empty)", exitCode: 1) }
                ended = true
            case .failed(let error):
                throw PlaybackError(sourceFailure: error)
            case .timedOut: continue
            }
        }
    }

    /// The movie box: from the bytes already read when it sits at the front (faststart),
    /// else fetched with a Range request (moov after mdat).
    /// Also returns where a fragmented movie's boxes start: after the moov when it comes first,
    /// else at the start of the file (moof/mdat before the moov).
    func loadMovie() throws -> (MP4Movie, fragmentsStart: Int) {
        // The file's size bounds every top-level box: a streamed 200 does not tell it, so ask once
        // (a one-byte Range request), so a box that overruns the file fails the same way as from a path.
        if control.totalSize == nil, canReadRanges, let size = try? source.resourceSize() {
            control.setTotalSize(size)
        }
        for _ in 0..<100_000 {
            let size = control.totalSize
            let layout: MP4TopLevel
            let nextOffset: Int?
            do { (layout, nextOffset) = try MP4TopLevel.scan(prefix: probePrefix[...], fileSize: size) } catch {
                throw PlaybackError(message: "parser: \(error)", exitCode: 1)
            }
            if let moov = layout.moovRange {
                let mediaFirst = layout.boxes.prefix { $0.type != "moov" }.contains { $0.type == "mdat" || $0.type == "moof" }
                if moov.upperBound <= probePrefix.count {
                    var (movie, start) = try Self.parseMovie(probePrefix[moov], mediaFirst: mediaFirst)
                    if !mediaFirst { start = moov.upperBound }
                    return (movie, start)
                }
                if layout.mdatRange == nil {
                    try readMore(upTo: moov.upperBound)       // moov first: it is coming
                    continue
                }
                return try Self.parseMovie(try fetch(moov)[...], mediaFirst: true)
            }
            guard let next = nextOffset else {
                throw PlaybackError(message: "parser: MP4 without a moov box", exitCode: 1)
            }
            if layout.mdatRange == nil {
                try readMore(upTo: next + 16)
                continue
            }
            return try fetchMovie(after: next, fileSize: size)
        }
        throw PlaybackError(message: "parser: MP4 with too many top-level boxes", exitCode: 1)
    }

    /// A moov after the mdat: walks the top-level boxes from `start` with small Range reads.
    private func fetchMovie(after start: Int, fileSize size: Int?) throws -> (MP4Movie, fragmentsStart: Int) {
        var offset = start
        for _ in 0..<10_000 {
            let head = try fetch(offset..<(offset + 16))
            guard let header = try? MP4BoxHeader.parse(head[...], at: 0) else { break }
            let boxSize = header.size ?? ((size ?? offset) - offset)
            // Sizes come from the file: the box must end inside it (or within 2^40 bytes when
            // the length is unknown), and a moov is read into memory only up to 64 MiB.
            let (end, overflow) = offset.addingReportingOverflow(boxSize)
            guard !overflow, end <= size ?? InputLimits.maxBytes else {
                throw PlaybackError(message: "parser: MP4 box '\(header.type)' of \(boxSize) bytes at byte \(offset) overruns the file",
                                    exitCode: 1)
            }
            if header.type == "moov" {
                guard boxSize <= 64 << 20 else {
                    throw PlaybackError(message: "parser: moov of \(boxSize) bytes is too large", exitCode: 1)
                }
                log("parser", "moov at the end (byte \(offset)): fetched with a Range request")
                return try Self.parseMovie(try fetch(offset..<end)[...], mediaFirst: true)
            }
            guard boxSize > 0 else { break }
            offset = end
        }
        throw PlaybackError(message: "parser: MP4 without a moov box", exitCode: 1)
    }

    /// The movie parsed from its moov box, and where a fragmented movie's boxes start: 0 when
    /// they come before the moov, else the moov's length (the caller knows where it sits).
    private static func parseMovie(_ bytes: ArraySlice<UInt8>, mediaFirst: Bool) throws -> (MP4Movie, fragmentsStart: Int) {
        do { return (try MP4Movie.parse(moov: bytes), mediaFirst ? 0 : bytes.count) } catch {
            throw PlaybackError(message: "parser: \(error)", exitCode: 1)
        }
    }

    private func fetch(_ range: Range<Int>) throws -> [UInt8] {
        if let cached = source.cachedBytes(range) { return cached }
        do { return try source.readRange(range) } catch {
            throw PlaybackError(message: "\(error) (needed for the MP4 index at the end of the file)", exitCode: 3)
        }
    }

    /// Reads from the throttle until `probePrefix` holds `count` bytes (bounded).
    private func readMore(upTo count: Int) throws {
        guard count <= 64 * 1024 * 1024 else {
            throw PlaybackError(message: "parser: MP4 header of \(count) bytes is too large", exitCode: 1)
        }
        while probePrefix.count < count {
            switch throttle.read(max: count - probePrefix.count, timeout: 0.1) {
            case .bytes(let bytes, _): probePrefix += bytes
            case .end: throw PlaybackError(message: "parser: truncated MP4 (\(probePrefix.count) bytes)", exitCode: 1)
            case .failed(let error): throw PlaybackError(sourceFailure: error)
            case .timedOut:
                if commands.withLock({ _ in stopRequested }) { throw PlaybackError(message: "player: stopped", exitCode: 0) }
            }
        }
    }
}
