/// A picture embedded in a track's tags: the album cover.
public struct EmbeddedPicture: Sendable, Equatable {
    /// `image/jpeg`, `image/png`, ... (from the tag; guessed from the bytes when the tag says nothing useful).
    public var mimeType: String
    public var data: [UInt8]

    public init(mimeType: String, data: [UInt8]) {
        self.mimeType = mimeType
        self.data = data
    }
}

/// Reads the cover picture of a track: the front cover of an ID3v2 tag (APIC, or PIC in 2.2;
/// else its first picture), the first `covr` item of an MP4 `ilst`, a FLAC PICTURE block, an
/// Ogg stream's METADATA_BLOCK_PICTURE comment, or an AIFF ID3 chunk. Reads only the tags, the
/// moov or the metadata, never the audio, and refuses tags and boxes larger than `maxBytes`.
public enum EmbeddedPictureReader {
    /// Largest ID3v2 tag or moov read to find a picture.
    public static let maxBytes = 64 << 20

    /// The picture, or nil when the file has none (or is neither tagged MP3/AAC/WAV-less nor MP4).
    public static func picture(in source: some RandomAccessBytes) throws -> EmbeddedPicture? {
        let head = try source.read(at: 0, count: 16)
        if head.starts(with: Array("ID3".utf8)) {
            guard let header = ID3v2Header(head[...]) else { return nil }
            guard header.totalSize <= maxBytes else {
                throw FormatError.unsupported(component: ID3v2.component, reason: "tag of \(header.totalSize) bytes")
            }
            let tag = try source.read(at: 0, count: header.totalSize)
            if let picture = try id3Picture(tag[...]) { return picture }
            // A FLAC file behind an ID3v2 tag without a picture keeps its own.
            let marker = try source.read(at: header.totalSize, count: 4)
            return marker == FLACReader.marker ? try flacPicture(source) : nil
        }
        if head.count >= 8, MP4BoxHeader.fourCC(head[4..<8]) == "ftyp" {
            return try mp4Picture(source)
        }
        if head.starts(with: FLACReader.marker) { return try flacPicture(source) }
        if head.starts(with: OggPage.capturePattern) {
            return (try OggReader.read(source).first.comment?.pictures).flatMap { FLACPicture.cover($0)?.embedded }
        }
        if head.count >= 12, head.starts(with: Array("FORM".utf8)),
           ["AIFF", "AIFC"].contains(String(decoding: head[8..<12], as: UTF8.self)) {
            return try aiffPicture(source)
        }
        return nil
    }

    /// The front cover (else the first picture) of a FLAC file's PICTURE blocks and Vorbis comment.
    static func flacPicture(_ source: some RandomAccessBytes) throws -> EmbeddedPicture? {
        FLACPicture.cover(try FLACReader.read(source).pictures)?.embedded
    }

    /// The picture of an AIFF file's ID3 chunk, wherever the chunk lies (chunk headers walked
    /// with small reads).
    static func aiffPicture(_ source: some RandomAccessBytes) throws -> EmbeddedPicture? {
        var offset = 12
        for _ in 0..<4096 {
            let head = try source.read(at: offset, count: 8)
            guard head.count == 8 else { return nil }
            let id = String(decoding: head[0..<4], as: UTF8.self)
            let size = Int(head[4]) << 24 | Int(head[5]) << 16 | Int(head[6]) << 8 | Int(head[7])
            if id == "ID3 " || id == "id3 " {
                guard size <= maxBytes, offset + 8 + size <= source.size else { return nil }
                return try id3Picture(try source.read(at: offset + 8, count: size)[...])
            }
            offset += 8 + size + (size & 1)
            guard offset < source.size else { return nil }
        }
        return nil
    }

    /// The picture of a whole ID3v2 tag at the start of `bytes`.
    public static func id3Picture(_ bytes: ArraySlice<UInt8>) throws -> EmbeddedPicture? {
        guard let header = ID3v2Header(bytes), bytes.count >= header.totalSize, !header.isCompressedV22 else { return nil }
        var best: ID3PictureFrame?
        try ID3v2.forEachFrame(bytes, header: header) { frame in
            guard frame.id == "APIC" || frame.id == "PIC", best?.pictureType != 3,
                  let picture = ID3PictureFrame(frame.content, legacy: frame.id == "PIC") else { return }
            if best == nil || picture.pictureType == 3 { best = picture }
        }
        return best.map { EmbeddedPicture(mimeType: mimeType(declared: $0.mimeType, data: $0.data), data: Array($0.data)) }
    }

    /// The first `covr` picture of moov/udta/meta/ilst (or moov/meta/ilst).
    static func mp4Picture(_ source: some RandomAccessBytes) throws -> EmbeddedPicture? {
        var offset = 0
        var boxes = 0
        while offset < source.size, boxes < 1024 {
            boxes += 1
            let head = try source.read(at: offset, count: 16)
            guard let header = try MP4BoxHeader.parse(head[...], at: 0) else { return nil }
            let size = header.size ?? (source.size - offset)
            guard size >= header.headerSize, size <= source.size - offset else { return nil }
            if header.type == "moov" {
                guard size <= maxBytes else {
                    throw FormatError.unsupported(component: MP4BoxHeader.component, reason: "moov of \(size) bytes")
                }
                let moov = try source.read(at: offset, count: size)
                return try moovPicture(moov[...])
            }
            offset += size
        }
        return nil
    }

    /// The first `covr` picture in a whole moov box.
    public static func moovPicture(_ moovBytes: ArraySlice<UInt8>) throws -> EmbeddedPicture? {
        let moov = try MP4Box.root(moovBytes, component: MP4BoxHeader.component)
        var metas: [MP4Box] = []
        var children = try moov.children()
        while let child = try children.next() {
            if child.type == "udta", let meta = try child.child("meta") { metas.append(meta) }
            if child.type == "meta" { metas.append(child) }
        }
        for meta in metas {
            var parts = try meta.children(skipping: MP4Meta.headerSize(meta))
            while let ilst = try parts.next() {
                guard ilst.type == "ilst", let covr = try ilst.child("covr") else { continue }
                var items = try covr.children()
                while let data = try items.next() {
                    // type indicator (version byte + 24-bit well-known type: 13 JPEG, 14 PNG, 27 BMP), locale, value.
                    guard data.type == "data", data.payload.count > 8 else { continue }
                    let p = data.payload
                    let type = p[(p.startIndex + 1)..<(p.startIndex + 4)].reduce(0) { $0 << 8 | Int($1) }
                    let value = p.dropFirst(8)
                    let declared = type == 13 ? "image/jpeg" : type == 14 ? "image/png" : type == 27 ? "image/bmp" : ""
                    return EmbeddedPicture(mimeType: mimeType(declared: declared, data: value), data: Array(value))
                }
            }
        }
        return nil
    }

    /// The declared type when it is an image type, else one told by the picture's first bytes.
    static func mimeType(declared: String, data: ArraySlice<UInt8>) -> String {
        if data.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if data.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if data.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        if data.count >= 12, data.starts(with: Array("RIFF".utf8)),
           data.dropFirst(8).starts(with: Array("WEBP".utf8)) { return "image/webp" }
        let lower = declared.lowercased()
        switch lower {
        case "jpg", "image/jpg": return "image/jpeg"
        case "png": return "image/png"
        default:
            let safe = lower.hasPrefix("image/") && lower.count <= 64
                && lower.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || "/+.-".utf8.contains($0) }
            return safe ? lower : "application/octet-stream"
        }
    }
}

/// An APIC (2.3/2.4) or PIC (2.2) frame: MIME type (2.2: a 3-character format), picture type,
/// description, then the picture data.
struct ID3PictureFrame {
    var mimeType: String
    var pictureType: UInt8
    var data: ArraySlice<UInt8>

    /// nil when the frame is malformed or holds no picture data.
    init?(_ content: ArraySlice<UInt8>, legacy: Bool) {
        var reader = ByteReader(content, component: ID3v2.component)
        guard let encodingByte = try? reader.readU8(),
              let encoding = ID3TextEncoding(rawValue: encodingByte) else { return nil }
        if legacy {
            guard let format = try? reader.readBytes(3) else { return nil }
            mimeType = String(decoding: format, as: UTF8.self)
        } else {
            // The MIME type is always Latin-1 and NUL-terminated, whatever the encoding byte says.
            let mime = ID3Text.decode(reader.rest, encoding: .latin1)
            guard mime.terminated, (try? reader.skip(mime.consumed)) != nil else { return nil }
            mimeType = mime.text
        }
        guard let type = try? reader.readU8() else { return nil }
        let description = ID3Text.decode(reader.rest, encoding: encoding)
        guard description.terminated, (try? reader.skip(description.consumed)) != nil,
              reader.remaining > 0 else { return nil }
        pictureType = type
        data = reader.rest
    }
}
