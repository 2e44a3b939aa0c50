/// Lyrics3 tags, which sit between the audio and an ID3v1 tag. Only their size is needed:
/// the lyrics themselves are not kept.
///
/// - v2: "LYRICSBEGIN", fields, a 6-digit size (from "LYRICSBEGIN" to just before the digits),
///   then "LYRICS200".
/// - v1: "LYRICSBEGIN", up to 5100 bytes of lyrics, "LYRICSEND"; no size field, so the start is
///   found by searching back, and only in front of an ID3v1 tag as the format requires.
enum Lyrics3 {
    static let begin = "LYRICSBEGIN"
    static let v2End = "LYRICS200"
    static let v1End = "LYRICSEND"
    static let v1MaxLyrics = 5100

    /// What a Lyrics3 tag ending at `end` of the tail occupies.
    enum Found: Equatable {
        /// The whole tag is in the tail and has this many bytes.
        case size(Int)
        /// A v2 tag of this many bytes whose start lies before the tail (its size field says so).
        case beyondTail(Int)
    }

    /// Finds a Lyrics3 tag that ends at `end` (an offset in `tail`); nil when there is none.
    /// Throws `.invalid` when a v2 size field is not six digits or points at no "LYRICSBEGIN".
    static func find(in tail: TailBytes, endingAt end: Int, beforeID3v1: Bool) throws(FormatError) -> Found? {
        if tail.has(v2End, at: end - v2End.utf8.count) {
            let digitsStart = end - v2End.utf8.count - 6
            guard digitsStart >= 0 else { return nil }
            let digits = tail[digitsStart..<(digitsStart + 6)]
            guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw FormatError.invalid(component: TrailingTags.component, reason: "Lyrics3v2 size is not 6 digits",
                                          offset: tail.fileOffset(digitsStart))
            }
            let size = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            let total = size + 6 + v2End.utf8.count
            let start = end - total
            guard size >= begin.utf8.count, tail.fileOffset(start) >= 0 else {
                throw FormatError.invalid(component: TrailingTags.component,
                                          reason: "Lyrics3v2 size \(size) points outside the file",
                                          offset: tail.fileOffset(digitsStart))
            }
            guard start >= 0 else { return .beyondTail(total) }
            guard tail.has(begin, at: start) else {
                throw FormatError.invalid(component: TrailingTags.component,
                                          reason: "Lyrics3v2 size \(size) does not lead to LYRICSBEGIN",
                                          offset: tail.fileOffset(digitsStart))
            }
            return .size(total)
        }
        if beforeID3v1, tail.has(v1End, at: end - v1End.utf8.count) {
            // Search back for the last "LYRICSBEGIN" that leaves at most 5100 bytes of lyrics.
            let lyricsEnd = end - v1End.utf8.count
            let earliest = max(0, lyricsEnd - v1MaxLyrics - begin.utf8.count)
            var start = lyricsEnd - begin.utf8.count
            while start >= earliest {
                if tail.has(begin, at: start) { return .size(end - start) }
                start -= 1
            }
            // "LYRICSEND" without a beginning is just bytes; the audio may end that way.
        }
        return nil
    }
}
