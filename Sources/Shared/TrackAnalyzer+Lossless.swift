extension TrackAnalyzer {
    // MARK: FLAC

    /// FLAC from its metadata (STREAMINFO, Vorbis comment, pictures) and, when `scanFrames`,
    /// every frame: the seek index maps each kept frame's first sample to its header's offset.
    /// The sample count is STREAMINFO's, or the last frame's end when STREAMINFO says 0.
    static func analyzeFLAC(_ source: some RandomAccessBytes, _ stream: ProbedStream, scanFrames: Bool) throws -> TrackAnalysis {
        let flac = try FLACReader.read(source)
        let info = flac.streamInfo
        guard let total = flac.totalSamples else {
            throw FormatError.invalid(component: "flac", reason: "STREAMINFO's sample count is 0 and no last frame was found",
                                      offset: flac.audioEnd)
        }
        let rate = Double(info.sampleRate)
        let duration = try Checked.duration(Double(total) / rate, "flac", "total_samples")
        var points = [SeekPoint(t: 0, byte: flac.audioStart, sample: 0)]
        var frames = (total + max(1, info.maxBlockSize) - 1) / max(1, info.maxBlockSize)
        var notes: [String] = []
        if scanFrames {
            let scan = try flacFrameIndex(source, flac)
            points = scan.points
            frames = scan.frames
            if scan.skippedBytes > 0 { notes.append("\(scan.skippedBytes) bytes between frames skipped (damage)") }
        }
        let trailing = try trailingTags(source, after: flac.audioStart)
        let seek = SeekIndex(points: points, firstFrameOffset: flac.audioStart, audioEndOffset: flac.audioEnd,
                             encoderDelay: 0, encoderPadding: 0, durationSeconds: duration)
        // The Vorbis comment wins over an ID3v2 tag in front and an ID3v1 tag at the end.
        let tags = flac.tags.merged(with: stream.tags).merged(with: trailing.tags)
        var analysis = TrackAnalysis(container: .flac, codec: "flac", sampleRate: info.sampleRate, channels: info.channels,
                                     durationSeconds: duration,
                                     bitrate: try Checked.bitrate(bytes: flac.audioEnd - flac.audioStart, seconds: duration, "flac"),
                                     frames: frames, firstFrameOffset: flac.audioStart, encoderDelay: 0, encoderPadding: 0,
                                     totalSamples: total, tags: tags, seekIndex: seek, notes: notes)
        analysis.bitsPerSample = info.bitsPerSample
        if info.totalSamples == 0 { analysis.notes.append("sample count from the last frame (STREAMINFO says 0)") }
        return analysis
    }

    /// The largest FLAC frame: 65535 samples of 8 channels at 33 bits (a side channel of 32-bit
    /// audio), with headers and the CRC.
    static let maxFLACFrameBytes = 65_536 * 8 * 33 / 8 + 1024

    /// Walks every frame from the first to the audio's end, in windows, each frame confirmed by
    /// its CRC-8 and CRC-16; damage between frames is skipped to the next confirmed frame.
    static func flacFrameIndex(_ source: some RandomAccessBytes, _ flac: FLACStream) throws
        -> (points: [SeekPoint], frames: Int, skippedBytes: Int) {
        let info = flac.streamInfo
        let rate = Double(info.sampleRate)
        let chunk = 4 * maxFLACFrameBytes
        var builder = SeekIndexBuilder()
        var position = flac.audioStart
        var frames = 0
        var skipped = 0
        while position < flac.audioEnd {
            let bytes = try source.read(at: position, count: min(chunk, flac.audioEnd - position))
            guard !bytes.isEmpty else { break }
            let complete = position + bytes.count >= flac.audioEnd
            let scanner = FLACFrameScanner(bytes[...], isComplete: complete, streamBits: info.bitsPerSample)
            // A frame that starts past `limit` may run past these bytes: it waits for the next window.
            let limit = complete ? bytes.count : bytes.count - maxFLACFrameBytes
            var offset = 0
            while offset < limit {
                if let frame = scanner.frame(at: offset) {
                    let sample = frame.header.firstSample(nominalBlockSize: info.maxBlockSize)
                    builder.add(frameStart: Double(sample) / rate, byte: position + offset, sample: sample)
                    frames += 1
                    offset += frame.length
                } else if let next = scanner.nextFrame(from: offset + 1, through: limit) {
                    skipped += next.offset - offset
                    offset = next.offset
                } else {
                    // No confirmed frame before `limit`: the rest is damage (or the last frame's tail).
                    let end = complete ? bytes.count : limit
                    skipped += end - offset
                    offset = end
                }
            }
            position += max(offset, 1)
        }
        guard frames > 0 else {
            // A file cut inside its first frame (FLACReader believed that header on its CRC-8): the one point.
            return ([SeekPoint(t: 0, byte: flac.audioStart, sample: 0)], 1, skipped)
        }
        return (builder.points, frames, skipped)
    }

    // MARK: Ogg

    /// Ogg Opus or Vorbis: the headers from the first pages and the length from the last page
    /// (a chain is walked link by link); with `scanFrames`, every page of the audio stream, each
    /// one starting a packet giving a seek point (its offset, the granule of the stream's previous
    /// completed page, and its link).
    static func analyzeOgg(_ source: some RandomAccessBytes, scanFrames: Bool) throws -> TrackAnalysis {
        let ogg = try OggReader.read(source)
        let first = ogg.first
        switch first.codec {
        case .opus, .vorbis: break
        case .flac: throw FormatError.unsupported(component: "ogg", reason: "Ogg FLAC files are not supported (native FLAC is)")
        case .speex: throw FormatError.unsupported(component: "ogg", reason: "Ogg Speex files are not supported")
        }
        var seconds = 0.0
        var samples = 0
        var startTrim = 0
        for (index, link) in ogg.links.enumerated() {
            guard let last = link.lastGranule, last >= 0 else {
                throw FormatError.invalid(component: "ogg", reason: "link \(index) has no page with a granule position", offset: link.offset)
            }
            // A stream that starts at a granule above 0 (cut from a live stream) plays from there.
            let start = index == 0 && link.codec.name == "opus" ? try opusStartGranule(source, link) : 0
            if index == 0 { startTrim = start }
            let linkSamples = max(0, Int(last) - start - link.codec.preSkip)
            samples += linkSamples
            seconds += try Checked.seconds(ticks: linkSamples, timescale: link.codec.sampleRate, "ogg", "granule_position")
        }
        let rate = first.codec.sampleRate
        let duration = try Checked.duration(seconds, "ogg", "granule_position")
        var points = [SeekPoint(t: 0, byte: first.offset, sample: 0, link: 0)]
        var notes: [String] = []
        if ogg.links.count > 1 { notes.append("chained Ogg: \(ogg.links.count) links") }
        if startTrim > 0 { notes.append("stream starts at granule \(startTrim)") }
        if scanFrames { points = try oggPageIndex(source) }
        let preSkip = first.codec.preSkip
        let untrimmed = Double(samples + preSkip) / Double(rate)
        let seek = SeekIndex(points: points, firstFrameOffset: first.offset, audioEndOffset: source.size,
                             encoderDelay: preSkip, encoderPadding: 0, durationSeconds: untrimmed)
        // The first link's comment: tags, gains (R128 moved to ReplayGain's reference) and the cover's size.
        let tags = ogg.tags
        var bitrate = try Checked.bitrate(bytes: source.size - first.offset, seconds: duration, "ogg")
        if case .vorbis(let id) = first.codec, id.bitrateNominal > 0, duration == 0 { bitrate = Int(id.bitrateNominal) }
        return TrackAnalysis(container: .ogg, codec: first.codec.name, sampleRate: rate, channels: first.codec.channels,
                             durationSeconds: duration, bitrate: bitrate, frames: 0, firstFrameOffset: first.offset,
                             encoderDelay: preSkip, encoderPadding: 0, totalSamples: samples + preSkip, tags: tags,
                             seekIndex: seek, notes: notes)
    }

    /// The granule an Opus stream starts at: the first audio page's granule less the samples of
    /// the packets that end on it (RFC 7845 §4.5); 0 for the usual stream, or when unknown.
    static func opusStartGranule(_ source: some RandomAccessBytes, _ link: OggLink) throws -> Int {
        guard let firstGranule = link.firstAudioGranule, firstGranule > 0 else { return 0 }
        var cursor = OggPageCursor(source: source)
        cursor.offset = link.offset
        var assembler = OggPacketAssembler(serial: link.serial)
        var packetIndex = 0
        var pages = 0
        while let (_, page, body) = try cursor.next(), pages < 64 {
            pages += 1
            guard page.serial == link.serial else { continue }
            let packets = try assembler.push(page, body: body)
            var onPage = 0
            for packet in packets {
                packetIndex += 1
                if packetIndex > 2 { onPage += OpusPacket.samples(packet.data[...]) ?? 0 }
            }
            if packetIndex > 2, page.granulePosition != -1 {
                return max(0, Int(page.granulePosition) - onPage)
            }
        }
        return 0
    }

    /// Every page of the chosen audio stream of every link that starts a packet (not a
    /// continuation) and follows a page with a granule: its offset, that granule (the sample the
    /// page's first packet starts at, before the pre-skip), and its link.
    static func oggPageIndex(_ source: some RandomAccessBytes) throws -> [SeekPoint] {
        var cursor = OggPageCursor(source: source)
        var walker = OggLinkWalker()
        var builder = SeekIndexBuilder()
        var linkStart = 0.0           // seconds of the links before this one (their granule spans)
        var previous: (link: Int, granule: Int64)?
        while let (offset, page, body) = try cursor.next() {
            let linksBefore = walker.links.count
            try walker.add(page, body: body, at: offset)
            guard let linkIndex = walker.links.indices.last else { continue }
            let link = walker.links[linkIndex]
            if walker.links.count != linksBefore, let previous, previous.link < linkIndex {
                linkStart += Double(max(0, previous.granule)) / Double(walker.links[previous.link].codec.sampleRate)
            }
            guard page.serial == link.serial, !page.isBeginningOfStream else { continue }
            if let previous, previous.link == linkIndex, !page.isContinued, walker.headersDone, previous.granule >= 0 {
                let time = linkStart + Double(previous.granule) / Double(link.codec.sampleRate)
                builder.add(frameStart: time, byte: offset, sample: Int(previous.granule), link: linkIndex)
            }
            if page.granulePosition != -1 { previous = (linkIndex, page.granulePosition) }
        }
        guard !builder.points.isEmpty else {
            throw FormatError.invalid(component: "ogg", reason: "no audio page with a granule position", offset: 0)
        }
        return builder.points
    }

    // MARK: AIFF

    /// AIFF/AIFF-C: format from COMM, length from the declared frames capped by the file, tags
    /// from the ID3 chunk (before or after the samples) and NAME/AUTH.
    static func analyzeAIFF(_ source: some RandomAccessBytes, _ stream: ProbedStream) throws -> TrackAnalysis {
        let headerBytes = min(source.size, stream.firstFrameOffset + 16)
        var info: AIFFInfo
        do {
            info = try AIFF.parse(try source.read(at: 0, count: headerBytes)[...])
        } catch let error as FormatError where headerBytes < source.size {
            // COMM behind the samples: the whole file, when it is small enough to hold.
            guard source.size <= maxWholeAIFFBytes else { throw error }
            info = try AIFF.parse(try source.read(at: 0, count: source.size)[...])
        }
        let format = info.format
        // An SSND offset that points past the file: no sample of it is there.
        guard info.dataOffset <= source.size else {
            throw FormatError.truncated(component: "aiff", offset: source.size, needed: info.dataOffset - source.size)
        }
        if let tags = aiffTrailingTags(source, info) { info.tags = info.tags.merged(with: tags) }
        let frames = info.frameCount(fileSize: source.size)
        let rate = format.roundedSampleRate
        let duration = try Checked.duration(Double(frames) / format.sampleRate, "aiff", "COMM.numSampleFrames")
        let blockAlign = max(1, format.blockAlign)
        var index = SeekIndexBuilder()
        var t = 0.0
        while t < duration {
            let frame = Int((t * format.sampleRate).rounded(.down))
            index.add(frameStart: Double(frame) / format.sampleRate, byte: info.dataOffset + frame * blockAlign, sample: frame)
            t += index.interval
        }
        if index.points.isEmpty { index.add(frameStart: 0, byte: info.dataOffset, sample: 0) }
        let seek = SeekIndex(points: index.points, firstFrameOffset: info.dataOffset,
                             audioEndOffset: info.dataOffset + frames * blockAlign, encoderDelay: 0, encoderPadding: 0,
                             durationSeconds: duration)
        var analysis = TrackAnalysis(container: .aiff, codec: stream.codec, sampleRate: rate, channels: format.channels,
                                     durationSeconds: duration, bitrate: rate * blockAlign * 8, frames: frames,
                                     firstFrameOffset: info.dataOffset, encoderDelay: 0, encoderPadding: 0, totalSamples: frames,
                                     tags: info.tags, seekIndex: seek)
        analysis.bitsPerSample = format.encoding == .integer ? format.bitsPerSample : format.bytesPerSample * 8
        if format.sampleRate != Double(rate) { analysis.notes.append("sample rate \(format.sampleRate) Hz rounded to \(rate)") }
        if frames < format.declaredFrames { analysis.notes.append("\(format.declaredFrames - frames) declared frames missing") }
        return analysis
    }

    /// The largest AIFF read whole, for one whose COMM chunk follows its samples.
    static let maxWholeAIFFBytes = 256 << 20

    /// The ID3 chunk after the samples (where most taggers append it), when `info` (read from
    /// the header part) did not see it: chunk headers walked with small reads, 16 MiB at most read.
    static func aiffTrailingTags(_ source: some RandomAccessBytes, _ info: AIFFInfo) -> TrackTags? {
        guard let chunk = aiffID3Chunk(source, info) else { return nil }
        return (try? ID3v2.parse(chunk[...]))?.tags
    }

    /// The bytes of the first ID3 chunk past the SSND chunk.
    static func aiffID3Chunk(_ source: some RandomAccessBytes, _ info: AIFFInfo) -> [UInt8]? {
        let (soundEnd, overflow) = info.dataOffset.addingReportingOverflow(info.dataSize)
        guard !overflow, info.dataSize > 0 else { return nil }
        var offset = soundEnd + (soundEnd & 1 == 1 ? 1 : 0)
        for _ in 0..<64 {
            guard offset + 8 <= source.size, let head = try? source.read(at: offset, count: 8), head.count == 8 else { return nil }
            let id = String(decoding: head[0..<4], as: UTF8.self)
            let size = Int(head[4]) << 24 | Int(head[5]) << 16 | Int(head[6]) << 8 | Int(head[7])
            if id == "ID3 " || id == "id3 " {
                guard size <= 16 << 20, offset + 8 + size <= source.size else { return nil }
                return try? source.read(at: offset + 8, count: size)
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }
}

/// Opus packet lengths from the TOC byte (RFC 6716 §3.1), enough to count the samples of a page.
public enum OpusPacket {
    /// Samples at 48 kHz the packet decodes to; nil for a packet too short to say.
    public static func samples(_ packet: ArraySlice<UInt8>) -> Int? {
        guard let toc = packet.first else { return nil }
        let config = Int(toc >> 3)
        let frameSize: Int   // in 48 kHz samples
        switch config {
        case 0..<12: frameSize = [480, 960, 1920, 2880][config % 4]        // SILK 10/20/40/60 ms
        case 12..<16: frameSize = [480, 960][config % 2]                   // hybrid 10/20 ms
        default: frameSize = [120, 240, 480, 960][config % 4]              // CELT 2.5/5/10/20 ms
        }
        let frames: Int
        switch toc & 0x03 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard packet.count >= 2 else { return nil }
            frames = Int(packet[packet.startIndex + 1] & 0x3F)
        }
        return frames * frameSize
    }
}
