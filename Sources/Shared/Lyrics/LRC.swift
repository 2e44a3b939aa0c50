/// Lyrics read from an `.lrc` file (the de-facto LRC format: `[mm:ss.xx]` time tags before a
/// line, several on one line for a repeated line, `[ar:]`, `[ti:]`, `[offset:+/-ms]` header
/// tags); a file without time tags is plain, unsynchronised text. Bounded: at most
/// `maxLines` lines of `maxLineBytes` each are kept.
public struct LRCLyrics: Sendable, Equatable {
    /// One line: when it starts (milliseconds from the start of the track; nil when unsynced) and its text.
    public struct Line: Sendable, Equatable {
        public var startMilliseconds: Int?
        public var text: String

        public init(startMilliseconds: Int?, text: String) {
            self.startMilliseconds = startMilliseconds
            self.text = text
        }
    }

    public var lines: [Line]
    /// Whether the lines carry times (every kept line does then).
    public var synced: Bool
    public var artist: String?
    public var title: String?
    /// `[offset:]`: milliseconds to add to every time (LRC's sign: positive shifts lyrics earlier).
    public var offsetMilliseconds: Int

    public static let maxLines = 10_000
    public static let maxLineBytes = 4096

    /// Lines already timed (or not): an ID3 SYLT frame's.
    public init(lines: [Line], synced: Bool, artist: String? = nil, title: String? = nil, offsetMilliseconds: Int = 0) {
        self.lines = lines
        self.synced = synced
        self.artist = artist
        self.title = title
        self.offsetMilliseconds = offsetMilliseconds
    }

    /// Reads `bytes` as UTF-8 (a BOM skipped; invalid bytes replaced).
    public init(_ bytes: some Collection<UInt8>) {
        var body = Array(bytes.prefix(Self.maxLines * Self.maxLineBytes))
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body.removeFirst(3) }
        let text = String(decoding: body, as: UTF8.self)
        var timed: [Line] = [], plain: [Line] = []
        var artist: String?, title: String?, offset = 0
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            if timed.count + plain.count >= Self.maxLines { break }
            // Bounded in bytes, not characters (one character can carry any number of combining marks).
            var rest = Substring(String(decoding: rawLine.utf8.prefix(Self.maxLineBytes), as: UTF8.self))
            var times: [Int] = []
            var headerTag = false
            while rest.first == "[", let close = rest.firstIndex(of: "]") {
                let tag = rest[rest.index(after: rest.startIndex)..<close]
                if let time = Self.time(tag) {
                    times.append(time)
                } else if let colon = tag.firstIndex(of: ":") {
                    let key = tag[..<colon].lowercased(), value = String(tag[tag.index(after: colon)...].trimmingWhitespace())
                    switch key {
                    case "ar": artist = value
                    case "ti": title = value
                    case "offset": offset = Int(value).map { max(-86_400_000, min(86_400_000, $0)) } ?? 0
                    default: break
                    }
                    headerTag = true
                } else {
                    break
                }
                rest = rest[rest.index(after: close)...]
            }
            let words = String(rest.trimmingWhitespace())
            if !times.isEmpty {
                for time in times.prefix(64) { timed.append(Line(startMilliseconds: time, text: words)) }
            } else if !headerTag {
                plain.append(Line(startMilliseconds: nil, text: words))
            }
        }
        synced = !timed.isEmpty
        if synced {
            lines = timed.enumerated().sorted { ($0.element.startMilliseconds ?? 0, $0.offset) < ($1.element.startMilliseconds ?? 0, $1.offset) }
                .map(\.element)
        } else {
            while plain.last?.text.isEmpty == true { plain.removeLast() }
            while plain.first?.text.isEmpty == true { plain.removeFirst() }
            lines = plain
        }
        self.artist = artist
        self.title = title
        offsetMilliseconds = offset
    }

    /// `mm:ss`, `mm:ss.x`, `mm:ss.xx`, `mm:ss.xxx` (also `:` before the fraction) → milliseconds.
    static func time(_ tag: Substring) -> Int? {
        let bytes = Array(tag.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon <= 4 else { return nil }
        func number(_ slice: ArraySlice<UInt8>) -> Int? {
            guard !slice.isEmpty, slice.count <= 4, slice.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return slice.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        guard let minutes = number(bytes[..<colon]) else { return nil }
        let rest = bytes[(colon + 1)...]
        let separator = rest.firstIndex { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") }
        guard let seconds = number(rest[..<(separator ?? rest.endIndex)]), seconds < 60 else { return nil }
        var millis = 0
        if let separator {
            let fraction = rest[(separator + 1)...]
            guard let value = number(fraction), fraction.count <= 3 else { return nil }
            millis = fraction.count == 1 ? value * 100 : fraction.count == 2 ? value * 10 : value
        }
        return (minutes * 60 + seconds) * 1000 + millis
    }
}
