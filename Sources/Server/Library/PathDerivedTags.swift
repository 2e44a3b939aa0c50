/// What a file's place in the library says about its track, for the fields its tags leave
/// empty (`Track.init(path:stamp:analysis:)`): the title from the file name (extension
/// dropped, a leading track number taken off and kept as the track, "1-03 " as disc 1 track
/// 3), the album from its folder and the artist from the folder above. A folder named like a
/// disc ("CD1", "Disc 2", "disk_3 - Bonus") under another folder gives the disc number, and the
/// album and artist are then the two folders above it.
///
/// A file in the library root has no album or artist (the root's own name says nothing about
/// the music); a file one folder down has that folder as its album and no artist.
///
/// Read as UTF-8 bytes: every byte the rules look at is ASCII (digits, separators, the
/// extension) but the en and em dashes, and a scan of 100,000 files runs this for most of them
/// (through Characters it cost 37 µs a path in a debug build).
public struct PathDerivedTags: Sendable, Equatable {
    /// The file name without its extension and leading number, never empty.
    public var title: String
    public var trackNumber: Int?
    public var discNumber: Int?
    public var album: String?
    public var artist: String?

    public init(title: String, trackNumber: Int? = nil, discNumber: Int? = nil, album: String? = nil, artist: String? = nil) {
        self.title = title
        self.trackNumber = trackNumber
        self.discNumber = discNumber
        self.album = album
        self.artist = artist
    }

    /// The fields the relative `path` ("Artist/Album/01 - Song.mp3") gives.
    public init(path: String) {
        let bytes = Array(path.utf8)
        var parts = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
        let name = parts.popLast() ?? bytes[...]
        let file = Self.parseFileName(name)
        var disc = file.disc
        // A disc folder counts only under an album folder: "CD1/01.mp3" alone is an album named CD1.
        if parts.count >= 2, let last = parts.last, let number = Self.discFolderNumber(last) {
            parts.removeLast()
            disc = disc ?? number
        }
        let album = parts.last.flatMap(Self.folderName)
        let artist = parts.count >= 2 ? Self.folderName(parts[parts.count - 2]) : nil
        self.init(title: file.title, trackNumber: file.track, discNumber: disc, album: album, artist: artist)
    }

    /// A folder's name as a tag: trimmed, nil when nothing is left.
    static func folderName(_ name: ArraySlice<UInt8>) -> String? {
        let trimmed = trimmed(name)
        return trimmed.isEmpty ? nil : String(decoding: trimmed, as: UTF8.self)
    }

    // MARK: file names

    /// Title, track and disc number of a file name: "01 - Song.flac" is ("Song", 1, nil),
    /// "1-03 Song.mp3" ("Song", 3, 1), "07.mp3" ("07", 7, nil), "Mr. Jones.mp3" ("Mr. Jones", nil, nil).
    /// Underscores stand for spaces in a name that has no spaces ("01_my_song" is "my song").
    public static func parseFileName(_ name: String) -> (title: String, track: Int?, disc: Int?) {
        parseFileName(Array(name.utf8)[...])
    }

    static func parseFileName(_ name: ArraySlice<UInt8>) -> (title: String, track: Int?, disc: Int?) {
        let stem = trimmed(stem(of: name))
        guard !stem.isEmpty else { return (String(decoding: name, as: UTF8.self), nil, nil) }
        var text = stem
        if !stem.contains(space) {
            text = trimmed(ArraySlice(stem.map { $0 == UInt8(ascii: "_") ? space : $0 }))
            if text.isEmpty { return (String(decoding: stem, as: UTF8.self), nil, nil) }
        }
        let whole = String(decoding: text, as: UTF8.self)
        if let number = wholeNumber(text) { return (whole, number, nil) }
        if let number = trackWordNumber(text) { return (whole, number, nil) }
        guard let lead = leadingNumber(text) else { return (whole, nil, nil) }
        let rest = trimmed(text[lead.end...])
        // "01 - .mp3": nothing after the number; the name stays the title.
        guard !rest.isEmpty else { return (whole, lead.track, lead.disc) }
        return (String(decoding: rest, as: UTF8.self), lead.track, lead.disc)
    }

    /// The name without its extension: the part after the last dot when it is 1-5 ASCII letters
    /// and digits with a letter among them ("Mr. Jones" and "Take 2.5" keep theirs; ".hidden" too).
    static func stem(of name: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let dot = name.lastIndex(of: UInt8(ascii: ".")), dot != name.startIndex else { return name }
        let ext = name[(dot + 1)...]
        guard (1...5).contains(ext.count), ext.allSatisfy({ isDigit($0) || isLetter($0) }),
              ext.contains(where: isLetter) else { return name }
        return name[..<dot]
    }

    /// The value of a name made only of 1-3 ASCII digits ("07", "101"), else nil ("1999" is
    /// a title, not a track).
    static func wholeNumber(_ text: ArraySlice<UInt8>) -> Int? {
        guard (1...3).contains(text.count), text.allSatisfy(isDigit) else { return nil }
        return number(text)
    }

    /// The number of a name like "Track 01", "Track_7", "track01" (the whole name), else nil.
    static func trackWordNumber(_ text: ArraySlice<UInt8>) -> Int? {
        guard startsCaseInsensitive(text, with: "track") else { return nil }
        var rest = text.dropFirst(5)
        while let first = rest.first, first == space || first == UInt8(ascii: "-") || first == UInt8(ascii: ".") {
            rest = rest.dropFirst()
        }
        guard (1...3).contains(rest.count), rest.allSatisfy(isDigit) else { return nil }
        return number(rest)
    }

    /// A leading track number and the separator after it: "01 - ", "01. ", "01_", "(01) ",
    /// "[01] ", "1-03 " (disc 1, track 3), "101 "; `end` is where the title starts. Nil when the
    /// number has more than 3 digits (a year, "1999 - Song") or runs into the title without a
    /// separator ("3am", "01Intro"), or when it is a decimal ("2.5 Minutes").
    static func leadingNumber(_ text: ArraySlice<UInt8>) -> (track: Int, disc: Int?, end: Int)? {
        var i = text.startIndex
        var closing: UInt8?
        if text.first == UInt8(ascii: "(") { closing = UInt8(ascii: ")") } else if text.first == UInt8(ascii: "[") { closing = UInt8(ascii: "]") }
        if closing != nil { i += 1 }
        guard let first = digits(text, from: i, max: 3) else { return nil }
        i = first.end
        var track = first.value
        var disc: Int?
        // Disc-track: "1-03", "2-11": a disc of 1-2 digits, a dash, a track of 2-3 digits, then a separator or the end.
        if closing == nil, first.end - text.startIndex <= 2, i < text.endIndex, text[i] == UInt8(ascii: "-"),
           let second = digits(text, from: i + 1, max: 3), second.end - (i + 1) >= 2,
           second.end == text.endIndex || separatorLength(text, at: second.end) > 0 {
            disc = first.value
            track = second.value
            i = second.end
        }
        if let closing {
            guard i < text.endIndex, text[i] == closing else { return nil }
            i += 1
        } else {
            // "1-03.mp3": the numbers are the whole name.
            if i == text.endIndex { return (track, disc, i) }
            guard separatorLength(text, at: i) > 0 else { return nil }
            // "2.5 Minutes": a dot between digits is a decimal point, not a separator.
            if text[i] == UInt8(ascii: "."), i + 1 < text.endIndex, isDigit(text[i + 1]) { return nil }
        }
        while true {
            let length = separatorLength(text, at: i)
            if length == 0 { break }
            i += length
        }
        return (track, disc, i)
    }

    /// The ASCII digits at `start`, 1 to `max` of them (and no more), and where they end.
    static func digits(_ text: ArraySlice<UInt8>, from start: Int, max: Int) -> (value: Int, end: Int)? {
        var end = start
        while end < text.endIndex, isDigit(text[end]) { end += 1 }
        guard end > start, end - start <= max else { return nil }
        return (number(text[start..<end]), end)
    }

    /// The bytes of the separator at `i` that parts a leading number from the title (space, tab,
    /// ". _ - :", an en or em dash), 0 when there is none.
    static func separatorLength(_ text: ArraySlice<UInt8>, at i: Int) -> Int {
        guard i < text.endIndex else { return 0 }
        switch text[i] {
        case space, UInt8(ascii: "\t"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"):
            return 1
        case 0xE2:
            // U+2013 EN DASH and U+2014 EM DASH: E2 80 93 / E2 80 94.
            guard i + 2 < text.endIndex, text[i + 1] == 0x80, text[i + 2] == 0x93 || text[i + 2] == 0x94 else { return 0 }
            return 3
        default:
            return 0
        }
    }

    // MARK: folders

    /// The disc number of a folder named "CD1", "CD 2", "Disc 01", "disk_3", "CD2 - Bonus"
    /// (any case), else nil.
    public static func discFolderNumber(_ name: String) -> Int? {
        discFolderNumber(Array(name.utf8)[...])
    }

    static func discFolderNumber(_ name: ArraySlice<UInt8>) -> Int? {
        let text = trimmed(name)
        let words: [StaticString] = ["disc", "disk", "cd"]
        for word in words where startsCaseInsensitive(text, with: word) {
            var i = text.startIndex + word.utf8CodeUnitCount
            while i < text.endIndex, [space, UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ".")].contains(text[i]) { i += 1 }
            guard let number = digits(text, from: i, max: 2) else { return nil }
            // Only a separator may follow the number ("CD1 - Bonus", "Disc 2 (Live)"); "CD1a" is not a disc folder.
            guard number.end == text.endIndex || separatorLength(text, at: number.end) > 0
                    || text[number.end] == UInt8(ascii: "(") else { return nil }
            return number.value
        }
        return nil
    }

    // MARK: bytes

    static let space = UInt8(ascii: " ")

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }

    /// The value of 1-3 ASCII digits (never more: no overflow).
    static func number(_ digits: ArraySlice<UInt8>) -> Int {
        digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// Whether `text` is longer than `word` (lower-case ASCII) and starts with it in any case.
    static func startsCaseInsensitive(_ text: ArraySlice<UInt8>, with word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard text.count > count else { return false }
        return word.withUTF8Buffer { word in
            zip(text.prefix(count), word).allSatisfy { isLetter($0) && ($0 | 0x20) == $1 }
        }
    }

    /// `text` without the ASCII whitespace at either end.
    static func trimmed(_ text: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        func blank(_ byte: UInt8) -> Bool { byte == space || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) }) else { return [] }
        return text[first...last]
    }
}
