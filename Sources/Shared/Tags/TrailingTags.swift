/// Tags stored after the audio at the end of a file: ID3v1 (with the "TAG+" extension),
/// Lyrics3 (v1, v2) and APEv2 (or v1), in the combinations writers produce, outermost last:
/// `audio | APE | Lyrics3 | ID3v1`, any of them absent (APE may also follow Lyrics3).
public struct TrailingTags: Sendable, Equatable {
    /// How many bytes at the end of the file are tags, not audio.
    public var trailingBytes: Int
    /// Fields of the ID3v1 tag (Latin-1, trimmed; the track from ID3v1.1), when there is one.
    public var id3v1: TrackTags?
    /// Bytes of the APE tag including its header and footer; 0 when there is none.
    public var apeSize: Int
    /// The APE tag's text items, when the whole tag lies inside the scanned tail.
    public var apeItems: [APEItem]

    public init(trailingBytes: Int, id3v1: TrackTags?, apeSize: Int, apeItems: [APEItem] = []) {
        self.trailingBytes = trailingBytes
        self.id3v1 = id3v1
        self.apeSize = apeSize
        self.apeItems = apeItems
    }

    static let component = "trailing-tags"

    /// The fields of the APE tag (Title, Artist, Album, Track, ReplayGain), then the ID3v1
    /// tag's for what the APE tag lacks; nil when neither has any.
    public var tags: TrackTags? {
        var ape = TrackTags()
        for item in apeItems {
            let value = item.value.isEmpty ? nil : item.value
            switch item.key.uppercased() {
            case "TITLE": ape.title = ape.title ?? value
            case "ARTIST": ape.artist = ape.artist ?? value
            case "ALBUM": ape.album = ape.album ?? value
            case "TRACK": ape.track = ape.track ?? value
            default: break
            }
        }
        let gain = ReplayGain(items: apeItems)
        ape.replayGain = gain.isEmpty ? nil : gain
        let merged = ape.merged(with: id3v1)
        return merged.isEmpty ? nil : merged
    }

    /// Finds the tags at the end of a file from its last bytes and its full size.
    ///
    /// `tail` is the end of the file (callers pass the last 64 KiB or so). A tag that starts
    /// before the tail is measured from its footer's size field alone, which is checked against
    /// `fileSize`: a size larger than the file throws `.invalid`.
    public static func scan(tail: ArraySlice<UInt8>, fileSize: Int) throws -> TrailingTags {
        try scanTail(TailBytes(tail, fileSize: fileSize))
    }

    static func scanTail(_ tail: TailBytes) throws(FormatError) -> TrailingTags {
        guard tail.count <= tail.fileSize else {
            throw FormatError.invalid(component: component,
                                      reason: "\(tail.count) tail bytes of a \(tail.fileSize)-byte file", offset: 0)
        }
        var result = TrailingTags(trailingBytes: 0, id3v1: nil, apeSize: 0)
        var end = tail.count            // tags end here; everything after `end` is already accounted for

        // ID3v1 is always last. An APE footer in the last 32 bytes means the file ends with the
        // APE tag instead, whatever its items happen to contain 128 bytes from the end.
        let endsWithAPE = tail.has(APETagFooter.preamble, at: end - APETagFooter.length)
        if !endsWithAPE, end >= ID3v1.length, ID3v1.isTag(tail[(end - ID3v1.length)..<end]) {
            let tag = tail[(end - ID3v1.length)..<end]
            end -= ID3v1.length
            var enhanced: ArraySlice<UInt8>?
            if end >= ID3v1.enhancedLength, ID3v1.isEnhancedTag(tail[(end - ID3v1.enhancedLength)..<end]) {
                enhanced = tail[(end - ID3v1.enhancedLength)..<end]
                end -= ID3v1.enhancedLength
            }
            result.id3v1 = ID3v1.parse(tag, enhanced: enhanced)
        }

        // Lyrics3 and APE each appear at most once, in either order, in front of the ID3v1.
        var seenLyrics = false, seenAPE = false
        while true {
            if !seenLyrics, let lyrics = try Lyrics3.find(in: tail, endingAt: end, beforeID3v1: result.id3v1 != nil) {
                seenLyrics = true
                switch lyrics {
                case .size(let size):
                    end -= size
                    continue
                case .beyondTail(let size):
                    result.trailingBytes = tail.count - end + size
                    return result
                }
            }
            if !seenAPE, end >= APETagFooter.length,
               let footer = APETagFooter(tail[(end - APETagFooter.length)..<end]) {
                seenAPE = true
                let size = try apeSize(footer, endingAt: end, in: tail)
                result.apeSize = size
                guard size <= end else {
                    // The tag starts before the tail: its footer is all there is to go on, and
                    // nothing in front of it can be seen.
                    result.trailingBytes = tail.count - end + size
                    return result
                }
                // The items sit between the optional header and the footer (`footer.size` counts
                // the items and the footer).
                result.apeItems = APEItems.parse(tail[(end - footer.size)..<(end - APETagFooter.length)],
                                                 count: footer.itemCount)
                end -= size
                continue
            }
            break
        }
        result.trailingBytes = tail.count - end
        return result
    }

    /// The validated size on disk of the APE tag whose footer ends at `end` of the tail.
    private static func apeSize(_ footer: APETagFooter, endingAt end: Int,
                                in tail: TailBytes) throws(FormatError) -> Int {
        let footerOffset = tail.fileOffset(end - APETagFooter.length)
        guard footer.version == 1000 || footer.version == 2000 else {
            throw FormatError.unsupported(component: component, reason: "APE tag version \(footer.version)")
        }
        // The size covers at least the footer itself; more than the file holds in front of the
        // footer's end is a lie, and trusting it would cut audio off (or go negative).
        guard footer.size >= APETagFooter.length, footer.totalSize <= tail.fileOffset(end) else {
            throw FormatError.invalid(component: component,
                                      reason: "APE tag of \(footer.totalSize) bytes does not fit in the file",
                                      offset: footerOffset)
        }
        // When the header is in view it must be there: a size that misses it is a lie too.
        let headerStart = end - footer.totalSize
        if footer.hasHeader, headerStart >= 0, !tail.has(APETagFooter.preamble, at: headerStart) {
            throw FormatError.invalid(component: component,
                                      reason: "APE footer promises a header that is not at its start",
                                      offset: tail.fileOffset(headerStart))
        }
        return footer.totalSize
    }
}

/// The last bytes of a file, indexed from 0 at the first byte of the tail, with the file size
/// to turn those positions into file offsets.
struct TailBytes {
    let bytes: ArraySlice<UInt8>
    let fileSize: Int

    init(_ bytes: ArraySlice<UInt8>, fileSize: Int) {
        self.bytes = bytes
        self.fileSize = fileSize
    }

    var count: Int { bytes.count }

    /// The file offset of position `index` of the tail.
    func fileOffset(_ index: Int) -> Int { fileSize - bytes.count + index }

    /// Bytes `range` of the tail (positions from 0); the range must lie inside the tail.
    subscript(range: Range<Int>) -> ArraySlice<UInt8> {
        bytes[(bytes.startIndex + range.lowerBound)..<(bytes.startIndex + range.upperBound)]
    }

    /// True when `text` (ASCII) sits at position `index`; false when it would not fit.
    func has(_ text: String, at index: Int) -> Bool {
        let length = text.utf8.count
        guard index >= 0, index + length <= bytes.count else { return false }
        return self[index..<(index + length)].elementsEqual(text.utf8)
    }
}
