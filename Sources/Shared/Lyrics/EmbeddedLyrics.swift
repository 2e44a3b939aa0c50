/// Lyrics found in a track's own tags.
public struct EmbeddedLyrics: Sendable, Equatable {
    /// The ISO 639-2 language the tag gives ("eng"); "xxx" when it gives none.
    public var language: String
    /// The tag's description of them (ID3's content descriptor); empty when none.
    public var description: String
    /// The lines: synced when the tag has times (ID3 SYLT) or the text is LRC (`[mm:ss.xx]`
    /// before its lines, as many taggers store synced lyrics in USLT or LYRICS).
    public var lyrics: LRCLyrics

    public init(language: String, description: String, lyrics: LRCLyrics) {
        self.language = language
        self.description = description
        self.lyrics = lyrics
    }
}

/// Reads the lyrics embedded in a track: ID3v2 USLT and SYLT frames (ULT/SLT in 2.2; at the
/// start of MP3, AAC and FLAC files, or in an AIFF ID3 chunk), the Vorbis comments LYRICS and
/// UNSYNCEDLYRICS (FLAC, Ogg Vorbis, Ogg Opus), and MP4's `©lyr` item. Reads only the tags, the
/// moov or the metadata, never the audio: tags and boxes larger than `maxTagBytes`, and texts
/// larger than `maxTextBytes`, are refused with a typed error.
public enum EmbeddedLyricsReader {
    /// Largest ID3v2 tag or moov read to find lyrics.
    public static let maxTagBytes = 16 << 20
    /// Largest lyrics text kept (one frame, comment or item).
    public static let maxTextBytes = 1 << 20
    /// Most lyrics kept from one file (a tag may carry one per language).
    public static let maxEntries = 16
    static let component = "lyrics"

    /// The file's lyrics, in the order its tags hold them; empty when it has none or is not a
    /// tagged format this reads.
    public static func lyrics(in source: some RandomAccessBytes) throws(FormatError) -> [EmbeddedLyrics] {
        do {
            return try read(source)
        } catch let error as FormatError {
            throw error
        } catch {
            throw FormatError.invalid(component: component, reason: "\(error)", offset: 0)
        }
    }

    private static func read(_ source: some RandomAccessBytes) throws -> [EmbeddedLyrics] {
        let head = try source.read(at: 0, count: 16)
        if head.starts(with: Array("ID3".utf8)) {
            guard let header = ID3v2Header(head[...]) else { return [] }
            guard header.totalSize <= maxTagBytes else {
                throw FormatError.unsupported(component: component, reason: "ID3v2 tag of \(header.totalSize) bytes")
            }
            let found = try id3Lyrics(try source.read(at: 0, count: header.totalSize)[...])
            if !found.isEmpty { return found }
            // A FLAC file behind an ID3v2 tag keeps its own comments.
            let marker = try source.read(at: header.totalSize, count: 4)
            return marker == FLACReader.marker ? commentLyrics(try FLACReader.read(source).comment) : []
        }
        if head.count >= 8, MP4BoxHeader.fourCC(head[4..<8]) == "ftyp" { return try mp4Lyrics(source) }
        if head.starts(with: FLACReader.marker) { return commentLyrics(try FLACReader.read(source).comment) }
        if head.starts(with: OggPage.capturePattern) { return commentLyrics(try OggReader.read(source).first.comment) }
        if head.count >= 12, head.starts(with: Array("FORM".utf8)),
           ["AIFF", "AIFC"].contains(String(decoding: head[8..<12], as: UTF8.self)) {
            return try aiffLyrics(source)
        }
        return []
    }

    /// LYRICS and UNSYNCEDLYRICS values of a Vorbis comment (any case), each read as LRC.
    public static func commentLyrics(_ comment: VorbisComment?) -> [EmbeddedLyrics] {
        guard let comment else { return [] }
        var found: [EmbeddedLyrics] = []
        for field in comment.fields where found.count < maxEntries
            && (VorbisComment.sameName(field.name, "LYRICS") || VorbisComment.sameName(field.name, "UNSYNCEDLYRICS")) {
            guard field.value.utf8.count <= maxTextBytes, let lyrics = nonEmpty(LRCLyrics(Array(field.value.utf8))) else { continue }
            found.append(EmbeddedLyrics(language: "xxx", description: "", lyrics: lyrics))
        }
        return found
    }

    /// The USLT and SYLT frames (ULT and SLT in 2.2) of a whole ID3v2 tag at the start of `bytes`:
    /// synced ones first, since they say more.
    public static func id3Lyrics(_ bytes: ArraySlice<UInt8>) throws(FormatError) -> [EmbeddedLyrics] {
        guard let header = ID3v2Header(bytes), bytes.count >= header.totalSize, !header.isCompressedV22 else { return [] }
        var synced: [EmbeddedLyrics] = [], plain: [EmbeddedLyrics] = []
        try ID3v2.forEachFrame(bytes, header: header) { frame in
            guard synced.count + plain.count < maxEntries else { return }
            switch frame.id {
            case "USLT", "ULT":
                if let lyrics = unsynchronisedFrame(frame.content) { plain.append(lyrics) }
            case "SYLT", "SLT":
                if let lyrics = synchronisedFrame(frame.content) { synced.append(lyrics) }
            default:
                break
            }
        }
        return synced + plain
    }

    /// USLT: encoding, language (3 bytes), content descriptor, then the text. nil when malformed or empty.
    static func unsynchronisedFrame(_ content: ArraySlice<UInt8>) -> EmbeddedLyrics? {
        guard content.count >= 4, content.count <= maxTextBytes,
              let encoding = ID3TextEncoding(rawValue: content[content.startIndex]) else { return nil }
        let language = languageCode(content[(content.startIndex + 1)..<(content.startIndex + 4)])
        let rest = content.dropFirst(4)
        let descriptor = ID3Text.decode(rest, encoding: encoding)
        let text = ID3Text.decode(rest.dropFirst(descriptor.consumed), encoding: encoding).text
        guard let lyrics = nonEmpty(LRCLyrics(Array(text.utf8))) else { return nil }
        return EmbeddedLyrics(language: language, description: descriptor.text, lyrics: lyrics)
    }

    /// SYLT: encoding, language, time stamp format (2: milliseconds; 1, MPEG frames, is not
    /// read), content type, content descriptor, then (text, 32-bit big-endian time) pairs. A
    /// text's leading newline marks a new line, as writers do; it is dropped.
    static func synchronisedFrame(_ content: ArraySlice<UInt8>) -> EmbeddedLyrics? {
        guard content.count >= 6, content.count <= maxTextBytes,
              let encoding = ID3TextEncoding(rawValue: content[content.startIndex]) else { return nil }
        let start = content.startIndex
        let language = languageCode(content[(start + 1)..<(start + 4)])
        guard content[start + 4] == 2 else { return nil }
        var rest = content.dropFirst(6)
        let descriptor = ID3Text.decode(rest, encoding: encoding)
        guard descriptor.terminated else { return nil }
        rest = rest.dropFirst(descriptor.consumed)
        var lines: [LRCLyrics.Line] = []
        while !rest.isEmpty, lines.count < LRCLyrics.maxLines {
            let text = ID3Text.decode(rest, encoding: encoding)
            guard text.terminated, rest.count >= text.consumed + 4 else { break }
            let time = rest.dropFirst(text.consumed).prefix(4).reduce(0) { $0 << 8 | Int($1) }
            rest = rest.dropFirst(text.consumed + 4)
            let words = String(decoding: text.text.utf8.prefix(LRCLyrics.maxLineBytes), as: UTF8.self)
            var trimmed = Substring(words).drop { $0.isWhitespace }
            while trimmed.last?.isWhitespace == true { trimmed = trimmed.dropLast() }
            lines.append(LRCLyrics.Line(startMilliseconds: time, text: String(trimmed)))
        }
        guard !lines.isEmpty else { return nil }
        let ordered = lines.enumerated().sorted { ($0.element.startMilliseconds ?? 0, $0.offset) < ($1.element.startMilliseconds ?? 0, $1.offset) }
            .map(\.element)
        return EmbeddedLyrics(language: language, description: descriptor.text,
                              lyrics: LRCLyrics(lines: ordered, synced: true))
    }

    /// The 3-letter code as given (lower case), "xxx" when it is not three ASCII letters.
    static func languageCode(_ bytes: ArraySlice<UInt8>) -> String {
        guard bytes.count == 3, bytes.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }) else { return "xxx" }
        return String(decoding: bytes, as: UTF8.self).lowercased()
    }

    private static func nonEmpty(_ lyrics: LRCLyrics) -> LRCLyrics? {
        lyrics.lines.contains { !$0.text.isEmpty } ? lyrics : nil
    }

    /// The lyrics of an AIFF file's ID3 chunk, wherever it lies.
    static func aiffLyrics(_ source: some RandomAccessBytes) throws -> [EmbeddedLyrics] {
        var offset = 12
        for _ in 0..<4096 {
            let head = try source.read(at: offset, count: 8)
            guard head.count == 8 else { return [] }
            let id = String(decoding: head[0..<4], as: UTF8.self)
            let size = Int(head[4]) << 24 | Int(head[5]) << 16 | Int(head[6]) << 8 | Int(head[7])
            if id == "ID3 " || id == "id3 " {
                guard size <= maxTagBytes, offset + 8 + size <= source.size else { return [] }
                return try id3Lyrics(try source.read(at: offset + 8, count: size)[...])
            }
            offset += 8 + size + (size & 1)
            guard offset < source.size else { return [] }
        }
        return []
    }

    /// The `©lyr` items of moov/udta/meta/ilst (or moov/meta/ilst).
    static func mp4Lyrics(_ source: some RandomAccessBytes) throws -> [EmbeddedLyrics] {
        var offset = 0
        var boxes = 0
        while offset < source.size, boxes < 1024 {
            boxes += 1
            let head = try source.read(at: offset, count: 16)
            guard let header = try MP4BoxHeader.parse(head[...], at: 0) else { return [] }
            let size = header.size ?? (source.size - offset)
            guard size >= header.headerSize, size <= source.size - offset else { return [] }
            if header.type == "moov" {
                guard size <= maxTagBytes else {
                    throw FormatError.unsupported(component: component, reason: "moov of \(size) bytes")
                }
                return try moovLyrics(try source.read(at: offset, count: size)[...])
            }
            offset += size
        }
        return []
    }

    /// The `©lyr` items in a whole moov box (UTF-8 or UTF-16 `data`), each read as LRC.
    public static func moovLyrics(_ moovBytes: ArraySlice<UInt8>) throws -> [EmbeddedLyrics] {
        let moov = try MP4Box.root(moovBytes, component: MP4BoxHeader.component)
        var metas: [MP4Box] = []
        var children = try moov.children()
        while let child = try children.next() {
            if child.type == "udta", let meta = try child.child("meta") { metas.append(meta) }
            if child.type == "meta" { metas.append(child) }
        }
        var found: [EmbeddedLyrics] = []
        for meta in metas {
            var parts = try meta.children(skipping: MP4Meta.headerSize(meta))
            while let ilst = try parts.next() {
                guard ilst.type == "ilst", let item = try ilst.child("\u{A9}lyr") else { continue }
                var datas = try item.children()
                while let data = try datas.next(), found.count < maxEntries {
                    guard data.type == "data", data.payload.count > 8, data.payload.count - 8 <= maxTextBytes else { continue }
                    let p = data.payload
                    let type = p[(p.startIndex + 1)..<(p.startIndex + 4)].reduce(0) { $0 << 8 | Int($1) }
                    guard type == 1 || type == 2, let text = MP4Meta.text(p.dropFirst(8), type: type),
                          let lyrics = nonEmpty(LRCLyrics(Array(text.utf8))) else { continue }
                    found.append(EmbeddedLyrics(language: "xxx", description: "", lyrics: lyrics))
                }
            }
        }
        return found
    }
}
