@testable import StreamShared

/// Where an HLS rendition's encode is cut (`RenditionGrid`): the MP3 frame walk and the Ogg Opus
/// page/packet walk on raw bytes. Spans must lie inside the input, in order, and Opus windows
/// must be as many as the spans.
enum RenditionTarget {
    static func run(_ bytes: [UInt8]) {
        let file = MemoryBytes(bytes)
        if let cuts = try? RenditionGrid.mp3Cuts(file) {
            check(cuts.spans, size: bytes.count)
            require(cuts.audioEnd <= bytes.count, "MP3 audio end \(cuts.audioEnd) past \(bytes.count)")
        }
        if let cuts = try? RenditionGrid.opusCuts(file) {
            check(cuts.spans, size: bytes.count)
            require(cuts.windows.count == cuts.spans.count && cuts.startSamples.count == cuts.spans.count, "one window per span")
            require(cuts.windows.allSatisfy { $0.lowerBound >= 0 && !$0.isEmpty }, "windows \(cuts.windows)")
        }
    }

    static func check(_ spans: [HLSSegmentSpan], size: Int) {
        require(!spans.isEmpty, "no spans")
        for span in spans {
            require(0 <= span.start && span.start < span.end && span.end <= size, "span \(span) outside \(size) bytes")
            require(span.duration.isFinite && span.duration > 0, "span duration \(span.duration)")
        }
    }
}
