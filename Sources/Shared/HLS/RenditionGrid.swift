/// Where a transcoded HLS rendition (streamd's `--hls-ladder`) is cut: every variant on one grid
/// of 6 s at 48 kHz (288,000 samples: 250 MP3 frames of 1,152, 300 Opus packets of 20 ms), so a
/// player switches between them at a segment boundary without a gap. The cuts are made from the
/// encode's own frames or pages (read block by block, never whole).
public enum RenditionGrid {
    public static let sampleRate = 48_000
    public static let segmentSamples = 288_000

    /// MP3 at 48 kHz: byte spans of 250 frames each; the first starts at the Info frame (after
    /// the file's ID3v2 tag, which packed segments leave out), the last ends with the last frame.
    /// `inProgress`: the file is an encode still being written, whose first frame may be LAME's
    /// blank placeholder for the Info frame (a header, then zeros), which is no audio either.
    public static func mp3Cuts(_ file: some RandomAccessBytes, inProgress: Bool = false) throws -> (spans: [HLSSegmentSpan], audioEnd: Int) {
        let framesPerSegment = segmentSamples / 1152
        var reader = RenditionBlockReader(file: file)
        var splitter = AudioFrameSplitter(codec: .mpeg)
        let startsWithTag = try file.read(at: 0, count: 3) == Array("ID3".utf8)
        var firstByte = 0
        var frameStarts: [Int] = []
        var audioEnd = 0
        while reader.position < file.size {
            let bytes = try reader.bytes(atLeast: 8192)
            switch try splitter.next(in: bytes, isComplete: reader.reachesEnd) {
            case .needMore:
                if reader.reachesEnd { reader.position = file.size } else { _ = try reader.bytes(atLeast: bytes.count * 2 + 8192) }
            case .skip(let count):
                if startsWithTag && reader.position == 0 { firstByte = count }
                reader.position += max(1, count)
            case .frame(let frame):
                guard frame.sampleRate == sampleRate, frame.samples == 1152 else {
                    throw FormatError.invalid(component: "MP3 rendition", reason: "a frame of \(frame.samples) samples at \(frame.sampleRate) Hz (48 kHz wanted)",
                                              offset: reader.position)
                }
                // An encode in progress holds LAME's blank placeholder (a header, then zeros) where
                // the finished file has its Info frame, which the splitter skips: so is this.
                if inProgress, frameStarts.isEmpty, reader.position == firstByte, frame.length <= bytes.count,
                   bytes.dropFirst(4).prefix(frame.length - 4).allSatisfy({ $0 == 0 }) {
                    reader.position += frame.length
                    continue
                }
                frameStarts.append(reader.position)
                reader.position += frame.length
                audioEnd = reader.position
            }
        }
        guard !frameStarts.isEmpty else { throw FormatError.invalid(component: "MP3 rendition", reason: "no frame", offset: 0) }
        var spans: [HLSSegmentSpan] = []
        var first = 0
        while first < frameStarts.count {
            let end = min(first + framesPerSegment, frameStarts.count)
            let start = first == 0 ? min(firstByte, frameStarts[0]) : frameStarts[first]
            let stop = end < frameStarts.count ? frameStarts[end] : audioEnd
            spans.append(HLSSegmentSpan(startTime: Double(first * 1152) / Double(sampleRate),
                                        duration: Double((end - first) * 1152) / Double(sampleRate), start: start, end: stop))
            first = end
        }
        return (spans, audioEnd)
    }

    /// The cuts of an Ogg Opus encode: span i starts at the page its first packet starts on;
    /// `windows[i]` picks its packets among the audio packets completed in the span's bytes.
    public struct OpusCuts: Sendable {
        public var serial: UInt32
        public var head: OpusHead
        public var lastGranule: Int
        public var spans: [HLSSegmentSpan]
        public var windows: [Range<Int>]
        /// Each span's first sample on the encoder's timeline (pre-skip included): its tfdt.
        public var startSamples: [Int]
    }

    /// Ogg Opus, one stream: cut every 288,000 samples wherever the pages fall.
    public static func opusCuts(_ file: some RandomAccessBytes) throws -> OpusCuts {
        let ogg = try OggReader.read(file)
        guard ogg.links.count == 1, case .opus(let head) = ogg.first.codec, let lastGranule = ogg.first.lastGranule else {
            throw FormatError.invalid(component: "Opus rendition", reason: "not one Ogg Opus stream with a granule position", offset: 0)
        }
        let serial = ogg.first.serial
        let tagsMagic = Array("OpusTags".utf8)
        // Every audio packet: the page it starts on, the end of the page it completes on, its samples.
        var startPage: [Int] = [], endPageEnd: [Int] = [], samples: [Int] = []
        var assembler = OggPacketAssembler(serial: serial)
        var reader = RenditionBlockReader(file: file)
        var inFlightStart: Int?
        while reader.position < file.size {
            let bytes = try reader.bytes(atLeast: OggPage.maxLength)
            // Our own encode: a page starts right here (`next` counts from the slice's start).
            guard let (offset, page) = OggPage.next(in: bytes, from: 0), offset == 0, bytes.count >= page.length else {
                if reader.reachesEnd && bytes.count < OggPage.minHeaderLength { break }
                throw FormatError.invalid(component: "Opus rendition", reason: "no page here", offset: reader.position)
            }
            let pageStart = reader.position
            reader.position += page.length
            guard page.serial == serial else { continue }
            if !page.isContinued { inFlightStart = nil }
            var starts: [Int] = []
            for piece in page.pieces {
                if inFlightStart == nil { inFlightStart = pageStart }
                if piece.endsPacket, let start = inFlightStart {
                    starts.append(start)
                    inFlightStart = nil
                }
            }
            let bodyStart = bytes.startIndex + page.headerLength
            let packets = try assembler.push(page, body: bytes[bodyStart..<(bodyStart + page.bodyLength)])
            guard packets.count == starts.count else {
                throw FormatError.invalid(component: "Opus rendition", reason: "pages that do not join into packets", offset: pageStart)
            }
            for (packet, start) in zip(packets, starts) {
                let data = packet.data
                if data.starts(with: OpusHead.magic) || data.starts(with: tagsMagic) { continue }
                guard let count = OpusPacket.samples(data[...]) else { continue }   // an empty packet: nothing to play
                startPage.append(start)
                endPageEnd.append(pageStart + page.length)
                samples.append(count)
            }
        }
        guard !samples.isEmpty else { throw FormatError.invalid(component: "Opus rendition", reason: "no audio packet", offset: 0) }
        // The first packet starting on each page (what a fresh read from that page yields first).
        var firstOnPage: [Int: Int] = [:]
        for (p, page) in startPage.enumerated() where firstOnPage[page] == nil { firstOnPage[page] = p }
        var cuts: [Int] = []       // packet numbers that start a segment
        var sampleAt: [Int] = []   // each packet's first sample
        var time = 0
        for p in samples.indices {
            if time >= cuts.count * segmentSamples { cuts.append(p) }
            sampleAt.append(time)
            time += samples[p]
        }
        var spans: [HLSSegmentSpan] = [], windows: [Range<Int>] = [], starts: [Int] = []
        for (k, p) in cuts.enumerated() {
            let next = k + 1 < cuts.count ? cuts[k + 1] : samples.count
            let endSample = next < samples.count ? sampleAt[next] : time
            let skip = p - (firstOnPage[startPage[p]] ?? p)
            spans.append(HLSSegmentSpan(startTime: Double(sampleAt[p]) / Double(sampleRate),
                                        duration: Double(endSample - sampleAt[p]) / Double(sampleRate),
                                        start: startPage[p], end: endPageEnd[next - 1]))
            windows.append(skip..<(skip + next - p))
            starts.append(sampleAt[p])
        }
        return OpusCuts(serial: serial, head: head, lastGranule: Int(clamping: lastGranule), spans: spans, windows: windows,
                        startSamples: starts)
    }
}

/// Reads a file front to back in blocks, keeping the bytes from `position` on.
struct RenditionBlockReader<File: RandomAccessBytes> {
    let file: File
    var position = 0
    private var buffer: [UInt8] = []
    private var bufferStart = 0
    static var block: Int { 1 << 20 }

    init(file: File) { self.file = file }

    /// Whether the bytes held reach the end of the file.
    var reachesEnd: Bool { bufferStart + buffer.count >= file.size }

    /// The bytes from `position`: at least `minimum` of them unless the file ends first.
    mutating func bytes(atLeast minimum: Int) throws -> ArraySlice<UInt8> {
        if position < bufferStart || position > bufferStart + buffer.count {
            buffer = []
            bufferStart = position
        }
        if bufferStart + buffer.count - position < minimum, !reachesEnd {
            buffer.removeFirst(position - bufferStart)
            bufferStart = position
            let more = try file.read(at: bufferStart + buffer.count, count: max(Self.block, minimum))
            if more.isEmpty { throw FormatError.truncated(component: "rendition", offset: bufferStart + buffer.count, needed: minimum) }
            buffer += more
        }
        return buffer[(position - bufferStart)...]
    }
}
